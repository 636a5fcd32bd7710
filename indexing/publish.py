"""Stage 6: atomic publication of a finished build.

Layout beside the target `DIR` (e.g. var/index):
    DIR                -> symlink to DIR.<build-id>, swapped with one atomic rename (os.replace)
    DIR.<build-id>/    published builds: the live one and the previous one are kept
    DIR.<build-id>.partial/  a build in progress; renamed into place only when complete
    DIR.lock           held while a build runs, so two jobs never interleave
A reader resolves the symlink once and reads one complete build; a job killed at any point leaves
the symlink pointing at the previous complete build (a stray .partial is removed by the next run).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from indexing.storage import fsync_dir, fsync_tree

PARTIAL_SUFFIX = ".partial"


class PublishError(RuntimeError):
    """The index cannot be published at the requested place."""


class IndexPublisher:
    def __init__(self, out_dir: Path, keep_previous: int = 1) -> None:
        if keep_previous < 0:
            raise ValueError(f"keep_previous must be 0 or more, not {keep_previous}.")
        self.out_dir = Path(out_dir).absolute()
        self.keep_previous = keep_previous
        self.parent = self.out_dir.parent
        self.name = self.out_dir.name

    def current_build(self) -> Path | None:
        """The live build directory, or None when nothing has been published."""
        if self.out_dir.is_symlink() or self.out_dir.is_dir():
            resolved = self.out_dir.resolve()
            return resolved if resolved.is_dir() else None
        return None

    @contextmanager
    def lock(self) -> Iterator[None]:
        self.parent.mkdir(parents=True, exist_ok=True)
        with (self.parent / f"{self.name}.lock").open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                if error.errno in (errno.EAGAIN, errno.EACCES):
                    raise PublishError(f"Another ingestion job is building {self.out_dir}; wait for it.") from None
                raise
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def start_build(self) -> tuple[str, Path]:
        """A fresh, empty build directory next to the target (call under lock())."""
        self._check_target()
        self._remove_partial_builds()
        # Microsecond UTC timestamp first, so that name order is build order (pruning relies on it).
        build_id = f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}-{uuid.uuid4().hex[:4]}"
        build_dir = self.parent / f"{self.name}.{build_id}{PARTIAL_SUFFIX}"
        build_dir.mkdir()
        return build_id, build_dir

    def abandon(self, build_dir: Path) -> None:
        shutil.rmtree(build_dir, ignore_errors=True)

    def publish(self, build_id: str, build_dir: Path) -> Path:
        """Make a complete build live with one atomic rename of the symlink; returns its final path."""
        fsync_tree(build_dir)
        final_dir = self.parent / f"{self.name}.{build_id}"
        os.rename(build_dir, final_dir)
        temporary_link = self.parent / f"{self.name}.{build_id}.link"
        temporary_link.symlink_to(final_dir.name)  # relative, so the whole folder can move
        if self.out_dir.is_dir() and not self.out_dir.is_symlink():
            self.out_dir.rmdir()  # an empty placeholder directory (checked in _check_target)
        os.replace(temporary_link, self.out_dir)
        fsync_dir(self.parent)
        self._remove_old_builds(keep=final_dir)
        return final_dir

    def _check_target(self) -> None:
        if self.out_dir.is_dir() and not self.out_dir.is_symlink() and any(self.out_dir.iterdir()):
            raise PublishError(
                f"{self.out_dir} is a directory that this job did not publish (published indexes are "
                "symlinks to versioned builds). Move it away or choose another --out."
            )
        if self.out_dir.exists() and not self.out_dir.is_dir():
            raise PublishError(f"{self.out_dir} exists and is not an index directory.")

    def _builds(self) -> list[Path]:
        prefix = f"{self.name}."
        return sorted(
            path
            for path in self.parent.glob(f"{self.name}.*")
            if path.is_dir()
            and not path.is_symlink()
            and path.name[len(prefix) :][:1].isdigit()  # DIR.<build-id>, not DIR.cache
        )

    def _remove_partial_builds(self) -> None:
        for path in self._builds():
            if path.name.endswith(PARTIAL_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
        for link in self.parent.glob(f"{self.name}.*.link"):
            link.unlink(missing_ok=True)

    def _remove_old_builds(self, keep: Path) -> None:
        finished = [path for path in self._builds() if not path.name.endswith(PARTIAL_SUFFIX) and path != keep]
        stale = finished[: max(0, len(finished) - self.keep_previous)]
        for path in stale:
            shutil.rmtree(path, ignore_errors=True)
