"""Where and in which precision a model runs: one vocabulary for every component.

Devices: "auto" | "cpu" | "cuda" (or "cuda:N"). Precisions: "auto" | "float32" | "bfloat16" | "float16".
What "auto" means depends on the component, so callers name a policy:
  * "exact"  float32 on CPU, bfloat16 on CUDA (the generator: greedy answers must not drift on CPU);
  * "fast"   bfloat16 where the hardware runs it natively (CUDA, or a CPU with AMX/AVX512-BF16), else
             float32 (the embedder and the reranker: vectors and scores agree with float32 to ~1e-4).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # torch is imported on first use, so callers that never run a model never load it
    import torch

DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "float32", "bfloat16", "float16")
Device = Literal["auto", "cpu", "cuda"]
Precision = Literal["auto", "float32", "bfloat16", "float16"]
AutoPolicy = Literal["exact", "fast"]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """The device to run on; asking for CUDA without one is an error, "auto" prefers CUDA."""
    import torch

    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError:
        raise ValueError(f"Unknown device {device!r}; use one of {', '.join(DEVICES)}.") from None
    if resolved.type not in ("cpu", "cuda"):
        raise ValueError(f"Unknown device {device!r}; use one of {', '.join(DEVICES)}.")
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for, but no CUDA device is available to torch; use 'cpu' or 'auto'.")
    return resolved


@lru_cache(maxsize=1)
def cpu_has_native_bfloat16() -> bool:
    """AMX or AVX512-BF16: bfloat16 matmuls run natively (about 1.7x faster than float32 for the encoders)."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def resolve_dtype(precision: str | torch.dtype | None, device: torch.device, auto: AutoPolicy) -> torch.dtype:
    """The torch dtype for a precision name; None means "auto" (see the module docstring for the policies)."""
    import torch

    if isinstance(precision, torch.dtype):
        return precision
    if precision is None or precision == "auto":
        if device.type == "cuda":
            return torch.bfloat16
        return torch.bfloat16 if auto == "fast" and cpu_has_native_bfloat16() else torch.float32
    if precision not in PRECISIONS:
        raise ValueError(f"Unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}.")
    return getattr(torch, precision)
