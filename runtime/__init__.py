"""Where models run: devices and precisions, in one vocabulary for every package, and the process's allocator
settings (imports nothing of ours)."""

from runtime.device import PRECISIONS, cpu_has_native_bfloat16, resolve_device, resolve_dtype
from runtime.memory import retain_freed_memory

__all__ = ["PRECISIONS", "cpu_has_native_bfloat16", "resolve_device", "resolve_dtype", "retain_freed_memory"]
