"""System checks: the RECALL settings are validated at start-up (`manage.py check`).

- recall.E001: a plane's backend is missing from settings.RECALL["BACKENDS"].
- recall.E002: a backend's dotted path does not import.
- recall.E003: a backend's OPTIONS do not fit its constructor.
- recall.E004: a retrieval knob has a bad value (names the knob, the value
  and where it came from: settings or an environment variable).
- recall.E005: a channel does not import, or a config weighs a channel that
  is not registered.
- recall.E006: a thread count is not an integer >= 1.
- recall.E007 (`check --deploy`): SECRET_KEY is a publicly known key.
- recall.E008: a plane that lives in the database (the `postgres` profile)
  with a database that is not PostgreSQL.
"""

from __future__ import annotations

import inspect
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register

# Keys anyone can read: the fallback this project once had in settings.py, and
# Django's `startproject` placeholder prefix. Django's own security.W009 only
# warns about short or low-variety keys, and these pass it.
PUBLIC_SECRET_KEYS = frozenset({"dev-only-insecure-key-change-me-in-production-0123456789"})
PUBLIC_SECRET_KEY_PREFIX = "django-insecure-"


def _backends() -> list[CheckMessage]:
    from console.wiring import PLANES, backend, import_string
    from recall.errors import ConfigError

    errors: list[CheckMessage] = []
    conf = settings.RECALL.get("BACKENDS", {})
    for plane in PLANES:
        if plane not in conf:
            errors.append(Error(f"settings.RECALL['BACKENDS'] has no {plane!r}", id="recall.E001"))
            continue
        path, options = backend(plane)
        if not path:
            continue
        try:
            cls = import_string(path)
        except ConfigError as exc:
            errors.append(Error(f"RECALL['BACKENDS'][{plane!r}]: {exc}", id="recall.E002"))
            continue
        if plane == "VECTOR_INDEX":
            options.setdefault("dims", 384)
        try:
            inspect.signature(cls).bind(**options)
        except TypeError as exc:
            message = f"RECALL['BACKENDS'][{plane!r}] OPTIONS do not fit {path}: {exc}"
            errors.append(Error(message, id="recall.E003"))
    return errors


def _knobs() -> list[CheckMessage]:
    from console import configuration

    return [
        Error(f"bad retrieval setting {problem}", id="recall.E004")
        for problem in configuration.problems()
    ]


def _channels() -> list[CheckMessage]:
    from console import configuration
    from console.wiring import channel_classes
    from recall.errors import ConfigError

    try:
        names = {cls.name for cls in channel_classes()}
    except ConfigError as exc:
        return [Error(f"RECALL['CHANNELS']: {exc}", id="recall.E005")]
    try:
        base = configuration.base()
    except ConfigError:
        return []  # reported by _knobs
    errors: list[CheckMessage] = []
    for section in ("recall", "search"):
        for name in base.section(section).channel_weights:
            if name not in names:
                message = (
                    f"{section}.channel_weights names channel {name!r}, which is not in "
                    f"RECALL['CHANNELS'] ({', '.join(sorted(names))})"
                )
                errors.append(Error(message, id="recall.E005"))
    return errors


def _database_planes() -> list[CheckMessage]:
    from django.db import connection

    from console.wiring import backend, import_string
    from recall.errors import ConfigError

    errors: list[CheckMessage] = []
    for plane in ("TEXT_INDEX", "VECTOR_INDEX"):
        path = backend(plane)[0] if plane in settings.RECALL.get("BACKENDS", {}) else ""
        try:
            joins = bool(path) and getattr(import_string(path), "JOINS_TRANSACTION", False)
        except ConfigError:
            continue  # reported by _backends
        if joins and connection.vendor != "postgresql":
            message = (
                f"RECALL['BACKENDS'][{plane!r}] {path} keeps its rows in the database, which "
                f"is {connection.vendor}, not PostgreSQL: set DATABASE_URL=postgres://... "
                "or RECALL_PROFILE=embedded"
            )
            errors.append(Error(message, id="recall.E008"))
    return errors


@register()
def recall_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    errors = _backends() + _knobs() + _channels() + _database_planes()
    threads = settings.RECALL.get("EMBEDDER_BATCH_THREADS", 1)
    if not isinstance(threads, int) or threads < 1:
        message = "RECALL['EMBEDDER_BATCH_THREADS'] must be an integer >= 1"
        errors.append(Error(message, id="recall.E006"))
    return errors


@register(Tags.security, deploy=True)
def secret_key_known(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    key = str(getattr(settings, "SECRET_KEY", ""))
    if key in PUBLIC_SECRET_KEYS or key.startswith(PUBLIC_SECRET_KEY_PREFIX):
        message = "SECRET_KEY is a publicly known key: sessions and signed links can be forged"
        hint = (
            "Unset DJANGO_SECRET_KEY to use this installation's own key "
            "(RECALL_DATA_DIR/secret_key, made on first start), or set it to a long random value."
        )
        return [Error(message, hint=hint, id="recall.E007")]
    return []
