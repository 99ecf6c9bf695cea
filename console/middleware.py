"""What the console checks and sends on every request: security headers, and that a
change comes from the person its page was opened for."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

from django.http import HttpRequest, HttpResponse
from django.urls import reverse

PERSON = "X-Console-Person"  # who the page was opened for (`templates/base.html`'s meta)
PERSON_NOW = "X-Console-Person-Now"  # who is logged in now, on a refused change
SAFE = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})

CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'self'",
        "object-src 'none'",
    ]
)


def content_security_policy(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Only our own scripts and styles, on every page (the API docs' too: they load
    Swagger UI from our own static files and start it without an inline script)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        return response

    return middleware


def same_person(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Refuse a change (409) sent from a page opened for another person than the one
    logged in now: someone logged out in another tab and in as someone else, and this
    tab's save would be recorded as theirs. The page's script reads the CSRF token from
    the cookie (a log-in rotates it), so the token alone no longer tells; every htmx
    request names the page's person (`PERSON`). Logging out is let through: the person
    wants whoever is logged in gone. A request without the header (no script) is left
    to the CSRF check, whose token a log-in rotated."""

    def middleware(request: HttpRequest) -> HttpResponse:
        opened_for = request.headers.get(PERSON)
        user = getattr(request, "user", None)
        if (
            opened_for is not None
            and request.method not in SAFE
            and user is not None
            and user.is_authenticated
            and opened_for != str(user.pk)
            and request.path != reverse("logout")
        ):
            name = user.get_username()
            response = HttpResponse(
                f"This page was opened for another person; {name} is logged in now. "
                "Nothing was saved.",
                status=409,
                content_type="text/plain; charset=utf-8",
            )
            response[PERSON_NOW] = quote(name)  # any name, in an ASCII header
            return response
        return get_response(request)

    return middleware
