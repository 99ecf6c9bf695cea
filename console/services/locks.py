"""Check-then-insert made safe on PostgreSQL: a lock per name and per text.

"One active memory per name" and "the same text again is the memory already
there" are checked by reading, then inserting. SQLite runs one writing
transaction at a time (`BEGIN IMMEDIATE`), so nothing comes between the two.
PostgreSQL at READ COMMITTED lets two transactions pass the same check at
once: eight concurrent writes of one name left up to seven active memories of
it. There the writer holds a transaction-level advisory lock
(`pg_advisory_xact_lock`, released at commit or rollback) for each name and
text it writes before it checks. A batch takes all its locks at once, in one
order, so two batches never wait on each other; taking a lock held already
is immediate, so a check inside the batch may ask again.

A name's rule cannot be a unique index: an import keeps a file's own repeats
(two turns of a session saying "Yes!" derive one name).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from django.db import connection

from console.models import Memory, Project


def _key(text: str) -> int:
    """A signed 64-bit lock key for `text` (what pg_advisory_xact_lock takes)."""
    return int.from_bytes(
        hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True
    )


def name_key(project: Project | None, name: str) -> str:
    return f"name:{project.pk if project else ''}:{name}"


def text_key(memory: Memory) -> str:
    return f"text:{memory.project_id or ''}:{memory.session_id}:{memory.content_hash}"


def hold(keys: Iterable[str]) -> None:
    """Wait for and hold each key's lock until this transaction ends (PostgreSQL;
    elsewhere writes are one at a time already). Keys are taken in one order."""
    if connection.vendor != "postgresql" or not connection.in_atomic_block:
        return
    with connection.cursor() as cursor:
        for key in sorted({_key(k) for k in keys}):
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])
