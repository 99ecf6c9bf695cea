"""Shared fixtures. Console tests get a throwaway data directory per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    """A test that warms a server (`selectors.warm`) freezes the heap for the
    collector (`console.allocator.freeze`); thaw it, so later tests' garbage
    (a dropped vector copy and its poller, say) is collected as usual."""
    import gc

    yield
    if gc.get_freeze_count():
        gc.unfreeze()


@pytest.fixture
def planes(settings: Any, tmp_path: Path) -> Iterator[Path]:
    """Point both derived planes at tmp_path (real tantivy/Whoosh + LanceDB + model).

    Index jobs are applied explicitly with `console.indexing.apply_pending()`
    (pytest-django's `db` never commits, so on_commit hooks do not fire), or
    on commit in tests marked `django_db(transaction=True)`.
    """
    from console import wiring

    settings.RECALL = {
        **settings.RECALL,
        "TEXT_INDEX_DIR": tmp_path / "text",
        "VECTOR_INDEX_DIR": tmp_path / "vectors",
    }
    wiring.reset()
    yield tmp_path
    wiring.reset()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Drop the contract suites' PostgreSQL tables (a named test server keeps no litter)."""
    from tests import pg

    pg.drop_test_tables()
