"""gunicorn settings for `make serve` (and the tests that run the production server).

Request-line and header limits: the API's longest schema-valid request is a
search whose `q` holds 4,000 characters; percent-encoded UTF-8 that is up to
36,000 bytes, past gunicorn's default request line (4,094 bytes), which it
would refuse with an HTML 414 before the app could answer. 0 lifts the line
limit (the app's schema bounds every field) and headers get room for long
Idempotency-Keys and tokens.
"""

from __future__ import annotations

import threading
from typing import Any

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
