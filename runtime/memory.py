"""Keep freed memory in the process instead of handing it back to the kernel at once (glibc only).

A CPU prefill allocates and frees tens of megabytes of activations per layer. By default glibc serves such
blocks with mmap, or trims them off the heap when freed, so the next layer touches fresh pages again: about
100,000 page faults, 5-10% of a 1,500-token prefill. With a fixed mmap threshold above those sizes and a high
trim threshold they are reused, at the price of a resident size that stays at its high-water mark, as with
jemalloc or tcmalloc. The setting is process-wide: everything in the process (other models included) gets it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import platform
from functools import lru_cache

log = logging.getLogger(__name__)

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters, from glibc's malloc.h
MMAP_THRESHOLD_BYTES = 64 << 20  # blocks below this come from the heap (a 2,048-token prefill's largest: 25 MB)
TRIM_THRESHOLD_BYTES = 256 << 20  # free memory kept at the top of the heap before it is returned


@lru_cache(maxsize=1)
def retain_freed_memory() -> bool:
    """Apply the thresholds once; True when glibc took them (False elsewhere: musl, macOS, Windows)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        applied = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
            libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
        )
    except (OSError, AttributeError):
        applied = False
    if not applied:
        log.info("glibc's mallopt is unavailable: freed memory is returned to the kernel as usual.")
    return applied
