"""Security headers the console sends on every response."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

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
    """Only our own scripts and styles; the API docs page gets a looser policy."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        if not request.path.startswith("/api/v1/docs"):
            response.headers.setdefault("Content-Security-Policy", CSP)
        return response

    return middleware
