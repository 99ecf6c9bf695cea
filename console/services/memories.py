"""Memories: create, edit, supersede, archive, restore, delete; their `[[link]]` edges.

Every write commits its row and its IndexJob in one transaction; nothing is
half-written. Validation errors are Django `ValidationError`s with messages a
person can act on.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from console import indexing, selectors
from console.models import Edge, IdempotencyKey, LinkName, Memory, Project
from console.services import locks
from console.services.associations import associations_carry
from console.services.revisions import revision_record
from recall import links
from recall.decay import MAX_TTL_SECONDS
from recall.recall import MAX_TAG_CHARS, tag_form  # the API refuses a longer tag; import cuts it


class StateConflict(ValidationError):
    """A well-formed request the item's current state forbids (the API answers 409)."""


class ValidTimeError(StateConflict):
    """Valid time that is no interval (invalid_at not after valid_from, or a naive
    instant): a conflict between well-formed values the schema cannot express (409)."""


# The code of the conflict a held name raises: its params give the holder's id
# (`holder`), which the API's text quotes and the console links to.
NAME_HELD = "name_held"
NAME_HELD_TEXT = (
    "%(name)s is already the name of an active memory in %(where)s (%(holder)s): "
    "supersede that memory to replace it, or choose another name."
)
MAX_BODY_CHARS = 200_000
MAX_TAGS = 32

MEMORY_FIELDS = (
    "kind",
    "name",
    "description",
    "body",
    "tags",
    "importance",
    "agent_id",
    "session_id",
    "session_order",
    "source",
    "valid_from",
    "invalid_at",
    "occurred_at",
    "external_id",
    "metadata",
    "expires_at",
)


def content_hash(*, name: str, description: str, body: str) -> str:
    """What makes two memories the same text: description and body, normalised
    (NFKC, case-folded, whitespace collapsed). The name is left out: two agents
    may name one fact differently."""
    text = unicodedata.normalize("NFKC", f"{description}\n{body}").casefold()
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


def tags_clean(*, tags: Iterable[str] | None) -> list[str]:
    """Tags in their stored form (`tag_form`), de-duplicated, cut to 64 characters;
    at most MAX_TAGS."""
    out = []
    for tag in tags or []:
        tag = tag_form(str(tag))
        if tag and tag not in out:
            out.append(tag[:MAX_TAG_CHARS])
    if len(out) > MAX_TAGS:
        raise ValidationError({"tags": f"At most {MAX_TAGS} tags, got {len(out)}."})
    return out


def memory_validate(*, memory: Memory) -> None:
    """Raise ValidationError for a bad memory; cleans its tags in place (saves nothing)."""
    if len(memory.body) > MAX_BODY_CHARS:
        raise ValidationError(
            {
                "body": f"The body has {len(memory.body):,} characters; the limit is "
                f"{MAX_BODY_CHARS:,}. Split it into several memories or link a note."
            }
        )
    if not 0.0 <= float(memory.importance) <= 1.0:
        raise ValidationError({"importance": "Importance must be between 0 and 1."})
    memory.tags = tags_clean(tags=memory.tags)
    memory.full_clean(exclude=["superseded_by", "project"])


def valid_time_check(
    *, valid_from: datetime | None, invalid_at: datetime | None, field: str = "invalid_at"
) -> None:
    """Valid time is an interval [valid_from, invalid_at): aware instants, in order."""
    for name, instant in (("valid_from", valid_from), ("invalid_at", invalid_at)):
        if instant is not None and instant.utcoffset() is None:
            raise ValidTimeError({name: f"{name} must carry a time zone (e.g. 2024-01-01T00:00Z)."})
    if valid_from is not None and invalid_at is not None and not invalid_at > valid_from:
        raise ValidTimeError(
            {field: f"the interval [{valid_from.isoformat()}, {invalid_at.isoformat()}) is "
                    "empty: invalid_at must be after valid_from (a replacement's valid_from "
                    "after the old memory's)."}
        )  # fmt: skip


# A clock a little ahead is not a plan: past this, a valid_from is the future.
CLOCK_SKEW = timedelta(minutes=5)


def not_ahead(instant: datetime | None, field: str = "valid_from") -> None:
    """Refuse a valid time that starts in the future: present-time reads (Recall,
    reads, the briefing, PromptRecall) would show it as true now, and a replacement
    would retire what is still true. Validity is not scheduled; imports keep theirs."""
    if instant is not None and instant > timezone.now() + CLOCK_SKEW:
        raise ValidTimeError(
            {field: f"{field} {instant.isoformat()} is in the future: every read would show "
                    "this as true now. Write it once it holds, or give the date in its text."}
        )  # fmt: skip


def not_ending_ahead(instant: datetime | None) -> None:
    """Refuse a valid time that ends in the future: a memory with an end is no longer
    active, so it would leave every present-time read at once, while it still holds.
    `expires_at` is the end to come (the memory leaves reads at that instant)."""
    if instant is not None and instant > timezone.now() + CLOCK_SKEW:
        raise ValidTimeError(
            {"invalid_at": f"invalid_at {instant.isoformat()} is in the future: a memory "
                           "with an end leaves every read at once. For one that stops "
                           "holding then, give expires_at instead."}
        )  # fmt: skip


def _apply_fields(memory: Memory, fields: Mapping[str, Any]) -> None:
    fields = _expiry(fields)
    unknown = set(fields) - set(MEMORY_FIELDS)
    if unknown:
        raise ValueError(f"unknown memory fields: {sorted(unknown)}")
    for key, value in fields.items():
        setattr(memory, key, value)


def _expiry(fields: Mapping[str, Any]) -> Mapping[str, Any]:
    """`ttl_seconds` (from now) as `expires_at`; with both, the earlier instant wins.
    ValueError for a ttl out of range. An `expires_at` already past is allowed: the
    memory is gone at once (an import of something that has lapsed)."""
    if "ttl_seconds" not in fields:
        return fields
    rest = dict(fields)
    ttl = rest.pop("ttl_seconds")
    if ttl is None:
        return rest
    if not isinstance(ttl, int) or isinstance(ttl, bool) or not 1 <= ttl <= MAX_TTL_SECONDS:
        raise ValueError(f"ttl_seconds must be a whole number within 1..{MAX_TTL_SECONDS}")
    at = timezone.now() + timedelta(seconds=ttl)
    given = rest.get("expires_at")
    rest["expires_at"] = at if given is None else min(at, given)
    return rest


def memory_links_rewrite(*, memory: Memory) -> None:
    """Derived `wikilink` edges follow the body: parsed once, here, on every change.

    Each `[[name]]` resolves by the engine's one rule (`recall.links.prefer`:
    the active memory of that name in the memory's project, else the global
    one) and keeps its place in the body (`position`), the order links expand in.
    """
    Edge.objects.filter(src=memory, origin="wikilink").delete()
    LinkName.objects.filter(src=memory).delete()
    names = links.names(memory.body)
    if not names:
        return
    LinkName.objects.bulk_create([LinkName(src=memory, name=name) for name in names])
    targets = selectors.memory_ids_by_name(names, project_id=memory.project_id, exclude=memory.pk)
    Edge.objects.bulk_create(
        [
            Edge(src=memory, dst_id=targets[name], origin="wikilink", position=n)
            for n, name in enumerate(names)
            if name in targets
        ],
        ignore_conflicts=True,
    )


def link_waiting_sources(memory: Memory) -> None:
    """Bodies that already linked to this name before it existed now get their edge."""
    for source in selectors.memories_naming(memory=memory):
        if memory.name in links.names(source.body):
            memory_links_rewrite(memory=source)


def memory_new(
    *, project: Project | None, created: datetime | None = None, **fields: Any
) -> Memory:
    """An unsaved, validated memory (ValidationError names the bad field)."""
    memory = Memory(project=project)
    _apply_fields(memory, fields)
    memory.created = memory.updated = created or timezone.now()
    memory_validate(memory=memory)
    valid_time_check(valid_from=memory.valid_from, invalid_at=memory.invalid_at)
    not_ahead(fields.get("valid_from"))
    not_ending_ahead(fields.get("invalid_at"))
    memory.content_hash = content_hash(
        name=memory.name, description=memory.description, body=memory.body
    )
    return memory


def name_check(*, project: Project | None, name: str, exclude: Sequence[str] = ()) -> None:
    """StateConflict (409, naming `name`) when another active memory of the project
    already holds `name`: the caller supersedes that one or picks another name.
    On PostgreSQL the name's lock is held first (`console.services.locks`)."""
    locks.hold([locks.name_key(project, name)])
    held = selectors.memory_name_holder(
        name=name, project_id=project.pk if project else None, exclude=exclude
    )
    if held is not None:
        where = project.slug if project else "global"
        said = {"name": repr(name), "where": where, "holder": held.pk}
        raise StateConflict({"name": ValidationError(NAME_HELD_TEXT, NAME_HELD, said)})


def session_next(*, session_id: str) -> int:
    """The order after the last memory of a session (0 for a new session)."""
    last = Memory.objects.filter(session_id=session_id).order_by("-session_order")
    top = last.values_list("session_order", flat=True).first()
    return 0 if top is None else top + 1


@transaction.atomic
def memory_create(
    *,
    project: Project | None,
    created: datetime | None = None,
    replacing: Sequence[str] = (),
    **fields: Any,
) -> Memory:
    """Save a new memory, its `[[link]]` edges and its index job.

    With a `session_id` and no `session_order` it takes the next place in its
    session (arrival order), which is what session context is built from. Its
    name must be free among the project's active memories (`name_check`), but
    for those it is `replacing` (a supersede's old memory, closed after).
    """
    if fields.get("session_id") and fields.get("session_order") is None:
        fields["session_order"] = session_next(session_id=fields["session_id"])
    memory = memory_new(project=project, created=created, **fields)
    if memory.invalid_at is None:
        name_check(project=project, name=memory.name, exclude=replacing)
    return memory_insert(memory)


def memory_insert(memory: Memory) -> Memory:
    """Save a new, checked memory with its `[[link]]` edges, the links that waited
    for its name, its first revision and its index job (`memory_create`, and the
    API's writes after their duplicate check)."""
    memory.save(force_insert=True)
    memory_links_rewrite(memory=memory)
    link_waiting_sources(memory)
    revision_record(memory=memory, op="create")
    indexing.enqueue("memory", memory.pk, "upsert")
    return memory


@transaction.atomic
def memory_update(*, memory: Memory, **fields: Any) -> Memory:
    """Apply `fields`; an edit that changes nothing (`_unchanged`) writes nothing:
    no revision, no index job, the same `updated`."""
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.superseded_by_id:  # its text is what was true before its replacement
        raise StateConflict(
            f"A superseded memory cannot be edited; edit its replacement, {_replacement(memory)}."
        )
    if _unchanged(memory, fields, ignore=()):
        return memory
    if fields.get("name") and fields["name"] != memory.name and memory.invalid_at is None:
        name_check(project=memory.project, name=fields["name"], exclude=[memory.pk])
    was = memory.name
    _apply_fields(memory, fields)
    memory_validate(memory=memory)
    if "valid_from" in fields or "invalid_at" in fields:  # an import may hold any interval
        valid_time_check(valid_from=memory.valid_from, invalid_at=memory.invalid_at)
        not_ahead(fields.get("valid_from"))
        not_ending_ahead(fields.get("invalid_at"))
    memory.content_hash = content_hash(
        name=memory.name, description=memory.description, body=memory.body
    )
    memory.updated = timezone.now()
    memory.save()
    memory_links_rewrite(memory=memory)
    if memory.name != was:  # the links follow the names: to the old one no more, the new one
        for source in selectors.memories_naming(memory=memory, name=was):
            memory_links_rewrite(memory=source)
        link_waiting_sources(memory)
    revision_record(memory=memory, op="edit")
    indexing.enqueue("memory", memory.pk, "upsert")
    return memory


@transaction.atomic
def memory_supersede(*, memory: Memory, **fields: Any) -> Memory:
    """Create the replacement and stamp the old one, atomically.

    The replacement is valid from its `valid_from` (default: now), and the old
    memory's valid time closes there (its `invalid_at`), so exactly one of
    them is valid at any instant after the old one began. The old one's
    `updated` moves, as an archive's does.
    """
    old = Memory.objects.select_for_update().get(pk=memory.pk)
    if old.invalid_at is not None:
        raise StateConflict(_retired(old))
    carried = {f: getattr(old, f) for f in MEMORY_FIELDS if f not in fields}
    for own in ("external_id", "valid_from", "invalid_at"):  # the new memory's own
        carried.pop(own, None)
    if fields.get("session_id", old.session_id) != old.session_id:
        carried.pop("session_order", None)  # its place in the old session: the next in the new
    if _unchanged(old, fields, ignore=(*SUPERSEDE_OWN, "agent_id", "source")):  # who, not what
        raise StateConflict(
            "The new version would be the same as this one: change what is new first."
        )
    closes = fields.get("valid_from") or timezone.now()
    valid_time_check(valid_from=old.valid_from, invalid_at=closes, field="valid_from")
    not_ahead(closes)
    new = memory_create(
        project=old.project, replacing=[old.pk], **{**carried, **fields, "valid_from": closes}
    )
    if old.favorite:  # the star goes with what is true now (briefings pin the starred)
        new.favorite, old.favorite = True, False
        new.save(update_fields=["favorite"])
    old.invalid_at = closes
    old.superseded_by = new
    old.updated = timezone.now()  # retired: a change `since` and `updated_after` see
    old.save(update_fields=["invalid_at", "superseded_by", "favorite", "updated"])
    revision_record(memory=old, op="supersede")
    associations_carry(old=old, new=new)
    indexing.enqueue("memory", old.pk, "upsert")
    return new


def _retired(old: Memory) -> str:
    """Why a memory no longer true cannot be superseded, naming what replaced it (an
    agent retrying a supersede whose reply it lost learns it already landed) and,
    down a longer chain, the version true now (the one to supersede)."""
    chain = selectors.memory_successors(old)
    if not chain:  # no longer true and nothing replaced it: archived
        return (
            f"This memory is archived; restore it first (POST /memories/{old.pk}/restore, "
            "or memory_restore), then supersede it."
        )
    first, head = chain[0], chain[-1]
    said = f"This memory was already superseded by {first.pk} ({first.name!r})"
    if len(chain) == 1:
        lost = "if your own supersede's reply was lost, that is it"
        return f"{said}; supersede that one instead ({lost})."
    now = f"the current version is {head.pk} ({head.name!r})"
    return f"{said}, and that one since; {now}: supersede that one instead."


def _replacement(memory: Memory) -> str:
    """The end of a superseded memory's chain, for a refusal to edit or restore it."""
    chain = selectors.memory_successors(memory)
    return f"{chain[-1].pk} ({chain[-1].name!r})" if chain else "its replacement"


SUPERSEDE_OWN = ("external_id", "invalid_at")  # a supersede's own fields (`_unchanged`)


def _unchanged(
    old: Memory,
    fields: Mapping[str, Any],
    *,
    ignore: tuple[str, ...] = SUPERSEDE_OWN,
) -> bool:
    """Whether writing `fields` over `old` would leave it as it is (texts compared
    without their outer spaces, tags cleaned; the fields in `ignore` are not
    compared: a supersede's own). A new `valid_from` is a change."""
    for field, value in fields.items():
        if field in ignore:
            continue
        was = getattr(old, field, None)
        if field == "tags":
            value = tags_clean(tags=value)
        elif isinstance(value, str) and isinstance(was, str):
            value, was = value.strip(), was.strip()
        if value != was:
            return False
    return True


@transaction.atomic
def memory_archive(*, memory: Memory) -> Memory:
    """Archive (close its valid time now); a change like an edit, so `updated` moves
    (`since` and `updated_after` read it). Archiving an archived memory changes nothing."""
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.invalid_at is None:
        memory.invalid_at = memory.updated = timezone.now()
        memory.save(update_fields=["invalid_at", "updated"])
        revision_record(memory=memory, op="archive")
        indexing.enqueue("memory", memory.pk, "upsert")
    return memory


@transaction.atomic
def memory_restore(*, memory: Memory) -> Memory:
    """Bring an archived memory back; `updated` moves, as for an archive."""
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.superseded_by_id:
        raise StateConflict(
            f"A superseded memory cannot be restored; edit its replacement, {_replacement(memory)}."
        )
    if memory.invalid_at is not None:
        name_check(project=memory.project, name=memory.name, exclude=[memory.pk])
        memory.invalid_at = None
        memory.updated = timezone.now()
        memory.save(update_fields=["invalid_at", "updated"])
        revision_record(memory=memory, op="restore")
        indexing.enqueue("memory", memory.pk, "upsert")
    return memory


@transaction.atomic
def memory_delete(*, memory: Memory) -> None:
    """Delete the row; its revisions stay, the last one a `delete` (history survives).
    A write's kept answer naming it goes too, so a retry of that write creates it
    again instead of answering with an id that is gone."""
    pk = memory.pk
    replaced = list(Memory.objects.select_for_update().filter(superseded_by_id=pk))
    Memory.objects.filter(superseded_by_id=pk).update(superseded_by=None)
    for old in replaced:
        old.superseded_by = None
        revision_record(memory=old, op="unsupersede")
    gone = Memory.objects.filter(pk=pk).first()
    if gone is not None:
        revision_record(memory=gone, op="delete")
    Memory.objects.filter(pk=pk).delete()
    IdempotencyKey.objects.filter(response__memory__id=pk).delete()
    indexing.enqueue("memory", pk, "delete")


def memory_mark_accessed(*, ids: Iterable[str], at: datetime | None = None) -> None:
    """Count a read (access_count, last_accessed_at) without touching `updated`."""
    Memory.objects.filter(pk__in=list(ids)).update(
        access_count=F("access_count") + 1, last_accessed_at=at or timezone.now()
    )
