"""A lock shared by every thread and process on one machine: an OS file lock.

`FileLock(path).held(timeout_s)` takes a thread lock, then an exclusive
`flock` on `path` (created when missing). The kernel drops the file lock
when its holder dies, so a killed process never leaves a stale lock behind.
Waiting polls with backoff and raises IndexUnavailable after `timeout_s`;
`before_waiting` runs once when the lock is not free at the first try (the
index worker gives back the text writer it keeps, which the holder may need).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from recall.errors import IndexUnavailable


class FileLock:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def held(
        self, timeout_s: float = 120.0, *, before_waiting: Callable[[], None] | None = None
    ) -> Iterator[None]:
        """Hold the lock for the block (re-entrant within one thread)."""
        if not self._thread_lock.acquire(blocking=False):
            if before_waiting is not None:
                before_waiting()
                before_waiting = None
            if not self._thread_lock.acquire(timeout=max(timeout_s, 0.001)):
                raise IndexUnavailable(f"{self.path} is busy in this process; gave up")
        try:
            if self._depth == 0:
                self._acquire_file(timeout_s, before_waiting)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release_file()
        finally:
            self._thread_lock.release()

    def _acquire_file(self, timeout_s: float, before_waiting: Callable[[], None] | None) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise IndexUnavailable(f"cannot open the lock file {self.path}: {exc}") from exc
        deadline = time.monotonic() + timeout_s
        pause = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._fd = fd
                return
            except BlockingIOError:
                if before_waiting is not None:
                    before_waiting()
                    before_waiting = None
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise IndexUnavailable(
                        f"{self.path} is held by another process; gave up after {timeout_s:g}s"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.1)

    def _release_file(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
