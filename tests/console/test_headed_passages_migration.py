"""Migration 0021 queues the memories whose sentences a heading now cuts otherwise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.console.migration_steps import Target, migrations_fixture  # noqa: F401


@pytest.mark.django_db(transaction=True)
def test_memories_with_a_heading_line_are_queued_for_their_passages(
    migrations: Callable[[Target], Any],
) -> None:
    old = migrations([("console", "0020_tag_form")])
    project = old.get_model("console", "Project").objects.create(slug="p", name="P")
    memory = old.get_model("console", "Memory")
    fields = {"project": project, "kind": "runbook", "description": "d"}
    memory.objects.create(id="01HEADED0000000000000000AA", name="a",
                          body="Intro.\n  ## Rollback\nStop it.", **fields)  # fmt: skip
    memory.objects.create(id="01TAGGED0000000000000000AA", name="b",
                          body="See #billing, #12.\n####### no", **fields)  # fmt: skip
    old.get_model("console", "IndexJob").objects.all().delete()

    new = migrations([("console", "0021_reindex_headed_passages")])
    queued = new.get_model("console", "IndexJob").objects.values_list("item", "item_id", "op")

    assert list(queued) == [("memory", "01HEADED0000000000000000AA", "upsert")]
