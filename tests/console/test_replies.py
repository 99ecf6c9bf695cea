"""console/replies.py byte for byte: every reply over a table of defaults and the rest.

`replies_golden.txt` holds the replies as the API and MCP send them (`dumps`), one a
line, as they were before the three ways of leaving a default out (UNSAID, `_flags`,
`_expiry_and_worth`) became one: an agent's bytes did not move.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from console import replies
from console.models import Memory, Note, Project
from recall.agent import dumps, item_view
from recall.results import to_hit
from tests.recall.conftest import NOW, make_memory, make_note

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).with_name("replies_golden.txt")
T = datetime(2025, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC)


def _memories() -> list[Memory]:
    alpha = Project.objects.create(slug="alpha", name="Alpha")
    plain = {"kind": "fact", "name": "plain", "description": "d", "body": "b", "created": T,
             "updated": T, "valid_from": T}  # fmt: skip
    made = [
        Memory.objects.create(id="01" + "0" * 24, project=alpha, **plain),
        Memory.objects.create(
            id="02" + "0" * 24,
            project=None,
            kind="episode",
            name="every",
            description="e",
            body="x <y>",
            tags=["t"],
            importance=0.9,
            agent_id="a",
            session_id="s",
            session_order=0,
            occurred_at=T,
            source="imported",
            valid_from=T,
            invalid_at=T,
            favorite=True,
            created=T,
            updated=T,
            expires_at=T,
            feedback_helpful=2,
        ),  # fmt: skip
        Memory.objects.create(
            id="03" + "0" * 24,
            project=alpha,
            **{**plain, "name": "mid"},
            session_order=3,
            feedback_helpful=1,
            feedback_harmful=1,
        ),  # fmt: skip
    ]
    Memory.objects.filter(pk=made[0].pk).update(superseded_by=made[2])
    return [Memory.objects.select_related("project").get(pk=m.pk) for m in made]


def _replies() -> list[str]:
    memories = _memories()
    said = [dumps(replies.memory_view(m)) for m in memories]
    said.append(dumps(replies.memory_view(memories[1], at=datetime(2020, 1, 1, tzinfo=UTC))))
    said += [dumps(replies.without_body(replies.memory_view(m))) for m in memories]
    alpha = memories[0].project
    notes = [
        Note.objects.create(id="04" + "0" * 24, project=alpha, title="N", slug="n", created=T,
                            updated=T),
        Note.objects.create(id="05" + "0" * 24, project=None, title="M", slug="m", favorite=True,
                            source_url="https://x.example", created=T, updated=T),
    ]  # fmt: skip
    said += [dumps(replies.note_view(n)) for n in notes]
    hit = to_hit(
        make_memory(1, description="desc", body="body"), now=NOW, source="fused", score=0.5
    )
    for h in (
        hit,
        replace(hit, favorite=True, active=False, source="fts", similarity=0.81234, snippet="body"),
        replace(
            hit, invalid_at=T, occurred_at=T, origin="user_stated", agent_id="a", session_id="s"
        ),
        to_hit(make_note(2, "Pager"), now=NOW, source="semantic", score=0.25),
    ):
        said.append(dumps(replies.search_hit_view(h, ("desc", "body"))))
    # A recall's items and a note's write with its hint: `kind` is a memory's kind in
    # every reply, `item` says a note (recall items said `memory_kind`, hits `kind` for
    # memory|note).
    note_hit = to_hit(make_note(2, "Pager"), now=NOW, source="semantic", score=0.25)
    said += [dumps(item_view(h, home="alpha")) for h in (hit, note_hit)]
    said.append(dumps(replies.note_written_view(notes[0], hint=replace(note_hit, similarity=0.95))))
    return said


def test_every_reply_is_byte_for_byte_what_it_was() -> None:
    assert _replies() == GOLDEN.read_text().splitlines()
