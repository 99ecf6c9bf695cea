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
    from console.pgbackend import DatabaseUnreachable

    try:
        execute_from_command_line(sys.argv)
    except DatabaseUnreachable as exc:  # a wrong DATABASE_URL or a server that is down
        sys.exit(f"manage.py: {exc}")


if __name__ == "__main__":
    main()
