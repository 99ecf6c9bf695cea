"""`bench smoke`: quality and speed on a tiny generated corpus; every figure checked.

Self-contained (no eval data): the corpus comes from `corpus.generate`, and
the quality queries are word runs taken from its memories, each with that
memory as gold. Values are not judged, only that each figure exists and is
a finite number.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from console.bench import report, speed
from console.bench.corpus import Corpus, generate
from console.bench.isolate import run_worker
from console.bench.metrics import METRICS

RRF = {"fusion": "rrf", "k": 60, "channel_weights": {"fts": 1, "semantic": 1}}
SYSTEMS = ("fts", "vector", "default", "rrf60", "peer:lancedb-hybrid", "peer:sqlite-fts5")
SPEED_OPS = (
    *(f"palette {n}-letter" for n in (1, 2, 3, 4)),
    "search hybrid",
    "recall budget 1000",
    "recall hot tier",
    "recall cold tier",
    "briefing",
    "prompt recall",
    "prompt recall, corpora rebuilding",
    "prompt recall, corpora refreshing",
    "raw embed",
    "raw fts",
    "raw vector",
)


def quality_queries(corpus: Corpus, n: int, *, seed: int = 3) -> list[dict[str, Any]]:
    """Eval-format queries: 4-6 words of a memory's body, that memory as gold."""
    rng = random.Random(seed)
    live = [m for m in corpus.memories if "invalid_at" not in m and m["project"]]
    out = []
    for i, m in enumerate(rng.sample(live, n)):
        words = [w for w in m["body"].split() if "[[" not in w]
        start = rng.randrange(max(1, len(words) - 6))
        text = " ".join(words[start : start + rng.randint(4, 6)])
        out.append({"id": f"smoke:q{i}", "project": m["project"], "query": text, "gold": [m["id"]]})
    return out


def run(
    write: Callable[[str], Any], *, size: int = 200, queries: int = 20
) -> tuple[list[str], dict[str, Any]]:
    """Run both; return (missing figures, the combined body)."""
    root = Path(tempfile.mkdtemp(prefix="recall-smoke-"))
    try:
        corpus = generate(size, projects=3, seed=5)
        dataset = corpus.write(root / "memories.jsonl")
        qpath = root / "queries.jsonl"
        qpath.write_text("".join(json.dumps(q) + "\n" for q in quality_queries(corpus, queries)))
        spec = {"dataset": str(dataset), "queries": str(qpath), "variants": {"rrf60": RRF}}
        quality = run_worker("quality", spec)
        write(report.quality_tables(quality))
        timing = speed.run(size=size, backends=list(speed.BACKENDS), queries=queries)
        write(speed.tables(timing))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    body = {"quality": quality, "speed": timing}
    problems = missing(body)
    write(f"report: {report.write('smoke', str(size), body)}")
    return problems, body


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def missing(body: Mapping[str, Any]) -> list[str]:
    """Every expected figure that is absent or not a finite number."""
    problems: list[str] = []
    systems = body.get("quality", {}).get("systems", {})
    for name in SYSTEMS:
        overall = systems.get(name, {}).get("overall", {})
        problems += [f"quality {name} {m}" for m in METRICS if not _number(overall.get(m))]
        if not overall.get("n"):
            problems.append(f"quality {name}: no queries scored")
    if not body.get("quality", {}).get("engine_check", {}).get("checked"):
        problems.append("quality engine_check")
    timing = body.get("speed", {})
    for key in ("ingest_per_s", "reindex_s"):
        if not _number(timing.get("ingest", {}).get(key)):
            problems.append(f"speed ingest {key}")
    for backend in speed.BACKENDS:
        b = timing.get("backends", {}).get(backend, {})
        for op in SPEED_OPS:
            p = b.get("ops", {}).get(op, {})
            problems += [
                f"speed {backend} {op} {q}" for q in ("p50", "p95", "p99") if not _number(p.get(q))
            ]
        for key in ("peak_rss_mb", "vector_copy_vectors_mb"):
            if not _number(b.get(key)) or b.get(key) <= 0:
                problems.append(f"speed {backend} {key}")
        stages = b.get("memory_stages_mb", {})
        for stage in ("started", "model", "vector copy", "PromptRecall corpora"):
            if not _number(stages.get(stage)):
                problems.append(f"speed {backend} memory stage {stage}")
        if not _number(b.get("recall_over_raw", {}).get("mean")):
            problems.append(f"speed {backend} recall_over_raw")
    writers = timing.get("writers", {})
    problems += [
        f"speed writers write_ms {q}"
        for q in ("p50", "p95", "p99")
        if not _number((writers.get("write_ms") or {}).get(q))
    ]
    if not _number((writers.get("lag_ms") or {}).get("p95")):
        problems.append("speed writers lag_ms p95")
    if writers.get("errors") or writers.get("findable") != writers.get("acknowledged"):
        problems.append(f"speed writers: errors or writes not found ({writers})")
    paced = writers.get("paced") or {}
    if not _number((paced.get("write_ms") or {}).get("p99")) or paced.get("errors") != 0:
        problems.append(f"speed writers paced: no write_ms p99 or errors ({paced})")
    if writers.get("drift") != 0:
        problems.append(f"speed writers: drift {writers.get('drift')} after the writes")
    first = timing.get("backends", {}).get("tantivy", {})
    if not _number(first.get("api_batch", {}).get("per_s")):
        problems.append("speed tantivy api_batch per_s")
    if not _number(timing.get("backends", {}).get("whoosh", {}).get("text_reindex_s")):
        problems.append("speed whoosh text_reindex_s")
    return problems
