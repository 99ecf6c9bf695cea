"""A request body sent chunked, read as one sent with its length.

Django reads `CONTENT_LENGTH` bytes of `wsgi.input` and, without that header,
reads nothing: a JSON object sent with `Transfer-Encoding: chunked` (a stream
body from fetch, httpx or curl) reached the API as no body at all, and the
client that had sent one was told "this call needs a JSON object as its
body". gunicorn decodes the chunks and says the stream ends where the body
does (`wsgi.input_terminated`), so the body is read here, up to one byte past
the upload limit, and handed on with its length: one past the limit keeps that
length, which Django refuses as it refuses an announced body over it (413).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings

App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def chunked(environ: dict[str, Any]) -> bool:
    """A body the server decoded from chunks and announced no length for."""
    coding = str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()
    return (
        bool(environ.get("wsgi.input_terminated"))
        and not environ.get("CONTENT_LENGTH")
        and "chunked" in coding
    )


def reading_chunked_bodies(app: App) -> App:
    """`app`, given a chunked body with its length (at most the limit and one byte)."""

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if chunked(environ):
            body = environ["wsgi.input"].read(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return app(environ, start_response)

    return application
