"""Long memories' sentence vectors in the database (`Passages`, recall/passages.py).

The index queues them after each memory's vector (`indexing._apply` calls
`queue`): a `passages` job per long memory whose sentences changed, applied
by `indexing.apply_pending` after the memory and note jobs. A 100 KB body is
192 runs of sentences, about 9 s of embedding on a 2 GHz core; embedded with
the memory's own vector, as they were before, they held every write queued
behind it that long. Now the memory is indexed at once (its text and its one
vector), and its sentences are embedded `SLICE` at a time, with the memory and
note jobs that arrived meanwhile applied between two slices (`embedded`'s
`between`), so such a write waits for one slice at most. A rebuild writes
them at once (`write`).

Each memory's vectors are stored under the hash of what was embedded, so a
reindex, a plane rebuild or an edit that leaves the text alone embeds nothing
again, and a memory that became short loses them at once. A job stores them
only while the memory still holds what was embedded (`indexing._apply_passages`
checks under the plane lock): an edit applied meanwhile queued a job of its
own. The semantic channel reads them through
`DjangoStore.passages`; until they are written a long memory is read by its
one vector. They live beside the rows rather than in a vector plane: one
implementation serves the embedded and the PostgreSQL profile, and the
planes' rebuild from the database keeps them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from django.db import IntegrityError, transaction

from console.models import IndexJob, Memory, Passages
from console.prepared import Prepared
from recall import passages
from recall.errors import RecallError
from recall.ports import Embedder, Vectors
from recall.types import MEMORY, Doc

log = logging.getLogger(__name__)

STORED = np.float16  # 768 bytes a sentence at 384 dimensions; cosines move < 1e-3
PASSAGES = "passages"  # the IndexJob item of a memory whose sentences wait (8 characters)
SLICE = 16  # sentences embedded between two looks at the memory and note jobs


@dataclass(frozen=True, slots=True)
class Stale:
    """Long memories whose stored sentence vectors are not those of their sentences."""

    sentences: dict[str, list[str]]  # what to embed, by memory id
    keys: dict[str, str]  # the hash each one's vectors are stored under


def stale(docs: Sequence[Doc], model: str) -> Stale:
    """The long memories of `docs` whose vectors must be embedded; drops the vectors of
    memories that are no longer long."""
    wanted = {d.id: passages.texts(d) for d in docs if d.item == MEMORY}
    if not wanted:
        return Stale({}, {})
    keys = {i: passages.texts_hash(model, t) for i, t in wanted.items() if t}
    have = dict(Passages.objects.filter(memory_id__in=list(wanted)).values_list("memory_id", "key"))
    gone = [i for i in have if i not in keys]
    if gone:
        Passages.objects.filter(memory_id__in=gone).delete()
    todo = [i for i, key in keys.items() if have.get(i) != key]
    return Stale({i: wanted[i] for i in todo}, {i: keys[i] for i in todo})


def queue(docs: Sequence[Doc], model: str) -> int:
    """Queue a `passages` job for each long memory of `docs` whose sentences changed,
    unless one waits already; drops the vectors of memories no longer long. How many
    were queued."""
    todo = stale(docs, model).sentences
    waiting = IndexJob.objects.filter(
        item=PASSAGES, item_id__in=list(todo), claimed_until__isnull=True
    ).values_list("item_id", flat=True)
    fresh = sorted(set(todo) - set(waiting))
    IndexJob.objects.bulk_create([IndexJob(item=PASSAGES, item_id=i, op="upsert") for i in fresh])
    return len(fresh)


def embedded(
    found: Stale, embedder: Embedder, *, between: Callable[[], None] | None = None
) -> list[Passages]:
    """The rows of `found`'s memories, their sentences embedded `SLICE` at a time with
    `between` called between two slices (all at once without it). Raises RecallError
    when the embedder fails."""
    texts = [t for sentences in found.sentences.values() for t in sentences]
    if not texts:
        return []
    if between is None:
        vectors = embedder.embed(texts)
    else:
        parts = []
        for start in range(0, len(texts), SLICE):
            if start:
                between()
            parts.append(embedder.embed(texts[start : start + SLICE]))
        vectors = np.vstack(parts)
    block = passages.unit_rows(vectors)
    rows, at = [], 0
    for i, sentences in found.sentences.items():
        matrix = block[at : at + len(sentences)].astype(STORED)
        rows.append(
            Passages(memory_id=i, key=found.keys[i], rows=len(sentences), vectors=matrix.tobytes())
        )
        at += len(sentences)
    return rows


def store(rows: Sequence[Passages]) -> None:
    """Write `rows` over what their memories had (those of memories gone are left out)."""
    ids = [r.memory_id for r in rows]
    live = set(Memory.objects.filter(pk__in=ids).values_list("pk", flat=True))
    try:
        with transaction.atomic():
            Passages.objects.bulk_create(
                [r for r in rows if r.memory_id in live],
                update_conflicts=True,
                unique_fields=["memory"],
                update_fields=["key", "rows", "vectors"],
            )
    except IntegrityError as exc:  # a memory deleted meanwhile: its delete job follows
        log.info("sentence vectors not stored: %s", exc)


def write(docs: Sequence[Doc], embedder: Embedder) -> int:
    """Store the sentence vectors of `docs`' long memories at once (a rebuild), drop those
    of memories that are no longer long; returns how many sentences were embedded."""
    found = stale(docs, embedder.model)
    try:
        rows = embedded(found, embedder)
    except RecallError as exc:  # the next write or reindex of the memory tries again
        log.warning("sentence vectors skipped for %d memories: %s", len(found.sentences), exc)
        return 0
    store(rows)
    return sum(r.rows for r in rows)


# Compiled once per pool size (console/prepared.py): the semantic channel asks on
# every Recall, and compiling the QuerySet cost more than the read.
_READ = Prepared(
    lambda n, *ids: Passages.objects.filter(memory_id__in=ids).order_by(),
    model=Passages,
    columns=("memory_id", "rows", "vectors"),
)


def read(ids: Sequence[str]) -> dict[str, Vectors]:
    """The stored sentence vectors of these memories (float32 rows), by id."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    out: dict[str, Vectors] = {}
    for pk, n, blob in _READ.rows(len(wanted), *wanted):
        flat = np.frombuffer(bytes(blob), dtype=STORED)
        if n and flat.size % n == 0:
            out[pk] = flat.reshape(n, -1).astype(np.float32)
    return out
