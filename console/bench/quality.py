"""Retrieval quality (worker side): ours, variants, ablations and peers.

What is evaluated: the shared candidate-and-fusion core that Recall runs,
called on the real adapters of the throwaway data directory with each query
scoped to its project exactly as Recall scopes it (`recall_filter`), and
ranked to 100 (MRR@100). The candidates come from Recall's own rank channels
(`recall.channels`: full text, and the semantic channel with the config's
reading of its pool, `recall.context`), each asked at the config's `depth`
as `recall.recall.run` asks them: the full-text plane re-scores its best
`max(depth, RESCORE_POOL)` with BM25F, so a leg read deeper and cut would
rank differently from Recall (it did, up to 2026-12-07: read at 100 and cut
to 50, the turns said R@10 0.816 where Recall ranked 0.810). Each channel is
asked once per query, depth and reading, whichever configs share them. The
"vector" row is the plain cosine ranking (one vector per memory) at depth
100; the "fts" row the full-text channel alone at the base depth. This is
Recall's ranking minus what does not apply to eval data (token packing,
favourite and usage boosts, graph expansion); `engine_check` confirms on the
first `check_queries` queries (25 unless the spec says) that `Engine.recall`
(limit 100, huge budget, no graph seeds) returns the same top 10 as the core
for the default config.

Variants are JSON overrides of RecallConfig (`fusion`, `k`, `depth`,
`channel_weights`, `session_prior`) plus two harness keys that swap the
full-text leg for another index over the same rows: `"context": false`
(built without the previous turns) and `"bm25f": false` (tantivy's own BM25,
b 0.75, instead of the BM25F re-scoring). The fused runs apply the session
prior from each memory's session, as Recall does after hydration.

Routing (recall/routing.py): every run routes each query as Recall does
(its config's `routing`, e.g. a variant `{"routing": "hybrid"}`), and every
report holds `routing-auto`, `routing-hybrid`, `routing-vector` and
`routing-bm25` (the base config under each mode) and the classes `auto`
gave the queries (`routing_classes`, overall and per category).

Ablations (unless the spec says `"ablate": false`): each component off on
its own (`-nocontext`, `-nobm25f` and, on tantivy, `-noproximity`,
`-nopassage`, `-nosentence` (a long text's best sentence-sized window,
`recall.bm25.score_document`), `-noenglish` (the idf's prior,
`recall.background`) and `-noidf2` (each query word weighted idf^0.5 on top of
its idf, as before 2026-12-07, not idf^1: `Bm25F.query_idf_power`) for the
fts channel and the default, `-noprior` (the session prior) for the default,
and where turns end by asking, `-noasking` with `asking_turns` on, or
`default-asking` (at `ASKING_TRIAL`) while it is off),
and on every set
the session neighbourhood (Dakera 004, `console/bench/neighbours.py`) off
(`session-off`), as a fused channel (`session-channel`) and as associated
items listed below their hit (`session-assoc`; a variant picks that mode with
`"session_as": "associated"`).
Every fused run expands its top hits to their session neighbours as Recall
does when the config has them on. `ci` holds paired bootstrap 95% intervals of
the default minus each peer (`metrics.paired_bootstrap`).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from django.utils import timezone

from console import selectors, wiring
from console.bench import loading, metrics, neighbours, peers, weighing
from console.bench.queries import Query, read_queries
from console.indexing import memory_docs
from console.models import Edge, Memory, Passages
from recall import bm25
from recall.channels import FTS, SEMANTIC
from recall.channels.fulltext import FullText
from recall.channels.semantic import Semantic
from recall.config import RecallConfig, from_mapping
from recall.context import reading as context_reading
from recall.fusion import asking_turns, fuse, session_prior
from recall.indexes.pg_text_index import PgTextIndex
from recall.indexes.tantivy_index import TantivyIndex
from recall.planes import Planes
from recall.ports import TextIndex
from recall.query import clean
from recall.requests import RecallRequest
from recall.routing import ROUTINGS, classify, route
from recall.scope import recall_filter
from recall.types import EPISODIC_KINDS, Candidate, ChannelQuery, Context, Filter, asks

DEPTH = 100
CHECK_QUERIES = 25
# The `asking_turns` weight the "default-asking" row tries while the knob is off.
ASKING_TRIAL = 1.0
# "session_as": "associated" uses the session neighbours as associated items
# listed below their hit instead of as a fused channel (console/bench/neighbours.py).
# "clock": "latest" weighs decay against each project's newest memory (console/bench/weighing.py).
HARNESS_KEYS = (
    "context", "bm25f", "proximity", "passage", "english", "sentence", "idf2", "session_as",
    "clock",
)  # fmt: skip


class Leg(NamedTuple):
    """Which full-text index a run reads: session context, the BM25F re-score
    (tantivy), its pairs of neighbouring query words, its reading of long
    texts (passages, and every holder of a rare query word re-scored), its
    idf's prior of English at large (`recall.background`), and its best
    sentence-sized window of a long text, and its query words weighted by idf
    squared (`Bm25F.query_idf_power` 1; off: 0.5)."""

    context: bool = True
    bm25f: bool = True
    proximity: bool = True
    passage: bool = True
    english: bool = True
    sentence: bool = True
    idf2: bool = True


MAIN = Leg()
NOCONTEXT, NOBM25F, NOPROXIMITY = Leg(context=False), Leg(bm25f=False), Leg(proximity=False)
NOPASSAGE, NOENGLISH, NOSENTENCE = Leg(passage=False), Leg(english=False), Leg(sentence=False)
NOIDF2 = Leg(idf2=False)


def variant_config(base: RecallConfig, values: Mapping[str, Any]) -> tuple[RecallConfig, Leg]:
    """A RecallConfig override (strict: unknown keys raise) and its full-text leg."""
    leg = Leg(*(bool(values.get(key, True)) for key in Leg._fields))
    fields = {k: v for k, v in values.items() if k not in HARNESS_KEYS}
    return from_mapping(base, fields), leg


def _variant_index(root: Path, leg: Leg) -> TextIndex:
    """The configured full-text backend over the same docs, with or without
    session context and (tantivy) the BM25F re-scoring, its word pairs and passages."""
    cls: Any = type(wiring.text_index())
    flags = "".join(str(int(flag)) for flag in leg)
    if issubclass(cls, PgTextIndex):  # a table of its own beside the configured one
        index: TextIndex = cls(table=f"recall_text_{flags}")
        index.clear()
    else:
        options: dict[str, Any] = {} if leg.bm25f else {"rescore": False}
        params = bm25.Bm25F()
        if not leg.proximity:
            params = replace(params, proximity=0.0)
        if not leg.passage:
            params = replace(params, passage=0.0)
        if not leg.english:
            params = replace(params, prior_rows=0.0)
        if not leg.sentence:
            params = replace(params, sentence_mix=0.0)
        if not leg.idf2:
            params = replace(params, query_idf_power=0.5)
        if params != bm25.Bm25F():
            options["params"] = params
        if not leg.passage:  # long texts as before: whole, and only if tantivy's top 50
            options["rare_df"] = 0
        index = cls(root / f"text-{flags}", **options)
    rows = Memory.objects.order_by("pk")
    ids = list(rows.values_list("pk", flat=True))
    for start in range(0, len(ids), 512):
        docs = memory_docs(Memory.objects.filter(pk__in=ids[start : start + 512]))
        index.upsert(docs if leg.context else [replace(d, context=()) for d in docs])
    return index


def _ranked(ids: Sequence[str], ext: Mapping[str, str]) -> list[str]:
    return [ext.get(i, i) for i in ids[: metrics.CUTOFF]]


def evaluate(spec: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """The worker job: import, query, score. Returns the report body."""
    loading.migrate()
    load = loading.import_path(Path(spec["dataset"])) | loading.vector_copy_ready()
    ext = loading.external_ids()
    sessions = dict(  # the session prior reads turns only (`recall.types.conversation`)
        Memory.objects.exclude(session_id="")
        .filter(kind__in=EPISODIC_KINDS)
        .values_list("pk", "session_id")
    )
    asking = {  # the turns that ask (`recall.types.asks`), lowered by `asking_turns`
        pk for pk, r in wiring.planes().store.hydrate(list(sessions)).items() if asks(r)
    }
    queries = read_queries(Path(spec["queries"]), spec.get("limit_queries"))
    checks = int(spec.get("check_queries") or CHECK_QUERIES)
    engine = wiring.engine()
    planes = wiring.planes()
    base: RecallConfig = selectors.config_base("recall")
    raw: dict[str, Any] = {"default": {}} | dict(spec.get("variants", {}))
    configs = {name: variant_config(base, values) for name, values in raw.items()}
    ablate = bool(spec.get("ablate", True))
    has_sessions = Memory.objects.filter(session_order__isnull=False).exists()
    ablations: dict[str, tuple[RecallConfig, Leg]] = {}
    if ablate:
        ablations["default-nobm25f"] = (base, NOBM25F)
        if isinstance(planes.text, TantivyIndex):  # the only plane with pairs and passages
            ablations["default-noproximity"] = (base, NOPROXIMITY)
            ablations["default-nopassage"] = (base, NOPASSAGE)
            ablations["default-noenglish"] = (base, NOENGLISH)
            ablations["default-nosentence"] = (base, NOSENTENCE)
            ablations["default-noidf2"] = (base, NOIDF2)
        if has_sessions:
            ablations["default-nocontext"] = (base, NOCONTEXT)
        if sessions:
            ablations["default-noprior"] = (replace(base, session_prior=0.0), MAIN)
        if asking and base.asking_turns:
            ablations["default-noasking"] = (replace(base, asking_turns=0.0), MAIN)
        elif asking:  # off by default: the row shows what it would do
            ablations["default-asking"] = (replace(base, asking_turns=ASKING_TRIAL), MAIN)
        if has_sessions:  # the semantic channel's turns in context (recall/context.py)
            ablations["default-nocontextmix"] = (replace(base, context_mix=0.0), MAIN)
        if Passages.objects.exists():  # long memories read by sentence (recall/passages.py)
            ablations["default-nopassages"] = (replace(base, passage_mix=0.0), MAIN)
        # The session neighbourhood (Dakera 004), on every set: off, and as associated items.
        ablations["session-off"] = (replace(base, session_neighbours=False), MAIN)
        ablations["session-channel"] = (replace(base, session_neighbours=True), MAIN)
        ablations["session-assoc"] = (replace(base, session_neighbours=True), MAIN)
    modes = {name: str(values.get("session_as", "channel")) for name, values in raw.items()}
    clocks = {name: _clock(values, queries) for name, values in raw.items()}
    modes["session-assoc"] = "associated"
    wanted = {leg for _, leg in (*configs.values(), *ablations.values())} - {MAIN}
    others = {leg: _variant_index(root, leg) for leg in sorted(wanted)}

    texts = [clean(q.text) for q in queries]
    for mode in ROUTINGS:  # each routing mode over the base config
        configs[f"routing-{mode}"] = (replace(base, routing=mode), MAIN)
    wheres = [recall_filter(planes.store, project=q.project) for q in queries]
    lists = Lists(planes, texts, wheres, {MAIN: planes.text, **others})
    spent = lists.spent
    runs: dict[str, list[list[str]]] = {
        "fts": [_ranked([c.id for c in f], ext) for f in lists.fts(MAIN, base.depth)],
        "vector": [_ranked([c.id for c in f], ext) for f in lists.plain],
    }
    for leg, suffix in (
        (NOCONTEXT, "nocontext"),
        (NOBM25F, "nobm25f"),
        (NOPROXIMITY, "noproximity"),
        (NOPASSAGE, "nopassage"),
        (NOENGLISH, "noenglish"),
        (NOSENTENCE, "nosentence"),
        (NOIDF2, "noidf2"),
    ):
        if leg in others and f"default-{suffix}" in ablations:
            found = lists.fts(leg, base.depth)
            runs[f"fts-{suffix}"] = [_ranked([c.id for c in f], ext) for f in found]
    for name, (config, leg) in {**configs, **ablations}.items():
        mode = modes.get(name, "channel")
        runs[name] = _fused_runs(
            lists.fts(leg, config.depth), lists.semantic(context_reading(config), config.depth),
            config, ext, sessions, texts, wheres, mode, clocks.get(name), asking,
        )  # fmt: skip
    qvecs = lists.vectors

    peer_runs, peer_ms = peers.run_all(queries, qvecs, root, skip=spec.get("skip_peers", False))
    runs |= peer_runs
    categories = [q.category for q in queries]
    systems = {}
    per_query_by = {}
    for name, ranked in runs.items():
        per_query = [metrics.score(r, q.gold) for r, q in zip(ranked, queries, strict=True)]
        per_query_by[name] = per_query
        systems[name] = metrics.breakdown(per_query, categories)
    ci = {
        name: metrics.paired_bootstrap(per_query_by["default"], per_query_by[name], categories)
        for name in peer_runs
    }
    n = max(len(queries), 1)
    return {
        "dataset": spec["dataset"],
        "queries": spec["queries"],
        "evaluated": "candidate+fusion core (see console/bench/quality.py)",
        "load": load,
        "n_queries": len(queries),
        "base_config": {
            "fusion": base.fusion,
            "k": base.k,
            "depth": base.depth,
            "channel_weights": dict(base.channel_weights),
            "session_prior": base.session_prior,
        },
        "variants": raw,
        "systems": systems,
        "routing_classes": _classes(texts, categories),
        "ci": ci,
        "first_gold_rank": {
            name: [metrics.first_rank(r, q.gold) for r, q in zip(ranked, queries, strict=True)]
            for name, ranked in runs.items()
        },
        "latency_ms_mean": {k: round(v * 1000 / n, 3) for k, v in spent.items()} | peer_ms,
        "engine_check": _engine_check(
            engine, queries[:checks], runs["default"][:checks], base, ext
        ),
    }


def _classes(texts: Sequence[str], categories: Sequence[Any]) -> dict[str, dict[str, int]]:
    """How many queries `auto` put in each class, overall and per category."""
    out: dict[str, dict[str, int]] = {}
    for text, category in zip(texts, categories, strict=True):
        found = classify(text)
        groups = ["overall"] + ([f"cat{category}"] if category is not None else [])
        for group in groups:
            out.setdefault(group, {}).setdefault(found, 0)
            out[group][found] += 1
    return out


class Lists:
    """Each query's candidates from Recall's own rank channels, asked as
    `recall.recall.run` asks them (`recall.gather`): the full-text channel over
    a text index (`Leg`) at a depth, the semantic channel with a reading of its
    pool (`recall.context`) at a depth. Each is asked once per query and kept,
    so the configs that share it read it once. `plain`: the plain cosine
    ranking at `DEPTH` (the "vector" row). `spent`: seconds in the main full-text
    leg at its first depth, in embedding, and in the plain vector search."""

    def __init__(
        self,
        planes: Planes,
        texts: Sequence[str],
        wheres: Sequence[Filter],
        indexes: Mapping[Leg, TextIndex],
    ) -> None:
        self._planes, self._texts, self._wheres = planes, texts, wheres
        self._indexes = indexes
        self._fts: dict[tuple[Leg, int], list[list[Candidate]]] = {}
        self._semantic: dict[tuple[Context | None, int], list[list[Candidate]]] = {}
        self.spent = {"fts": 0.0, "embed": 0.0, "vector": 0.0}
        embedder, vectors = planes.embedder, planes.vectors
        assert embedder is not None and vectors is not None, "quality needs vectors"
        self.vectors: list[Any] = []
        self.plain: list[list[Candidate]] = []
        for text, where in zip(texts, wheres, strict=True):
            t0 = time.perf_counter()
            vec = np.asarray(embedder.embed([text])[0], dtype=np.float32)
            t1 = time.perf_counter()
            self.plain.append(vectors.search(vec, where=where, limit=DEPTH))
            self.spent["embed"] += t1 - t0
            self.spent["vector"] += time.perf_counter() - t1
            self.vectors.append(vec)

    def fts(self, leg: Leg, depth: int) -> list[list[Candidate]]:
        """Each query's full-text candidates over `leg`'s index at `depth`."""
        if (leg, depth) not in self._fts:
            timed = leg == MAIN and not any(lg == MAIN for lg, _ in self._fts)
            channel = FullText(replace(self._planes, text=self._indexes[leg]))
            found = []
            for text, where in zip(self._texts, self._wheres, strict=True):
                t0 = time.perf_counter()
                found.append(channel.candidates(ChannelQuery(text), where, depth, ()))
                if timed:
                    self.spent["fts"] += time.perf_counter() - t0
            self._fts[(leg, depth)] = found
        return self._fts[(leg, depth)]

    def semantic(self, reading: Context | None, depth: int) -> list[list[Candidate]]:
        """Each query's semantic candidates under `reading` at `depth`."""
        if (reading, depth) not in self._semantic:
            channel = Semantic(self._planes)
            self._semantic[(reading, depth)] = [
                channel.candidates(ChannelQuery(text, vector=vec, context=reading), where,
                                   depth, ())
                for text, vec, where in zip(self._texts, self.vectors, self._wheres, strict=True)
            ]  # fmt: skip
        return self._semantic[(reading, depth)]


def _fused_runs(
    fts_lists: Sequence[list[Candidate]],
    semantic: Sequence[list[Candidate]],
    config: RecallConfig,
    ext: Mapping[str, str],
    sessions: Mapping[str, str],
    texts: Sequence[str],
    wheres: Sequence[Filter],
    mode: str = "channel",
    clock: Sequence[datetime] | None = None,
    asking: Collection[str] = frozenset(),
) -> list[list[str]]:
    """Each query's ranking under `config` from its channels' lists (`Lists`, at the
    config's depth and reading), routed as Recall routes it, weighed by importance,
    worth and decay as Recall weighs it (`clock`: each query's "now"); the turns
    in `asking` lowered by the config's `asking_turns` once the session
    neighbours are fused in (lowered before, a question would no longer bring in
    the turn that answers it: LoCoMo turns 0.812 / 0.622 against 0.826 / 0.650)."""
    out = []
    store = wiring.planes().store
    now = timezone.now()
    for i, (fts, sem) in enumerate(zip(fts_lists, semantic, strict=True)):
        weights = route(
            config.routing, texts[i], dict(config.channel_weights), config.routing_weights
        ).weights
        both = ((FTS, fts), (SEMANTIC, sem))
        channels = {name: found for name, found in both if weights[name] > 0}
        fused = fuse(channels, method=config.fusion, weights=weights, k=config.k)
        fused = session_prior(fused, sessions, weight=config.session_prior)
        if mode == "associated":  # the session neighbourhood (console/bench/neighbours.py)
            fused = asking_turns(fused, asking, weight=config.asking_turns)
            fused = neighbours.below(fused, config, where=wheres[i])
        else:  # the turns that ask lowered after the neighbours are fused in, as Recall does
            fused = neighbours.expand(
                fused, channels, config, where=wheres[i], sessions=sessions, asking=asking
            )
        fused = weighing.weighed(fused, config, store=store, now=clock[i] if clock else now)
        out.append(_ranked([f.id for f in fused], ext))
    return out


def _clock(values: Mapping[str, Any], queries: Sequence[Query]) -> list[datetime] | None:
    """Each query's "now" for a variant's `clock` key (None: the wall clock)."""
    mode = str(values.get("clock", "now"))
    if mode not in weighing.CLOCKS:
        raise ValueError(f"clock must be one of {', '.join(weighing.CLOCKS)}, not {mode!r}")
    if mode == "now":
        return None
    latest = weighing.latest_by_project()
    return [latest.get(q.project) or timezone.now() for q in queries]


def _engine_check(
    engine: Any,
    queries: Sequence[Query],
    core: Sequence[Sequence[str]],
    base: RecallConfig,
    ext: Mapping[str, str],
) -> dict[str, Any]:
    """Engine.recall's top 10 against the core's (`core`: the default's rankings of
    `queries`), the graph off as the core has it; and the graph channel's effect: the
    default (graph on) against graph_seeds=0 (off). `differ`: the queries whose top
    10 differ, by their place in the set."""
    config = replace(base, graph_seeds=0)
    same = graph_same = 0
    differ = []
    for n, (q, expected) in enumerate(zip(queries, core, strict=True)):
        request = RecallRequest(query=q.text, project=q.project, budget=100_000, limit=100)
        pack = engine.recall(request, config=config)
        got = _ranked([h.id for h in pack.items], ext)
        if got[:10] == list(expected[:10]):
            same += 1
        else:
            differ.append(n)
        on = engine.recall(request, config=base)
        graph_same += _ranked([h.id for h in on.items], ext)[:10] == got[:10]
    edges = Edge.objects.count()
    return {
        "checked": len(queries), "same_top10": same, "graph_same_top10": graph_same,
        "edges": edges, "differ": differ[:50],
    }  # fmt: skip
