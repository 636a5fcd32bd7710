"""Where models run: devices and precisions, in one vocabulary for every package, and the process's allocator and
OpenMP settings (imports nothing of ours). Importing it sets OpenMP's waiting policy (openmp.py), so the packages
that run models import it before anything that loads torch."""

from runtime.openmp import configure_openmp

configure_openmp()  # before runtime.device imports torch: libgomp reads its settings when it loads

from runtime.device import PRECISIONS, cpu_has_native_bfloat16, resolve_device, resolve_dtype  # noqa: E402
from runtime.memory import retain_freed_memory  # noqa: E402

__all__ = ["PRECISIONS", "cpu_has_native_bfloat16", "resolve_device", "resolve_dtype", "retain_freed_memory"]
