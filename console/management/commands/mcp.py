"""`manage.py mcp`: the MCP server over stdio (token in RECALL_AGENT_TOKEN)."""

from __future__ import annotations

import os
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from console import mcp, selectors, tokens

WARM_WAIT_S = 30.0


class Command(BaseCommand):
    help = "Serve the MCP tools over stdio with the agent token in RECALL_AGENT_TOKEN."

    def handle(self, *args: Any, **options: Any) -> None:
        # stdout is the protocol channel: fail fast (on stderr) on a bad token.
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
        mcp.serve()
        # A client that leaves at once: let the model finish loading, as the runtime
        # aborts the process ("terminate called without an active exception") when
        # the interpreter stops under a native call in flight.
        warming.join(timeout=WARM_WAIT_S)
