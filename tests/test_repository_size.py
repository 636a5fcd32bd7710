"""The tracked tree stays small enough to clone quickly and to travel to a GPU machine (64 MiB at most there)."""

import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
LIMIT_BYTES = 40 * 1024 * 1024


def test_the_tracked_tree_is_under_40_mib() -> None:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    paths = [REPO_ROOT / name for name in listed.decode().split("\0") if name]
    sizes = {path: path.stat().st_size for path in paths if path.is_file()}
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
    assert sum(sizes.values()) < LIMIT_BYTES, f"{sum(sizes.values()) / 2**20:.1f} MiB tracked; largest: {largest}"
