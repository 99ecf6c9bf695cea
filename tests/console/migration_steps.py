"""Running the database to a migration and back, for the tests of a data migration."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

Target = list[tuple[str, str]]


def migrated_to(target: Target) -> Any:
    """The database migrated to `target`; the historical models (apps) there."""
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def back_to_latest() -> None:
    """Every migration applied again, as the other tests expect."""
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
