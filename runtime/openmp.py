"""How OpenMP's threads wait between parallel regions: set for this process before torch loads libgomp.

A serving process runs torch from several threads (the scheduler's loop, search workers, the decode step's own
C++ region), and each such thread owns a team of OpenMP threads. Once libgomp manages more threads than there are
cores, it spins only 100 times (GOMP's "throttled" spin count, about a microsecond) before a waiting thread sleeps
in the kernel, so every torch op and every decode step pays to wake its team again. With OMP_WAIT_POLICY=ACTIVE
the throttled count is 1,000, long enough to bridge the gap between one op and the next; GOMP_SPINCOUNT keeps
the unthrottled spin at libgomp's own default (300,000, about 3 ms), so an idle server does not keep spinning.
Measured on a 2-core EPYC through the scheduler (docs/generator.md): time to first token
of the 1,485-token prompt 4.54 -> 3.77 s, batch-1 decode 88 -> 113 tokens/s.

Every OpenMP runtime in this environment is libgomp (torch's, and the copies faiss and scikit-learn bundle). LLVM's
and Intel's runtimes read OMP_WAIT_POLICY=ACTIVE as "never sleep": a build of torch on one of them should set
OMP_WAIT_POLICY itself (kept, below) rather than take this default.

libgomp reads these once, when it is loaded: `configure_openmp()` runs when `runtime` is first imported, and the
packages that run models import `runtime` before anything that imports torch. A value the user set is kept.
"""

from __future__ import annotations

import os
import sys

OPENMP_DEFAULTS = {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": "300000"}
# Whether the settings were in place before torch was loaded (set by configure_openmp).
configured_before_torch = False


def openmp_settings() -> dict[str, str | None]:
    """The waiting settings this process runs with (what benchmarks record beside their figures)."""
    return {name: os.environ.get(name) for name in OPENMP_DEFAULTS}


def configure_openmp() -> bool:
    """Set the defaults the user has not set; True when they can still take effect (torch not yet loaded)."""
    global configured_before_torch
    for name, value in OPENMP_DEFAULTS.items():
        os.environ.setdefault(name, value)
    configured_before_torch = configured_before_torch or "torch" not in sys.modules
    return configured_before_torch
