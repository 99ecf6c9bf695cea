"""Create the console login for `make run` when it does not exist, and print it."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Create (or reset with --reset) a superuser login and print it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--username", default="admin", help="the login to make or show (default admin)"
        )
        parser.add_argument("--reset", action="store_true", help="set a new password")

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"]
        users = get_user_model()
        secret_file = settings.DATA_DIR / "login.txt"
        stored = _logins(secret_file)
        user = users.objects.filter(username=username).first()
        if user is not None and not options["reset"] and username not in stored:
            # A restored backup or a moved database without this folder's login.txt:
            # the login keeps the password it has (it was set to a new one, silently,
            # and the operator's own was refused).
            self.stdout.write(
                f"Console login: {username} (its password is the one it had: {secret_file} "
                f"does not hold it; `manage.py ensure_login --reset` sets a new one)"
            )
            self._check_flags(user)
            return
        if user is None or options["reset"]:
            password = secrets.token_urlsafe(12)
            if user is None:
                user = users.objects.create_superuser(username=username, password=password)
            else:
                user.set_password(password)
                user.save()
            stored[username] = password  # the other logins' lines stay as they were
            # Created 0600, never readable by others even for a moment (as secret_key).
            fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.writelines(f"{name} {secret}\n" for name, secret in stored.items())
            secret_file.chmod(0o600)  # a file made before keeps its mode otherwise
        password = stored[username]
        self.stdout.write(f"Console login: {username} / {password}  (stored in {secret_file})")
        self._check_flags(user)

    def _check_flags(self, user: Any) -> None:
        if not (user.is_staff and user.is_superuser):
            # The operator's login is made a superuser; one that lost the flags
            # sees only its granted projects and no settings. Say so rather than
            # quietly raise a login someone lowered on purpose.
            self.stdout.write(
                f"Warning: {user.get_username()} is not staff and superuser, so it sees only "
                "the projects granted to it and cannot open Settings. Give it the flags in "
                "the admin, or use `createsuperuser` for an operator's login."
            )


def _logins(secret_file: Path) -> dict[str, str]:
    """The logins this command made, one `username password` line each, in order.
    `--username ops` wrote its line over the file, and `make run` then printed
    ops's login as the console's."""
    if not secret_file.exists():
        return {}
    pairs = (line.split() for line in secret_file.read_text(encoding="utf-8").splitlines())
    return {pair[0]: pair[1] for pair in pairs if len(pair) == 2}
