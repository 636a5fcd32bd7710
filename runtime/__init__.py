"""Where models run: devices and precisions, in one vocabulary for every package (imports nothing of ours)."""

from runtime.device import PRECISIONS, cpu_has_native_bfloat16, resolve_device, resolve_dtype

__all__ = ["PRECISIONS", "cpu_has_native_bfloat16", "resolve_device", "resolve_dtype"]
