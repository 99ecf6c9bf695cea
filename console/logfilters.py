"""Logging filters for the console's log.

A person opening a page they may not see is an ordinary answer (403), not a
fault: Django logs it with the exception's whole traceback, and a log full of
them hides the real errors. The line stays; the traceback goes.
"""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied


class QuietRefusals(logging.Filter):
    """Drop the traceback from a logged PermissionDenied (the warning line is kept)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PermissionDenied):
            record.exc_info = None
            record.exc_text = None
        return True
