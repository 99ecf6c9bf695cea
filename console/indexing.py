"""The outbox between the database and the derived planes.

A write commits its row and an IndexJob together (`enqueue`); after the
commit, `apply_pending` mirrors pending jobs into the full-text and vector
planes. A failure leaves the job queued with its error and attempt count, to
be retried on the next apply (or by `manage.py sync_indexes`). If the process
dies between the commit and the index write, the job survives in the database
and the planes reconverge on the next apply; `rebuild` (manage.py reindex)
recreates both planes from the database alone.

Several processes (gunicorn workers, `manage.py` commands) apply jobs at
once. Each first claims a batch in one UPDATE that only takes unclaimed or
lapsed jobs, so no job is applied by two processes; it then reads the rows
and writes the planes while holding one machine-wide file lock
(`RECALL["INDEX_LOCK_FILE"]`), so two batches touching one item cannot
interleave and leave the older state in a plane. A claim lapses after
`RECALL["JOB_CLAIM_SECONDS"]`, at once when its holder's process on this
host is gone (a SIGKILLed worker), and when the holder fails.

`status` compares every plane row with the database by fingerprint (a
digest of the indexed fields, `Doc.fingerprint`), counts rows rather than
distinct ids, and `repair` rewrites whatever it finds stale, missing,
duplicated or extra.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import timedelta
from functools import cache, partial
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from console import allocator, digesting, passage_store, store, wiring
from console.models import IndexJob, KnownVector, Memory, Note
from recall import dedup
from recall.errors import RecallError
from recall.indexes import layout
from recall.indexes.hot_vectors import HotVectorIndex
from recall.locks import FileLock
from recall.ports import (
    BulkWrites,
    Embedder,
    KeepsTextHashes,
    KeepsWriter,
    TextIndex,
    VectorIndex,
    Vectors,
)
from recall.types import (
    EPISODIC_KINDS,
    MEMORY,
    NOTE,
    Doc,
    Record,
    VectorRow,
    conversation,
    to_doc,
    unless_repeated,
)

log = logging.getLogger(__name__)
BATCH = 256
# A rebuild writes the planes this many items at a time: LanceDB then merges 30
# batches instead of 480 at 100,000 (each leaves a file the compaction reads).
REBUILD_BATCH = 4096
T = TypeVar("T")
CONTEXT_TURNS = 2


def enqueue(item: str, item_id: str, op: str) -> None:
    """Record the job in the current transaction; apply it once that commits."""
    transaction.on_commit(wiring.forget_recalls)
    if _written_in_transaction([(item, item_id, op)]):
        return
    IndexJob.objects.create(item=item, item_id=item_id, op=op)
    if settings.RECALL["SYNC_ON_COMMIT"]:
        transaction.on_commit(apply_pending_quietly)


def enqueue_many(
    jobs: Iterable[tuple[str, str, str]],
    *,
    apply_on_commit: bool = False,
    in_transaction: bool = True,
) -> None:
    """Record `(item, item_id, op)` jobs at once.

    Without `apply_on_commit`, for batch writers that apply the queue
    themselves once a batch commits (the importer), so the embedder sees a
    whole batch instead of one row. `in_transaction=False` queues them even
    where the planes could be written in the transaction (`import --no-index`).
    """
    jobs = list(jobs)
    transaction.on_commit(wiring.forget_recalls)
    if in_transaction and _written_in_transaction(jobs):
        return
    IndexJob.objects.bulk_create(
        [IndexJob(item=item, item_id=item_id, op=op) for item, item_id, op in jobs]
    )
    if apply_on_commit and settings.RECALL["SYNC_ON_COMMIT"]:
        transaction.on_commit(apply_pending_quietly)


def _written_in_transaction(jobs: list[tuple[str, str, str]]) -> bool:
    """Write the jobs' plane rows now, in the caller's transaction, when the planes
    live on the database's own connection (the PostgreSQL profile,
    console/pgplanes.py) and RECALL["INDEX_IN_TRANSACTION"] allows it: they then
    commit with the row, and no job is queued. Should that fail (the embedder
    down, say), the savepoint rolls it back alone, the full-text rows are written
    without vectors, and False sends the jobs to the outbox for the retry."""
    paths = [wiring.backend("TEXT_INDEX")[0]]
    if wiring.backend("EMBEDDER")[0]:
        paths.append(wiring.backend("VECTOR_INDEX")[0])
    joins = all(p and getattr(wiring.import_string(p), "JOINS_TRANSACTION", False) for p in paths)
    if not (joins and settings.RECALL["INDEX_IN_TRANSACTION"]):
        return False
    try:
        with transaction.atomic():
            _forget_known(_apply([IndexJob(item=i, item_id=n, op=op) for i, n, op in jobs]))
        if settings.RECALL["SYNC_ON_COMMIT"] and _sentences_wait():
            transaction.on_commit(apply_pending_quietly)  # the sentences it queued
        return True
    except Exception:
        log.exception("writing the planes in the transaction failed; the jobs wait in the outbox")
    try:
        with transaction.atomic():  # findable by its words while the vectors wait
            ids = [item_id for _, item_id, _ in jobs]
            docs = memory_docs(Memory.objects.filter(pk__in=ids))
            docs += note_docs(Note.objects.filter(pk__in=ids))
            wiring.text_index().upsert(docs)
            wiring.text_index().delete(sorted(set(ids) - {d.id for d in docs}))
    except Exception:
        log.exception("the full-text plane failed too; the jobs wait in the outbox")
    return False


def _sentences_wait() -> bool:
    return IndexJob.objects.filter(item=passage_store.PASSAGES, claimed_until__isnull=True).exists()


def apply_pending_quietly() -> None:
    try:
        apply_pending()
    except Exception:  # the job stays queued; the write itself has committed
        log.exception("applying index jobs failed; they stay queued")


@dataclass
class ApplyReport:
    applied: int = 0
    failed: int = 0


def apply_pending(
    *, limit: int | None = None, parked: bool = False, ahead: Mapping[str, Vectors] | None = None
) -> ApplyReport:
    """Apply queued jobs, a claimed batch at a time; failures stay queued with their error
    (`_failed`). With `parked`, the parked jobs are retried now too (`sync_indexes`).
    `ahead`: vectors embedded beforehand by embedding hash (`embedding_ahead`), used
    where a text still hashes to one of them.

    The memory and note jobs first, then the long memories' sentences
    (console/passage_store.py), one memory at a time, with the memory and note
    jobs queued meanwhile applied between two slices of its sentences.
    Returns when no unclaimed job is left (jobs other processes hold are
    theirs to apply) or after `limit` jobs.
    """
    report = ApplyReport()
    release_dead_claims()
    failed: set[int] = set()  # tried once per call, like every other job

    def rows() -> None:
        _apply_rows(report, failed, limit, parked=parked, ahead=ahead or {})

    rows()
    while limit is None or report.applied + report.failed < limit:
        chunk = claim(1, skip=failed, items=(passage_store.PASSAGES,), parked=parked)
        if not chunk:
            break
        _settled(chunk, report, failed, partial(_apply_passages, chunk[0], between=rows))
    if report.applied:
        allocator.trim()  # the writer heap and merge buffers (console/allocator.py)
    return report


def _apply_rows(
    report: ApplyReport,
    failed: set[int],
    limit: int | None,
    *,
    parked: bool = False,
    ahead: Mapping[str, Vectors],
) -> None:
    """Apply the queued memory and note jobs, a claimed batch at a time."""
    while limit is None or report.applied + report.failed < limit:
        size = BATCH if limit is None else min(BATCH, limit - report.applied - report.failed)
        chunk = claim(size, skip=failed, items=(MEMORY, NOTE), parked=parked)
        if not chunk:
            break

        def apply(jobs: list[IndexJob] = chunk) -> list[str]:
            with plane_lock().held(before_waiting=let_go_writer):
                return _apply(jobs, ahead)

        _settled(chunk, report, failed, apply)


def embedding_ahead(ids: Sequence[str]) -> Future[dict[str, Vectors]] | None:
    """Start embedding these memories' and notes' texts, as the planes will store them,
    in another thread: for `apply_pending(ahead=...)` once the caller has done other
    work meanwhile (the importer reads and saves its next batch, and writes the planes
    of the one before). None where nothing would use them: no vector plane, or planes
    written in the writes' own transaction.

    The result maps embedding hashes to vectors, so an item edited in between is simply
    embedded again by the apply; it is empty when the embedder failed (the apply then
    tries itself, and leaves the jobs queued with the error)."""
    embedder = wiring.embedder()
    if embedder is None or not ids or wiring.vector_index() is None:
        return None
    if any(getattr(p, "joins_caller", False) for p in (wiring.text_index(), wiring.vector_index())):
        return None
    docs = memory_docs(Memory.objects.filter(pk__in=ids))
    docs += note_docs(Note.objects.filter(pk__in=ids))
    hashes = [d.embedding_hash(embedder.model) for d in docs]
    return _embedding_pool().submit(_embedded_quietly, docs, hashes, embedder)


@cache
def _embedding_pool() -> ThreadPoolExecutor:
    """One thread: batches embedded ahead queue behind each other, in order."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed-ahead")


def _embedded_quietly(
    docs: Sequence[Doc], hashes: Sequence[str], embedder: Embedder
) -> dict[str, Vectors]:
    try:
        return _embedded(docs, hashes, {}, embedder)[0]
    except Exception as exc:  # the apply embeds, and fails with the jobs' own error
        log.warning("embedding ahead failed, the apply embeds: %s", exc)
        return {}


PARKED_RETRY = timedelta(minutes=1)  # how often a job that failed MAX_JOB_ATTEMPTS is retried


def _failed(job: IndexJob, error: str, *, claimed_by: str | None = None) -> None:
    """Put a job that failed back in the queue with its error. Past MAX_JOB_ATTEMPTS it
    is parked: unclaimed, but not due again before `PARKED_RETRY`, so a lasting fault
    (a plane's folder gone, a full disk) is retried once a minute rather than at every
    apply, and never given up on; `sync_indexes` retries it at once (`claim`'s
    `parked`)."""
    attempts = job.attempts + 1
    parked = attempts >= settings.RECALL["MAX_JOB_ATTEMPTS"]
    held = IndexJob.objects.filter(pk=job.pk)
    if claimed_by is not None:
        held = held.filter(claimed_by=claimed_by)
    held.update(
        attempts=attempts,
        last_error=error[:2000],
        claimed_by="",
        claimed_until=timezone.now() + PARKED_RETRY if parked else None,
    )


def _settled(
    chunk: list[IndexJob], report: ApplyReport, failed: set[int], apply: Callable[[], list[str]]
) -> None:
    """Run `apply` for the claimed `chunk`: its jobs leave the outbox (with the kept
    vectors it used) or stay with their error."""
    try:
        used = apply()
    except Exception as exc:
        report.failed += len(chunk)
        failed.update(j.pk for j in chunk)
        for job in chunk:
            _failed(job, f"{type(exc).__name__}: {exc}", claimed_by=job.claimed_by)
        log.warning("index jobs %s failed: %s", [j.pk for j in chunk], exc)
        return
    with transaction.atomic():  # one write lock for both: writers are queueing for it
        IndexJob.objects.filter(pk__in=[j.pk for j in chunk], claimed_by=_me()).delete()
        _forget_known(used)
    report.applied += len(chunk)


def _apply_passages(job: IndexJob, *, between: Callable[[], None]) -> list[str]:
    """Embed and store one long memory's sentences (`between` runs between two slices);
    stored only if the memory still holds those sentences (an edit applied meanwhile
    queued a job of its own)."""
    embedder = wiring.embedder()
    if embedder is None or not settings.RECALL["PASSAGES"]:
        return []

    def stale() -> passage_store.Stale:
        return passage_store.stale(memory_docs(Memory.objects.filter(pk=job.item_id)), model)

    model = embedder.model
    rows = passage_store.embedded(stale(), embedder, between=between)
    with plane_lock().held(before_waiting=let_go_writer):
        now = stale().keys
        passage_store.store([r for r in rows if now.get(r.memory_id) == r.key])
    return []


@contextmanager
def writer_kept() -> Iterator[None]:
    """Keep the text plane's writer between this thread's batches inside the block
    (the index worker; `recall.ports.KeepsWriter`).

    A batch whose planes' lock is held elsewhere first lets the writer go
    (`let_go_writer`): the holder may be about to write the text plane.
    Whoever keeps it should also let go once the queue has been idle a moment.
    """
    text = _keeps_writer()
    with text.kept() if text is not None else nullcontext():
        yield


def let_go_writer() -> None:
    """Give back the text plane's kept writer, if this process keeps one."""
    if (text := _keeps_writer()) is not None:
        text.let_go()


def _keeps_writer() -> KeepsWriter | None:
    """The text plane, when it is one whose writer can be kept (tantivy)."""
    text = wiring.text_index()
    return text if isinstance(text, KeepsWriter) else None


def claim(
    size: int, *, skip: Iterable[int] = (), items: Iterable[str] | None = None, parked: bool = False
) -> list[IndexJob]:
    """Claim up to `size` of the oldest unclaimed jobs (but `skip`; of `items` when
    given) in one UPDATE; with `parked`, the parked ones not yet due too (`_failed`).

    The UPDATE repeats the "unclaimed" condition, so when two processes pick
    the same candidates each row goes to whichever updates it first (the
    database re-checks the condition under the row's write lock).
    """
    now = timezone.now()
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    if parked:
        free |= Q(claimed_by="")  # a claim held by no process: a parked job's wait
    waiting = IndexJob.objects.filter(free).exclude(pk__in=skip)
    if items is not None:
        waiting = waiting.filter(item__in=list(items))
    candidates = list(waiting.order_by("id").values_list("pk", flat=True)[:size])
    if not candidates:
        return []
    until = now + timedelta(seconds=settings.RECALL["JOB_CLAIM_SECONDS"])
    waiting.filter(pk__in=candidates).update(claimed_by=_me(), claimed_until=until)
    return list(IndexJob.objects.filter(pk__in=candidates, claimed_by=_me()).order_by("id"))


def release_dead_claims() -> int:
    """Free the claims of processes on this host that are gone; the number freed."""
    host = socket.gethostname()
    holders = (
        IndexJob.objects.filter(claimed_until__gte=timezone.now())
        .exclude(claimed_by="")
        .values_list("claimed_by", flat=True)
        .distinct()
    )
    dead = [h for h in holders if _host_pid(h)[0] == host and not _alive(_host_pid(h)[1])]
    if not dead:
        return 0
    return IndexJob.objects.filter(claimed_by__in=dead).update(claimed_by="", claimed_until=None)


@cache
def _claimer(pid: int) -> str:
    return f"{socket.gethostname()}:{pid}:{uuid.uuid4().hex[:8]}"


def _me() -> str:
    """This process's claim name: host, pid and a nonce (a forked child gets its own)."""
    return _claimer(os.getpid())


def _host_pid(claimer: str) -> tuple[str, int]:
    parts = claimer.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return ("", 0)
    return (parts[0], int(parts[1]))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def plane_lock() -> FileLock:
    """The machine-wide lock held while a batch reads rows and writes the planes."""
    return _plane_lock(str(settings.RECALL["INDEX_LOCK_FILE"]))


@cache
def _plane_lock(path: str) -> FileLock:
    return FileLock(path)


def _apply(jobs: list[IndexJob], ahead: Mapping[str, Vectors] | None = None) -> list[str]:
    """Write the jobs' items to the planes; the keys of the kept vectors used, for the
    caller to forget (`_forget_known`) with the jobs: a batch that dies before that
    finds them again when it is applied once more."""
    # Collapse to the latest intent per item; the row itself says what to index.
    memory_ids = {j.item_id for j in jobs if j.item == MEMORY}
    note_ids = {j.item_id for j in jobs if j.item == NOTE}
    docs = [*memory_docs(Memory.objects.filter(pk__in=memory_ids))]
    docs += note_docs(Note.objects.filter(pk__in=note_ids))
    present = {d.id for d in docs}
    gone = sorted((memory_ids | note_ids) - present)
    known = _known(docs)
    write_docs(docs, known=_Layered(known, ahead) if ahead else known, sentences=False)
    embedder = wiring.embedder()
    if embedder is not None and settings.RECALL["PASSAGES"]:
        passage_store.queue(docs, embedder.model)  # after these jobs (`apply_pending`)
    if gone:
        wiring.text_index().delete(gone)
        vectors = wiring.vector_index()
        if vectors is not None:
            vectors.delete(gone)
    if memory_ids:  # their projects' digests are stale now (rebuilt by `apply_digests`)
        digesting.touched({d.project for d in docs if d.item == MEMORY}, gone=gone)
    return list(known)


def apply_digests(*, limit: int | None = None, parked: bool = False) -> ApplyReport:
    """Rebuild the digests queued in the outbox (console/digesting.py), one per project.

    Outside the plane lock, and never from a request: the index worker and
    `manage.py sync_indexes` call it. A failure stays queued with its error.
    """
    report = ApplyReport()
    failed: set[int] = set()
    while limit is None or report.applied + report.failed < limit:
        chunk = claim(1, skip=failed, items=(digesting.DIGEST,), parked=parked)
        if not chunk:
            break
        job = chunk[0]
        try:
            digesting.rebuild(job.item_id or None)
        except Exception as exc:
            report.failed += 1
            failed.add(job.pk)
            _failed(job, f"{type(exc).__name__}: {exc}")
            log.warning("digest job %s failed: %s", job.pk, exc)
            continue
        IndexJob.objects.filter(pk=job.pk).delete()
        report.applied += 1
    return report


# --- one embedding per write (KnownVector) ---
# An agent's write embeds its text in the request for the dedup hint; the
# request keeps that vector (`keep`, in the write's transaction) and `_apply`
# uses it instead of embedding the text again (`_known`), matched by
# `Doc.embedding_hash`, so an edit in between only costs the re-embedding.
# Rows nobody takes (a duplicate that was not written) go after KNOWN_TTL.
KNOWN_TTL = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class Embedded:
    """A memory's text embedded before its write: the vector and its embedding hash."""

    key: str
    vector: npt.NDArray[np.float32]


def embedded(
    *,
    project: str | None,
    name: str,
    description: str,
    body: str,
    title: str = "",
    item: str = MEMORY,
) -> Embedded | None:
    """The vector the planes will store for a memory (or with `item` NOTE, a note
    titled `title`) with these fields, embedded now (call it outside the write's
    transaction); None without an embedder or on its trouble."""
    embedder = wiring.embedder()
    if embedder is None:
        return None
    doc = dedup.probe(project, name, description, body, title=title, item=item)
    try:
        vector = np.asarray(embedder.embed([doc.embedding_text()])[0], dtype=np.float32)
    except RecallError as exc:
        log.warning("embedding before the write skipped: %s", exc)
        return None
    return Embedded(doc.embedding_hash(embedder.model), vector)


def kept_vector(
    item: str,
    item_id: str,
    *,
    project: str | None,
    name: str,
    title: str,
    description: str,
    body: str,
) -> Embedded | None:
    """The vector the vector plane holds for an item whose text an edit leaves as it
    is, under that text's embedding hash, for `keep`: the worker then rewrites the row
    (tags, time) without embedding the same text again. None while a job for the item
    waits (the plane may hold an older text), or without a vector plane.

    Read from this process's vector copy once loaded (a serving process never opens
    LanceDB): a large partition holds its rows as bfloat16, so the vector handed on
    is the stored one rounded there (cosine to it above 0.99999), and rounding it again
    changes nothing, so edits do not wear it down."""
    embedder, vectors = wiring.embedder(), wiring.vector_index()
    if embedder is None or vectors is None:
        return None
    if IndexJob.objects.filter(item=item, item_id=item_id).exists():
        return None
    try:
        found = vectors.vectors([item_id]).get(item_id)
    except RecallError as exc:
        log.warning("the stored vector of %s not read: %s", item_id, exc)
        return None
    if found is None or len(found) != embedder.dims:
        return None
    doc = dedup.probe(project, name, description, body, title=title, item=item)
    return Embedded(doc.embedding_hash(embedder.model), np.asarray(found, dtype=np.float32))


def keep(*found: Embedded) -> None:
    """Store a request's vectors for the worker, in the caller's transaction."""
    now = timezone.now()
    rows = {e.key: KnownVector(key=e.key, vector=e.vector.tobytes(), created=now) for e in found}
    if rows:
        KnownVector.objects.bulk_create(
            list(rows.values()), update_conflicts=True, unique_fields=["key"],
            update_fields=["vector", "created"],
        )  # fmt: skip


def _known(docs: Sequence[Doc]) -> dict[str, Vectors]:
    """The kept vectors of these docs' texts, by embedding hash (right length only)."""
    embedder = wiring.embedder()
    if embedder is None or not docs:
        return {}
    return _kept([d.embedding_hash(embedder.model) for d in docs if d.item in (MEMORY, NOTE)])


def _kept(keys: Iterable[str]) -> dict[str, Vectors]:
    """The KnownVector rows of these keys, by key (of the embedder's length only)."""
    embedder = wiring.embedder()
    if embedder is None:
        return {}
    rows = KnownVector.objects.filter(key__in=list(keys)).values_list("key", "vector")
    found = {key: np.frombuffer(bytes(blob), dtype=np.float32) for key, blob in rows}
    return {key: v for key, v in found.items() if v.shape == (embedder.dims,)}


PENDING_HINTS = 32  # the newest unindexed memories of a project a dedup hint compares
PENDING_SCAN = 256  # of the newest queued jobs, by id: a backlog costs no more


def unindexed_vectors(*, project: str | None, item: str = MEMORY) -> list[tuple[str, Vectors]]:
    """(id, vector) of the newest memories (`item` NOTE: notes) of `project` (None: the
    global ones, the inbox's) whose write is not in the vector plane yet (their upsert
    job waits), from the vectors their writes kept: the dedup hint compares them too,
    so an item written a moment ago is not missed for the index's lag (two agents'
    notes of one write-up, a second apart, were not hinted). Empty without an
    embedder."""
    embedder = wiring.embedder()
    if embedder is None:
        return []
    queued = IndexJob.objects.filter(item=item, op="upsert").order_by("-id")
    waiting = list(queued.values_list("item_id", flat=True)[:PENDING_SCAN])
    if not waiting:  # the index has caught up: one read of an empty queue
        return []
    # The rows are picked by primary key alone and the scope kept here: with the
    # project in the same query SQLite walked the project's whole index (16 ms a
    # write at 100,000 memories). Newest job first.
    rank: dict[str, int] = {}
    for n, pk in enumerate(waiting):
        rank.setdefault(pk, n)
    docs = (_waiting_notes if item == NOTE else _waiting_memories)(project, rank)
    keys = {doc.embedding_hash(embedder.model): pk for pk, doc in docs.items()}
    return [(keys[key], v) for key, v in _kept(keys).items()] if keys else []


def _waiting_memories(project: str | None, rank: dict[str, int]) -> dict[str, Doc]:
    """The newest PENDING_HINTS of the ranked memories in `project`, as probes."""
    placed = Memory.objects.filter(pk__in=list(rank)).values_list("pk", "project__slug")
    mine = sorted((pk for pk, slug in placed if slug == project), key=rank.__getitem__)
    rows = Memory.objects.filter(pk__in=mine[:PENDING_HINTS])
    newest = rows.values_list("pk", "name", "description", "body")
    return {pk: dedup.probe(project, *text) for pk, *text in newest}


def _waiting_notes(project: str | None, rank: dict[str, int]) -> dict[str, Doc]:
    """The newest PENDING_HINTS of the ranked notes in `project`, as probes."""
    placed = Note.objects.filter(pk__in=list(rank)).values_list("pk", "project__slug")
    mine = sorted((pk for pk, slug in placed if slug == project), key=rank.__getitem__)
    rows = Note.objects.filter(pk__in=mine[:PENDING_HINTS])
    texts = rows.values_list("pk", "slug", "description", "body", "title")
    return {pk: dedup.probe(project, s, d, b, title=t, item=NOTE) for pk, s, d, b, t in texts}


def vectors_caught_up() -> None:
    """Bring this process's vector copy up to the plane now, not at its next poll.

    `unindexed_vectors` covers a write whose job waits; once the worker has applied
    it the job is gone, and the copy of a serving process read it only at its next
    poll (0.2 s): a near-duplicate written in that window got no hint (2 of 8
    back-to-back pairs, measured over the API). Read after the jobs, so a job done
    since is in the plane this reads."""
    vectors = wiring.vector_index()
    if isinstance(vectors, HotVectorIndex):
        vectors.catch_up()


def vector_copy_publish() -> bool:
    """Write the vector copy's snapshot if the plane moved since the last one;
    whether one was written. For the index worker (console/management/commands/
    index_worker.py): serving processes then map it at their start instead of
    reading the whole plane through LanceDB (recall/indexes/copy_snapshot.py)."""
    vectors = wiring.vector_index()
    if not isinstance(vectors, HotVectorIndex) or not vectors.snapshot_behind():
        return False
    vectors.publish()
    return True


def _forget_known(used: Iterable[str]) -> None:
    """Drop the vectors just used and those nobody took in KNOWN_TTL."""
    stale = Q(created__lt=timezone.now() - KNOWN_TTL)
    KnownVector.objects.filter(Q(key__in=list(used)) | stale).delete()


# --- end one embedding per write ---


def write_docs(
    docs: list[Doc], *, known: Mapping[str, Vectors] | None = None, sentences: bool = True
) -> int:
    """Upsert docs into both planes; returns how many texts were embedded.

    Vectors are embedded in one batch, except those `known` already holds by
    `Doc.embedding_hash` (a reindex passes the vectors stored before it), while
    the full-text plane is written.
    `sentences`: the long memories' sentence vectors too (console/passage_store.py);
    the outbox queues them instead.
    """
    if not docs:
        return 0
    text = wiring.text_index()
    vectors, embedder = wiring.vector_index(), wiring.embedder()
    if vectors is None or embedder is None:
        text.upsert(docs)
        return 0
    hashes = [d.embedding_hash(embedder.model) for d in docs]
    known = known or {}
    fresh: dict[str, Vectors] = {}
    embedded = 0
    if all(h in known for h in hashes):
        text.upsert(docs)
    else:
        # The full-text write (tantivy's commit mostly waits on the disk and its merge
        # threads) goes on while the texts are embedded, rather than before them.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed") as beside:
            embedding = beside.submit(_embedded, docs, hashes, known, embedder)
            text.upsert(docs)
            fresh, embedded = embedding.result()
    reuse = _Layered(fresh, known)  # a reindex's `known` holds every vector: not copied
    rows = [
        VectorRow(
            id=d.id,
            item=d.item,
            project=d.project,
            active=d.active,
            kind=d.kind,
            vector=tuple(reuse[hashes[i]].tolist()),
            model=embedder.model,
            updated=d.updated,
            fingerprint=d.vector_fingerprint(embedder.model),
            text_hash=hashes[i],
            tags=d.tags,
            agent_id=d.agent_id,
            session_id=d.session_id,
            importance=d.importance,
            created=d.created,
        )
        for i, d in enumerate(docs)
    ]
    vectors.upsert(rows)
    if sentences and settings.RECALL["PASSAGES"]:
        passage_store.write(docs, embedder)
    return embedded


class _Layered(Mapping[str, Vectors]):
    """Two mappings read as one, the first's value winning: a batch's fresh vectors over
    a reindex's `known` (100,000 of them), without copying either."""

    def __init__(self, first: Mapping[str, Vectors], second: Mapping[str, Vectors]) -> None:
        self.first, self.second = first, second

    def __getitem__(self, key: str) -> Vectors:
        return self.first[key] if key in self.first else self.second[key]

    def __contains__(self, key: object) -> bool:
        return key in self.first or key in self.second

    def __iter__(self) -> Iterator[str]:
        yield from self.first
        yield from (k for k in self.second if k not in self.first)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _embedded(
    docs: Sequence[Doc], hashes: Sequence[str], known: Mapping[str, Vectors], embedder: Embedder
) -> tuple[dict[str, Vectors], int]:
    """The vectors of the docs whose embedding hash `known` lacks, embedded in one batch,
    by hash, and how many texts that embedded. Touches no database, so a rebuild runs it
    for the next batch in another thread (`_written_ahead`)."""
    missing = [i for i, h in enumerate(hashes) if h not in known]
    if not missing:
        return {}, 0
    fresh = embedder.embed([docs[i].embedding_text() for i in missing])
    return {hashes[i]: fresh[n] for n, i in enumerate(missing)}, len(missing)


def stored_vectors() -> dict[str, Vectors]:
    """The vector plane's vectors by text hash (empty when it cannot say)."""
    plane = wiring.vector_plane()
    return plane.hashed_vectors() if isinstance(plane, KeepsTextHashes) else {}


def vectors_in(path: Path) -> dict[str, Vectors]:
    """The vectors of a LanceDB vector directory by text hash, read as it is.

    `reindex --vectors-from` (and `migrate_data`, from the old deployment's
    RECALL_DATA_DIR) hand them to `rebuild`, so moving to another vector
    plane copies what the model already computed; so does the plane's own
    table from before a layout change (`rebuild`). A text hash names the
    model too, so vectors of another model are never reused. Empty when the
    directory holds no vector table with text hashes.
    """
    from recall.indexes.lance_index import hashed_vectors

    try:
        return hashed_vectors(path)
    except Exception as exc:  # unreadable: the rebuild embeds instead, as before
        log.warning("not reusing the vectors in %s: %s", path, exc)
        return {}


def memory_docs(rows: QuerySet[Memory]) -> list[Doc]:
    """What the planes index for these memories: the store's records, with session context."""
    records = store.memory_records(rows.select_related(None))
    contexts = _session_contexts(records)
    return [to_doc(r, context=contexts.get(r.id, ())) for r in records]


def _session_contexts(records: list[Record]) -> dict[str, tuple[str, ...]]:
    """The previous turns of each episodic memory's session, nearest first, as index-only text
    (`recall.types.EPISODIC_KINDS`: turns read with turns; other kinds by their own text).

    Session context is the big lever for episodic memories (ANCHORS.md): a
    turn like "Yes, last Tuesday" is findable by what the turns before it said.
    Only earlier memories are used, so a memory is indexed once, at insert.
    """
    orders: dict[str, int] = {
        pk: order
        for pk, order in Memory.objects.filter(
            pk__in=[r.id for r in records if conversation(r)]
        ).values_list("pk", "session_order")
        if order is not None
    }
    wanted = [(r, orders[r.id]) for r in records if r.id in orders]
    if not wanted:
        return {}
    sessions = {r.session_id for r, _ in wanted}
    rows = (  # turns kept in Python: `kind IN` would lure SQLite off the session index
        Memory.objects.filter(session_id__in=sessions)
        .order_by()
        .values_list("session_id", "session_order", "description", "body", "kind")
    )
    earlier: dict[tuple[str, int], str] = {
        (session, order): unless_repeated(description, body) + " " + body
        for session, order, description, body, kind in rows
        if order is not None and kind in EPISODIC_KINDS
    }
    out = {}
    for r, order in wanted:
        distances = range(1, CONTEXT_TURNS + 1)
        turns = [earlier.get((r.session_id, order - i), "").strip() for i in distances]
        while turns and not turns[-1]:
            turns.pop()
        out[r.id] = tuple(turns)
    return out


def note_docs(rows: QuerySet[Note]) -> list[Doc]:
    return [to_doc(store.note_record(n)) for n in rows.select_related("project")]


@dataclass(frozen=True)
class Rebuilt:
    """What a rebuild did: items written to the planes, texts it had to embed, and
    its seconds writing the planes and then compacting them (LanceDB's files and ANN
    index: `maintain`)."""

    items: int
    embedded: int
    writing_s: float = 0.0
    maintaining_s: float = 0.0


def rebuild(
    *,
    progress: Callable[[int], None] | None = None,
    known: Mapping[str, Vectors] | None = None,
) -> Rebuilt:
    """Recreate both planes from the database; killed midway, it leaves planes that
    serve every item (`_emptied_for_rebuild`).

    A vector whose text and model are unchanged is copied from the plane as
    it stood, not embedded again (`Doc.embedding_hash`), so a reindex without
    a model change costs reading and writing, not the model. `known` adds
    vectors from elsewhere by the same hash (`vectors_in`: a deployment moved
    from the embedded profile brings its LanceDB vectors along). Planes written
    in the writes' own transactions are rebuilt beside them, a batch at a time
    (`_rebuild_beside_writes`).
    """
    text, vectors = wiring.text_index(), wiring.vector_index()
    if all(getattr(p, "joins_caller", False) for p in (text, vectors) if p is not None):
        return _rebuild_beside_writes(progress=progress, known=known)
    done = embedded = 0
    started = time.perf_counter()
    aside = layout.previous(Path(settings.RECALL["VECTOR_INDEX_DIR"]))
    with plane_lock().held(timeout_s=3600), in_bulk(text):
        known = {
            **(vectors_in(aside) if vectors is not None else {}),  # before a layout change
            **(known or {}),
            **(stored_vectors() if vectors is not None else {}),
        }
        in_place = _emptied_for_rebuild(text, vectors)
        # Every job queued so far is covered by the rows read from here on (those it
        # queued itself too); a change committed later leaves one of its own.
        last_job = store.newest_job() or 0
        indexed: set[str] = set()
        for docs, fresh in _written_ahead(_all_docs(REBUILD_BATCH), known):
            embedded += fresh
            indexed.update(d.id for d in docs)
            done += len(docs)
            if progress:
                progress(len(docs))
        for plane in in_place:
            _drop_leftovers(plane, indexed)
    _drop_covered_jobs(last_job)
    shutil.rmtree(aside, ignore_errors=True)
    written = time.perf_counter()
    maintain()
    return Rebuilt(done, embedded, written - started, time.perf_counter() - written)


def _written_ahead(
    batches: Iterable[list[Doc]], known: Mapping[str, Vectors]
) -> Iterator[tuple[list[Doc], int]]:
    """Write each batch to both planes (`write_docs`) while the next one is embedded in
    another thread; yields each batch once written, with how many texts it embedded.

    After a model change the embedding is most of a rebuild, and it runs on every core
    only while it embeds: reading the next rows and writing tantivy, LanceDB and the
    sentence vectors left a core idle for the rest of each batch. The vectors are those
    `write_docs` would embed itself (the same batches, the same texts).
    """
    embedder = wiring.embedder()
    if embedder is None or wiring.vector_index() is None:
        for docs in batches:
            yield docs, write_docs(docs, known=known)
        return
    model = embedder.model

    def ahead(docs: list[Doc]) -> tuple[dict[str, Vectors], int]:
        return _embedded(docs, [d.embedding_hash(model) for d in docs], known, embedder)

    pool = _embedding_pool()  # the import's embedding ahead runs there too, in order
    waiting: tuple[list[Doc], Future[tuple[dict[str, Vectors], int]]] | None = None
    try:
        for docs in batches:
            future = pool.submit(ahead, docs)
            if waiting is not None:
                yield _written(*waiting, known)
            waiting = (docs, future)
        if waiting is not None:
            yield _written(*waiting, known)
            waiting = None
    finally:
        if waiting is not None:  # a rebuild that stopped: the next batch is not needed
            waiting[1].cancel()


def _written(
    docs: list[Doc],
    future: Future[tuple[dict[str, Vectors], int]],
    known: Mapping[str, Vectors],
) -> tuple[list[Doc], int]:
    fresh, embedded = future.result()
    write_docs(docs, known=_Layered(fresh, known) if fresh else known)
    return docs, embedded


def _emptied_for_rebuild(
    text: TextIndex, vectors: VectorIndex | None
) -> list[TextIndex | VectorIndex]:
    """Empty the planes a rebuild may start from nothing; return the others, which it
    rewrites in place.

    A rebuild killed midway (SIGKILL, the machine going down) must leave planes
    that serve every memory. A plane that commits the whole rebuild at once
    (`BulkWrites`: tantivy) is cleared inside that commit, so it is the old
    index or the new one. Any other plane (LanceDB, whose every batch commits,
    and Whoosh) keeps its rows and has each one rewritten over it: killed after
    a batch, it holds every item, as current as before or more, and the rows
    of items gone from the database are dropped at the end (`_drop_leftovers`).
    Cleared, it held only the batches written before the kill, with no job
    queued for the rest, so recall missed those memories until a repair
    re-embedded them. Vectors of another model are cleared all the same: a
    table holds one model, and the old vectors cannot answer the new model's
    queries anyway. Before clearing them, every item is queued (an upsert
    job, committed at once): a rebuild killed after that leaves its jobs,
    and the next apply (the index worker, `sync_indexes`) writes the rest;
    one that ends drops them (`_drop_covered_jobs`).
    """
    in_place: list[TextIndex | VectorIndex] = []
    if isinstance(text, BulkWrites):
        text.clear()
    else:
        in_place.append(text)
    if vectors is not None:
        embedder = wiring.embedder()
        making = embedder.model if embedder is not None else None
        if vectors.stored_model() not in (None, making):
            _queue_every_item()
            vectors.clear()
        else:
            in_place.append(vectors)
    return in_place


def _queue_every_item() -> None:
    """An upsert job for every memory and note, committed now: what a rebuild that
    empties a plane leaves for the next apply if it dies before writing them."""
    items = [(MEMORY, pk, "upsert") for pk in Memory.objects.values_list("pk", flat=True)]
    items += [(NOTE, pk, "upsert") for pk in Note.objects.values_list("pk", flat=True)]
    enqueue_many(items, in_transaction=False)


def _drop_leftovers(plane: TextIndex | VectorIndex, indexed: set[str]) -> None:
    """After a rebuild in place: delete the rows of items the rebuild did not write (gone
    from the database), and write once again an item left with several rows."""
    rows = Counter(i for i, _ in plane.fingerprints())
    doubled = sorted(i for i, n in rows.items() if n > 1 and i in indexed)
    gone = [i for i in rows if i not in indexed]
    if gone or doubled:
        plane.delete(sorted(gone) + doubled)
    if doubled:
        write_docs(
            memory_docs(Memory.objects.filter(pk__in=doubled))
            + note_docs(Note.objects.filter(pk__in=doubled))
        )


def _rebuild_beside_writes(
    *, progress: Callable[[int], None] | None, known: Mapping[str, Vectors] | None
) -> Rebuilt:
    """`rebuild` for planes written in the writes' own transactions (PostgreSQL).

    One rebuild transaction would hold every plane row it deleted and wrote
    until its end, so an edit committing meanwhile waited for the whole
    rebuild (6.6 s of a 10 s one at 2,760 memories; minutes at 100,000).
    Here each batch of `BATCH` rows is a transaction of its own that locks
    its rows (FOR NO KEY UPDATE) before it reads them, so an edit waits for
    one batch at most, and lands after it, never under it. Rows are
    rewritten in place, not cleared first: a search meanwhile reads every
    memory, and a rebuild that dies leaves rows as current as before or more
    (run it again). Rows of items gone from the database are deleted at the
    end; vectors of another model are cleared first (a table holds one), every
    item queued before that (`_queue_every_item`).
    """
    text, vectors, embedder = wiring.text_index(), wiring.vector_index(), wiring.embedder()
    started = time.perf_counter()
    done = embedded = 0
    with plane_lock().held(timeout_s=3600):
        known = {**(known or {}), **(stored_vectors() if vectors is not None else {})}
        making = embedder.model if embedder is not None else None
        if vectors is not None and vectors.stored_model() not in (None, making):
            _queue_every_item()  # killed before the end, the next apply writes the rest
            vectors.clear()
        last_job = store.newest_job() or 0  # covered by the rows read from here on
        kinds: tuple[tuple[type[Memory] | type[Note], Callable[..., list[Doc]]], ...] = (
            (Memory, memory_docs),
            (Note, note_docs),
        )
        for model, to_docs in kinds:
            ids = list(model.objects.order_by("pk").values_list("pk", flat=True))
            for chunk in _chunks(ids, BATCH):
                with transaction.atomic():
                    rows = model.objects.filter(pk__in=chunk).order_by("pk")
                    locked = list(rows.select_for_update(no_key=True).values_list("pk", flat=True))
                    docs = to_docs(model.objects.filter(pk__in=locked).order_by("pk"))
                    embedded += write_docs(docs, known=known)
                done += len(docs)
                if progress:
                    progress(len(docs))
        planes = [p for p in (text, vectors) if p is not None]
        present = [set(p.ids()) for p in planes]  # first: an item made after this is in `live`
        live = set(Memory.objects.values_list("pk", flat=True))
        live |= set(Note.objects.values_list("pk", flat=True))
        for plane, had in zip(planes, present, strict=True):
            plane.delete(sorted(had - live))
    _drop_covered_jobs(last_job)
    return Rebuilt(done, embedded, time.perf_counter() - started, 0.0)


def _drop_covered_jobs(last_job: int) -> None:
    """Jobs queued before a rebuild began are covered by it; later ones stay, and so
    do digest jobs (a rebuild of the planes does not rebuild digests)."""
    IndexJob.objects.filter(id__lte=last_job).exclude(item=digesting.DIGEST).delete()


def in_bulk(plane: object) -> AbstractContextManager[None]:
    """One commit for the whole rebuild where the plane allows it, so a rebuild that
    dies leaves the plane as it was: tantivy holds one writer (`BulkWrites`); the
    PostgreSQL planes join the console's transaction, so the block is one (the speed
    bench's text build: `rebuild` writes them a batch at a time instead, as
    `_rebuild_beside_writes` says why)."""
    if isinstance(plane, BulkWrites):
        return plane.bulk()
    if getattr(plane, "joins_caller", False):
        return transaction.atomic()
    return nullcontext()


def maintain() -> None:
    """Off-the-hot-path upkeep: compact the vector table, build its ANN index when large."""
    vectors = wiring.vector_index()
    optimize = getattr(vectors, "optimize", None)
    if callable(optimize):
        optimize()


def _all_docs(size: int = BATCH) -> Iterator[list[Doc]]:
    ids = list(Memory.objects.order_by("pk").values_list("pk", flat=True))
    for chunk in _chunks(ids, size):
        yield memory_docs(Memory.objects.filter(pk__in=chunk).order_by("pk"))
    note_ids = list(Note.objects.order_by("pk").values_list("pk", flat=True))
    for chunk in _chunks(note_ids, size):
        yield note_docs(Note.objects.filter(pk__in=chunk).order_by("pk"))


@dataclass
class PlaneDrift:
    """How one plane differs from the database, as ids `repair` can act on."""

    rows: int  # rows in the plane, duplicates included
    missing: set[str]
    extra: set[str]
    stale: set[str]  # present, but written from other content than the row holds now
    duplicated: dict[str, int]  # id -> its rows, for ids with more than one

    @property
    def duplicates(self) -> int:
        """Rows beyond one per id."""
        return sum(n - 1 for n in self.duplicated.values())

    @property
    def drift(self) -> int:
        return len(self.missing) + len(self.extra) + len(self.stale) + self.duplicates

    @classmethod
    def compare(cls, expected: dict[str, str], stored: list[tuple[str, str]]) -> PlaneDrift:
        """`expected` id -> fingerprint from the database; `stored` one pair per plane row."""
        counts = Counter(i for i, _ in stored)
        fingerprints = dict(stored)
        present = expected.keys() & fingerprints.keys()
        return cls(
            rows=len(stored),
            missing=set(expected.keys() - fingerprints.keys()),
            extra=set(fingerprints.keys() - expected.keys()),
            stale={i for i in present if fingerprints[i] != expected[i]},
            duplicated={i: n for i, n in counts.items() if n > 1},
        )


@dataclass
class Status:
    rows: int
    text: PlaneDrift
    vectors: PlaneDrift | None  # None: no semantic plane configured
    pending: int
    failing: int
    vector_model: str | None = None  # what the stored vectors were embedded with
    embedder_model: str | None = None  # what the configured embedder makes now
    text_backend: str = ""  # dotted paths of the configured adapters
    vector_backend: str = ""
    parked: int = 0  # failing jobs retried once a minute (`_failed`)
    last_error: str = ""  # the newest failing job's

    @property
    def stale_model(self) -> bool:
        """Stored vectors from another model: every one must be re-embedded."""
        return bool(self.vector_model and self.embedder_model) and (
            self.vector_model != self.embedder_model
        )

    @property
    def drift(self) -> int:
        """Plane rows that differ from the database: missing, extra, stale or duplicated."""
        if self.vectors is None:
            return self.text.drift
        if self.stale_model:  # every stored vector is stale, whatever its fingerprint
            return self.text.drift + self.vectors.rows + len(self.vectors.missing)
        return self.text.drift + self.vectors.drift


def status() -> Status:
    """Compare every plane row with the database: ids, fingerprints, rows per id."""
    text, vectors, embedder = wiring.text_index(), wiring.vector_index(), wiring.embedder()
    model = embedder.model if embedder is not None else None
    text_expected: dict[str, str] = {}
    vector_expected: dict[str, str] = {}
    for docs in _all_docs():
        for d in docs:
            text_expected[d.id] = d.fingerprint()
            if model is not None:
                vector_expected[d.id] = d.vector_fingerprint(model)
    return Status(
        rows=len(text_expected),
        text=PlaneDrift.compare(text_expected, text.fingerprints()),
        vectors=(
            PlaneDrift.compare(vector_expected, vectors.fingerprints())
            if vectors is not None
            else None
        ),
        pending=IndexJob.objects.count(),
        failing=IndexJob.objects.filter(attempts__gt=0).count(),
        parked=IndexJob.objects.filter(attempts__gte=settings.RECALL["MAX_JOB_ATTEMPTS"]).count(),
        last_error=(
            IndexJob.objects.filter(attempts__gt=0)
            .order_by("-id")
            .values_list("last_error", flat=True)
            .first()
            or ""
        ),
        vector_model=vectors.stored_model() if vectors is not None else None,
        embedder_model=model,
        text_backend=wiring.backend("TEXT_INDEX")[0],
        vector_backend=wiring.backend("VECTOR_INDEX")[0] if vectors is not None else "",
    )


@dataclass
class RepairReport:
    deleted: int  # extra rows removed
    rewritten: int  # items written again from the database


def repair() -> RepairReport:
    """Make the planes match the database again, touching only what `status` finds.

    Extra rows are deleted; missing and stale items are written again; an id
    with several rows loses them all and is written once. Vectors of another
    model mean the whole vector plane is re-embedded (as `reindex` does).
    """
    found = status()
    text, vectors = wiring.text_index(), wiring.vector_index()
    planes: list[tuple[TextIndex | VectorIndex, PlaneDrift]] = [(text, found.text)]
    if vectors is not None and found.vectors is not None:
        planes.append((vectors, found.vectors))
    deleted = 0
    rewrite: set[str] = set()
    with plane_lock().held():
        if vectors is not None and found.stale_model:
            vectors.clear()
            rewrite |= set(Memory.objects.values_list("pk", flat=True))
            rewrite |= set(Note.objects.values_list("pk", flat=True))
        for plane, drift in planes:
            doomed = drift.extra | drift.duplicated.keys()
            if doomed:
                plane.delete(sorted(doomed))
                deleted += len(drift.extra)
            rewrite |= drift.missing | drift.stale | (drift.duplicated.keys() - drift.extra)
        for chunk in _chunks(sorted(rewrite), BATCH):
            write_docs(
                memory_docs(Memory.objects.filter(pk__in=chunk))
                + note_docs(Note.objects.filter(pk__in=chunk))
            )
    return RepairReport(deleted=deleted, rewritten=len(rewrite))


def _chunks(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])
