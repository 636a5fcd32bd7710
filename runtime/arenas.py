"""Bound how much freed memory the process keeps (glibc only): the number of malloc arenas, and an explicit trim.

glibc gives each thread that allocates concurrently an arena of its own (up to 8 per core) and, with the high trim
threshold of runtime/memory.py, each arena keeps up to that threshold of freed memory. A server whose 40 pool
threads each ran the embedding or rerank model once kept every arena's high-water mark: +2 GB after a burst of
searches that never went away. Fewer arenas bound that; a trim when the process goes idle returns the rest.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
from functools import lru_cache

_M_ARENA_MAX = -8  # mallopt parameter, from glibc's malloc.h


@lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def limit_arenas(count: int) -> bool:
    """At most `count` malloc arenas for threads created from now on (0: glibc's default). True when applied."""
    libc = _libc()
    if libc is None or count <= 0:
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, count))


def trim_freed_memory() -> bool:
    """Hand the freed memory of every arena back to the kernel (malloc_trim). True when some was released."""
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.malloc_trim(0))
