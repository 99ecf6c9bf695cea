"""Move a deployment to another database: copy the rows, then rebuild the planes there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

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
        source = _connect(migrating.SOURCE, options["source"], "--from")
        target = DEFAULT_DB_ALIAS
        if options["target"]:
            target = _connect(migrating.TARGET, options["target"], "--to")
        try:
            skipped = migrating.skipped_rows(source)
            counts = migrating.copy(source, target)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        except DatabaseError as exc:  # unreachable, no such database, not a database
            said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            where = migrating.describe(options["source"])
            if options["target"]:
                where += f" to {migrating.describe(options['target'])}"
            raise CommandError(f"cannot copy {where}: {said}") from exc
        finally:
            migrating.close(source)
        copied = ", ".join(f"{n} {label}" for label, n in counts.items())
        self.stdout.write(f"copied {copied}")
        for label, n in skipped.items():
            self.stderr.write(f"not copied: {n} {label} (grant them again on the target)")
        if options["no_reindex"]:
            self.stdout.write("planes not rebuilt: run manage.py reindex on the target")
        elif target == DEFAULT_DB_ALIAS:
            vectors = options["vectors_from"] or Path(settings.RECALL["VECTOR_INDEX_DIR"])
            reuse = {"vectors_from": vectors} if vectors.is_dir() else {}
            call_command("reindex", stdout=self.stdout, stderr=self.stderr, **reuse)
        else:
            migrating.close(target)
            self.stdout.write(
                f"planes not rebuilt: {connections.settings[target]['NAME']} is not the "
                "configured database; run manage.py reindex with DATABASE_URL set to it"
            )
