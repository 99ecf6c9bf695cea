"""An agent's write reaches its own next prompts (PromptRecall) within seconds, not
a corpus TTL: the write's commit marks this process's corpora for a refresh."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from console import services
from console.models import Memory, Project
from tests.console.api_world import World, build_world, call

pytestmark = pytest.mark.django_db(transaction=True)


def _among_fillers() -> tuple[World, Project]:
    """The API world, with 40 unrelated memories in alpha (IDF needs a corpus: they
    make rare words rare); alpha is returned."""
    world = build_world()
    alpha = world.memories["alpha"].project
    for i in range(40):
        services.memory_create(
            project=alpha, name=f"filler-{i}", description=f"Routine chore {i} on spreadsheets"
        )
    return world, alpha


def test_an_agents_write_shows_in_its_next_prompts_long_before_the_ttl(planes: Any) -> None:
    world, alpha = _among_fillers()
    agent = world.client("alpha")
    ask = {"prompt": "why does the ledger upload to the sftp gateway stall midway?"}
    assert call(agent, "post", "/prompt-recall", ask).json()["ids"] == []  # its corpus, built

    body = {
        "project": "alpha",
        "kind": "gotcha",
        "name": "sftp-gateway-stall",
        "description": "The SFTP gateway stalls ledger uploads midway",
    }
    made = call(agent, "post", "/memories", body)
    assert made.status_code == 201
    new = made.json()["memory"]["id"]

    ids: list[str] = []
    deadline = time.monotonic() + 10  # the corpus TTL is 30 s
    while new not in ids and time.monotonic() < deadline:
        time.sleep(0.2)
        ids = call(agent, "post", "/prompt-recall", ask).json()["ids"]

    assert ids and ids[0] == new


def test_a_memory_written_without_a_description_is_matched_by_its_body(planes: Any) -> None:
    """Agents often leave the description out: its prompts matched the name alone, and
    the block's line ended at the kind. The body's lead stands in, as in the briefing."""
    world, alpha = _among_fillers()
    services.memory_create(
        project=alpha,
        name="db-pool",
        body="We use a *PostgreSQL* pool of 40 connections per worker now.\nMore below.",
    )
    agent = world.client("alpha")

    found = call(agent, "post", "/prompt-recall", {"prompt": "size the postgresql pool"}).json()

    assert found["ids"] and found["ids"][0] == Memory.objects.get(name="db-pool").pk
    said = "- db-pool [fact]: We use a *PostgreSQL* pool of 40 connections per worker now.\n"
    assert said in found["text"]


def test_a_superseded_memory_gives_its_place_in_the_block_to_its_replacement(planes: Any) -> None:
    """The old version leaves the block at once (matches are read from the store); its
    replacement must take its place there at once too, not a corpus refresh later."""
    world, alpha = _among_fillers()
    old = services.memory_create(
        project=alpha, name="replica-lag", description="The read replica lags 2 s at month end"
    )
    agent = world.client("alpha")
    ask = {"prompt": "how far does the read replica lag at month end?"}
    assert call(agent, "post", "/prompt-recall", ask).json()["ids"] == [old.pk]

    said = {"description": "The read replica lags 5 s at month end"}
    made = call(agent, "post", f"/memories/{old.pk}/supersede", said)
    assert made.status_code in (200, 201), made.content
    new = made.json()["memory"]["id"]

    found = call(agent, "post", "/prompt-recall", ask).json()

    assert found["ids"] == [new]
    assert "5 s at month end" in found["text"]
    briefed = call(agent, "post", "/briefing", {**ask, "agent_type": "helper"}).json()
    assert new in briefed["ids"] and old.pk not in briefed["ids"]


def test_a_restored_memory_is_back_in_its_projects_prompts_within_seconds(
    planes: Any,
) -> None:
    """The corpus refresh reads the names updated since its newest row: a restore that
    left `updated` as it was stayed out of the corpus until its next whole build."""
    world, alpha = _among_fillers()
    gone = services.memory_create(
        project=alpha, name="cron-drift", description="The nightly cron drifts past midnight UTC"
    )
    services.memory_archive(memory=gone)
    Memory.objects.filter(pk=gone.pk).update(updated=timezone.now() - timedelta(hours=1))
    agent = world.client("alpha")
    ask = {"prompt": "why does the nightly cron drift past midnight?"}
    assert call(agent, "post", "/prompt-recall", ask).json()["ids"] == []  # its corpus, built

    assert call(agent, "post", f"/memories/{gone.pk}/restore").status_code == 200

    ids: list[str] = []
    deadline = time.monotonic() + 10  # the corpus TTL is 30 s, a whole build 5 minutes
    while gone.pk not in ids and time.monotonic() < deadline:
        time.sleep(0.2)
        ids = call(agent, "post", "/prompt-recall", ask).json()["ids"]

    assert ids == [gone.pk]
