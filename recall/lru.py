"""The least-recently-used map every cache of the project keeps its entries in.

Thread-safe: the embedders' query caches, the hot tier, the full-text
channel's kept short prefixes and the console's compiled reads are all read
and written by several request threads at once. What makes an entry stale
(a plane's stamp, an age) is the caller's: `get` takes a `valid` test and
drops an entry that fails it, under the same lock as the read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most `size` entries (0 keeps none); reading one makes it the most recent."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size!r}")
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, valid: Callable[[V], bool] | None = None) -> V | None:
        """The entry for `key`, or None; one that fails `valid` is dropped instead."""
        with self._lock:
            if key not in self._entries:
                return None
            value = self._entries[key]
            if valid is not None and not valid(value):
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        """Keep `value` as the most recent entry, dropping the least recent past `size`."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
