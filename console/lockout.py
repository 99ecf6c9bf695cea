"""What a locked-out console login gets: the login page saying why, and a log line.

django-axes (settings `AXES_*`) counts failed logins per login and address
and, past the limit, refuses even the right password until the cool-off ends.
It calls `lockout_response` for each refused attempt. The page is the login
page itself, with its form and the reason, answered 429 so that scripts see
the refusal too; every refused attempt is logged at WARNING, as axes logs the
failures that led to it.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from console.forms import LoginForm

logger = logging.getLogger("console.login")


def lockout_response(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    username = str((credentials or {}).get("username") or request.POST.get("username", ""))
    address = getattr(request, "axes_ip_address", None) or request.META.get("REMOTE_ADDR", "")
    logger.warning("console login locked out: username=%r address=%s", username, address)
    cool_off: timedelta = settings.AXES_COOLOFF_TIME
    context = {
        "form": LoginForm(request, initial={"username": username}),
        "locked_out": True,
        "cooloff_minutes": max(1, round(cool_off.total_seconds() / 60)),
        "next": request.POST.get("next", ""),
    }
    return render(request, "registration/login.html", context, status=429)
