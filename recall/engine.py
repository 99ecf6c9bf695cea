"""The engine: one object holding the adapters, one method per retrieval.

Built once by the composition root (`console/wiring.py`) with the adapters
and the base configs (defaults < environment/settings, see
`recall.config.from_mapping`). A method called without `config` uses its
base config with the console's override row decoded over it at call time
(`overrides("search_config")`, `overrides("briefing_config")`), so a saved
override applies to the next call without a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from recall import briefing as _briefing
from recall import dedup as _dedup
from recall import prompt as _prompt
from recall import recall as _recall
from recall import search as _search
from recall.candidates import EmbedCache, recall_filter
from recall.config import (
    BriefingConfig,
    C,
    DedupConfig,
    PromptConfig,
    RecallConfig,
    SearchConfig,
    decode_over,
)
from recall.ports import Embedder, MemoryStore, TextIndex, TokenCounter, VectorIndex
from recall.requests import BriefingRequest, PromptRequest, RecallRequest, SearchRequest
from recall.results import Briefing, ContextPack, Hit, PromptResult, SearchResult
from recall.tokens import ByteEstimate
from recall.types import Record

Overrides = Callable[[str], Mapping[str, Any] | str | None]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Engine:
    """Recall, Search, Briefing, PromptRecall and DedupHint over one set of adapters."""

    text: TextIndex
    store: MemoryStore
    vectors: VectorIndex | None = None
    embedder: Embedder | None = None
    tokens: TokenCounter = field(default_factory=ByteEstimate)
    clock: Callable[[], datetime] = utc_now
    recall_config: RecallConfig = field(default_factory=RecallConfig)
    search_config: SearchConfig = field(default_factory=SearchConfig)
    briefing_config: BriefingConfig = field(default_factory=BriefingConfig)
    prompt_config: PromptConfig = field(default_factory=PromptConfig)
    dedup_config: DedupConfig = field(default_factory=DedupConfig)
    # Reads a console override row by key ("recall_config", "search_config",
    # "briefing_config", "prompt_config"); None = no override layer.
    overrides: Overrides | None = None
    # False rebuilds a stale prompt corpus synchronously (tests).
    background_rebuild: bool = True
    embed_cache: EmbedCache = field(default_factory=EmbedCache)
    corpora: _prompt.CorpusCache = field(init=False)

    def __post_init__(self) -> None:
        self.corpora = _prompt.CorpusCache(clock=self.clock, background=self.background_rebuild)

    def _config(self, key: str, base: C) -> C:
        if self.overrides is None:
            return base
        try:
            row = self.overrides(key)
        except Exception:  # an unreadable row falls back to the base
            row = "\x00unreadable"
        return decode_over(base, row)[0]

    def recall(self, req: RecallRequest, *, config: RecallConfig | None = None) -> ContextPack:
        """Agent Recall: a ranked, token-budgeted, scope-guarded context pack."""
        return _recall.run(self, req, config or self._config("recall_config", self.recall_config))

    def search(self, req: SearchRequest, *, config: SearchConfig | None = None) -> SearchResult:
        """Console Search: every hit up to the limit, no budget."""
        return _search.run(self, req, config or self._config("search_config", self.search_config))

    def briefing(self, req: BriefingRequest, *, config: BriefingConfig | None = None) -> Briefing:
        """The session-start briefing block and the ids it rendered."""
        base = self.briefing_config
        return _briefing.run(self, req, config or self._config("briefing_config", base))

    def prompt_recall(
        self, req: PromptRequest, *, config: PromptConfig | None = None
    ) -> PromptResult:
        """The per-prompt recall block ("" when nothing clears the floors)."""
        config = config or self._config("prompt_config", self.prompt_config)
        records = self.prompt_matches(req.project, req.prompt, config=config)
        return PromptResult(_prompt.render(records, config), tuple(r.id for r in records))

    def prompt_matches(
        self, project: str | None, prompt: str, *, config: PromptConfig | None = None
    ) -> list[Record]:
        """Memories in scope that clear PromptRecall's floors, best first."""
        config = config or self._config("prompt_config", self.prompt_config)
        if not prompt.strip():
            return []
        where = recall_filter(self.store, project=project, scope="memories")

        def build() -> _prompt.Corpus:
            records = self.store.browse(where=where, limit=config.corpus_limit)
            return _prompt.build_corpus(records, min_chars=config.min_word_chars)

        corpus = self.corpora.get((where, config.corpus_limit), build, ttl=config.ttl_seconds)
        found = [r for r, _ in _prompt.match(corpus, prompt, config)]
        return [
            r
            for r in found
            if where.admits(project=r.project, active=r.active, item=r.item, kind=r.kind)
        ]

    def dedup_hint(
        self,
        *,
        project: str | None,
        name: str,
        description: str,
        body: str = "",
        exclude_id: str | None = None,
    ) -> Hit | None:
        """The most similar active in-scope memory (cosine >= 0.83), or None. Advisory."""
        return _dedup.hint(
            self,
            project=project,
            name=name,
            description=description,
            body=body,
            exclude_id=exclude_id,
            config=self.dedup_config,
        )
