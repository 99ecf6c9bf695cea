"""Run a harness job in a child process over a throwaway data directory.

Settings read RECALL_DATA_DIR at start-up, so a child process with its own
directory gets its own SQLite database, full-text index and LanceDB table,
and nothing the job does can touch the developer's data. The child is
`manage.py bench worker JOB --spec IN --out OUT`; it migrates the fresh
database, runs the job, and writes its JSON result to OUT.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings


class WorkerFailed(RuntimeError):
    """The child process exited with an error."""


def run_worker(
    job: str,
    spec: Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    data_dir: Path | None = None,
    keep: bool = False,
) -> dict[str, Any]:
    """Run `job` with `spec` in a child over `data_dir` (a new temp dir when None)."""
    own = data_dir is None
    root = Path(tempfile.mkdtemp(prefix="recall-bench-")) if own else Path(data_dir or "")
    try:
        spec_path, out_path = root / f"{job}.spec.json", root / f"{job}.out.json"
        spec_path.write_text(json.dumps(spec))
        child_env = {
            **os.environ,
            "RECALL_DATA_DIR": str(root / "data"),
            "RECALL_SYNC_ON_COMMIT": "0",  # jobs are applied in batches by the loader
            "DJANGO_ALLOW_ASYNC_UNSAFE": "true",
            **(env or {}),
        }
        manage = Path(settings.BASE_DIR) / "manage.py"
        cmd = [sys.executable, str(manage), "bench", "worker", job]
        cmd += ["--spec", str(spec_path), "--out", str(out_path)]
        done = subprocess.run(cmd, env=child_env, check=False)
        if done.returncode != 0 or not out_path.exists():
            raise WorkerFailed(f"bench worker {job} exited with {done.returncode}")
        result: dict[str, Any] = json.loads(out_path.read_text())
        return result
    finally:
        if own and not keep:
            shutil.rmtree(root, ignore_errors=True)
