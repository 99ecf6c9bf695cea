"""A refusal (403) is logged as one line, without its traceback."""

from __future__ import annotations

import logging
import sys

from django.core.exceptions import PermissionDenied

from console.logfilters import QuietRefusals


def record(exc: BaseException) -> logging.LogRecord:
    try:
        raise exc
    except BaseException:
        info = sys.exc_info()
    return logging.LogRecord("django.request", logging.WARNING, __file__, 1, "m", (), info)


def test_a_permission_refusal_keeps_its_line_and_loses_its_traceback() -> None:
    refused, failed = record(PermissionDenied("staff only")), record(ValueError("bug"))

    assert QuietRefusals().filter(refused) and refused.exc_info is None
    assert QuietRefusals().filter(failed) and failed.exc_info is not None  # a fault keeps it
