"""The production command (`make serve`'s gunicorn) serves the API and, through
whitenoise, the console's static files after `collectstatic`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.console import api_server

SETUP = """
from console import services, tokens
services.project_create(slug="alpha")
print(tokens.token_create(agent="smoke", projects=["alpha"], may_write=True)[1])
"""


def _get(url: str, headers: dict[str, str] | None = None, data: bytes | None = None) -> tuple:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _post_head(base: str, path: str, headers: dict[str, str], body: bytes) -> bytes:
    """POST announcing all of `body` but sending its first 64 KB; the reply as read."""
    host = base.removeprefix("http://").split(":")[0]
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}", f"Content-Length: {len(body)}",
             "Connection: close", *(f"{k}: {v}" for k, v in headers.items()), "", ""]  # fmt: skip
    return _raw(base, "\r\n".join(lines).encode() + body[:65536])


@pytest.mark.slow
def test_gunicorn_serves_the_api_and_static_files(tmp_path: Path) -> None:
    secret = api_server.run_python(tmp_path, SETUP).strip().splitlines()[-1]
    env = api_server.environment(tmp_path)
    collect = [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"]
    subprocess.run(collect, cwd=api_server.ROOT, env=env, check=True)

    with api_server.gunicorn(tmp_path) as base:
        status, headers, _ = _get(f"{base}/static/admin/css/base.css")
        assert status == 200 and headers["Content-Type"].startswith("text/css")
        assert _get(f"{base}/static/no-such-file.css")[0] == 404

        auth = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        body = json.dumps({"name": "smoke-test", "description": "gunicorn answers"}).encode()
        status, _, reply = _get(f"{base}/api/v1/memories", auth, body)
        assert status == 201, reply
        status, _, reply = _get(f"{base}/api/v1/search?q=gunicorn+answers", auth)
        assert status == 200 and json.loads(reply)["hits"][0]["name"] == "smoke-test"
        status, _, reply = _get(f"{base}/api/v1/recall", {}, b"{}")
        assert status == 401 and json.loads(reply)["code"] == "unauthorized"
        # Over 2 MB: refused by its length. Sent whole through urllib, the send raced the
        # refusal (the server answers and closes with the body unread, and a busy
        # machine's client then broke its write: a make test run failed on it), so
        # the body's start is sent and the reply read.
        too_big = json.dumps({"name": "x", "body": "x" * (3 * 1024 * 1024)}).encode()
        refused = _post_head(base, "/api/v1/memories", auth, too_big)
        assert refused.startswith(b"HTTP/1.1 413 ") and b'"code":"too_large"' in refused


def _raw(base: str, request: bytes) -> bytes:
    """`request`'s bytes sent as they are; the reply as read to the connection's close."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(request)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    return reply


@pytest.mark.slow
def test_what_gunicorn_refuses_itself_is_answered_in_the_one_error_shape(tmp_path: Path) -> None:
    """A header past gunicorn's limits, too many headers, or raw bytes in the request line
    never reach the application: gunicorn answered each with an HTML page."""
    api_server.run_python(tmp_path, "")
    host = b"Host: 127.0.0.1\r\nConnection: close\r\n"
    with api_server.gunicorn(tmp_path, workers=1, threads=1) as base:
        long_key = b"Idempotency-Key: " + b"k" * 20_000 + b"\r\n"
        many = b"".join(b"X-H%d: v\r\n" % i for i in range(150))
        cases = {
            431: b"GET /api/v1/projects HTTP/1.1\r\n" + host + long_key + b"\r\n",
            400: b"GET /api/v1/search?q=\xff\xfe HTTP/1.1\r\n" + host + b"\r\n",
        }
        replies = {status: _raw(base, request) for status, request in cases.items()}
        replies[-431] = _raw(base, b"GET /api/v1/projects HTTP/1.1\r\n" + host + many + b"\r\n")

    for status, reply in replies.items():
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 %d " % abs(status)), reply[:200]
        assert b"Content-Type: application/json; charset=utf-8" in head, head
        said = json.loads(body)
        assert set(said) == {"detail", "field", "code"} and said["field"] is None, said
        assert said["code"] == ("too_large" if abs(status) == 431 else "invalid"), said


@pytest.mark.slow
def test_bodies_that_stop_arriving_do_not_keep_the_server_from_answering(tmp_path: Path) -> None:
    """Four connections that announce 1,000 bytes and send 8 held both threads of a
    1 x 2 server until they hung up, so nobody else was answered; each is now answered
    408 once silent for RECALL_BODY_IDLE_SECONDS, and the server answers the next one."""
    token = api_server.run_python(tmp_path, SETUP).strip()
    env = {"RECALL_BODY_IDLE_SECONDS": "1"}
    with api_server.gunicorn_process(tmp_path, workers=1, threads=2, env=env) as (base, _):
        host, port = base.removeprefix("http://").split(":")
        head = (
            f"POST /api/v1/memories HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}"
            "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        )
        stalled = [socket.create_connection((host, int(port)), timeout=60) for _ in range(4)]
        for sock in stalled:
            sock.sendall(head.encode() + b'{"name":')
        status, _, body = _get(f"{base}/api/v1/projects", {"Authorization": f"Bearer {token}"})
        replies = []
        for sock in stalled:
            with sock:
                reply = b""
                while chunk := sock.recv(65536):
                    reply += chunk
                replies.append(reply)
    assert status == 200, body
    for reply in replies:
        top, _, said = reply.partition(b"\r\n\r\n")
        assert top.startswith(b"HTTP/1.1 408 "), reply[:200]
        assert json.loads(said)["code"] == "timeout", said
