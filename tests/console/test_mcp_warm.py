"""`manage.py mcp` loads what a first call needs while the client starts the session.

Without it an agent's first memory_recall waited 1.3-1.4 s (the model, the
planes), measured through the SDK's client three seconds after `initialize`;
with it, 0.2 s. The warm-up reads the token's projects only: a deployment of
many projects does not build every PromptRecall corpus for one agent.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from console import mcp, selectors, services, tokens

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(planes: Path) -> str:
    for slug in ("alpha", "beta", "gamma"):
        services.project_create(slug=slug)
    return tokens.token_create(agent="warm", projects=["alpha", "gamma"], may_write=False)[1]


def test_the_server_warms_the_tokens_projects_beside_serving(
    token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    warmed: list[Any] = []
    done = threading.Event()

    def warm(projects: list[str]) -> None:
        warmed.append((threading.current_thread().name, projects))
        done.set()

    monkeypatch.setenv(mcp.TOKEN_ENV, token)
    monkeypatch.setattr(selectors, "warm_quietly", warm)
    monkeypatch.setattr(mcp, "serve", lambda tools: done.wait(10))  # serving while it warms

    call_command("mcp")

    assert warmed == [("warm-up", ["alpha", "gamma"])]


def test_warm_builds_the_prompt_corpora_of_the_projects_named(
    planes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for slug in ("alpha", "beta"):
        services.project_create(slug=slug)
    built: list[str | None] = []
    monkeypatch.setattr(selectors.wiring, "warm", lambda: None)
    monkeypatch.setattr(
        selectors, "prompt_recall", lambda *, project, prompt: built.append(project)
    )

    selectors.warm(["alpha"])
    assert built == [None, "alpha"]
    built.clear()
    selectors.warm()  # a server of every project (gunicorn)
    assert built == [None, "alpha", "beta"]
