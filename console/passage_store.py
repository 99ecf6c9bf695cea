"""Long memories' sentence vectors in the database (`Passages`, recall/passages.py).

The index writes them with each memory's vector (`indexing.write_docs`):
the sentences of a long memory are embedded in one batch and stored under
the hash of what was embedded, so a reindex, a plane rebuild or an edit that
leaves the text alone embeds nothing again, and a memory that became short
loses them. The semantic channel reads them through `DjangoStore.passages`.
They live beside the rows rather than in a vector plane: one implementation
serves the embedded and the PostgreSQL profile, and the planes' rebuild from
the database keeps them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from django.db import IntegrityError, transaction

from console.models import Memory, Passages
from console.prepared import Prepared
from recall import passages
from recall.errors import RecallError
from recall.ports import Embedder, Vectors
from recall.types import MEMORY, Doc

log = logging.getLogger(__name__)

STORED = np.float16  # 768 bytes a sentence at 384 dimensions; cosines move < 1e-3


def write(docs: Sequence[Doc], embedder: Embedder) -> int:
    """Store the sentence vectors of `docs`' long memories, drop those of memories
    that are no longer long; returns how many sentences were embedded."""
    wanted = {d.id: passages.texts(d) for d in docs if d.item == MEMORY}
    if not wanted:
        return 0
    keys = {i: passages.texts_hash(embedder.model, t) for i, t in wanted.items() if t}
    have = dict(Passages.objects.filter(memory_id__in=list(wanted)).values_list("memory_id", "key"))
    gone = [i for i in have if i not in keys]
    if gone:
        Passages.objects.filter(memory_id__in=gone).delete()
    todo = [i for i, key in keys.items() if have.get(i) != key]
    if not todo:
        return 0
    texts = [t for i in todo for t in wanted[i]]
    try:
        block = passages.unit_rows(embedder.embed(texts))
    except RecallError as exc:  # the next write or reindex of the memory tries again
        log.warning("sentence vectors skipped for %d memories: %s", len(todo), exc)
        return 0
    rows, at = [], 0
    for i in todo:
        n = len(wanted[i])
        matrix = block[at : at + n].astype(STORED)
        rows.append(Passages(memory_id=i, key=keys[i], rows=n, vectors=matrix.tobytes()))
        at += n
    live = set(Memory.objects.filter(pk__in=todo).values_list("pk", flat=True))
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
    return len(texts)


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
