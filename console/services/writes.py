"""What an agent's write can rely on: no duplicates unless asked, batches, replays.

- `memory_write`: a memory in a project, unless an active memory there (same
  session, or both without one) already holds exactly this text (normalised,
  see `content_hash`): then that memory is the answer and nothing is written,
  unless `force`.
- `memory_write_batch`: up to BATCH_MAX memories in one transaction. Every
  item is validated first; one bad item refuses the whole batch (BatchError,
  nothing written), so a batch either commits whole or not at all.
- `idempotent`: a write under an Idempotency-Key answers a retry with its
  first answer; the key is stored in the write's own transaction, so a write
  that did not commit leaves no key behind.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from console import indexing, selectors
from console.models import AgentToken, IdempotencyKey, Memory, Project
from console.services import locks
from console.services.memories import (
    StateConflict,
    ValidTimeError,
    memory_insert,
    memory_new,
    name_check,
    session_next,
)

BATCH_MAX = 500


class BatchError(ValueError):
    """Some items of a batch are invalid: `errors` maps each one's index to its message."""

    def __init__(self, errors: Mapping[int, str]) -> None:
        super().__init__("; ".join(f"item {i}: {m}" for i, m in sorted(errors.items())))
        self.errors = dict(errors)


class IdempotencyConflict(ValueError):
    """The key was used before for a different request."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One write's result: the memory, and whether this call created it."""

    memory: Memory
    created: bool


def _message(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
    return " ".join(exc.messages)


@transaction.atomic
def memory_write(
    *,
    project: Project,
    force: bool = False,
    embedded: indexing.Embedded | None = None,
    **fields: Any,
) -> Outcome:
    """Create a memory unless its exact text is already there (see the module docstring).

    `embedded`: its text's vector, embedded by the caller before this transaction
    (`indexing.embedded`), kept for the index worker so it does not embed it again."""
    if embedded is not None:
        indexing.keep(embedded)
    try:
        return memory_write_batch(project=project, items=[fields], force=force)[0]
    except StateConflict as exc:  # one memory: the field as the caller named it
        named = {k.removeprefix("memories.0."): v for k, v in exc.message_dict.items()}
        raise type(exc)(named) from None


@transaction.atomic
def memory_write_batch(
    *,
    project: Project,
    items: Sequence[Mapping[str, Any]],
    force: bool = False,
    embedded: Sequence[indexing.Embedded | None] = (),
) -> list[Outcome]:
    """Write `items` in one transaction, in order; all or nothing. `embedded`: the
    items' vectors embedded before this transaction, kept for the index worker."""
    if not items or len(items) > BATCH_MAX:
        raise BatchError({0: f"a batch holds 1 to {BATCH_MAX} memories, not {len(items)}"})
    indexing.keep(*(e for e in embedded if e is not None))
    orders: dict[str, int] = {}
    made: list[Memory] = []
    errors: dict[int, str] = {}
    for i, values in enumerate(items):
        fields = dict(values)
        session = fields.get("session_id") or ""
        if session and fields.get("session_order") is None:
            fields["session_order"] = orders.get(session, session_next(session_id=session))
        if session and fields.get("session_order") is not None:
            orders[session] = int(fields["session_order"]) + 1
        try:
            made.append(memory_new(project=project, **fields))
        except ValidTimeError as exc:  # well-formed values in conflict: the batch is a 409
            raise _item_conflict(i, exc) from None
        except (ValidationError, ValueError) as exc:
            message = _message(exc) if isinstance(exc, ValidationError) else str(exc)
            errors[i] = message
    if errors:
        raise BatchError(errors)
    locks.hold(k for m in made for k in (locks.name_key(m.project, m.name), locks.text_key(m)))
    saved: list[Outcome] = []
    named: dict[str, int] = {}  # the names this batch gave, to the item that took each
    for i, memory in enumerate(made):
        if memory.name in named:  # the holder would be a memory this refusal rolls back
            said = f"{memory.name!r} is also the name of memories.{named[memory.name]} of this "
            raise StateConflict({f"memories.{i}.name": said + "batch: give each its own name."})
        try:
            saved.append(_save(memory, force=force))
        except StateConflict as exc:  # a name an active memory holds already
            raise _item_conflict(i, exc) from None
        if saved[-1].created:
            named[memory.name] = i
    return saved


def _item_conflict(i: int, exc: StateConflict) -> StateConflict:
    """`exc` with its fields named as the batch's item `i` (`memories.i.name`)."""
    return type(exc)({f"memories.{i}.{k}": v for k, v in exc.message_dict.items()})


def _save(memory: Memory, *, force: bool) -> Outcome:
    said = (memory.description + memory.body).strip()
    if not force and said:  # no text is nobody's text: it answers no other empty write
        same = selectors.memory_duplicate(
            project_id=memory.project_id,
            content_hash=memory.content_hash,
            session_id=memory.session_id,
        )
        if same is not None:
            return Outcome(same, False)
    name_check(project=memory.project, name=memory.name)
    return Outcome(memory_insert(memory), True)


def request_hash(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def idempotent(
    *,
    token: AgentToken | int,
    key: str | None,
    request: object,
    write: Callable[[], tuple[int, Any]],
) -> tuple[int, Any, bool]:
    """Run `write` once per (token, key): (status, response JSON, replayed).

    `write` returns the status and the JSON-ready response it would send; it
    runs in this function's transaction with the key, so both commit or
    neither does. A reused key with a different request is an
    IdempotencyConflict.
    """
    if not key:
        status, response = write()
        return status, response, False
    token_id = token if isinstance(token, int) else token.pk
    digest = request_hash(request)
    with transaction.atomic():
        seen = IdempotencyKey.objects.filter(token_id=token_id, key=key).first()
        if seen is not None:
            if seen.request_hash != digest:
                raise IdempotencyConflict(
                    f"Idempotency-Key {key!r} was used for a different request"
                )
            return seen.status, json.loads(seen.text) if seen.text else seen.response, True
        status, response = write()
        try:
            with transaction.atomic():
                IdempotencyKey.objects.create(
                    token_id=token_id, key=key, request_hash=digest, status=status,
                    response=response, text=json.dumps(response),
                )  # fmt: skip
        except IntegrityError:  # a concurrent twin committed first: roll this one back
            message = f"Idempotency-Key {key!r} is in use by a concurrent call; retry it"
            raise IdempotencyConflict(message) from None
    return status, response, False
