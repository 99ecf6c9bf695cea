"""Migration 0025 gives the keys kept before 0022 the text of their answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.console.migration_steps import Target, migrations_fixture  # noqa: F401

BEFORE = [("console", "0024_event_budget")]
AFTER = [("console", "0025_idempotency_text_fill")]


@pytest.mark.django_db(transaction=True)
def test_a_key_kept_before_its_text_was_gets_it(migrations: Callable[[Target], Any]) -> None:
    # An operator's walk: after upgrading, `migrate_data` to PostgreSQL, a retry of an
    # old key came back with its memory's keys reordered (jsonb keeps no order).
    old = migrations(BEFORE)
    token = old.get_model("console", "AgentToken").objects.create(
        agent="old", prefix="rct_old0", secret_hash="0" * 64
    )
    answer = {"memory": {"id": "01OLD", "kind": "fact", "name": "n"}, "warnings": []}
    keys = old.get_model("console", "IdempotencyKey")
    keys.objects.create(token=token, key="k1", request_hash="h", status=201, response=answer)

    new = migrations(AFTER)
    kept = new.get_model("console", "IdempotencyKey").objects.get(key="k1")

    assert kept.text == json.dumps(kept.response) and json.loads(kept.text) == answer
