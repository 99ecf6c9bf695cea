"""Speed on a synthetic corpus (parent side and worker side).

Per backend, two child processes over one throwaway data directory:
- `speed-ingest` (first backend only; the others reuse its database):
  migrate, `import_memories` of the generated corpus with embedding (the
  ingest rate), then `indexing.rebuild` (what `manage.py reindex` runs), then
  the vector copy's snapshot an idle index worker writes (serving processes
  map it: recall/indexes/copy_snapshot.py).
- `speed-serve`: a fresh process that only serves, so its peak RSS (VmHWM
  from /proc/self/status) is the serving process's. For a backend other
  than the first it first builds its own full-text plane from the database
  (timed: that backend's text-plane ingest/reindex). Then, after warm-up,
  p50/p95/p99 of: the palette THROUGH THE VIEW (Django test Client, logged
  in, HTMX GET of /palette/?q=) for 1- to 4-letter last words (and for 1
  and 2 letters again with no rendered answer kept, every look a first); hybrid
  Search; Recall at budget 1000 (also past the hot tier, through the cold
  path, and with an attribute filter); Briefing; PromptRecall; and the raw parts
  (query embedding, full-text query, vector query) on the adapters for the
  same queries as Recall, to give Recall end-to-end / sum of raw parts.
- `speed-writers` (first backend): the production server and the index
  worker on the same deployment, agents writing at once
  (console/bench/writers.py).
- `speed-model-change` (with `model_change`): `indexing.rebuild` on a copy
  of the ingested deployment with the embedder renamed
  (console/bench/renamed.py), so every text is embedded again while both
  planes are written: what `manage.py reindex` costs after a model change.
Query texts are distinct and the embedder's own LRU cache is off, so
embedding is paid on every uncached call; "recall, cached" repeats the
Recall queries once their embeddings sit in the engine's cache.
"""

from __future__ import annotations

import json
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from console.bench import report
from console.bench.corpus import Corpus, generate, keystrokes
from console.bench.corpus import queries as queries_for
from console.bench.metrics import percentiles

TIER_BUDGETS = {"hot": 5, "warm": 15, "cold": 200}  # ms, seed 003's latency budget
BACKENDS = {
    "tantivy": "recall.indexes.tantivy_index.TantivyIndex",
    "whoosh": "recall.indexes.whoosh_index.WhooshIndex",
}
WARMUP = 10
WRITES, WRITERS = 2000, 8  # the concurrent-writers row (console/bench/writers.py)
_warmup = WARMUP  # set per serving run (small runs warm up less)


def backends(choice: str) -> list[str]:
    return list(BACKENDS) if choice == "both" else [choice]


def run(
    *,
    size: int,
    backends: Sequence[str],
    queries: int = 200,
    env: Mapping[str, str] | None = None,
    moved_to: Mapping[str, str] | None = None,
    model_change: bool = False,
) -> dict[str, Any]:
    """Generate, ingest once, serve once per backend; the report body.

    `env` (the `postgres` profile's database) goes to every child; a backend
    not in BACKENDS ("postgres") is the profile's own planes. `moved_to` (a
    `postgres` profile's environment) adds that profile beside the embedded
    backends on the same corpus: the ingested deployment is moved there as
    an operator would (`migrate_data`: rows copied, planes rebuilt with the
    LanceDB vectors reused), then served like the others. `model_change`
    adds the reindex after a model change, on a copy of the ingested
    deployment (`speed-model-change`).
    """
    from console.bench.isolate import run_worker

    root = Path(tempfile.mkdtemp(prefix="recall-speed-"))
    try:
        corpus = generate(size)
        path = corpus.write(root / "corpus.jsonl")
        workload = root / "workload.json"
        workload.write_text(json.dumps(_workload(corpus, queries)))
        del corpus  # the serving process must not hold the corpus (its RSS is a figure)
        spec = {"corpus": str(path), "workload": str(workload), "queries": queries}
        body: dict[str, Any] = {"size": size, "queries": queries, "backends": {}}
        body["ingest"] = run_worker(
            "speed-ingest", spec, env=_env(backends[0], env), data_dir=root
        ) | {"backend": backends[0]}
        if model_change:
            body["model_change"] = _model_change(root, spec, _env(backends[0], env))
        if moved_to is not None:  # before serving: the serving runs write memories of their own
            source = f"sqlite:///{root / 'data' / 'recall.sqlite3'}"
            body["moved"] = run_worker(
                "speed-move", spec | {"source": source}, env=moved_to, data_dir=root
            )
        for name in backends:
            first = name == backends[0]
            spec_b = spec | {"build_text": not first, "api_ingest": min(size, 2000) if first else 0}
            body["backends"][name] = run_worker(
                "speed-serve", spec_b, env=_env(name, env), data_dir=root
            )
            if first:  # before another backend's serve writes to its own text plane only
                writes = {"writes": WRITES if size >= 10_000 else 100, "writers": WRITERS}
                body["writers"] = run_worker(
                    "speed-writers", spec | writes, env=_env(name, env), data_dir=root
                )
        if moved_to is not None:
            spec_b = spec | {"api_ingest": min(size, 2000)}
            body["backends"]["postgres"] = run_worker(
                "speed-serve", spec_b, env=moved_to, data_dir=root
            )
        return body
    finally:
        shutil.rmtree(root, ignore_errors=True)


def serve_kept(*, size: int, backend: str, queries: int, deployment: Path) -> dict[str, Any]:
    """Only the load and serve part, over a deployment kept in `deployment`.

    The first run generates and ingests the corpus there (`speed-ingest`, the
    slow part: 35 min at 100,000); every run then copies its data folder aside
    and runs `speed-serve` over the copy, so the serving process's own writes
    never reach the kept deployment and runs stay comparable. No API batch
    ingest, no writers job, no second backend: for the serving process's
    figures (its RSS, latencies) before and after a change.
    """
    from console.bench.isolate import run_worker

    deployment.mkdir(parents=True, exist_ok=True)
    corpus_path, ingested = deployment / "corpus.jsonl", deployment / "ingest.json"
    workload = deployment / f"workload-{queries}.json"
    kept = json.loads(ingested.read_text()) if ingested.exists() else None
    if kept is not None and (kept["size"], kept["backend"]) != (size, backend):
        raise ValueError(
            f"{deployment} holds {kept['size']} memories ingested with {kept['backend']}, "
            f"not {size} with {backend}: give another folder"
        )
    if kept is None or not workload.exists():
        corpus = generate(size)  # the same corpus every time (a fixed seed)
        if kept is None:
            corpus.write(corpus_path)
        workload.write_text(json.dumps(_workload(corpus, queries)))
        del corpus  # the children read it from the file
    spec = {"corpus": str(corpus_path), "workload": str(workload), "queries": queries}
    if kept is None:
        shutil.rmtree(deployment / "data", ignore_errors=True)  # an ingest cut short
        done = run_worker("speed-ingest", spec, env=_env(backend, None), data_dir=deployment)
        kept = done | {"backend": backend, "size": size}
        ingested.write_text(json.dumps(kept))
    root = Path(tempfile.mkdtemp(prefix="recall-speed-"))
    try:
        shutil.copytree(deployment / "data", root / "data", symlinks=True)
        # A copied plane is another folder: its snapshot is mapped but not followed by
        # its journal (`copy_journal`); the worker beside a restored deployment writes
        # a new one at its first idle pass, as this child does before serving.
        published = run_worker("speed-publish", {}, env=_env(backend, None), data_dir=root)
        serve_spec = spec | {"build_text": False, "api_ingest": 0}
        served = run_worker("speed-serve", serve_spec, env=_env(backend, None), data_dir=root)
        served |= published
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"size": size, "queries": queries, "ingest": kept, "backends": {backend: served}}


def _model_change(root: Path, spec: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The reindex after a model change, on a copy of the ingested deployment (the
    serving runs then use the original, its vectors of the configured model)."""
    from console.bench.isolate import run_worker

    copy = root / "model-change"
    shutil.copytree(root / "data", copy / "data")
    try:
        renamed = {"RECALL_EMBEDDER": "console.bench.renamed.NextModel"}
        return run_worker("speed-model-change", spec, env={**env, **renamed}, data_dir=copy)
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def _env(backend: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    chosen = {"RECALL_TEXT_INDEX": BACKENDS[backend]} if backend in BACKENDS else {}
    return {**chosen, **(extra or {})}


def _workload(corpus: Corpus, timed: int) -> dict[str, Any]:
    """Every query the serving worker times, derived here from the corpus."""
    n = timed + _warmup_for(timed)
    return {
        "keystrokes": {str(k): keystrokes(corpus, k, n) for k in (1, 2, 3, 4)},
        "pairs": queries_for(corpus, 4 * n),
        "projects": corpus.projects,
    }


def _warmup_for(timed: int) -> int:
    return min(WARMUP, max(1, timed // 4))


# --- worker side ----------------------------------------------------------------


def timed(call: Callable[[Any], Any], args: Sequence[Any]) -> list[float]:
    """ms per call over `args` (the first `_warmup` calls untimed)."""
    warmup = _warmup
    for arg in args[:warmup]:
        call(arg)
    out = []
    for arg in args[warmup:]:
        start = time.perf_counter()
        call(arg)
        out.append((time.perf_counter() - start) * 1000)
    return out


def vm(key: str) -> float:
    """A /proc/self/status figure (VmHWM, VmRSS) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _anonymous() -> float:
    """The process's anonymous memory in MB once freed heap is handed back."""
    from console import allocator

    allocator.trim()
    return vm("RssAnon")


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def worker(job: str, spec: Mapping[str, Any], root: Path) -> dict[str, Any]:
    if job == "speed-ingest":
        return _ingest(spec)
    if job == "speed-serve":
        return _serve(spec)
    if job == "speed-writers":
        from console.bench import writers

        return writers.run(spec, root)
    if job == "speed-move":
        return _move(spec)
    if job == "speed-model-change":
        return _reindex_model_change()
    if job == "speed-publish":
        return _publish()
    raise ValueError(f"unknown speed job {job!r}")


def _publish() -> dict[str, Any]:
    """The vector copy's snapshot written as the idle index worker writes it."""
    from console import indexing

    started = time.perf_counter()
    snapshot = indexing.vector_copy_publish()
    return {"vector_snapshot_s": round(time.perf_counter() - started, 2) if snapshot else None}


def _ingest(spec: Mapping[str, Any]) -> dict[str, Any]:
    from console import indexing
    from console.bench import loading
    from console.models import Memory

    load_before = loadavg()
    loading.migrate()
    load = loading.import_path(Path(spec["corpus"]))
    started = time.perf_counter()
    rebuilt = indexing.rebuild()
    reindex_s = time.perf_counter() - started
    # What the idle index worker beside a server writes (`index_worker --snapshot-every`):
    # the serving process maps it, as a gunicorn worker of that deployment would.
    return _publish() | {
        "memories": Memory.objects.count(),
        "superseded": Memory.objects.exclude(invalid_at=None).count(),
        "ingest_s": load["seconds"],
        "ingest_per_s": load["per_s"],
        "reindex_s": round(reindex_s, 2),
        "reindex_per_s": round(rebuilt.items / reindex_s, 1),
        "reindex_split_s": [round(rebuilt.writing_s, 2), round(rebuilt.maintaining_s, 2)],
        "loadavg": [load_before, loadavg()],
    }


def _reindex_model_change() -> dict[str, Any]:
    """`indexing.rebuild` with the renamed embedder: every text embedded again."""
    from console import indexing, wiring

    load_before = loadavg()
    wiring.use_batch_threads()  # as `manage.py reindex` (`services.bulk_mode`)
    started = time.perf_counter()
    rebuilt = indexing.rebuild()
    seconds = time.perf_counter() - started
    return {
        "items": rebuilt.items,
        "embedded": rebuilt.embedded,
        "reindex_s": round(seconds, 2),
        "embedded_per_s": round(rebuilt.embedded / seconds, 1),
        "reindex_split_s": [round(rebuilt.writing_s, 2), round(rebuilt.maintaining_s, 2)],
        "loadavg": [load_before, loadavg()],
    }


def _move(spec: Mapping[str, Any]) -> dict[str, Any]:
    """`manage.py migrate_data` of the ingested deployment onto this profile's database."""
    from django.conf import settings
    from django.db import DEFAULT_DB_ALIAS

    from console import indexing, migrating

    load_before = loadavg()
    started = time.perf_counter()
    source = migrating.connect(migrating.SOURCE, str(spec["source"]))
    try:
        rows = sum(migrating.copy(source, DEFAULT_DB_ALIAS).values())
    finally:
        migrating.close(source)
    copy_s = time.perf_counter() - started
    started = time.perf_counter()
    done = indexing.rebuild(known=indexing.vectors_in(Path(settings.RECALL["VECTOR_INDEX_DIR"])))
    rebuild_s = time.perf_counter() - started
    return {
        "rows": rows,
        "copy_s": round(copy_s, 2),
        "rebuild_s": round(rebuild_s, 2),
        "items": done.items,
        "embedded": done.embedded,
        "loadavg": [load_before, loadavg()],
    }


def _text_plane_build() -> dict[str, float]:
    """This backend's full-text plane from the database alone (no embedding)."""
    from console import indexing, wiring

    text = wiring.text_index()
    started = time.perf_counter()
    count = 0
    with indexing.in_bulk(text):  # as `indexing.rebuild` writes it
        text.clear()
        for docs in indexing._all_docs(indexing.REBUILD_BATCH):
            text.upsert(docs)
            count += len(docs)
    seconds = time.perf_counter() - started
    return {"text_reindex_s": round(seconds, 2), "text_docs_per_s": round(count / seconds, 1)}


def _serve(spec: Mapping[str, Any]) -> dict[str, Any]:
    from console import selectors, wiring
    from console.bench import loading
    from recall.indexes.hot_vectors import HotVectorIndex

    out: dict[str, Any] = {"loadavg_start": loadavg()}
    out |= _text_plane_build() if spec.get("build_text") else {}
    workload = json.loads(Path(spec["workload"]).read_text())
    warmup = _warmup_for(int(spec["queries"]))
    global _warmup
    _warmup = warmup
    n = int(spec["queries"]) + warmup
    embedder = wiring.embedder()
    if embedder is not None and hasattr(embedder, "cache_size"):
        embedder.cache_size = 0  # distinct texts anyway; the engine's own cache stays
    out["memory_stages_mb"] = memory = {"started": _anonymous()}
    if embedder is not None:
        embedder.embed(["warm up"])
        memory["model"] = _anonymous()
    out |= loading.vector_copy_ready()
    memory["vector copy"] = _anonymous()
    selectors.warm()  # as a gunicorn worker does on start (console/gunicorn.conf.py)
    memory["PromptRecall corpora"] = _anonymous()
    vectors = wiring.vector_index()
    if isinstance(vectors, HotVectorIndex):
        out["vector_copy_vectors_mb"] = round(vectors.held_bytes() / 2**20, 1)
    ops: dict[str, dict[str, float]] = {}
    palette = _palette_caller()
    out["palette_path"] = palette[0]
    for letters in (1, 2, 3, 4):
        ops[f"palette {letters}-letter"] = percentiles(
            timed(palette[1], workload["keystrokes"][str(letters)])
        )

    def first_look(query: str) -> Any:
        wiring.palette_answers().clear()
        return palette[1](query)

    for letters in (1, 2):  # the same with no answer kept (`selectors.palette_kept`)
        ops[f"palette {letters}-letter, nothing kept"] = percentiles(
            timed(first_look, workload["keystrokes"][str(letters)])
        )
    pairs = [(text, project) for text, project in workload["pairs"]]
    search_q, recall_q, prompt_q = pairs[:n], pairs[n : 2 * n], pairs[2 * n : 3 * n]
    ops["search hybrid"] = percentiles(
        timed(lambda p: selectors.memory_search(query=p[0]), search_q)
    )
    ops["search fast (selector)"] = percentiles(
        timed(lambda p: selectors.memory_search(query=p[0], semantic=False), pairs[3 * n :])
    )
    recall_ms = timed(
        lambda p: selectors.memory_recall(query=p[0], project=p[1], budget=1000), recall_q
    )
    ops["recall budget 1000"] = percentiles(recall_ms)
    out["tiers"] = _tiers(recall_q, warm=ops["recall budget 1000"])
    ops |= {f"recall {tier} tier": p for tier, p in out["tiers"].items()}

    def rewarmed(p: tuple[str, str | None]) -> None:
        wiring.engine().hot.forget()  # the same request again, past the hot tier
        selectors.memory_recall(query=p[0], project=p[1], budget=1000)

    ops["recall, cached embedding"] = percentiles(timed(rewarmed, recall_q))
    ops |= _cold_recalls(recall_q)
    ops["recall, an attribute filter"] = percentiles(timed(_filtered_recall(), recall_q))
    projects = workload["projects"]
    ops["briefing"] = percentiles(
        timed(lambda i: selectors.briefing_render(project=projects[i % len(projects)]), range(n))
    )
    ops["prompt recall"] = percentiles(
        timed(lambda p: selectors.prompt_recall(project=p[1], prompt=p[0]), prompt_q)
    )
    rebuilt = _prompts_rebuilding(prompt_q, whole=True)
    ops["prompt recall, corpora rebuilding"], out["prompt_rebuilds"] = rebuilt
    raw = _raw_parts(recall_q[warmup:])
    ops |= {f"raw {k}": percentiles(v) for k, v in raw.items()}
    parts = [raw[k] for k in ("embed", "fts", "vector")]
    raw_sum = [sum(ms) for ms in zip(*parts, strict=True)]
    out["recall_over_raw"] = {
        "mean": round(statistics.fmean(recall_ms) / statistics.fmean(raw_sum), 3),
        "p50": round(statistics.median(recall_ms) / statistics.median(raw_sum), 3),
    }
    ops["api write, answered at commit (dedup hint)"] = percentiles(_api_writes(pairs[:n]))
    # After those writes: each scope's refresh reads and applies what they added.
    refreshed = _prompts_rebuilding(prompt_q, whole=False)
    ops["prompt recall, corpora refreshing"], out["prompt_refreshes"] = refreshed
    out["ops"] = ops
    memory["the requests above"] = _anonymous()
    out["peak_rss_mb"] = vm("VmHWM")
    out["rss_mb"] = vm("VmRSS")
    # Of the RSS now: the process's own memory, and pages of files it has mapped
    # (tantivy's and LanceDB's files, the model): the OS can drop the latter.
    out["rss_anon_mb"], out["rss_file_mb"] = vm("RssAnon"), vm("RssFile")
    out["lancedb_loaded"] = "lancedb" in sys.modules  # the copy's journal keeps it out
    out["ann_recall_at_10"] = _ann_recall(recall_q[warmup:])
    # After the memory figures: a serving process never searches LanceDB itself once
    # its copy is loaded, and those searches' caches grew the process 15-60 MB.
    ops |= {k: percentiles(v) for k, v in _lance_itself(recall_q[warmup:]).items()}
    if spec.get("api_ingest"):
        out["api_write"] = percentiles(_api_single_writes(n))
        out["api_batch"] = _api_batch_ingest(int(spec["api_ingest"]))
    out["loadavg_end"] = loadavg()
    return out


def _tiers(
    pairs: Sequence[tuple[str, str | None]], *, warm: dict[str, float]
) -> dict[str, dict[str, float]]:
    """Recall's tiers (`recall.tiers`, seed 003): `warm` is the first pass over
    `pairs` (distinct requests), hot the same requests again right after,
    cold the same with `include_history`."""
    from console import selectors

    def recall(p: tuple[str, str | None], **knobs: Any) -> None:
        selectors.memory_recall(query=p[0], project=p[1], budget=1000, knobs=knobs)

    hot = percentiles(timed(recall, pairs))
    cold = percentiles(timed(lambda p: recall(p, include_history=True), pairs))
    return {"hot": hot, "warm": warm, "cold": cold}


def _prompts_rebuilding(
    pairs: Sequence[tuple[str, str | None]], *, whole: bool
) -> tuple[dict[str, float], dict[str, float]]:
    """PromptRecall while the corpora are rebuilt behind it: every scope's corpus
    is made stale (as writes and the TTL make them), then prompts arrive 5 ms
    apart; the first per scope queues its rebuild, the rest are timed while the
    rebuilding thread works (recall/prompt.py). `whole`: each is built whole (as
    every WHOLE_AFTER), else refreshed with what changed since. Also: the
    builds and refreshes done meanwhile."""
    from console import selectors, wiring

    corpora = wiring.engine().corpora
    corpora.expire(whole=whole)
    builds, refreshes, started = corpora.builds, corpora.refreshes, time.perf_counter()
    samples = []
    for prompt, project in pairs:
        start = time.perf_counter()
        selectors.prompt_recall(project=project, prompt=prompt)
        samples.append((time.perf_counter() - start) * 1000)
        time.sleep(0.005)
    window = round(time.perf_counter() - started, 2)
    done = {"builds": corpora.builds - builds, "refreshes": corpora.refreshes - refreshes}
    return percentiles(samples), {**done, "window_s": window}


def _recall_with(filters: Mapping[str, Any]) -> Callable[[tuple[str, str | None]], Any]:
    """Recall at budget 1000 of a (query, project) pair under `filters`."""
    from console import selectors

    return lambda p: selectors.memory_recall(
        query=p[0], project=p[1], budget=1000, filters=dict(filters)
    )


def _cold_recalls(pairs: Sequence[tuple[str, str | None]]) -> dict[str, dict[str, float]]:
    """Recall's cold path (recall/timetravel.py): valid time, then transaction time, at now
    (so every memory of the scope is read from the store and ranked)."""
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    return {
        "recall as_of (cold)": percentiles(timed(_recall_with({"as_of": now}), pairs)),
        "recall recorded_as_of (cold)": percentiles(
            timed(_recall_with({"recorded_as_of": now}), pairs)
        ),
    }


def _filtered_recall() -> Callable[[tuple[str, str | None]], Any]:
    """Recall with `since` 2000-01-01: an attribute filter that admits every row (the
    corpus is dated from 2025), so each channel applies it to its whole scope (the
    vector copy on its columns, `RowBook.admits`) and the answers are Recall's own.
    The Recall queries again, so compare with "recall, cached embedding"."""
    from datetime import UTC, datetime

    return _recall_with({"since": datetime(2000, 1, 1, tzinfo=UTC)})


def _api_writes(pairs: Sequence[tuple[str, str | None]]) -> list[float]:
    """POST /api/v1/memories, one memory a request, as an agent writes (ms each).

    The request commits the row and its index job (the worker applies it:
    RECALL_SYNC_ON_COMMIT=0 here) and answers with the dedup hint, looked up
    on the vector copy; the queued jobs are applied after the timing, by another
    process (`manage.py sync_indexes`), as the index worker beside a server does.
    """
    from django.conf import settings
    from django.test import Client

    from console import services, tokens, wiring
    from recall.indexes.hot_vectors import HotVectorIndex

    project = services.project_get_or_create(slug="bench-writes")
    _, secret = tokens.token_create(agent="bench-w", projects=[project.slug], may_write=True)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    made = iter(range(10**9))
    run = secrets.token_hex(3)  # each serve job's own names: one active memory per name

    def write(pair: tuple[str, str | None]) -> None:
        text = pair[0]
        body = {"project": project.slug, "name": f"write-{run}-{next(made)}",
                "description": text[:150] or "w", "kind": "fact", "force": True}  # fmt: skip
        reply = client.post("/api/v1/memories", json.dumps(body), content_type="application/json")
        if reply.status_code != 201:
            raise RuntimeError(f"write answered {reply.status_code}: {reply.content[:300]!r}")

    try:
        return timed(write, pairs)
    finally:  # by another process, as the index worker beside a server applies them:
        # applying them here loaded LanceDB into the serving process, whose RSS is a figure
        subprocess.run(
            [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "sync_indexes"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        catch_up = wiring.vector_index()
        if isinstance(catch_up, HotVectorIndex):
            catch_up.catch_up()  # the copy follows what that process wrote


def _ann_recall(pairs: Sequence[tuple[str, str | None]]) -> float | None:
    """Mean share of the exact top 10 that the in-process copy returns (Recall's scope)."""
    from console import wiring
    from recall.indexes.hot_vectors import HotVectorIndex, Replicable
    from recall.scope import recall_filter

    planes = wiring.planes()
    hot, plane, embedder = planes.vectors, wiring.vector_plane(), planes.embedder
    if not isinstance(hot, HotVectorIndex) or not isinstance(plane, Replicable) or not embedder:
        return None
    block = plane.block()
    shares = []
    for text, project in pairs:
        where = recall_filter(planes.store, project=project)
        query = embedder.embed([text])[0]
        admitted = [
            n
            for n in range(len(block.ids))
            if where.admits(
                project=block.projects[n], active=block.active[n], item=block.items[n],
                kind=block.kinds[n],
            )
        ]  # fmt: skip
        scores = block.vectors[admitted] @ query
        exact = {block.ids[admitted[i]] for i in scores.argsort()[::-1][:10]}
        found = {c.id for c in hot.search(query, where=where, limit=10)}
        shares.append(len(exact & found) / max(1, len(exact)))
    return round(statistics.fmean(shares), 4) if shares else None


def _api_single_writes(total: int) -> list[float]:
    """ms per POST /api/v1/memories until both planes hold the memory (issue 17).

    Embedded: the commit, then the outbox applied (embedding, the full-text and
    vector writes; the bench child runs with RECALL_SYNC_ON_COMMIT=0, so as a
    server's on-commit apply would). PostgreSQL: the same in one transaction,
    and no job left to apply.
    """
    from django.test import Client

    from console import indexing, services, tokens

    project = services.project_get_or_create(slug="bench-write")
    _, secret = tokens.token_create(agent="bench-one", projects=[project.slug], may_write=True)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    rows = generate(total, projects=1, seed=13).memories[:total]
    run = secrets.token_hex(3)  # a deployment benched before holds the same texts

    def write(i: int) -> None:
        r = rows[i]
        body = {"project": project.slug, "name": f"one-{run}-{i}-{r['name']}"[:120], "kind": "fact",
                "description": f"{r['description'][:140]} {run}",
                "body": r.get("body") or ""}  # fmt: skip
        reply = client.post("/api/v1/memories", json.dumps(body), content_type="application/json")
        if reply.status_code != 201:
            raise RuntimeError(f"write answered {reply.status_code}: {reply.content[:300]!r}")
        indexing.apply_pending()

    return timed(write, range(len(rows)))


def _api_batch_ingest(total: int, batch: int = 500) -> dict[str, float]:
    """POST /api/v1/memories/batch as an agent would, embedding included.

    In the serving process (its one-thread query embedder, as a web worker
    has), through the test Client: each request commits its batch, then the
    outbox applies it to both planes (embedding every memory) before the next.
    """
    from django.test import Client

    from console import indexing, services, tokens

    project = services.project_get_or_create(slug="bench-api")
    _, secret = tokens.token_create(agent="bench", projects=[project.slug], may_write=True)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    rows = generate(total, projects=1, seed=11).memories[:total]
    run = secrets.token_hex(3)
    started = time.perf_counter()
    for start in range(0, len(rows), batch):
        items = [
            {"name": f"api-{run}-{start + i}-{r['name']}"[:120],
             "description": r["description"][:150],
             "body": r.get("body") or "", "kind": "fact"}
            for i, r in enumerate(rows[start : start + batch])
        ]  # fmt: skip
        reply = client.post(
            "/api/v1/memories/batch",
            json.dumps({"memories": items, "force": True}),
            content_type="application/json",
        )
        if reply.status_code != 201:
            raise RuntimeError(f"batch write answered {reply.status_code}: {reply.content[:300]!r}")
        indexing.apply_pending()
    seconds = time.perf_counter() - started
    return {
        "memories": len(rows),
        "seconds": round(seconds, 2),
        "per_s": round(len(rows) / seconds, 1),
    }


def _palette_caller() -> tuple[str, Callable[[str], Any]]:
    """GET the palette view through the test Client, or the selector when it is missing."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import NoReverseMatch, reverse

    from console import selectors

    try:
        url = reverse("palette")
    except NoReverseMatch:
        return (
            "selector memory_search(semantic=False, prefix=True)",
            lambda q: selectors.memory_search(query=q, semantic=False, prefix=True),
        )
    # Staff: the palette searches every project, as the console's people do (a
    # login without projects would search the global memories alone).
    users = get_user_model().objects
    user = users.filter(username="bench").first() or users.create_user("bench", password="x" * 12)
    if not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    client = Client(HTTP_HX_REQUEST="true")
    client.force_login(user)

    def call(q: str) -> None:
        response = client.get(url, {"q": q})
        if response.status_code != 200:
            raise RuntimeError(f"palette view answered {response.status_code}")

    return f"view GET {url}?q= (test Client, HX-Request)", call


def _raw_parts(pairs: Sequence[tuple[str, str | None]]) -> dict[str, list[float]]:
    """Embedding, full-text query, vector query on the adapters, per query (ms)."""
    from console import wiring
    from recall.config import RecallConfig
    from recall.scope import recall_filter

    planes = wiring.planes()  # the adapters as built, without the engine's query cache
    embedder, vectors = planes.embedder, planes.vectors
    assert embedder is not None and vectors is not None
    depth = RecallConfig().depth
    out: dict[str, list[float]] = {"embed": [], "fts": [], "vector": []}
    for text, project in pairs:
        where = recall_filter(planes.store, project=project)
        t0 = time.perf_counter()
        vector = embedder.embed([text])[0]
        t1 = time.perf_counter()
        planes.text.search(text, where=where, limit=depth)
        t2 = time.perf_counter()
        vectors.search(vector, where=where, limit=depth)
        t3 = time.perf_counter()
        out["embed"].append((t1 - t0) * 1000)
        out["fts"].append((t2 - t1) * 1000)
        out["vector"].append((t3 - t2) * 1000)
    return out


def _lance_itself(pairs: Sequence[tuple[str, str | None]]) -> dict[str, list[float]]:
    """The durable plane's own vector query, for comparison with the copy's (ms);
    nothing when the copy is the plane (PostgreSQL, or no copy configured)."""
    from console import wiring
    from recall.config import RecallConfig
    from recall.scope import recall_filter

    planes = wiring.planes()
    embedder, vectors, plane = planes.embedder, planes.vectors, wiring.vector_plane()
    if embedder is None or plane is None or plane is vectors:
        return {}
    depth, lance = RecallConfig().depth, []
    for text, project in pairs:
        where = recall_filter(planes.store, project=project)
        vector = embedder.embed([text])[0]
        start = time.perf_counter()
        plane.search(vector, where=where, limit=depth)
        lance.append((time.perf_counter() - start) * 1000)
    return {"raw vector, LanceDB itself": lance}


# --- tables ---------------------------------------------------------------------


def tables(body: Mapping[str, Any]) -> str:
    ingest = body["ingest"]
    lines = [
        f"speed at {body['size']} memories ({ingest['superseded']} superseded); ingest "
        f"(import_memories with embedding, {ingest['backend']}): {ingest['ingest_per_s']}/s "
        f"({ingest['ingest_s']} s); reindex both planes: {ingest['reindex_s']} s "
        f"({ingest['reindex_per_s']}/s; writing, compacting: "
        f"{ingest.get('reindex_split_s', '-')} s); load average {ingest['loadavg']}"
    ]
    if body.get("model_change"):
        c = body["model_change"]
        lines.append(
            f"reindex after a model change (every text embedded again): {c['reindex_s']} s "
            f"({c['embedded']} of {c['items']} items embedded, {c['embedded_per_s']}/s; "
            f"writing, compacting: {c['reindex_split_s']} s); load average {c['loadavg']}"
        )
    if body.get("moved"):
        m = body["moved"]
        lines.append(
            f"moved to PostgreSQL (migrate_data): {m['rows']} rows copied in {m['copy_s']} s; "
            f"planes rebuilt in {m['rebuild_s']} s ({m['items']} items, {m['embedded']} "
            f"embedded, the other vectors copied from LanceDB); load average {m['loadavg']}"
        )
    if body.get("writers"):
        from console.bench.writers import summary

        lines.append(summary(body["writers"]))
    names = list(body["backends"])
    ops = list(dict.fromkeys(op for b in body["backends"].values() for op in b["ops"]))
    rows = []
    for op in ops:  # an op one backend lacks (LanceDB itself, on PostgreSQL) prints "-"
        row: list[Any] = [op]
        for name in names:
            p = body["backends"][name]["ops"].get(op)
            row += [p["p50"], p["p95"], p["p99"]] if p else ["-", "-", "-"]
        rows.append(row)
    heads = [f"{n} {q}" for n in names for q in ("p50", "p95", "p99")]
    lines.append(report.table(["ms", *heads], rows))
    for name, b in body["backends"].items():
        keys = ("text_reindex_s", "text_docs_per_s", "vector_copy_load_s", "ann_recall_at_10")
        extra = {k: b[k] for k in keys if b.get(k) is not None}
        lines.append(
            f"{name}: peak RSS {b['peak_rss_mb']} MB (now {b['rss_mb']} MB: "
            f"{b.get('rss_anon_mb', '?')} anonymous, {b.get('rss_file_mb', '?')} file pages); "
            f"recall end-to-end / raw parts = {b['recall_over_raw']}; "
            f"palette: {b['palette_path']}; "
            f"load {b['loadavg_start']}->{b['loadavg_end']} {extra or ''}"
        )
        if b.get("memory_stages_mb"):
            stages = list(b["memory_stages_mb"].items())
            grew = ", ".join(
                f"{stage} +{round(mb - stages[n][1], 1)}"
                for n, (stage, mb) in enumerate(stages[1:])
            )
            lines.append(
                f"{name}: anonymous memory {stages[0][1]} MB once started (Django, planes open), "
                f"then {grew} MB; the vector copy's vectors "
                f"{b.get('vector_copy_vectors_mb', '-')} MB of it"
            )
        for key, how in (("prompt_rebuilds", "rebuilding"), ("prompt_refreshes", "refreshing")):
            if b.get(key):
                r = b[key]
                lines.append(
                    f"{name}: prompt recall, corpora {how}: every corpus made stale, then "
                    f"prompts 5 ms apart; {r.get('builds', r.get('rebuilds'))} built whole and "
                    f"{r.get('refreshes', 0)} refreshed in the {r['window_s']} s they were timed in"
                )
        if b.get("tiers"):
            said = ", ".join(
                f"{tier} p50 {t['p50']} / p95 {t['p95']} ms (budget < {TIER_BUDGETS[tier]})"
                for tier, t in b["tiers"].items()
            )
            lines.append(f"{name}: recall tiers (seed 003): {said}")
        if b.get("api_write"):
            w = b["api_write"]
            lines.append(
                f"{name}: POST /memories, one memory until both planes hold it: p50 {w['p50']}"
                f" / p95 {w['p95']} / p99 {w['p99']} ms"
            )
        if b.get("api_batch"):
            a = b["api_batch"]
            lines.append(
                f"{name}: POST /memories/batch (500 a request, embedding included, one text "
                f"per core at once): {a['memories']} memories in {a['seconds']} s "
                f"= {a['per_s']}/s"
            )
    return "\n".join(lines)
