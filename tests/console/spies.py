"""Fixtures that watch the real components without replacing them."""

from __future__ import annotations

from typing import Any

import pytest

from console import wiring


@pytest.fixture(name="embedded")
def embedded_fixture(monkeypatch: Any) -> list[str]:
    """Every text the configured embedder embeds from now on (it still embeds them)."""
    embedder = wiring.embedder()
    assert embedder is not None
    seen: list[str] = []
    real = embedder.embed

    def spy(texts: Any) -> Any:
        seen.extend(texts)
        return real(texts)

    monkeypatch.setattr(embedder, "embed", spy)
    return seen
