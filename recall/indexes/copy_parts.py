"""The vector copy's partitions: one project's active or inactive rows each.

A partition (`Part`) holds its rows' vectors flat while few, searched exactly
by one matrix product (through a sketch of its rows first once large,
`Sketching`), and in a USearch HNSW graph past `exact_below` rows. Split out of
recall/indexes/hot_vectors.py, which keeps the copy as a whole: its row book,
its loading, polling, journal and snapshots.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from recall.indexes import copy_snapshot
from recall.indexes.copy_rows import RowBook

_BF16_ROWS = 1024  # rows rounded to bfloat16 at a time (`_to_bf16`)


@dataclass(frozen=True, slots=True)
class Sketching:
    """When and how a flat partition scans a sketch of its rows first (`Part`).

    A partition of at least `above` rows keeps, beside its vectors, their
    projection onto its `dims` principal directions (the top eigenvectors of
    its rows' second-moment matrix, fitted once when it crosses `above`;
    later rows are projected onto the same directions). A search scans the
    sketch, a quarter of the bytes, and scores its best `pool` rows (or four
    times the rows asked for, if more) in full; only that pool reads the
    vectors, which such a partition then holds as bfloat16 (an f32's top
    half: 0.03 ms to widen a pool of 264 rows where numpy took 0.17 from
    f16), so a cosine is within about 3e-4 of the f32 rows'.
    """

    above: int = 8192
    dims: int = 96
    pool: int = 256


class Part:
    """One partition: its rows' vectors, searched exactly while few, by HNSW past `exact_below`.

    Flat, the vectors sit in a matrix (swap-remove on delete) beside their
    inverse norms, scanned with one BLAS matrix-vector product (`nearest`:
    0.45 ms at 10,700 x 384 on one core where USearch's exact search took
    2.96 ms), through a sketch first once the partition is large
    (`Sketching`); past `exact_below` rows they move into a USearch HNSW
    index, built in one multi-threaded add. A flat row's position in the
    matrix is `book.position[key]` (`recall.indexes.copy_rows`).

    A graph restored from a snapshot is viewed, not loaded: USearch maps the
    file, so its pages are file pages every process mapping the snapshot
    shares, and a follower moving to a newer snapshot maps the new graph
    beside the old one instead of holding two private copies while it
    switches. A view cannot change: the first write to the partition copies
    it into private memory (`_owned`), as loading it did before.
    """

    def __init__(
        self, dims: int, options: dict[str, Any], exact_below: int, sketching: Sketching,
        book: RowBook,
    ) -> None:  # fmt: skip
        self.dims, self.options, self.exact_below = dims, options, exact_below
        self.sketching = sketching
        self.book = book
        self.count = 0  # rows in the flat matrix
        self.index: Any = None  # the HNSW index, once the partition outgrows the flat matrix
        self.viewed = False  # the index is a snapshot's file mapped read-only (`restore`)
        self.matrix: npt.NDArray[Any] = np.empty((0, dims), dtype=np.float32)  # or bf16
        self.keys = np.empty(0, dtype=np.uint64)
        self.scale = np.empty(0, dtype=np.float32)  # each row's 1 / norm (0 for a zero row)
        self.basis: npt.NDArray[np.float32] | None = None  # dims x sketch dims, once sketched
        self.sketch = np.empty((0, 0), dtype=np.float32)  # each unit row on the basis

    def __len__(self) -> int:
        return len(self.index) if self.index is not None else self.count

    def add(self, keys: npt.NDArray[np.uint64], vectors: npt.NDArray[np.float32]) -> None:
        if self.index is not None:
            self._owned().add(keys, vectors, threads=0)
            return
        rows = self.count
        new = slice(rows, rows + len(keys))
        if rows + len(keys) > len(self.matrix):
            grown = max(len(self.matrix) * 3 // 2, rows + len(keys), 64)
            self.matrix = np.resize(self.matrix, (grown, self.dims))
            self.keys = np.resize(self.keys, grown)
            self.scale = np.resize(self.scale, grown)
            if self.basis is not None:
                self.sketch = np.resize(self.sketch, (grown, self.basis.shape[1]))
        self.matrix[new] = vectors if self.basis is None else _to_bf16(vectors)
        self.keys[new] = keys
        stored = self._f32(self.matrix[new])  # as held (bf16 when sketched)
        self.scale[new] = inverse_norms(stored)
        if self.basis is not None:
            self.sketch[new] = (stored * self.scale[new, None]) @ self.basis
        self.book.position[keys.astype(np.int64)] = np.arange(rows, rows + len(keys))
        self.count = rows + len(keys)
        if self.count > self.exact_below:
            self._to_graph()
        elif self.basis is None and self.count >= self.sketching.above:
            self._fit()

    def held_bytes(self) -> int:
        """Bytes of vectors, keys, norms and sketch (or the HNSW graph with its vectors)."""
        if self.index is not None:
            return int(self.index.memory_usage)
        flat = self.matrix.nbytes + self.keys.nbytes + self.scale.nbytes
        return int(flat + self.sketch.nbytes)

    def trim(self) -> None:
        """Give back the flat matrix's spare room (after a bulk load)."""
        rows = self.count
        if self.index is None and len(self.matrix) > rows:
            self.matrix, self.keys = self.matrix[:rows].copy(), self.keys[:rows].copy()
            self.scale = self.scale[:rows].copy()
            if self.basis is not None:
                self.sketch = self.sketch[:rows].copy()

    def state(self, at: str) -> tuple[dict[str, Any], dict[str, tuple[npt.NDArray[Any], int]]]:
        """What a snapshot holds of the partition: (plain values, arrays by name
        under the prefix `at`, with spare room for an eighth more rows)."""
        if self.index is not None:
            return {"graph": f"{at}.usearch", "count": 0}, {}
        rows = self.count
        room = rows + max(64, rows // 8)
        arrays = {f"{at}.{name}": (getattr(self, name)[:rows], room)
                  for name in ("matrix", "keys", "scale")}  # fmt: skip
        if self.basis is not None:
            arrays[f"{at}.basis"] = (self.basis, len(self.basis))
            arrays[f"{at}.sketch"] = (self.sketch[:rows], room)
        return {"count": rows, "sketched": self.basis is not None}, arrays

    def restore(self, plain: Mapping[str, Any], at: str, snapshot: copy_snapshot.Snapshot) -> None:
        """Take the partition `state` wrote into `snapshot`: arrays mapped, a graph loaded."""
        if "graph" in plain:
            from usearch.index import Index

            self.index = Index.restore(str(snapshot.file(plain["graph"])), view=True)
            self.viewed = True
            self.index.expansion_search = self.options["expansion_search"]  # not in the file
            return
        self.count = int(plain["count"])
        self.matrix = snapshot.array(f"{at}.matrix")
        self.keys, self.scale = snapshot.array(f"{at}.keys"), snapshot.array(f"{at}.scale")
        if plain["sketched"]:
            self.basis = np.ascontiguousarray(snapshot.array(f"{at}.basis"))
            self.sketch = snapshot.array(f"{at}.sketch")

    def rows(self, keys: Sequence[int]) -> npt.NDArray[np.float32]:
        """The vectors stored under `keys`, in order, as f32 (from the bf16 a sketched
        partition holds, or the graph's `dtype`)."""
        if self.index is not None:
            wanted = np.asarray(keys, dtype=np.uint64)
            return np.stack(self.index.get(wanted, dtype=np.float32)).astype(np.float32)
        return self._f32(self.matrix[self.book.position[np.asarray(keys, dtype=np.int64)]])

    def remove(self, key: int) -> None:
        if self.index is not None:
            self._owned().remove(key)
            return
        row = int(self.book.position[key])
        self.count = last = self.count - 1  # the old last row, now to fill the hole
        if row != last:
            moved = int(self.keys[last])
            self.matrix[row] = self.matrix[last]
            self.keys[row] = moved
            self.scale[row] = self.scale[last]
            if self.basis is not None:
                self.sketch[row] = self.sketch[last]
            self.book.position[moved] = row

    def search(
        self, query: npt.NDArray[np.float32], count: int
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]:
        """(keys, cosine distances) of the `count` nearest rows, nearest first."""
        if self.index is not None:
            found = self.index.search(query, count)
            return found.keys, found.distances
        rows = self.count
        pool = max(self.sketching.pool, 4 * count)
        if self.basis is None or pool >= rows:
            vectors = self._f32(self.matrix[:rows])
            at, distances = nearest(vectors, self.scale[:rows], query, count)
            return self.keys[at], distances
        # The sketch's best `pool` rows (in row order, so ties keep it), then exactly.
        rough = self.sketch[:rows] @ (self.basis.T @ query)
        near = np.sort(np.argpartition(-rough, pool - 1)[:pool])
        at, distances = nearest(self._f32(self.matrix[near]), self.scale[near], query, count)
        return self.keys[near[at]], distances

    def search_among(
        self, query: npt.NDArray[np.float32], keys: npt.NDArray[np.int64], count: int
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]:
        """(keys, cosine distances) of the `count` nearest of these rows: exactly, or,
        in a sketched partition, as `search` finds them (the sketch's best pool of
        these rows, then those in full)."""
        if not len(keys):
            return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.float32)
        wanted = keys.astype(np.uint64)
        if self.index is not None:
            vectors = self.rows(keys.tolist())
            at, distances = nearest(vectors, inverse_norms(vectors), query, count)
            return wanted[at], distances
        rows = self.book.position[keys]
        pool = max(self.sketching.pool, 4 * count)
        if self.basis is not None and pool < len(rows):  # in the given order: ties keep it
            rough = self.sketch[rows] @ (self.basis.T @ query)
            near = np.sort(np.argpartition(-rough, pool - 1)[:pool])
            rows, wanted = rows[near], wanted[near]
        at, distances = nearest(self._f32(self.matrix[rows]), self.scale[rows], query, count)
        return wanted[at], distances

    def _owned(self) -> Any:
        """The graph, copied into private memory first if it is a snapshot's view (a
        view is read-only; the copy is made from the mapping, so it works after the
        snapshot's files were removed)."""
        if self.viewed:
            owned = self.index.copy()
            owned.expansion_search = self.options["expansion_search"]
            self.index, self.viewed = owned, False
        return self.index

    def _f32(self, held: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
        """Rows of `matrix` as f32."""
        return held if self.basis is None else _from_bf16(held)

    def _fit(self) -> None:
        """Sketch the partition: its principal directions, its rows on them, bf16 vectors."""
        width = min(self.sketching.dims, self.dims)
        if width >= self.dims:  # no narrower sketch to scan
            return
        rows = self.count
        # A chunk of rows at a time (whole, the f32 temporaries peaked 70 MB over the
        # partition's matrix at 8,192 x 384).
        chunks = [slice(at, min(at + _BF16_ROWS, rows)) for at in range(0, rows, _BF16_ROWS)]
        moment = np.zeros((self.dims, self.dims), dtype=np.float32)
        for chunk in chunks:
            unit = self.matrix[chunk] * self.scale[chunk, None]
            moment += unit.T @ unit
        _, directions = np.linalg.eigh(moment)  # ascending: the last are the main ones
        self.basis = np.ascontiguousarray(directions[:, ::-1][:, :width], dtype=np.float32)
        self.sketch = np.zeros((len(self.matrix), width), dtype=np.float32)
        for chunk in chunks:
            self.sketch[chunk] = (self.matrix[chunk] * self.scale[chunk, None]) @ self.basis
        self.matrix = _to_bf16(self.matrix)
        for chunk in chunks:
            self.scale[chunk] = inverse_norms(_from_bf16(self.matrix[chunk]))

    def _to_graph(self) -> None:
        from usearch.index import Index

        rows = self.count
        index = Index(ndim=self.dims, metric="cos", **self.options)
        index.add(self.keys[:rows].copy(), self._f32(self.matrix[:rows]), threads=0)
        self.index, self.count = index, 0
        self.matrix = np.empty((0, self.dims), dtype=np.float32)
        self.keys = np.empty(0, dtype=np.uint64)
        self.scale = np.empty(0, dtype=np.float32)
        self.basis, self.sketch = None, np.empty((0, 0), dtype=np.float32)


def _to_bf16(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.uint16]:
    """Each f32 rounded to its top 16 bits (bfloat16, to nearest even), as uint16.

    A chunk of rows at a time: whole, a partition's 10,000 x 384 matrix made five
    uint32 temporaries of its size at once (a 60 MB peak at every sketch fit)."""
    out = np.empty(vectors.shape, dtype=np.uint16)
    for start in range(0, len(vectors), _BF16_ROWS):
        rows = slice(start, start + _BF16_ROWS)
        bits = np.ascontiguousarray(vectors[rows], dtype=np.float32).view(np.uint32)
        out[rows] = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16
    return out


def _from_bf16(held: npt.NDArray[np.uint16]) -> npt.NDArray[np.float32]:
    """bfloat16 (as uint16) widened back to f32."""
    return (held.astype(np.uint32) << 16).view(np.float32)


def inverse_norms(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """1 / each row's norm, 0 for a zero row (whose cosine with anything is then 0)."""
    norms = np.linalg.norm(vectors, axis=1)
    out: npt.NDArray[np.float32] = np.divide(
        1.0, norms, out=np.zeros_like(norms), where=norms > 0
    ).astype(np.float32)
    return out


def nearest(
    vectors: npt.NDArray[np.float32],
    scale: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    count: int,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
    """(row positions, cosine distances) of the `count` rows nearest `query`, nearest
    first (equal distances by position): one product, a partition, a sort of the top."""
    norm = float(np.linalg.norm(query))
    similarity = (vectors @ query) * scale * (1.0 / norm if norm > 0 else 0.0)
    count = min(count, len(similarity))
    if count <= 0:
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.float32)
    top = np.arange(len(similarity))
    if count < len(similarity):  # the top `count` in row order: the stable sort keeps ties so
        top = np.sort(np.argpartition(-similarity, count - 1)[:count])
    at = top[np.argsort(-similarity[top], kind="stable")]
    distances: npt.NDArray[np.float32] = (1.0 - similarity[at]).astype(np.float32)
    return at, distances
