"""Digest records (`type: digest`): altitude digests a person edited, into Digest.

Only edited digests travel (an automatic one is rebuilt from the rows by the
index worker). An imported digest replaces an automatic digest of its project
(or none) and comes in `edited` and `stale`: rebuilds keep its text, as they
keep any person's edit. A digest a person edited here stays (the database is
the source of truth): the file's is skipped.

Digest sentences are stored as agents read them (console/services/digests.py
sanitizes a person's line on edit), so a sentence must already be agent text:
no raw angle bracket, no control character, nothing `recall.sanitize.scrub`
would cut. Anything else is an error naming the record, and is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db import transaction

from console import digesting, wiring
from console.importing.parsing import built
from console.models import Digest, Project
from console.reading import Record
from console.records import RecordError, parse_time
from recall import sanitize

MAX_SENTENCES = 200


def _agent_text(text: str) -> bool:
    """Text `recall.agent.body_text` would leave as it is, up to its `&` escapes."""
    plain = "<" not in text and ">" not in text and sanitize.normalise(text) == text
    return plain and all(sanitize.scrub(line) == line for line in text.split("\n"))


def _sentence(value: Any, n: int) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("text"), str):
        raise RecordError(f"sentences[{n}] needs a text")
    text = value["text"]
    if not _agent_text(text):
        raise RecordError(f"sentences[{n}] is not agent text (angle brackets, controls or "
                          "an instruction to the agent)")  # fmt: skip
    covers = value.get("covers", [])
    if not isinstance(covers, list) or not all(isinstance(i, str) for i in covers):
        raise RecordError(f"sentences[{n}].covers must be a list of memory ids")
    score = value.get("score", 0.0)
    if not isinstance(score, int | float) or isinstance(score, bool):
        raise RecordError(f"sentences[{n}].score must be a number")
    return {"text": text, "source": str(value.get("source") or ""), "covers": covers,
            "score": float(score)}  # fmt: skip


def digest_build(data: dict[str, Any], *, project: Callable[[Any], Project | None]) -> Digest:
    """An unsaved, edited digest from its record; RecordError names a bad field."""
    sentences = data.get("sentences")
    if not isinstance(sentences, list) or not sentences or len(sentences) > MAX_SENTENCES:
        raise RecordError(f"a digest needs 1 to {MAX_SENTENCES} sentences")
    rows = [_sentence(s, n) for n, s in enumerate(sentences)]
    owner = project(data.get("project"))
    return Digest(
        key=digesting.key_of(owner.slug if owner else None), project=owner, sentences=rows,
        edited=True, stale=True, edited_by=str(data.get("edited_by") or "")[:150],
        edited_at=parse_time(data.get("edited_at"), key="edited_at"),
    )  # fmt: skip


def digests_import(
    records: Iterable[Record], *, project: Callable[[Any], Project | None]
) -> tuple[int, int, list[str]]:
    """Save the digest records (see the module docstring): (saved, skipped, errors)."""
    saved, skipped = 0, 0
    errors: list[str] = []
    for _, row in built(records, lambda data: digest_build(data, project=project), errors):
        with transaction.atomic():
            here = Digest.objects.select_for_update().filter(key=row.key).first()
            if here is not None and here.edited:
                skipped += 1
                continue
            if here is not None:
                row.pk = here.pk
            text = "\n".join(s["text"] for s in row.sentences)
            row.tokens = wiring.engine().planes.tokens.count(text)
            row.save()
            saved += 1
    return saved, skipped, errors
