"""The process's memory managers, held to what a long-lived server process needs.

Two calls on glibc's allocator, both no-ops where the C library is not glibc:

- `tune` caps malloc arenas at 2 (`M_ARENA_MAX`). By default glibc gives
  busy threads arenas of their own, up to 8 per core; the vector copy's
  loader, LanceDB's and tantivy's native threads and gunicorn's request
  threads each left one holding freed memory.
- `trim` hands freed pages back to the kernel (`malloc_trim(0)`, which
  releases the GIL while it runs). Called after the work that frees a lot:
  the first load of the vector copy and the warm-up (`wiring.warm`), and an
  applied batch of index jobs (tantivy's writer heap, LanceDB's merge).

Measured at 100,000 memories (the serving sequence of `bench speed`, one
deployment): anonymous memory after the warm-up and 50 Recalls 593 MB with
the trims alone, 555 MB with two arenas alone, 487 MB with both; 40 API
writes then added 137 MB with neither, 10 and 49 MB with both (two runs).

And one on Python's cyclic collector: `freeze`, once a server has warmed up,
moves every object alive into the collector's permanent generation
(`gc.freeze`), where no collection walks them again. At 100,000 memories a
warmed process tracks about 590,000 objects, most of them the vector copy's
bookkeeping, and a full collection (rare, but whichever request triggers it
waits) took 296 ms; after the freeze, 0.6 ms. Frozen objects are still freed
by their reference counts; only a reference cycle among them is never
reclaimed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import cache

_M_ARENA_MAX = -8  # glibc's mallopt parameter number (malloc.h)
ARENAS = 2


@cache
def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018  (only glibc has it)
        libc.malloc_trim  # noqa: B018
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def tune() -> bool:
    """Cap the arenas (effective for arenas made from now on); False off glibc."""
    libc = _glibc()
    return libc is not None and bool(libc.mallopt(_M_ARENA_MAX, ARENAS))


def trim() -> bool:
    """Return freed memory to the kernel; whether any was returned (False off glibc)."""
    libc = _glibc()
    return libc is not None and bool(libc.malloc_trim(0))


def freeze() -> int:
    """Move every object alive now out of the collector's way (see the module
    docstring); how many are frozen."""
    gc.collect()  # what is garbage already goes first
    gc.freeze()
    return gc.get_freeze_count()
