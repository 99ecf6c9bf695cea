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
numpy columns indexed by key, and the ids (`Ids`):
- partition, item, kind, agent, session and tag set as small codes (each
  distinct value is held once, in `Codes`);
- importance, and the creation instant in microseconds since the epoch;
- the fingerprint as 64 bits, the row's position in a flat matrix.
A dropped row's key goes to the next new row, so the columns are as long as
the copy's largest size, however many writes came.

The ids were a list of strings and a dict from id to key: at 100,000 rows
about 16 MB of each serving process's private memory, rebuilt from the
snapshot's JSON on every map. `Ids` keeps the snapshot's ids as one array of
UTF-8 bytes with the keys in id order beside it (both mapped from the snapshot:
file pages every process shares), an id found by binary search, and only the
ids written since in dicts.

`admitted` applies a filter to a whole partition at once, on the columns
(Recall's attribute filters scan the partition: 32 ms at 100,000 memories
as a predicate per row, `Filter.admits_facets`); `row` gives one row's values
for that predicate, which stays the reference (a test holds the two equal).
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Hashable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from recall.types import EPOCH, MEMORY, Facets, Filter

Partition = tuple[str | None, bool]  # (project, active)
Row = tuple[str, str, Facets]  # (item, kind, facets): what a partition filters on
FREE = -1  # the partition code of a key no row holds
NEVER = np.iinfo(np.int64).min  # the `created` of a row created at no known instant
_MICROSECOND = timedelta(microseconds=1)

V = TypeVar("V", bound=Hashable)


class Codes(Generic[V]):
    """A small integer for each distinct value (partitions, items, kinds, agents,
    sessions, tag sets), kept for good: one object per value, whatever the rows."""

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

    def find(self, value: V) -> int | None:
        """The value's code, or None (without giving it one)."""
        return self._codes.get(value)

    def known(self, values: Collection[V]) -> list[int]:
        """The codes of those of `values` that have one."""
        return [c for v in values if (c := self._codes.get(v)) is not None]

    def __len__(self) -> int:
        return len(self.values)


class Ids:
    """Each key's id and each id's key: a base (ids as fixed-width UTF-8 bytes by key,
    and the keys in id order, for a binary search), mapped from a snapshot or empty,
    and the changes since in two dicts. See the module docstring."""

    def __init__(
        self, base: npt.NDArray[np.bytes_] | None = None, order: npt.NDArray[np.int64] | None = None
    ) -> None:
        self._base = np.empty(0, dtype="S1") if base is None else base
        self._order = np.empty(0, dtype=np.int64) if order is None else order
        self._by_key: dict[int, str] = {}  # keys whose id is not the base's ("": free)
        self._by_id: dict[str, int | None] = {}  # ids written since (None: dropped)
        self.size = len(self._base)  # keys given so far
        self._count = int(np.count_nonzero(self._base)) if len(self._base) else 0

    def __len__(self) -> int:
        return self._count

    def key(self, id_: str) -> int | None:
        """The key holding `id_`, or None."""
        if id_ in self._by_id:
            return self._by_id[id_]
        base = self._base
        encoded = id_.encode()
        if not len(base) or not encoded or len(encoded) > base.dtype.itemsize:
            return None
        at = int(np.searchsorted(base, encoded, sorter=self._order))
        if at < len(base):
            key = int(self._order[at])
            if base[key] == encoded and key not in self._by_key:
                return key
        return None

    def id(self, key: int) -> str:
        """The id `key` holds ("" for a free key)."""
        found = self._by_key.get(key)
        if found is not None:
            return found
        return self._base[key].decode() if key < len(self._base) else ""

    def ids_of(self, keys: npt.NDArray[np.uint64]) -> list[str]:
        """The ids `keys` hold, in order: one gather from the base (a search's hits:
        5-10 us more per partition searched than the list of strings took), the
        changed keys from their dict."""
        base, changed, size = self._base, self._by_key, len(self._base)
        past = bool(len(keys)) and int(keys.max()) >= size
        if not size:
            return [changed.get(k, "") for k in keys.tolist()]
        out = [b.decode() for b in base[np.minimum(keys, size - 1) if past else keys].tolist()]
        if changed or past:
            for n, key in enumerate(keys.tolist()):
                if (found := changed.get(key)) is not None:
                    out[n] = found
                elif key >= size:
                    out[n] = ""
        return out

    def put(self, key: int, id_: str) -> None:
        """`id_` at `key` (a free key, `id_` held by no key)."""
        self._by_key[key] = id_
        self._by_id[id_] = key
        self._count += 1

    def free(self, key: int, id_: str) -> None:
        """`key` no longer holds `id_`."""
        self._by_key[key] = ""
        self._by_id[id_] = None
        self._count -= 1

    def grow(self) -> int:
        """A new key past the last one (free until `put`)."""
        self.size += 1
        return self.size - 1

    def __iter__(self) -> Iterator[str]:
        """The ids held, by key."""
        for key in range(self.size):
            if id_ := self.id(key):
                yield id_

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        """The ids as a base for a snapshot: (UTF-8 bytes by key, keys in id order)."""
        encoded = [self.id(key).encode() for key in range(self.size)]
        width = max((len(e) for e in encoded), default=1) or 1
        base = np.array(encoded, dtype=f"S{width}")
        return {"names": base, "order": np.argsort(base, kind="stable").astype(np.int64)}


class RowBook:
    """Id, partition, fingerprint, filters and matrix position per key."""

    def __init__(self) -> None:
        self.names = Ids()  # each key's id, each id's key
        self.partitions: Codes[Partition] = Codes()
        self._items: Codes[str] = Codes()
        self._kinds: Codes[str] = Codes()
        self._agents: Codes[str] = Codes()
        self._sessions: Codes[str] = Codes()
        self._tag_sets: Codes[tuple[str, ...]] = Codes()
        self.part = np.empty(0, dtype=np.int32)  # partition code, FREE for an unused key
        self.item = np.empty(0, dtype=np.int32)
        self.kind = np.empty(0, dtype=np.int32)
        self.agent = np.empty(0, dtype=np.int32)
        self.session = np.empty(0, dtype=np.int32)
        self.tags = np.empty(0, dtype=np.int32)
        self.importance = np.empty(0, dtype=np.float64)
        self.created = np.empty(0, dtype=np.int64)  # microseconds since the epoch, or NEVER
        self.fingerprint = np.empty(0, dtype=np.uint64)
        self.position = np.empty(0, dtype=np.int64)  # the row's place in a flat matrix
        self._odd: dict[int, str] = {}  # fingerprints that are not 16 lowercase hex digits
        self._free: list[int] = []

    def __len__(self) -> int:
        return len(self.names)

    def add(
        self, id_: str, partition: Partition, item: str, kind: str, fingerprint: str,
        facets: Facets,
    ) -> int:  # fmt: skip
        """A key for a new row (`id_` must not be in the book)."""
        key = self._free.pop() if self._free else self._grow()
        self.names.put(key, id_)
        self.part[key] = self.partitions.code(partition)
        self.item[key] = self._items.code(sys.intern(item))
        self.kind[key] = self._kinds.code(sys.intern(kind))
        self.agent[key] = self._agents.code(facets.agent_id)
        self.session[key] = self._sessions.code(facets.session_id)
        tags = self._tag_sets.find(facets.tags)
        if tags is None:  # a new tag set: its strings shared with every other set's
            tags = self._tag_sets.code(tuple(sys.intern(t) for t in facets.tags))
        self.tags[key] = tags
        self.importance[key] = facets.importance
        self.created[key] = NEVER if facets.created is None else _micros(facets.created)
        bits = _bits(fingerprint)
        if bits is None:
            self._odd[key] = fingerprint
        self.fingerprint[key] = bits or 0
        return key

    def find(self, id_: str) -> tuple[int, Partition] | None:
        """The key of `id_` and its partition, or None."""
        key = self.names.key(id_)
        return None if key is None else (key, self.partitions[int(self.part[key])])

    def drop(self, id_: str) -> None:
        """Forget `id_`; its key is free for the next new row."""
        key = self.names.key(id_)
        if key is None:
            return
        self.names.free(key, id_)
        self.part[key] = FREE
        self._odd.pop(key, None)
        self._free.append(key)

    def stale(self, id_: str, fingerprint: str) -> bool:
        """Whether the copy lacks `id_` or holds it under another fingerprint."""
        key = self.names.key(id_)
        if key is None:
            return True
        odd = self._odd.get(key)
        if odd is not None:
            return odd != fingerprint
        return _bits(fingerprint) != int(self.fingerprint[key])

    def row(self, key: int) -> Row:
        """The row's item, kind and facets (what `Filter.admits_facets` reads)."""
        stamp = int(self.created[key])
        facets = Facets(
            self._tag_sets[int(self.tags[key])],
            self._agents[int(self.agent[key])],
            self._sessions[int(self.session[key])],
            float(self.importance[key]),
            None if stamp == NEVER else EPOCH + stamp * _MICROSECOND,
        )
        return self._items[int(self.item[key])], self._kinds[int(self.kind[key])], facets

    def keys_in(self, partition: Partition) -> npt.NDArray[np.int64]:
        """The keys of the partition's rows, ascending."""
        code = self.partitions.find(partition)
        if code is None:
            return np.empty(0, dtype=np.int64)
        return np.flatnonzero(self.part == code)

    def admitted(self, partition: Partition, where: Filter) -> npt.NDArray[np.int64]:
        """The keys of the partition's rows `where` admits, ascending (`admits`)."""
        keys = self.keys_in(partition)
        return keys[self.admits(keys, where)]

    def admits(self, keys: npt.NDArray[np.int64], where: Filter) -> npt.NDArray[np.bool_]:
        """Which of `keys` `where`'s items, kinds and attribute filters admit:
        `Filter.admits_facets` on the columns."""
        ok = np.ones(len(keys), dtype=np.bool_)
        if where.items is not None:
            ok &= np.isin(self.item[keys], self._items.known(where.items))
        if where.kinds is not None:
            ok &= np.isin(self.kind[keys], self._kinds.known(where.kinds))
        if not where.narrowed:
            return ok
        if where.memories_only:
            ok &= np.isin(self.item[keys], self._items.known((MEMORY,)))
        if where.agent_id is not None:
            ok &= np.isin(self.agent[keys], self._agents.known((where.agent_id,)))
        if where.session_id is not None:
            ok &= np.isin(self.session[keys], self._sessions.known((where.session_id,)))
        if where.min_importance is not None:
            ok &= self.importance[keys] >= where.min_importance
        created = self.created[keys]
        if where.since is not None:
            ok &= (created != NEVER) & (created >= _micros(where.since))
        if where.until is not None:
            ok &= (created != NEVER) & (created <= _micros(where.until))
        if where.tags or where.any_tags:
            codes = self.tags[keys]
            fits = [c for c in np.unique(codes).tolist() if _has_tags(where, self._tag_sets[c])]
            ok &= np.isin(codes, fits)
        return ok

    def state(self) -> tuple[dict[str, npt.NDArray[Any]], dict[str, Any]]:
        """The book as arrays (its columns and ids) and plain values (codes, odd
        fingerprints, free keys), for a snapshot (`recall.indexes.copy_snapshot`)."""
        arrays = {name: getattr(self, name) for name in ("part", *_COLUMNS)}
        arrays.update(self.names.arrays())
        codes = {name: getattr(self, name).values for name in _CODES}
        plain = {"codes": codes, "odd": self._odd, "free": self._free}
        return arrays, plain

    @classmethod
    def restored(cls, arrays: Mapping[str, npt.NDArray[Any]], plain: Mapping[str, Any]) -> RowBook:
        """The book `state` gave (its plain values as JSON read them back)."""
        book = cls()
        for name in ("part", *_COLUMNS):
            setattr(book, name, arrays[name])
        book.names = Ids(arrays["names"], arrays["order"])
        for name, values in plain["codes"].items():
            codes = getattr(book, name)
            for value in values:  # JSON gives lists back where the codes held tuples
                codes.code(tuple(value) if isinstance(value, list) else value)
        book._odd = {int(key): fp for key, fp in plain["odd"].items()}
        book._free = [int(key) for key in plain["free"]]
        return book

    def _grow(self) -> int:
        """A key past the last one, the columns lengthened (by half) when full."""
        key = self.names.grow()
        if key >= len(self.part):
            size = max(64, len(self.part) * 3 // 2)
            self.part = _longer(self.part, size, FREE)
            for name in _COLUMNS:
                setattr(self, name, _longer(getattr(self, name), size, 0))
        return key


_COLUMNS = ("item", "kind", "agent", "session", "tags", "importance", "created",
            "fingerprint", "position")  # fmt: skip
_CODES = ("partitions", "_items", "_kinds", "_agents", "_sessions", "_tag_sets")
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


def _micros(instant: datetime) -> int:
    """An aware instant as whole microseconds since the epoch (exact)."""
    return (instant - EPOCH) // _MICROSECOND


def _has_tags(where: Filter, tags: tuple[str, ...]) -> bool:
    """`Filter.admits_facets`'s tag rules on one tag set."""
    if any(t not in tags for t in where.tags):
        return False
    return not where.any_tags or any(t in tags for t in where.any_tags)
