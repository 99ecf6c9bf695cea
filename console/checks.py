"""System checks: the RECALL settings are validated at start-up."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register

REQUIRED = ("TEXT_INDEX", "VECTOR_INDEX", "EMBEDDER", "TEXT_INDEX_DIR", "VECTOR_INDEX_DIR")


@register()
def recall_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    from console.wiring import import_string
    from recall.errors import ConfigError

    errors: list[CheckMessage] = []
    conf = getattr(settings, "RECALL", {})
    for key in REQUIRED:
        if key not in conf:
            errors.append(Error(f"settings.RECALL has no {key!r}", id="recall.E001"))
    for key in ("TEXT_INDEX", "VECTOR_INDEX", "EMBEDDER"):
        path = conf.get(key)
        if not path:
            continue
        try:
            import_string(path)
        except ConfigError as exc:
            errors.append(Error(f"RECALL[{key!r}]: {exc}", id="recall.E002"))
    for key in ("EMBEDDER_THREADS", "EMBEDDER_BATCH_THREADS"):
        threads = conf.get(key, 1)
        if not isinstance(threads, int) or threads < 1:
            errors.append(Error(f"RECALL[{key!r}] must be an integer >= 1", id="recall.E003"))
    return errors
