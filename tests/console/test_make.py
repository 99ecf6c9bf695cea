"""What `make run` prints before it serves: enough to start, a person and an agent."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_run_says_how_an_agent_connects_beside_the_consoles_address() -> None:
    # It printed the console's address and login alone: an operator who wanted an agent
    # on it went to the README for the token command, the API's address and MCP's.
    dry = subprocess.run(
        ["make", "-n", "-s", "run", "ADDRESS=127.0.0.1:8999"],  # -n: nothing runs
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip

    said = dry.stdout
    assert "Serving the console on http://127.0.0.1:8999/" in said
    assert "manage.py agent_token create --agent NAME --project SLUG --write" in said
    assert "http://127.0.0.1:8999/api/v1/docs" in said
    assert "RECALL_AGENT_TOKEN=<token>" in said and "manage.py mcp" in said
