"""The in-process vector copy's per-row bookkeeping, kept in columns.

Every row of the copy (`recall.indexes.hot_vectors.HotVectorIndex`) has an
integer key: what its partition's matrix or USearch graph holds. Per key the
copy needs the row's id, its partition, its fingerprint (to compare with the
plane's), its item and kind (the scope filters), its facets (the attribute
filters) and, in a flat partition, its position in the matrix.

Kept as Python objects per row (an entry object, a (item, kind, facets)
tuple and three dicts keyed by boxed integers), that took about 40 MB of the
100,000 bench deployment's copy, and the many small objects a load leaves
behind kept more of the process's memory from going back. Here they are
numpy columns indexed by key (partition, item and kind as small codes, the
fingerprint as 64 bits, the position), one list of ids, one of facets and
one dict from id to key. A dropped row's key goes to the next new row, so the
columns are as long as the copy's largest size, however many writes came.

Rows share their facets' strings and tag tuples with every row that has the
same (a session's turns, an agent's writes): `shared`.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from recall.types import Facets

Partition = tuple[str | None, bool]  # (project, active)
Row = tuple[str, str, Facets]  # (item, kind, facets): what a partition filters on
FREE = -1  # the partition code of a key no row holds

V = TypeVar("V", bound=Hashable)


class Codes(Generic[V]):
    """A small integer for each distinct value (partitions, items, kinds), for good."""

    def __init__(self) -> None:
        self.values: list[V] = []
        self._codes: dict[V, int] = {}

    def code(self, value: V) -> int:
        found = self._codes.get(value)
        if found is None:
            found = self._codes[value] = len(self.values)
            self.values.append(value)
        return found

    def __getitem__(self, code: int) -> V:
        return self.values[code]

    def __len__(self) -> int:
        return len(self.values)


class RowBook:
    """Id, partition, fingerprint, item, kind, facets and matrix position per key."""

    def __init__(self) -> None:
        self.key_of: dict[str, int] = {}
        self.ids: list[str] = []  # "" for a free key
        self.facets: list[Facets | None] = []
        self.partitions: Codes[Partition] = Codes()
        self._items: Codes[str] = Codes()
        self._kinds: Codes[str] = Codes()
        self.part = np.empty(0, dtype=np.int32)  # partition code, FREE for an unused key
        self.item = np.empty(0, dtype=np.int32)
        self.kind = np.empty(0, dtype=np.int32)
        self.fingerprint = np.empty(0, dtype=np.uint64)
        self.position = np.empty(0, dtype=np.int64)  # the row's place in a flat matrix
        self._odd: dict[int, str] = {}  # fingerprints that are not 16 lowercase hex digits
        self._free: list[int] = []
        self._tag_sets: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._importances: dict[float, float] = {}  # a few values, one float object each

    def __len__(self) -> int:
        return len(self.key_of)

    def add(
        self, id_: str, partition: Partition, item: str, kind: str, fingerprint: str,
        facets: Facets,
    ) -> int:  # fmt: skip
        """A key for a new row (`id_` must not be in the book)."""
        key = self._free.pop() if self._free else self._grow()
        self.key_of[id_] = key
        self.ids[key] = id_
        self.facets[key] = facets
        self.part[key] = self.partitions.code(partition)
        self.item[key] = self._items.code(sys.intern(item))
        self.kind[key] = self._kinds.code(sys.intern(kind))
        bits = _bits(fingerprint)
        if bits is None:
            self._odd[key] = fingerprint
        self.fingerprint[key] = bits or 0
        return key

    def find(self, id_: str) -> tuple[int, Partition] | None:
        """The key of `id_` and its partition, or None."""
        key = self.key_of.get(id_)
        return None if key is None else (key, self.partitions[int(self.part[key])])

    def drop(self, id_: str) -> None:
        """Forget `id_`; its key is free for the next new row."""
        key = self.key_of.pop(id_, None)
        if key is None:
            return
        self.ids[key] = ""
        self.facets[key] = None
        self.part[key] = FREE
        self._odd.pop(key, None)
        self._free.append(key)

    def stale(self, id_: str, fingerprint: str) -> bool:
        """Whether the copy lacks `id_` or holds it under another fingerprint."""
        key = self.key_of.get(id_)
        if key is None:
            return True
        odd = self._odd.get(key)
        if odd is not None:
            return odd != fingerprint
        return _bits(fingerprint) != int(self.fingerprint[key])

    def row(self, key: int) -> Row:
        facets = self.facets[key]
        assert facets is not None, f"key {key} holds no row"
        return self._items[int(self.item[key])], self._kinds[int(self.kind[key])], facets

    def keys_in(self, partition: Partition) -> list[int]:
        """The keys of the partition's rows, ascending."""
        code = self.partitions.code(partition)
        return np.flatnonzero(self.part == code).tolist()

    def shared(self, facets: Facets) -> Facets:
        """`facets` with its strings and tag tuple shared with every row that has the
        same: the 100,000 bench deployment's copy (116,446 rows, 52,542 tag sets)
        traced 258.7 -> 248.1 MB with them."""
        tags = self._tag_sets.get(facets.tags)
        if tags is None:  # the shared tuple is its own key: the row's own can go
            tags = tuple(sys.intern(t) for t in facets.tags)
            self._tag_sets[tags] = tags
        importance = self._importances.setdefault(facets.importance, facets.importance)
        return Facets(
            tags, sys.intern(facets.agent_id), sys.intern(facets.session_id), importance,
            facets.created,
        )  # fmt: skip

    def _grow(self) -> int:
        """A key past the last one, the columns lengthened (by half) when full."""
        key = len(self.ids)
        self.ids.append("")
        self.facets.append(None)
        if key >= len(self.part):
            size = max(64, len(self.part) * 3 // 2)
            self.part = _longer(self.part, size, FREE)
            self.item, self.kind = _longer(self.item, size, 0), _longer(self.kind, size, 0)
            self.fingerprint = _longer(self.fingerprint, size, 0)
            self.position = _longer(self.position, size, 0)
        return key


A = TypeVar("A", bound=np.generic)


def _longer(column: npt.NDArray[A], size: int, fill: int) -> npt.NDArray[A]:
    out = np.full(size, fill, dtype=column.dtype)
    out[: len(column)] = column
    return out


def _bits(fingerprint: str) -> int | None:
    """A fingerprint of 16 lowercase hex digits (the vector plane's) as its 64 bits."""
    if len(fingerprint) != 16:
        return None
    try:
        bits = int(fingerprint, 16)
    except ValueError:
        return None
    return bits if format(bits, "016x") == fingerprint else None
