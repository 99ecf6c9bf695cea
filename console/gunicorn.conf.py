"""gunicorn settings for `make serve` (and the tests that run the production server).

Request-line and header limits: the API's longest schema-valid request is a
search whose `q` holds 4,000 characters; percent-encoded UTF-8 that is up to
36,000 bytes, past gunicorn's default request line (4,094 bytes), which it
would refuse with an HTML 414 before the app could answer. 0 lifts the line
limit (the app's schema bounds every field) and headers get room for long
Idempotency-Keys and tokens.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from gunicorn import util

limit_request_line = 0
limit_request_field_size = 16_384
limit_request_fields = 100
timeout = 120


def post_worker_init(worker: Any) -> None:
    """Warm each worker in the background (model, planes, vector copy), so the
    first requests do not each wait seconds for them; requests are served
    meanwhile."""
    from console import selectors

    threading.Thread(target=selectors.warm_quietly, name="warm-up", daemon=True).start()


# gunicorn's own refusals, before the application sees the request, in the API's
# one error shape: a header past `limit_request_field_size` (an Idempotency-Key of
# 20,000 characters), more than `limit_request_fields` headers, or a request line
# holding raw non-ASCII bytes was answered with an HTML page, the one reply of the
# server no client could read as `{detail, field, code}`.
CODES = {400: "invalid", 403: "forbidden", 414: "too_large", 431: "too_large", 500: "server_error"}


def json_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """`gunicorn.util.write_error`, answering JSON (workers call it by that name)."""
    detail = f"{reason}: {mesg}" if mesg else reason
    body = json.dumps({"detail": detail, "field": None, "code": CODES.get(status_int, "invalid")})
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json; charset=utf-8\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, (head + body).encode("latin-1"))


util.write_error = json_error
