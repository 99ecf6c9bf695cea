"""`manage.py mcp`: the MCP server over stdio (token in RECALL_AGENT_TOKEN)."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from console import mcp, tokens


class Command(BaseCommand):
    help = "Serve the MCP tools over stdio with the agent token in RECALL_AGENT_TOKEN."

    def handle(self, *args: Any, **options: Any) -> None:
        # stdout is the protocol channel: fail fast (on stderr) on a bad token.
        if tokens.token_verify(os.environ.get(mcp.TOKEN_ENV, "")) is None:
            raise CommandError(f"{mcp.TOKEN_ENV} is missing, invalid or revoked")
        mcp.serve()
