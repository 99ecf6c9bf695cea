from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Recall console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from console import allocator, checks  # noqa: F401  (registers the system checks)

        allocator.tune()  # before the server's threads start (console/allocator.py)
        if serving_by_runserver(sys.argv, os.environ):
            from console import selectors

            threading.Thread(target=selectors.warm_quietly, name="warm-up", daemon=True).start()


def serving_by_runserver(argv: list[str], environ: Mapping[str, str]) -> bool:
    """This process is `manage.py runserver`'s server (`make run`): the autoreloader's
    child, or the one process with --noreload. gunicorn warms its workers
    (console/gunicorn.conf.py); nothing warmed this one, and a person's first search
    by meaning waited about 4 s for the model and the vector copy."""
    if len(argv) < 2 or argv[1] != "runserver":
        return False
    return environ.get("RUN_MAIN") == "true" or "--noreload" in argv
