"""manage.py itself: what an operator sees when the database is not there to use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", [["project", "list"], ["agent_token", "list"], ["demo"]])
def test_a_database_never_migrated_is_one_line_naming_migrate(
    tmp_path: Path, command: list[str]
) -> None:
    """A data folder never migrated, or a mistyped RECALL_DATA_DIR (which makes a new
    one): every command but index_status ended in "OperationalError: no such table"."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "RECALL_PROFILE"}}
    env["RECALL_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "has no tables yet (no such table: " in done.stderr
    assert "run `manage.py migrate` first" in done.stderr


def test_output_a_pipe_stops_reading_ends_without_a_traceback(tmp_path: Path) -> None:
    """`manage.py search ... | head` ended in a BrokenPipeError traceback."""
    env = {**os.environ, "RECALL_DATA_DIR": str(tmp_path / "data")}
    writer = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "-c", "print('x' * 1_000_000)"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert writer.stdout is not None and writer.stderr is not None
    writer.stdout.read(1)
    writer.stdout.close()  # as `head -c 1` does
    said = writer.stderr.read().decode()
    writer.wait(timeout=300)

    assert "Traceback" not in said and "BrokenPipeError" not in said, said
    assert writer.returncode == 141
