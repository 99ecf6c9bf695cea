"""Composition root: settings.RECALL -> planes, channels and the engine, built once, lazily.

Each plane's adapter is a dotted path plus the OPTIONS its constructor takes
(`settings.RECALL["BACKENDS"]`); options a backend needs but the settings
leave out are filled here: a text index's `path` (TEXT_INDEX_DIR/<class
name>, so switching backends never reuses another's files), a vector index's
`path` (VECTOR_INDEX_DIR) and `dims` (the embedder's). Channels are the
classes named in `settings.RECALL["CHANNELS"]`, each built from the planes.

Nothing here runs at import. `reset()` drops every cached object (tests that
point RECALL_DATA_DIR elsewhere call it); the embedding model itself is
process-wide and kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import lru_cache
from importlib import import_module
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.db import connections

from console import allocator, configuration
from recall import background
from recall.engine import Engine
from recall.errors import ConfigError
from recall.indexes.hot_vectors import HotVectorIndex, Replicable
from recall.lru import LRU
from recall.planes import Planes
from recall.ports import Channel, Embedder, MemoryStore, TextIndex, VectorIndex

T = TypeVar("T")
PLANES = ("STORE", "TEXT_INDEX", "VECTOR_INDEX", "EMBEDDER")
PALETTE_ANSWERS = 1024  # the palette's kept short answers (`palette_answers`)
_lock = threading.RLock()
_cache: dict[str, Any] = {}


def import_string(path: str) -> Any:
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ConfigError(f"{path!r} is not a dotted path")
    try:
        return getattr(import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot import {path!r}: {exc}") from exc


def backend(plane: str) -> tuple[str, dict[str, Any]]:
    """A plane's dotted path ("" = none) and its OPTIONS, with the defaults filled in."""
    conf = settings.RECALL["BACKENDS"][plane]
    path, options = str(conf.get("BACKEND") or ""), dict(conf.get("OPTIONS") or {})
    if plane == "TEXT_INDEX" and path:
        name = path.rpartition(".")[2].lower()
        options.setdefault("path", Path(settings.RECALL["TEXT_INDEX_DIR"]) / name)
    if plane == "VECTOR_INDEX":
        options.setdefault("path", Path(settings.RECALL["VECTOR_INDEX_DIR"]))
    if plane == "EMBEDDER" and _cache.get("batch_mode"):
        # One query embeds fastest on one thread; a bulk load runs one batch
        # per core at once.
        options.update(threads=1, parallel=int(settings.RECALL["EMBEDDER_BATCH_THREADS"]))
    return path, options


def build(plane: str, **extra: Any) -> Any:
    """Construct a plane's adapter from its path and OPTIONS (ConfigError names a bad one)."""
    path, options = backend(plane)
    cls = import_string(path)
    try:
        return cls(**{**extra, **options})
    except TypeError as exc:
        raise ConfigError(f"RECALL['BACKENDS'][{plane!r}] {path}: {exc}") from exc


def _once(key: str, make: Callable[[], T]) -> T:
    with _lock:
        if key not in _cache:
            _cache[key] = make()
        return _cache[key]  # type: ignore[no-any-return]


def store() -> MemoryStore:
    made: MemoryStore = _once("store", lambda: build("STORE"))
    return made


def text_index() -> TextIndex:
    made: TextIndex = _once("text", lambda: build("TEXT_INDEX"))
    return made


def embedder() -> Embedder | None:
    path, options = backend("EMBEDDER")
    if not path:
        return None
    return _shared_embedder(path, tuple(sorted(options.items())))


@lru_cache(maxsize=4)
def _shared_embedder(path: str, options: tuple[tuple[str, Any], ...]) -> Embedder:
    """The model is process-wide (it does not depend on the data directory)."""
    cls = import_string(path)
    try:
        return cls(**dict(options))  # type: ignore[no-any-return]
    except TypeError as exc:
        raise ConfigError(f"RECALL['BACKENDS']['EMBEDDER'] {path}: {exc}") from exc


def vector_index() -> VectorIndex | None:
    if not backend("EMBEDDER")[0] or not backend("VECTOR_INDEX")[0]:
        return None

    def make() -> VectorIndex:
        emb = embedder()
        plane: VectorIndex = build(
            "VECTOR_INDEX", **({"dims": emb.dims} if emb is not None else {})
        )
        if settings.RECALL["VECTOR_CACHE"] and isinstance(plane, Replicable):
            return HotVectorIndex(
                plane, release=allocator.trim, snapshots=_snapshots(plane),
                journal=settings.RECALL["VECTOR_JOURNAL"],
            )  # fmt: skip
        return plane

    return _once("vectors", make)


def _snapshots(plane: VectorIndex) -> Path | None:
    """The folder of the copy's snapshots: beside the plane's own, so a test's or a
    command's plane elsewhere never maps another plane's snapshot."""
    path = getattr(plane, "path", None)
    if not settings.RECALL["VECTOR_SNAPSHOTS"] or not isinstance(path, Path):
        return None
    return path.with_name(path.name + "-copy")


def vector_plane() -> VectorIndex | None:
    """The durable vector plane itself, under the in-process copy when there is one."""
    vectors = vector_index()
    return vectors.inner if isinstance(vectors, HotVectorIndex) else vectors


def console_now() -> datetime:
    """The console's clock, looked up at call time (tests pin `django.utils.timezone.now`)."""
    from console.store import now

    return now()


def planes() -> Planes:
    return _once(
        "planes",
        lambda: Planes(
            text=text_index(),
            store=store(),
            vectors=vector_index(),
            embedder=embedder(),
            clock=console_now,  # the store's clock too: decay and expiry read one "now"
        ),  # fmt: skip
    )


def channel_classes() -> list[type[Any]]:
    """The registered channel classes, in order (no plane is built)."""
    return [import_string(path) for path in settings.RECALL["CHANNELS"]]


def channels(over: Planes) -> tuple[Channel, ...]:
    return tuple(cls(over) for cls in channel_classes())


def engine() -> Engine:
    """The retrieval engine over the configured planes, channels and configuration."""

    def make() -> Engine:
        built = planes()
        return Engine(
            built,
            channels=channels(built),
            base=configuration.base(),
            overrides=configuration.override_row,
            # A background rebuild's thread gives its database connection back
            # (with PostgreSQL's pool, a connection a dead thread kept is lost).
            thread_done=connections.close_all,
        )

    return _once("engine", make)


def palette_answers() -> LRU[tuple[Any, ...], tuple[object, bytes]]:
    """The palette's kept answers (console/views/search.py), dropped with the adapters
    they were read from."""
    return _once("palette_answers", lambda: LRU(PALETTE_ANSWERS))


def forget_recalls() -> None:
    """A write committed: this process's hot-tier packs may be stale (`recall.tiers`)
    and its PromptRecall corpora are refreshed on their next look. Other processes
    see the write through their planes' stamps."""
    made = _cache.get("engine")
    if made is not None:
        made.forget()


def warm() -> None:
    """Load what the first request would otherwise wait for: the planes, the
    model (one embedding), the in-process vector copy and the English word
    list full text's idf leans on (`recall.background`). For a server
    process right after it starts (console/gunicorn.conf.py)."""
    engine()
    model = embedder()
    if model is not None:
        model.embed(["warm up"])
    vectors = vector_index()
    if isinstance(vectors, HotVectorIndex):
        vectors.wait_ready()
    background.load()  # full text's English word list (its idf prior)
    allocator.trim()  # the load's transient blocks (console/allocator.py)


def overridden(values: Mapping[str, Any]) -> None:
    """For tests: replace cached objects by name (e.g. {"engine": ...})."""
    with _lock:
        _cache.update(values)


def use_batch_threads() -> None:
    """For batch commands (import, reindex): embed on every core."""
    with _lock:
        _cache.clear()
        _cache["batch_mode"] = True


def reset() -> None:
    """Forget every adapter (their files stay); the embedder model is kept."""
    with _lock:
        batch_mode = _cache.get("batch_mode")
        _cache.clear()
        if batch_mode:
            _cache["batch_mode"] = True
