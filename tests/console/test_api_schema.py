"""schemathesis against a live server: the production command, a write token, every check.

The server is `make serve`'s gunicorn command over a freshly migrated data
directory with a project, a few memories and a note. `st run` drives every
operation of /api/v1/openapi.json with all checks (server errors, status
codes, content types, response schemas, negative-data rejection, ...),
through the examples, coverage, fuzzing and stateful phases, with a bounded
number of examples per operation so the run stays under two minutes.

Every check runs with schemathesis's defaults, `positive_data_acceptance`
included: a request the schema allows is never answered 400. What the
schema cannot express is answered so that it need not: an empty query is
an empty pack with a warning, a state the request cannot apply to
(superseding an inactive memory) is 409, and the schema publishes the exact
patterns the server checks (`source_url`, `cursor`, channel names, the
deepest `offset`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.console import api_server

SETUP = """
from console import indexing, services, tokens
alpha = services.project_create(slug="alpha")
services.project_create(slug="beta")
for i in range(5):
    services.memory_create(project=alpha, name=f"m-{i}", description=f"memory {i} about caches")
services.memory_create(project=None, name="global-rule", description="a global convention")
services.note_create(project=alpha, title="a note", body="note body")
indexing.apply_pending()
print(tokens.token_create(agent="schemathesis", projects=["alpha"], may_write=True)[1])
"""


@pytest.mark.slow
def test_the_openapi_schema_holds_against_a_live_server(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    secret = api_server.run_python(data_dir, SETUP).strip().splitlines()[-1]
    log = tmp_path / "gunicorn.log"
    st = Path(sys.executable).with_name("st")

    with api_server.gunicorn(data_dir, log=log) as base:
        run = subprocess.run(
            [
                str(st),
                "run",
                f"{base}/api/v1/openapi.json",
                "--header",
                f"Authorization: Bearer {secret}",
                "--checks",
                "all",
                "--max-examples",
                os.environ.get("ST_MAX_EXAMPLES", "15"),
                "--seed",
                os.environ.get("ST_SEED", "1"),
                # One worker: with several, schemathesis's coverage phase races
                # in hypothesis's lambda-source cache and crashes with an
                # internal AssertionError (seen here; not a finding on our API).
                "--workers",
                "1",
                "--request-timeout",
                "30",
                "--generation-database",
                "none",
                "--no-color",
            ],  # fmt: skip
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
        )

    report = run.stdout[-8000:] + run.stderr[-2000:]
    print(run.stdout[-1200:])  # the summary, for `pytest -s`
    assert run.returncode == 0, report
    assert "Tested: 27" in run.stdout, report
    server_log = log.read_text()
    assert "Traceback" not in server_log and "Internal Server Error" not in server_log, server_log
