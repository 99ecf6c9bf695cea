#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:  # a bad RECALL_* or DATABASE_URL value: its one line, not a traceback
        settings.INSTALLED_APPS  # noqa: B018 (reads console/settings.py)
    except (ImproperlyConfigured, ValueError) as exc:
        sys.exit(f"manage.py: {exc}")
    from django.db.utils import OperationalError, ProgrammingError

    from console.pgbackend import DatabaseUnreachable

    try:
        execute_from_command_line(sys.argv)
    except DatabaseUnreachable as exc:  # a wrong DATABASE_URL or a server that is down
        sys.exit(f"manage.py: {exc}")
    except BrokenPipeError:  # `manage.py search ... | head`: the reader left; say nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own advice
        sys.exit(141)  # as a shell reports SIGPIPE
    except (OperationalError, ProgrammingError) as exc:
        if not _no_tables(exc):
            raise
        name = settings.DATABASES["default"]["NAME"]  # a mistyped RECALL_DATA_DIR shows here
        sys.exit(
            f"manage.py: the database {name} has no tables yet ({str(exc).splitlines()[0]}): "
            "run `manage.py migrate` first (or check RECALL_DATA_DIR / DATABASE_URL)"
        )


def _no_tables(exc: Exception) -> bool:
    """A table of ours missing: a database never migrated (SQLite, PostgreSQL)."""
    said = str(exc)
    return ("no such table" in said or "does not exist" in said) and (
        "console_" in said or "auth_" in said or "django_" in said or "axes_" in said
    )


if __name__ == "__main__":
    main()
