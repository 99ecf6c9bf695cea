from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Recall console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from console import allocator, checks  # noqa: F401  (registers the system checks)

        allocator.tune()  # before the server's threads start (console/allocator.py)
