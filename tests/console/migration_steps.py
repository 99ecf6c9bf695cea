"""Running the database to a migration and back, for the tests of a data migration.

A test takes the `migrations` fixture (imported as `migrations_fixture`): a call
migrates to a target and gives the historical models there, and every migration
is applied again afterwards, whether the test passed or not, as the other tests
expect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

Target = list[tuple[str, str]]


def migrated_to(target: Target) -> Any:
    """The database migrated to `target`; the historical models (apps) there."""
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def back_to_latest() -> None:
    """Every migration applied again."""
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.fixture(name="migrations")
def migrations_fixture() -> Iterator[Callable[[Target], Any]]:
    """`migrated_to`, with every migration applied again after the test."""
    yield migrated_to
    back_to_latest()
