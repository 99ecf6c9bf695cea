"""Composition root: settings.RECALL -> engine and adapters, built once, lazily.

Nothing here runs at import. `reset()` drops every cached object (tests that
point RECALL_DATA_DIR elsewhere call it).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from importlib import import_module
from pathlib import Path
from typing import Any

from django.conf import settings

from recall.errors import ConfigError
from recall.ports import Embedder, TextIndex, VectorIndex

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


def _conf(key: str) -> Any:
    return settings.RECALL[key]


def _once(key: str, build: Any) -> Any:
    with _lock:
        if key not in _cache:
            _cache[key] = build()
        return _cache[key]


def text_index() -> TextIndex:
    def build() -> TextIndex:
        cls = import_string(_conf("TEXT_INDEX"))
        path = Path(_conf("TEXT_INDEX_DIR")) / cls.__name__.lower()
        return cls(path)  # type: ignore[no-any-return]

    return _once("text", build)  # type: ignore[no-any-return]


def vector_index() -> VectorIndex | None:
    if not _conf("EMBEDDER"):
        return None

    def build() -> VectorIndex:
        cls = import_string(_conf("VECTOR_INDEX"))
        emb = embedder()
        dims = emb.dims if emb is not None else 384
        path = Path(_conf("VECTOR_INDEX_DIR"))
        try:
            # Never build the ANN index inside a request: `indexing.maintain()`
            # (reindex, import, sync_indexes --optimize) does it off the hot path.
            return cls(  # type: ignore[no-any-return]
                path,
                dims=dims,
                auto_index=False,
                index_threshold=int(_conf("VECTOR_INDEX_THRESHOLD")),
            )
        except TypeError:  # an adapter without those knobs
            return cls(path, dims=dims)  # type: ignore[no-any-return]

    return _once("vectors", build)  # type: ignore[no-any-return]


def embedder() -> Embedder | None:
    path = _conf("EMBEDDER")
    if not path:
        return None
    quantized, cache_dir = bool(_conf("EMBEDDER_QUANTIZED")), str(_conf("MODEL_CACHE_DIR"))
    if _cache.get("batch_mode"):
        threads, parallel = 1, int(_conf("EMBEDDER_BATCH_THREADS"))
    else:
        threads, parallel = int(_conf("EMBEDDER_THREADS")), 1
    return _shared_embedder(path, threads, parallel, quantized, cache_dir)


def use_batch_threads() -> None:
    """For batch commands (import, reindex): embed on every core.

    One query embeds fastest on one thread; a bulk load runs one batch per
    core at once (EMBEDDER_BATCH_THREADS)."""
    with _lock:
        _cache.clear()
        _cache["batch_mode"] = True


@lru_cache(maxsize=4)
def _shared_embedder(
    path: str, threads: int, parallel: int, quantized: bool, cache_dir: str
) -> Embedder:
    """The model is process-wide (it does not depend on the data directory)."""
    cls = import_string(path)
    try:
        return cls(  # type: ignore[no-any-return]
            threads=threads, parallel=parallel, quantized=quantized, cache_dir=cache_dir
        )
    except TypeError:  # an embedder without those knobs
        return cls()  # type: ignore[no-any-return]


def engine() -> Any:
    """The retrieval engine over the configured planes and the ORM store."""

    def build() -> Any:
        from console.store import DjangoStore
        from recall.engine import Engine

        return Engine(
            text=text_index(), store=DjangoStore(), vectors=vector_index(), embedder=embedder()
        )

    return _once("engine", build)


def reset() -> None:
    """Forget every adapter (their files stay); the embedder model is kept."""
    with _lock:
        batch_mode = _cache.get("batch_mode")
        _cache.clear()
        if batch_mode:
            _cache["batch_mode"] = True
