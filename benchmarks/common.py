"""What every benchmark shares: where the repository and the results are, and how results are written.

Paths in results are recorded relative to the repository, so committed JSON never carries a machine's layout.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from runtime.openmp import openmp_settings

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
SHARED = REPO_ROOT.parent / "shared"


def relative(path: Path | str) -> str:
    """A path as recorded in results: relative to the repository when inside it (or beside it, as ../shared)."""
    resolved = Path(path).resolve()
    for base, prefix in ((REPO_ROOT, Path()), (REPO_ROOT.parent, Path(".."))):
        try:
            return str(prefix / resolved.relative_to(base))
        except ValueError:
            continue
    return Path(path).name


def machine() -> dict[str, Any]:
    """The conditions a figure was taken under."""
    import torch

    return {
        "cpu_model": _cpu_model() or platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "openmp": openmp_settings(),
    }


def git_commit(repo: Path | None = None) -> str | None:
    """The commit the code (of this checkout, or `repo`) was at, with "+changes" when the tracked tree differs."""
    repo = repo or REPO_ROOT
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True,
                                text=True, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
                               capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+changes" if dirty else "")


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def write_results(name: str, payload: dict[str, Any]) -> Path:
    """Write benchmarks/results/<name>.json and return its path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
