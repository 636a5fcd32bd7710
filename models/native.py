"""Our C++ kernels (models/kernels/), compiled on first use and cached; None where they cannot be built.

`torch.utils.cpp_extension.load` compiles blocks.h + decode.cpp with the machine's C++ compiler the first time (about
a minute on two cores) and caches the library under TORCH_EXTENSIONS_DIR (default ~/.cache/torch_extensions), keyed
by the sources, so later starts load it at once. The kernels pick AVX-512 VNNI, AVX2 or scalar code at run time
(kernels(): `.isa()`). Without a compiler (or with AER_RAG_NATIVE_KERNELS=0) the engine keeps the float32 path and
says so in the log.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)

SOURCES = Path(__file__).resolve().parent / "kernels"
_lock = threading.Lock()
_loaded: dict[str, ModuleType | None] = {}


def unavailable_reason() -> str | None:
    """Why the kernels cannot be built here, or None."""
    if os.environ.get("AER_RAG_NATIVE_KERNELS", "1") == "0":
        return "disabled by AER_RAG_NATIVE_KERNELS=0"
    if os.uname().machine not in ("x86_64", "AMD64"):
        return f"the kernels are written for x86-64, this machine is {os.uname().machine}"
    if shutil.which(os.environ.get("CXX", "c++")) is None:
        return "no C++ compiler (c++, or $CXX) on PATH"
    if shutil.which("ninja") is None:
        try:  # the `ninja` package (a dependency) puts its binary in the environment, maybe not on PATH
            import ninja

            os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + os.environ.get("PATH", "")
        except ImportError:
            return "no ninja build tool (pip install ninja)"
    return None


def kernels() -> ModuleType | None:
    """The compiled module (DecodeModel, quantize, dequantize, linear, isa), or None with a logged reason."""
    with _lock:
        if "module" not in _loaded:
            _loaded["module"] = _build()
        return _loaded["module"]


def _build() -> ModuleType | None:
    reason = unavailable_reason()
    if reason is None:
        try:
            from torch.utils import cpp_extension

            sources = [SOURCES / "decode.cpp"]
            digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(SOURCES.iterdir()))).hexdigest()[:12]
            module = cpp_extension.load(
                name=f"aer_rag_kernels_{digest}", sources=[str(p) for p in sources],
                extra_include_paths=[str(SOURCES)], extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"],
                verbose=False)  # fmt: skip
            log.info("quantized kernels loaded (%s)", module.isa())
            return module
        except Exception as error:  # a broken toolchain must not stop the service: float32 still works
            reason = f"the build failed: {error}"
    log.warning("quantized kernels unavailable (%s): the generator runs float32 weights", reason)
    return None
