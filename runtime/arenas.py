"""Bound how much freed memory the process keeps (glibc only): the number of malloc arenas, and an explicit trim.

glibc gives each thread that allocates concurrently an arena of its own (up to 8 per core) and, with the high trim
threshold of runtime/memory.py, each arena keeps up to that threshold of freed memory. A server whose 40 pool
threads each ran the embedding or rerank model once kept every arena's high-water mark: +2 GB after a burst of
searches that never went away. Fewer arenas bound that; a trim when the process goes idle (IdleTrim: after any
request, searches and answers alike) returns the rest.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import threading
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


class IdleTrim:
    """Trim freed memory (trim_freed_memory) once the process has had no work for `after_s` seconds: work of any
    kind (searches, answers) brackets itself with enter() and leave(); one trim per idle period (0: never)."""

    def __init__(self, after_s: float) -> None:
        self.after_s = after_s
        self._lock = threading.Lock()  # enter/leave come from the event loop and from worker threads
        self._busy = 0
        self._timer: threading.Timer | None = None
        self.trims = 0

    def enter(self) -> None:
        with self._lock:
            self._busy += 1
            self._disarm()

    def leave(self) -> None:
        with self._lock:
            self._busy -= 1
            self._disarm()
            if self._busy == 0 and self.after_s > 0:
                self._timer = threading.Timer(self.after_s, self._when_idle)
                self._timer.daemon = True
                self._timer.start()

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _when_idle(self) -> None:
        with self._lock:
            if self._busy:
                return
            self._timer = None
        trim_freed_memory()
        self.trims += 1

    def close(self) -> None:
        with self._lock:
            self._disarm()
