"""Move a deployment to another database: copy the rows, then rebuild the planes there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.migrations.recorder import MigrationRecorder

from console import database_url, migrating


def _connect(alias: str, url: str, flag: str) -> str:
    """`url` registered as `alias`; a CommandError naming `flag` for a URL that is not a
    database's (it said DATABASE_URL) or a SQLite source that is not there (connecting
    made an empty file there, then the copy failed on a missing table)."""
    try:
        parsed = database_url.parse(url, pool_size=0, conn_max_age=0)
    except ValueError as exc:
        raise CommandError(str(exc).replace("DATABASE_URL", flag)) from None
    name = str(parsed.get("NAME") or "")
    if (
        flag == "--from"
        and parsed["ENGINE"] == database_url.SQLITE_ENGINE
        and not Path(name).is_file()
    ):
        raise CommandError(f"--from: no SQLite database at {name}")
    return migrating.connect(alias, url)


def _said(exc: DatabaseError) -> str:
    """The first line of a database's error (the rest is its context)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _make_sqlite_place(alias: str) -> list[Path]:
    """The folders and file a SQLite target at `alias` needs, made; those this run made,
    deepest first (so a failed run can take them away again). SQLite makes the file but
    not its folder: a new folder was "unable to open database file"."""
    entry = connections.settings[alias]
    if entry["ENGINE"] != database_url.SQLITE_ENGINE:
        return []
    path = Path(entry["NAME"]).absolute()
    made = [path] if not path.exists() else []
    folder = path.parent
    while not folder.exists():
        made.append(folder)
        folder = folder.parent
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"--to: cannot make the folder {path.parent}: {exc.strerror}") from exc
    return made


def _remove(made: list[Path]) -> list[Path]:
    """What `_make_sqlite_place` made, taken away again (a folder only if empty); what was."""
    removed: list[Path] = []
    for path in made:
        try:
            if path.is_dir():
                path.rmdir()
            else:
                path.unlink(missing_ok=True)
                for suffix in ("-journal", "-wal", "-shm"):
                    path.with_name(path.name + suffix).unlink(missing_ok=True)
        except OSError:
            continue  # a folder that holds something else now stays
        removed.append(path)
    return removed


class Command(BaseCommand):
    help = (
        "Copy every row people and agents made (logins, projects, memories, notes, edges, "
        "settings, agent tokens, retrieval events) from --from into the empty database --to "
        "(default: the configured one, DATABASE_URL), then rebuild the planes there from the "
        "rows (as reindex). Example: DATABASE_URL=postgres://... manage.py migrate_data "
        "--from sqlite:///var/recall.sqlite3"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--from", dest="source", required=True, help="the source's URL")
        parser.add_argument("--to", dest="target", help="the target's URL (default: configured)")
        parser.add_argument(
            "--no-reindex", action="store_true", help="copy rows only; run reindex later"
        )
        parser.add_argument(
            "--vectors-from",
            type=Path,
            help="the old deployment's LanceDB directory, whose vectors the rebuild copies "
            "instead of embedding again (default: RECALL_DATA_DIR/vectors when it exists)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        vectors: Path | None = options["vectors_from"]
        if vectors is not None and not vectors.is_dir():  # it was ignored: all embedded again
            raise CommandError(f"--vectors-from {vectors}: no such folder")
        source = _connect(migrating.SOURCE, options["source"], "--from")
        target = DEFAULT_DB_ALIAS
        made: list[Path] = []  # a SQLite target's file and folders this run made
        if options["target"]:
            target = _connect(migrating.TARGET, options["target"], "--to")
        try:
            skipped = migrating.skipped_rows(source)
            missing = migrating.behind(source)
        except DatabaseError as exc:  # no such database, not a database: the target untouched
            migrating.close(source)
            raise CommandError(f"cannot copy {self._where(options)}: {_said(exc)}") from exc
        if missing:  # an older release's database: its tables lack this release's columns
            migrating.close(source)
            url = migrating.describe(options["source"])
            raise CommandError(
                f"the source database is an older release's: {len(missing)} of this release's "
                f"migrations are not applied to it (the first {missing[0]}). Bring it up to "
                f"date first, `DATABASE_URL={url} manage.py migrate`, then move it; nothing "
                "was copied"
            )
        if options["target"]:
            made = _make_sqlite_place(target)
        try:
            counts = migrating.copy(source, target)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        except DatabaseError as exc:  # unreachable, no such table, a constraint
            left = self._left(target, made)
            raise CommandError(f"cannot copy {self._where(options)}: {_said(exc)}; {left}") from exc
        finally:
            migrating.close(source)
        copied = ", ".join(f"{n} {label}" for label, n in counts.items())
        self.stdout.write(f"copied {copied}")
        for label, n in skipped.items():
            self.stderr.write(f"not copied: {n} {label} (grant them again on the target)")
        vectors = vectors or Path(settings.RECALL["VECTOR_INDEX_DIR"])
        reuse = {"vectors_from": vectors} if vectors.is_dir() else {}
        again = "manage.py reindex" + (f" --vectors-from {vectors}" if reuse else "")
        if options["no_reindex"]:
            self.stdout.write(f"planes not rebuilt: run {again} on the target")
        elif target == DEFAULT_DB_ALIAS:
            try:
                call_command("reindex", stdout=self.stdout, stderr=self.stderr, **reuse)
            except (CommandError, DatabaseError, OSError) as exc:
                raise CommandError(
                    f"the rows were copied, but rebuilding the planes failed: {exc}; "
                    f"run {again} to finish the move"
                ) from exc
        else:
            migrating.close(target)
            self.stdout.write(
                f"planes not rebuilt: {connections.settings[target]['NAME']} is not the "
                f"configured database; run {again} with DATABASE_URL set to it"
            )

    @staticmethod
    def _where(options: dict[str, Any]) -> str:
        where = migrating.describe(options["source"])
        if options["target"]:
            where += f" to {migrating.describe(options['target'])}"
        return where

    @staticmethod
    def _left(target: str, made: list[Path]) -> str:
        """What a failed copy left of the target, and what to do about it. A SQLite file
        this run made is removed (with the folders it made for it); any other target
        keeps the migrations applied before the failure, and no copied row."""
        if target != DEFAULT_DB_ALIAS:
            migrating.close(target)
        if made and _remove(made)[:1] == made[:1]:
            return f"removed {made[0]}, which this run had made; nothing was copied"
        name = connections.settings[target]["NAME"]
        try:
            applied = len(MigrationRecorder(connections[target]).applied_migrations())
        except DatabaseError:
            return f"the target {name} was not reached: nothing was written there"
        finally:
            if target != DEFAULT_DB_ALIAS:
                migrating.close(target)
        return (
            f"the target {name} is left incomplete: {applied} migrations applied and no row "
            "copied (the copy is one transaction, rolled back); fix the cause and run "
            "migrate_data again (it goes on from there), or drop the target and start over"
        )
