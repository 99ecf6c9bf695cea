"""The speed bench's serving process leaves its writes' index jobs to another process, as a
server leaves them to the index worker: applying them itself loaded LanceDB into the
process whose RSS the bench reports (console/bench/speed.py, `_api_writes`)."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import LazySettings

from console import indexing
from console.bench import speed
from console.models import IndexJob

pytestmark = pytest.mark.django_db


def test_the_serving_process_leaves_its_writes_jobs_to_another_process(
    monkeypatch: pytest.MonkeyPatch, settings: LazySettings, planes: Any
) -> None:
    settings.RECALL = {**settings.RECALL, "SYNC_ON_COMMIT": False, "INDEX_IN_TRANSACTION": False}
    ran: list[list[str]] = []

    def applied_here(**_: Any) -> None:
        raise AssertionError("the serving process applied its index jobs itself")

    monkeypatch.setattr(indexing, "apply_pending", applied_here)
    monkeypatch.setattr(speed.subprocess, "run", lambda cmd, **_: ran.append(cmd))

    speed._api_writes([("pager rota on Mondays", None), ("deploy freeze Fridays", None)])

    assert [cmd[-1] for cmd in ran] == ["sync_indexes"]
    assert IndexJob.objects.count() >= 2  # queued for that process, not applied here
