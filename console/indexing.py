"""The outbox between the database and the derived planes.

A write commits its row and an IndexJob together (`enqueue`); after the
commit, `apply_pending` mirrors pending jobs into the full-text and vector
planes. A failure leaves the job queued with its error and attempt count, to
be retried on the next apply (or by `manage.py sync_indexes`). If the process
dies between the commit and the index write, the job survives in the database
and the planes reconverge on the next apply; `rebuild` (manage.py reindex)
recreates both planes from the database alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from console import store, wiring
from console.models import IndexJob, Memory, Note
from recall.types import MEMORY, NOTE, Doc, Record, VectorRow, to_doc, unless_repeated

log = logging.getLogger(__name__)
_apply_lock = threading.Lock()
BATCH = 256
T = TypeVar("T")
CONTEXT_TURNS = 2


def enqueue(item: str, item_id: str, op: str) -> None:
    """Record the job in the current transaction; apply it once that commits."""
    IndexJob.objects.create(item=item, item_id=item_id, op=op)
    if settings.RECALL["SYNC_ON_COMMIT"]:
        transaction.on_commit(apply_pending_quietly)


def enqueue_many(jobs: Iterable[tuple[str, str, str]]) -> None:
    """Record `(item, item_id, op)` jobs at once, without an apply on commit.

    For batch writers that apply the queue themselves once a batch commits
    (the importer), so the embedder sees a whole batch instead of one row.
    """
    IndexJob.objects.bulk_create(
        [IndexJob(item=item, item_id=item_id, op=op) for item, item_id, op in jobs]
    )


def apply_pending_quietly() -> None:
    try:
        apply_pending()
    except Exception:  # the job stays queued; the write itself has committed
        log.exception("applying index jobs failed; they stay queued")


@dataclass
class ApplyReport:
    applied: int = 0
    failed: int = 0


def apply_pending(*, limit: int | None = None) -> ApplyReport:
    """Apply queued jobs in order; failures stay queued with their error."""
    report = ApplyReport()
    with _apply_lock:
        max_attempts = settings.RECALL["MAX_JOB_ATTEMPTS"]
        jobs = list(IndexJob.objects.filter(attempts__lt=max_attempts).order_by("id")[:limit])
        for chunk in _chunks(jobs, BATCH):
            try:
                _apply(chunk)
            except Exception as exc:
                report.failed += len(chunk)
                for job in chunk:
                    IndexJob.objects.filter(pk=job.pk).update(
                        attempts=job.attempts + 1, last_error=f"{type(exc).__name__}: {exc}"[:2000]
                    )
                log.warning("index jobs %s failed: %s", [j.pk for j in chunk], exc)
                continue
            IndexJob.objects.filter(pk__in=[j.pk for j in chunk]).delete()
            report.applied += len(chunk)
    return report


def _apply(jobs: list[IndexJob]) -> None:
    # Collapse to the latest intent per item; the row itself says what to index.
    memory_ids = {j.item_id for j in jobs if j.item == MEMORY}
    note_ids = {j.item_id for j in jobs if j.item == NOTE}
    docs = [*memory_docs(Memory.objects.filter(pk__in=memory_ids))]
    docs += note_docs(Note.objects.filter(pk__in=note_ids))
    present = {d.id for d in docs}
    gone = sorted((memory_ids | note_ids) - present)
    write_docs(docs)
    if gone:
        wiring.text_index().delete(gone)
        vectors = wiring.vector_index()
        if vectors is not None:
            vectors.delete(gone)


def write_docs(docs: list[Doc]) -> None:
    """Upsert docs into both planes (vectors embedded in one batch)."""
    if not docs:
        return
    wiring.text_index().upsert(docs)
    vectors, embedder = wiring.vector_index(), wiring.embedder()
    if vectors is None or embedder is None:
        return
    matrix = embedder.embed([d.embedding_text() for d in docs])
    rows = [
        VectorRow(
            id=d.id,
            item=d.item,
            project=d.project,
            active=d.active,
            kind=d.kind,
            vector=tuple(float(x) for x in matrix[i]),
            model=embedder.model,
            updated=d.updated,
        )
        for i, d in enumerate(docs)
    ]
    vectors.upsert(rows)


def memory_docs(rows: QuerySet[Memory]) -> list[Doc]:
    """What the planes index for these memories: the store's records, with session context."""
    records = store.memory_records(rows.select_related(None))
    contexts = _session_contexts(records)
    return [to_doc(r, context=contexts.get(r.id, "")) for r in records]


def _session_contexts(records: list[Record]) -> dict[str, str]:
    """The previous turns of each episodic memory's session, as index-only text.

    Session context is the big lever for episodic memories (ANCHORS.md): a
    turn like "Yes, last Tuesday" is findable by what the turns before it said.
    Only earlier memories are used, so a memory is indexed once, at insert.
    """
    orders: dict[str, int] = {
        pk: order
        for pk, order in Memory.objects.filter(
            pk__in=[r.id for r in records if r.session_id]
        ).values_list("pk", "session_order")
        if order is not None
    }
    wanted = [(r, orders[r.id]) for r in records if r.id in orders]
    if not wanted:
        return {}
    sessions = {r.session_id for r, _ in wanted}
    earlier: dict[tuple[str, int], str] = {
        (session, order): unless_repeated(description, body) + " " + body
        for session, order, description, body in Memory.objects.filter(
            session_id__in=sessions
        ).values_list("session_id", "session_order", "description", "body")
        if order is not None
    }
    out = {}
    for r, order in wanted:
        turns = [earlier.get((r.session_id, order - i), "") for i in (1, CONTEXT_TURNS)]
        out[r.id] = " ".join(t.strip() for t in turns if t.strip())
    return out


def note_docs(rows: QuerySet[Note]) -> list[Doc]:
    return [to_doc(store.note_record(n)) for n in rows.select_related("project")]


def rebuild(*, progress: Callable[[int], None] | None = None) -> int:
    """Recreate both planes from the database; returns the number of items."""
    text, vectors = wiring.text_index(), wiring.vector_index()
    last_job = IndexJob.objects.order_by("-id").values_list("id", flat=True).first() or 0
    text.clear()
    if vectors is not None:
        vectors.clear()
    done = 0
    for docs in _all_docs():
        write_docs(docs)
        done += len(docs)
        if progress:
            progress(len(docs))
    # Jobs queued before the rebuild began are covered by it; later ones stay.
    IndexJob.objects.filter(id__lte=last_job).delete()
    maintain()
    return done


def maintain() -> None:
    """Off-the-hot-path upkeep: compact the vector table, build its ANN index when large."""
    vectors = wiring.vector_index()
    optimize = getattr(vectors, "optimize", None)
    if callable(optimize):
        optimize()


def _all_docs() -> Iterator[list[Doc]]:
    ids = list(Memory.objects.order_by("pk").values_list("pk", flat=True))
    for chunk in _chunks(ids, BATCH):
        yield memory_docs(Memory.objects.filter(pk__in=chunk).order_by("pk"))
    note_ids = list(Note.objects.order_by("pk").values_list("pk", flat=True))
    for chunk in _chunks(note_ids, BATCH):
        yield note_docs(Note.objects.filter(pk__in=chunk).order_by("pk"))


@dataclass
class Status:
    rows: int
    text_rows: int
    vector_rows: int | None
    pending: int
    failing: int
    missing_text: int
    extra_text: int
    missing_vectors: int
    extra_vectors: int
    vector_model: str | None = None  # what the stored vectors were embedded with
    embedder_model: str | None = None  # what the configured embedder makes now
    text_backend: str = ""  # dotted paths of the configured adapters
    vector_backend: str = ""

    @property
    def stale_model(self) -> bool:
        """Stored vectors from another model: every one must be re-embedded."""
        return bool(self.vector_model and self.embedder_model) and (
            self.vector_model != self.embedder_model
        )

    @property
    def drift(self) -> int:
        stale = (self.vector_rows or 0) if self.stale_model else 0
        return (
            self.missing_text + self.extra_text + self.missing_vectors + self.extra_vectors + stale
        )


def status() -> Status:
    db_ids = set(Memory.objects.values_list("pk", flat=True)) | set(
        Note.objects.values_list("pk", flat=True)
    )
    text_ids = wiring.text_index().ids()
    vectors = wiring.vector_index()
    vector_ids = vectors.ids() if vectors is not None else None
    return Status(
        rows=len(db_ids),
        text_rows=len(text_ids),
        vector_rows=len(vector_ids) if vector_ids is not None else None,
        pending=IndexJob.objects.count(),
        failing=IndexJob.objects.filter(attempts__gt=0).count(),
        missing_text=len(db_ids - text_ids),
        extra_text=len(text_ids - db_ids),
        missing_vectors=len(db_ids - vector_ids) if vector_ids is not None else 0,
        extra_vectors=len(vector_ids - db_ids) if vector_ids is not None else 0,
        vector_model=vectors.stored_model() if vectors is not None else None,
        embedder_model=embedder.model if (embedder := wiring.embedder()) is not None else None,
        text_backend=wiring.backend("TEXT_INDEX")[0],
        vector_backend=wiring.backend("VECTOR_INDEX")[0] if vectors is not None else "",
    )


def _chunks(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def reconcile(ids: Iterable[str]) -> None:
    """Re-enqueue specific items (used when drift is found)."""
    for item_id in ids:
        kind = MEMORY if Memory.objects.filter(pk=item_id).exists() else NOTE
        IndexJob.objects.create(item=kind, item_id=item_id, op="upsert")
