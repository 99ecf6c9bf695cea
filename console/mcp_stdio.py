"""MCP over stdio, with a reply to every line that is not a JSON-RPC message.

The SDK's stdio transport hands a line it cannot read to the session as an
exception, and the session logs it at debug level and answers nothing: a
client that sent a malformed request waited for a reply that never came.
JSON-RPC 2.0 (section 5.1) says what to answer, and this module answers it:
-32700 "Parse error" for a line that is not JSON (id null, unless the line
is JSON only the SDK cannot read: a lone surrogate in a string), -32600 "Invalid
Request" for JSON that is no JSON-RPC message (with the id it carries, when it
carries a usable one, so a client can tell which of its requests was refused).
The session then reads the next line. A blank line carries no message and gets
no reply, as before.
"""

from __future__ import annotations

import contextvars
import json
from types import TracebackType
from typing import Self

import anyio
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError


def refusal(exc: Exception) -> JSONRPCError | None:
    """The JSON-RPC error reply to a line the transport could not read, None for a
    blank line. `exc` is what the SDK's stdin reader raised: pydantic's
    ValidationError of the line against the JSON-RPC message union."""
    if not isinstance(exc, ValidationError):
        return JSONRPCError(
            jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error")
        )
    found = exc.errors(include_url=False)
    if found and found[0]["type"] == "json_invalid":
        line = found[0]["input"]
        if isinstance(line, str) and not line.strip():
            return None
        said = ErrorData(code=PARSE_ERROR, message="Parse error", data=found[0]["msg"])
        return JSONRPCError(jsonrpc="2.0", id=_lenient_id(line), error=said)
    said = ErrorData(
        code=INVALID_REQUEST,
        message="Invalid Request",
        data="not a JSON-RPC 2.0 request, notification or response",
    )
    return JSONRPCError(jsonrpc="2.0", id=_request_id(exc), error=said)


def _usable(found: object) -> int | str | None:
    """A JSON-RPC id: a string or an integer (true is no id)."""
    if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)):
        return found
    return None


def _lenient_id(line: object) -> int | str | None:
    """The id of a line the SDK's strict parser refused but Python's reads: JSON whose
    string holds a lone surrogate ("\\ud800", which RFC 8259's grammar allows and no
    Unicode text holds). Its request gets its refusal under its own id; with id null,
    a client waited for ever for the answer to the request it sent."""
    if not isinstance(line, str | bytes):
        return None
    try:
        document = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return _usable(document.get("id")) if isinstance(document, dict) else None


def _request_id(exc: ValidationError) -> int | str | None:
    """The id of the JSON object that failed, when one can be told. Pydantic names
    the document itself as the input of an error at the top of a union member (the
    member's own type, or a field missing from it)."""
    for error in exc.errors(include_url=False):
        top = len(error["loc"]) == 1 or (len(error["loc"]) == 2 and error["type"] == "missing")
        document = error["input"]
        if top and isinstance(document, dict):
            return _usable(document.get("id"))
    return None


class Answering:
    """The transport's read stream with its exceptions answered, not passed on: each
    is replied to on `write`, in the order the lines came, and reading goes on."""

    def __init__(
        self,
        read: ReadStream[SessionMessage | Exception],
        write: WriteStream[SessionMessage],
    ) -> None:
        self._read = read
        self._write = write

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last item, which the session runs it under."""
        found: contextvars.Context | None = getattr(self._read, "last_context", None)
        return found

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._read.receive()
            if not isinstance(item, Exception):
                return item
            reply = refusal(item)
            if reply is not None:
                await self._write.send(SessionMessage(reply))

    async def aclose(self) -> None:
        await self._read.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


async def _serve(server: MCPServer) -> None:
    # MCPServer.run_stdio_async, with the read stream answering what it drops (the SDK
    # has no public hook for it: its lowlevel server is what that method runs).
    lowlevel: Server[object] = server._lowlevel_server
    async with stdio_server() as (read, write):
        options = lowlevel.create_initialization_options()
        await lowlevel.run(Answering(read, write), write, options)


def serve(server: MCPServer) -> None:
    """Run `server` over stdio until the client closes the pipe."""
    anyio.run(_serve, server)
