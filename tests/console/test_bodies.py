"""Request bodies read whole before Django (console.bodies): a body sent chunked
reaches the API (Django, reading only `CONTENT_LENGTH` bytes, read none of it, and
the client that had sent a JSON object was told it had sent none), and one that
stops arriving is answered 408 instead of holding a server thread."""

from __future__ import annotations

import io
import json
import socket
import threading
from typing import Any

import pytest
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import override_settings

from tests.console.api_world import World, world_fixture  # noqa: F401

pytestmark = pytest.mark.django_db


def _send(world: World, body: bytes, **headers: str) -> tuple[str, dict[str, Any]]:
    """POST /api/v1/memories through the WSGI application as gunicorn hands it a chunked
    body: decoded, with wsgi.input_terminated and no CONTENT_LENGTH."""
    from console.bodies import reading_bodies

    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/memories", "QUERY_STRING": "",
        "SERVER_NAME": "testserver", "SERVER_PORT": "80", "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True,
        "wsgi.errors": io.StringIO(), "CONTENT_TYPE": "application/json",
        "HTTP_TRANSFER_ENCODING": "chunked",
        "HTTP_AUTHORIZATION": f"Bearer {world.secrets['alpha']}", **headers,
    }  # fmt: skip
    said: list[str] = []

    def start_response(status: str, _headers: Any, _exc: Any = None) -> None:
        said.append(status)

    # As Django's test client does: a request's start and end close "old" connections,
    # and on PostgreSQL that closed the test's own transaction under it.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        reply = b"".join(reading_bodies(WSGIHandler())(environ, start_response))
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    return said[0], json.loads(reply)


def test_a_chunked_json_body_is_read_and_one_past_the_limit_is_a_413(world: World) -> None:
    body = json.dumps({"project": "alpha", "name": "sent-chunked", "body": "in chunks"})
    status, reply = _send(world, body.encode())
    assert status.startswith("201"), reply
    assert reply["memory"]["name"] == "sent-chunked"

    past = json.dumps({"project": "alpha", "name": "big", "body": "x" * (3 * 1024 * 1024)})
    status, reply = _send(world, past.encode())
    assert status.startswith("413") and reply["code"] == "too_large", reply

    # A body that announces its length is left alone (Django reads it as before).
    status, reply = _send(world, b"{}", CONTENT_LENGTH="2", HTTP_TRANSFER_ENCODING="")
    assert status.startswith("422") and reply["code"] == "missing", reply
    assert len(past) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE


@override_settings(BODY_IDLE_SECONDS=1)
def test_a_body_that_stops_arriving_is_a_408_and_the_read_side_is_closed() -> None:
    """Under gunicorn (its socket in the environ) a body announced at 1,000 bytes of
    which 8 came is answered 408 once the connection is silent, not waited for."""
    from console.bodies import reading_bodies

    served, client = socket.socketpair()
    client.sendall(b'{"name":')
    said: list[str] = []

    def start_response(status: str, _headers: Any, _exc: Any = None) -> None:
        said.append(status)

    def unreachable(_environ: Any, _start: Any) -> list[bytes]:
        raise AssertionError("a stalled body reached the application")

    environ = {"REQUEST_METHOD": "POST", "CONTENT_LENGTH": "1000",
               "wsgi.input": served.makefile("rb"), "gunicorn.socket": served}  # fmt: skip
    with served, client:
        reply = json.loads(b"".join(reading_bodies(unreachable)(environ, start_response)))
        assert served.recv(1) == b""  # its read side is shut: nothing more is waited for
    assert said == ["408 Request Timeout"]
    assert reply == {
        "detail": "the request body stopped arriving before its 1,000 announced bytes "
        "came: nothing for 1 s",
        "field": None,
        "code": "timeout",
    }


@override_settings(BODY_IDLE_SECONDS=1)
def test_an_announced_body_that_arrives_whole_is_handed_on(world: World) -> None:
    from console.bodies import reading_bodies

    body = json.dumps({"project": "alpha", "name": "sent-whole", "body": "b" * 200_000}).encode()
    served, client = socket.socketpair()
    said: list[str] = []

    def start_response(status: str, _headers: Any, _exc: Any = None) -> None:
        said.append(status)

    def sending() -> None:
        client.sendall(body)

    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/memories", "QUERY_STRING": "",
        "SERVER_NAME": "testserver", "SERVER_PORT": "80", "wsgi.url_scheme": "http",
        "wsgi.input": served.makefile("rb"), "gunicorn.socket": served,
        "wsgi.errors": io.StringIO(), "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_AUTHORIZATION": f"Bearer {world.secrets['alpha']}",
    }  # fmt: skip
    sender = threading.Thread(target=sending)
    sender.start()
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        with served, client:
            reply = json.loads(b"".join(reading_bodies(WSGIHandler())(environ, start_response)))
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
        sender.join()
    assert said[0].startswith("201"), reply
    assert reply["memory"]["name"] == "sent-whole"
