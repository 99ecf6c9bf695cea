"""Migration 0018 fills `LinkName` from the bodies stored before it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.console.migration_steps import Target, migrations_fixture  # noqa: F401

BEFORE = [("console", "0017_revision_changed_by")]
AFTER = [("console", "0018_link_names")]


@pytest.mark.django_db(transaction=True)
def test_the_names_stored_bodies_link_are_filled_in(migrations: Callable[[Target], Any]) -> None:
    old = migrations(BEFORE)
    project = old.get_model("console", "Project").objects.create(slug="p", name="P")
    memory = old.get_model("console", "Memory")
    linking = memory.objects.create(
        id="01LINKING0000000000000000A", project=project, kind="fact", name="day",
        body="Follow [[deploy-runbook]], then [[rollback|the rollback]] and [[deploy-runbook]].",
    )  # fmt: skip
    memory.objects.create(
        id="01PLAIN00000000000000000AA", project=project, kind="fact", name="plain", body="x"
    )

    new = migrations(AFTER)
    rows = new.get_model("console", "LinkName").objects.values_list("src_id", "name")

    assert sorted(rows) == [(linking.pk, "deploy-runbook"), (linking.pk, "rollback")]
