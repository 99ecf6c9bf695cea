"""What the commands that take `--project` share: a slug no project has is an error.

`manage.py recall` and `search` bound to an unknown project answered with the
global memories and exit code 0, where the API answers 403 and
`export_memories` names the slug.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.core.management.base import CommandError

from console import selectors


def unknown(slugs: Sequence[str] | None) -> None:
    """CommandError naming the slugs no project has (`manage.py project list` shows them)."""
    missing = sorted(set(slugs or ()) - set(selectors.project_slugs()))
    if missing:
        named = ", ".join(repr(s) for s in missing)
        raise CommandError(f"no project with slug {named}: `manage.py project list` shows them")
