"""The engine facade: planes, channels and configuration, one method per retrieval.

Built once by the composition root (`console/wiring.py`, or a test). Each call
resolves its config once (the base sections, with the console's override row
for that section decoded over them at call time, so a saved override applies
to the next call without a restart; `config=` bypasses that, as the settings
preview and the benchmark variants do) and hands a pipeline the plain
`Planes`, the registered channels and the resolved config. Nothing below
this module imports it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from recall import briefing, dedup, packing, prompt, recall, search, tiers
from recall.channels import standard
from recall.config import (
    SECTIONS,
    BriefingConfig,
    C,
    Configs,
    DedupConfig,
    Problem,
    PromptConfig,
    RecallConfig,
    SearchConfig,
    decode_over,
)
from recall.planes import CachedEmbedder, Planes
from recall.ports import Channel, ReadsOnce, Vector
from recall.requests import BriefingRequest, PromptRequest, RecallRequest, SearchRequest
from recall.results import Briefing, ContextPack, Hit, PromptResult, SearchResult
from recall.types import MEMORY

# Reads the override row of a section ("search", ...): its JSON value or None.
Overrides = Callable[[str], Mapping[str, Any] | str | None]


def _no_overrides(section: str) -> None:
    return None


@dataclass
class Engine:
    """Recall, Search, Briefing, PromptRecall and DedupHint over one set of planes.

    `channels` defaults to the standard four over `planes`; the embedder is
    wrapped in a small query cache. `background_rebuild=False` rebuilds a
    stale prompt corpus synchronously (deterministic tests); `thread_done`
    runs at the end of each background rebuild's thread.
    """

    planes: Planes
    channels: Sequence[Channel] | None = None
    base: Configs = field(default_factory=Configs)
    overrides: Overrides = _no_overrides
    background_rebuild: bool = True
    thread_done: Callable[[], None] | None = None
    corpora: prompt.CorpusCache = field(init=False)
    hot: tiers.HotTier = field(default_factory=tiers.HotTier)

    def __post_init__(self) -> None:
        embedder = self.planes.embedder
        if embedder is not None and not isinstance(embedder, CachedEmbedder):
            self.planes = replace(self.planes, embedder=CachedEmbedder(embedder))
        if self.channels is None:
            self.channels = standard(self.planes)
        self.corpora = prompt.CorpusCache(
            clock=self.planes.clock, background=self.background_rebuild, finished=self.thread_done
        )

    @property
    def registered(self) -> tuple[Channel, ...]:
        return tuple(self.channels or ())

    def config(self, cls: type[C]) -> tuple[C, tuple[Problem, ...]]:
        """The section's base with its override row decoded over it (failure-soft)."""
        section = next(name for name, c in SECTIONS.items() if c is cls)
        try:
            row = self.overrides(section)
        except Exception:  # an unreadable row falls back to the base
            row = "\x00unreadable"
        base: C = self.base.section(section)
        return decode_over(base, row)

    def _resolved(self, cls: type[C], given: C | None) -> C:
        return given if given is not None else self.config(cls)[0]

    def recall(self, req: RecallRequest, *, config: RecallConfig | None = None) -> ContextPack:
        """Agent Recall: a ranked, token-budgeted, scope-guarded context pack, from
        the hot, warm or cold tier (`recall.tiers`).

        The whole call is one `ReadsOnce` block: the project's isolation read for
        the hot tier's key is the one the scope filter reads again."""
        store = self.planes.store
        with store.reading() if isinstance(store, ReadsOnce) else nullcontext():
            return self._recall(req, config)

    def _recall(self, req: RecallRequest, config: RecallConfig | None) -> ContextPack:
        started = time.perf_counter()
        resolved = self._resolved(RecallConfig, config)
        tier = tiers.tier_of(req)
        if tier == tiers.COLD:
            pack = self._run(req, resolved)
            return tiers.answered(pack, tier, started)
        key = tiers.key(req, resolved)
        if req.project is not None:  # sealing a project takes global memories out of its
            # scope (recall.scope) and moves no plane's stamp: its packs must not serve on
            key += f"\x00{self.planes.store.isolation(req.project)}"
        store = self.planes.store if isinstance(self.planes.store, tiers.Stamped) else None
        stamp = tiers.stamp(self.planes.text, self.planes.vectors, store)
        hot = self.hot.get(key, stamp, self.planes.clock())
        if hot is not None:
            hot = packing.relabel(hot, req.pack_id, self.planes.tokens)
        if hot is not None:
            return tiers.answered(hot, tiers.HOT, started)
        pack = self._run(req, resolved)
        self.hot.put(key, stamp, pack)
        return tiers.answered(pack, tier, started)

    def _run(self, req: RecallRequest, config: RecallConfig) -> ContextPack:
        """One Recall, inside `recall`'s `ReadsOnce` block: the rows it reads are kept
        for it alone (the semantic pool's, the session channel's seeds and neighbours
        and the second fusion's were each read again, by a later stage of the same
        Recall)."""
        return recall.run(req, planes=self.planes, channels=self.registered, config=config)

    def forget(self) -> None:
        """A write committed: the hot tier's packs may be stale (`recall.tiers`), and
        PromptRecall's corpora are refreshed on their next look (`CorpusCache.written`)."""
        self.hot.forget()
        self.corpora.written()

    def search(self, req: SearchRequest, *, config: SearchConfig | None = None) -> SearchResult:
        """Console Search: every hit up to the limit, no budget."""
        resolved = self._resolved(SearchConfig, config)
        return search.run(req, planes=self.planes, channels=self.registered, config=resolved)

    def briefing(self, req: BriefingRequest, *, config: BriefingConfig | None = None) -> Briefing:
        """The session-start briefing block and the ids it rendered."""
        return briefing.run(
            req,
            planes=self.planes,
            config=self._resolved(BriefingConfig, config),
            prompt=self.config(PromptConfig)[0],
            corpora=self.corpora,
        )

    def prompt_recall(
        self, req: PromptRequest, *, config: PromptConfig | None = None
    ) -> PromptResult:
        """The per-prompt recall block ("" when nothing clears the floors)."""
        resolved = self._resolved(PromptConfig, config)
        return prompt.run(req, planes=self.planes, corpora=self.corpora, config=resolved)

    def dedup_hint(
        self,
        *,
        project: str | None,
        name: str,
        description: str,
        body: str = "",
        exclude: Collection[str] = (),
        kind: str = "fact",
        config: DedupConfig | None = None,
        pending: Sequence[tuple[str, Vector]] = (),
        item: str = MEMORY,
        title: str = "",
    ) -> Hit | None:
        """The most similar active in-scope memory over the threshold, or None. Advisory.
        `pending`: memories not in the vector plane yet, with their vectors (`dedup.hint`);
        `item` NOTE: the most similar note to a note (`name` its slug, `title` its title)."""
        return dedup.hint(
            self.planes,
            project=project,
            name=name,
            description=description,
            body=body,
            exclude=exclude,
            kind=kind,
            config=self._resolved(DedupConfig, config),
            pending=pending,
            item=item,
            title=title,
        )
