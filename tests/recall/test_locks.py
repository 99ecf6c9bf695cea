"""The machine-wide file lock: exclusive across processes, re-entrant in a thread."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from recall.errors import IndexUnavailable
from recall.locks import FileLock

HOLD = """
import sys, time
from recall.locks import FileLock
with FileLock(sys.argv[1]).held():
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""
ROOT = Path(__file__).resolve().parents[2]


def holder(path: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), str(seconds)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_another_process_holding_it_makes_a_short_wait_give_up(tmp_path: Path) -> None:
    proc = holder(tmp_path / "x.lock", 30)
    try:
        lock = FileLock(tmp_path / "x.lock")
        with pytest.raises(IndexUnavailable, match="held by another process"), lock.held(0.2):
            pass
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    proc = holder(tmp_path / "x.lock", 30)
    proc.kill()
    proc.wait()

    with FileLock(tmp_path / "x.lock").held(timeout_s=5):
        pass


def test_it_is_re_entrant_within_a_thread(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / "x.lock")
    with lock.held(), lock.held():
        pass
    with FileLock(tmp_path / "x.lock").held(timeout_s=0.1):  # released after both
        pass


def test_an_unusable_path_is_index_unavailable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    lock = FileLock(tmp_path / "file" / "x.lock")
    with pytest.raises(IndexUnavailable, match="cannot open the lock file"), lock.held():
        pass


def test_before_waiting_runs_once_when_the_lock_is_taken(tmp_path: Path) -> None:
    proc = holder(tmp_path / "x.lock", 0.5)
    calls: list[str] = []
    try:
        with FileLock(tmp_path / "x.lock").held(5, before_waiting=lambda: calls.append("go")):
            pass  # got once the holder left
    finally:
        proc.kill()
        proc.wait()
    assert calls == ["go"]


def test_before_waiting_does_not_run_when_the_lock_is_free(tmp_path: Path) -> None:
    calls: list[str] = []
    lock = FileLock(tmp_path / "x.lock")
    with (
        lock.held(before_waiting=lambda: calls.append("go")),
        lock.held(before_waiting=lambda: calls.append("again")),
    ):
        pass
    assert calls == []
