"""Small file helpers shared by the stages: hashing and JSON Lines (no pickle anywhere)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def file_sha256(path: Path, block_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(block_size):
            digest.update(block)
    return digest.hexdigest()


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
            handle.write("\n")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file; a broken line raises ValueError naming the file and the line."""
    records, number = [], 0
    with path.open(encoding="utf-8") as handle:
        try:
            for line in handle:
                number += 1
                if line.strip():
                    records.append(json.loads(line))
        except UnicodeDecodeError as error:
            raise ValueError(f"{path.name} is not UTF-8 text: {error.reason}") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{path.name} line {number} is not JSON: {error.msg}") from None
    return records


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


def fsync_tree(directory: Path) -> None:
    """Flush every file of `directory` and the directory itself, so a crash cannot publish empty files."""
    for path in directory.iterdir():
        if path.is_file():
            with path.open("rb") as handle:
                os.fsync(handle.fileno())
    fsync_dir(directory)


def fsync_dir(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
