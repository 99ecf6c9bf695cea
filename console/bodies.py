"""Request bodies, read whole before Django sees the request.

Sent chunked. Django reads `CONTENT_LENGTH` bytes of `wsgi.input` and, without
that header, reads nothing: a JSON object sent with `Transfer-Encoding:
chunked` (a stream body from fetch, httpx or curl) reached the API as no body
at all, and the client that had sent one was told "this call needs a JSON
object as its body". gunicorn decodes the chunks and says the stream ends where
the body does (`wsgi.input_terminated`), so the body is read here, up to one
byte past the upload limit, and handed on with its length: one past the limit
keeps that length, which Django refuses as it refuses an announced body over
it (413).

Stalled. A client that announced more than it sends (`Content-Length: 1000`
and eight bytes, then silence) held one of gunicorn's threads until it hung
up: eight such connections (2 workers x 4 threads) and the server answered
no one. Under gunicorn (`gunicorn.socket` in the environ) the connection's
reads give up after `BODY_IDLE_SECONDS` (10; `RECALL_BODY_IDLE_SECONDS`)
without a byte, as nginx's `client_body_timeout` does, and the body is read
here: one that stops arriving is answered 408 in the API's error shape and
the connection is closed. The bound is on the silence between two reads, not
on the whole body: a client trickling a byte every few seconds is what a
buffering proxy in front of the server is for (README "Deployment").
"""

from __future__ import annotations

import io
import json
import socket
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


def announced(environ: dict[str, Any]) -> int:
    """The body length a request announced, when it is one Django would read (else 0)."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0
    return length if 0 < length <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE else 0


def stalled(start_response: Callable[..., Any], length: int | None) -> list[bytes]:
    """The 408 a body that stopped arriving is answered with."""
    before = f" before its {length:,} announced bytes came" if length else ""
    detail = (
        f"the request body stopped arriving{before}: nothing for {settings.BODY_IDLE_SECONDS} s"
    )
    from console import errors  # not at import: wsgi.py reads this before Django is set up

    body = json.dumps(errors.simple(408, detail).body()).encode()
    headers = [("Content-Type", "application/json; charset=utf-8"),
               ("Content-Length", str(len(body)))]  # fmt: skip
    start_response("408 Request Timeout", headers)
    return [body]


def _read(stream: Any, length: int) -> bytes | None:
    """Up to `length` bytes of `stream`; None if it went silent before they came."""
    try:
        return bytes(stream.read(length))
    except TimeoutError:
        return None


def reading_bodies(app: App) -> App:
    """`app`, given each body whole: a chunked one with its length (at most the limit
    and one byte), and under gunicorn an announced one, or a 408 if it stalls."""

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        conn = environ.get("gunicorn.socket")
        conn = conn if isinstance(conn, socket.socket) else None  # None: not gunicorn
        if conn is not None:
            conn.settimeout(settings.BODY_IDLE_SECONDS)
        length = announced(environ) if conn is not None else 0
        if chunked(environ) or length:
            body = _read(environ["wsgi.input"], length or settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
            if body is None:
                if conn is not None:  # nothing more is read on it
                    conn.shutdown(socket.SHUT_RD)
                return stalled(start_response, length or None)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return app(environ, start_response)

    return application
