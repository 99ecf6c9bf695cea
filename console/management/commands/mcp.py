"""`manage.py mcp`: the MCP server over stdio (token in RECALL_AGENT_TOKEN)."""

from __future__ import annotations

import os
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console import mcp, selectors, tokens

WARM_WAIT_S = 30.0


class Command(BaseCommand):
    help = "Serve the MCP tools over stdio with the agent token in RECALL_AGENT_TOKEN."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--tools",
            default=None,
            help=f"the tools to offer: all (default), core ({', '.join(mcp.CORE)}), or tool "
            f"names and core separated by commas; default from {mcp.TOOLS_ENV}",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # stdout is the protocol channel: fail fast (on stderr) on a bad token.
        choice = options["tools"] or os.environ.get(mcp.TOOLS_ENV) or "all"
        try:
            offered = mcp.offered(choice)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        token = tokens.token_verify(os.environ.get(mcp.TOKEN_ENV, ""))
        if token is None:
            raise CommandError(f"{mcp.TOKEN_ENV} is missing, invalid or revoked")
        # The model, the planes and the token's PromptRecall corpora load while the
        # client starts the session: an agent's first recall waited 1.5-1.8 s for them.
        projects = list(token.projects.values_list("slug", flat=True))
        warming = threading.Thread(
            target=selectors.warm_quietly, args=(projects,), name="warm-up", daemon=True
        )
        warming.start()
        mcp.serve(offered)
        # A client that leaves at once: let the model finish loading, as the runtime
        # aborts the process ("terminate called without an active exception") when
        # the interpreter stops under a native call in flight.
        warming.join(timeout=WARM_WAIT_S)
