"""Move a deployment's rows from one database to another (`manage.py migrate_data`).

Every table that holds what people and agents made is copied as it is, ids
included: logins, projects and who may see them, memories, notes, edges and
the `[[names]]` bodies hold, settings rows, agent tokens (hashed secrets, so
agents keep working), idempotency keys and retrieval events; long memories'
sentence vectors too (derived, but the model's work: the reindex after the
copy reuses them).
What is derived or passing is not: index jobs, the planes (rebuilt from the
rows afterwards, `reindex`), sessions, log-in lock-outs, the admin's log,
content types and permissions (the target's `migrate` makes its own).

The target must be migrated and empty; the copy is one transaction on it
(foreign keys are checked at commit, so a project's parent or a memory's
successor may arrive after the row that names it). Sequences are moved past
the copied ids so the next row gets a fresh one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import DEFAULT_DB_ALIAS, connections, models, transaction
from django.db.migrations.executor import MigrationExecutor

from console import database_url
from console.models import (
    AgentToken,
    Digest,
    Edge,
    Feedback,
    IdempotencyKey,
    LinkName,
    Memory,
    MemoryRevision,
    Note,
    Passages,
    Project,
    ProjectMember,
    RetrievalEvent,
    Setting,
)

CHUNK = 2000
SOURCE, TARGET = "migrate_source", "migrate_target"


def copied_models() -> list[type[models.Model]]:
    """The tables copied, parents before children."""
    user = get_user_model()
    return [
        user,
        Project,
        ProjectMember,
        Memory,
        Passages,
        MemoryRevision,
        Note,
        Edge,
        LinkName,
        Setting,
        AgentToken,
        AgentToken.projects.through,
        IdempotencyKey,
        RetrievalEvent,
        Feedback,
        Digest,
    ]


def connect(alias: str, url: str) -> str:
    """Register `url` as a database alias (no pool: a command, not a server)."""
    entry = database_url.parse(url, pool_size=0, conn_max_age=0)
    both = {DEFAULT_DB_ALIAS: connections.settings[DEFAULT_DB_ALIAS], alias: entry}
    connections.settings[alias] = connections.configure_settings(both)[alias]
    return alias


def _rows(model: type[models.Model], using: str) -> Iterator[list[models.Model]]:
    names = [f.attname for f in model._meta.concrete_fields]
    query = model._default_manager.using(using).order_by("pk").values_list(*names)
    chunk: list[models.Model] = []
    for values in query.iterator(chunk_size=CHUNK):
        chunk.append(model(**dict(zip(names, values, strict=True))))
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def copy(
    source: str, target: str, *, progress: Callable[[str, int], None] | None = None
) -> dict[str, int]:
    """Copy every table of `copied_models` from `source` into the empty `target`; rows per table."""
    call_command("migrate", database=target, interactive=False, verbosity=0)
    tables = copied_models()
    busy = [m._meta.label for m in tables if m._default_manager.using(target).exists()]
    if busy:
        raise ValueError(f"the target database is not empty: {', '.join(busy)} hold rows")
    counts: dict[str, int] = {}
    with transaction.atomic(using=target):
        for model in tables:
            counts[model._meta.label] = 0
            for chunk in _rows(model, source):
                model._default_manager.using(target).bulk_create(chunk)
                counts[model._meta.label] += len(chunk)
                if progress:
                    progress(model._meta.label, len(chunk))
        reset = connections[target].ops.sequence_reset_sql(no_style(), tables)
        with connections[target].cursor() as cursor:
            for statement in reset:
                cursor.execute(statement)
    return counts


def behind(alias: str) -> list[str]:
    """The migrations of this release the database at `alias` has not applied
    ("app.name"), first to last: a source an older release made lacks columns the
    copy reads ("no such column: console_idempotencykey.text")."""
    executor = MigrationExecutor(connections[alias])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{m.app_label}.{m.name}" for m, backwards in plan if not backwards]


def describe(url: str) -> str:
    """The URL without its password, for messages."""
    return database_url._hidden(url)


def skipped_rows(source: str) -> dict[str, int]:
    """Rows of the source's tables that are not copied (so the report can name them)."""
    user = get_user_model()
    out: dict[str, int] = {}
    for label, model in (("user permissions", user.user_permissions.through),
                         ("user groups", user.groups.through)):  # fmt: skip
        count = model._default_manager.using(source).count()
        if count:
            out[label] = count
    return out


def close(*aliases: str) -> None:
    for alias in aliases:
        if alias in connections.settings:
            connections[alias].close()
