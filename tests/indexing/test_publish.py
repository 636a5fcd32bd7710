"""Atomic publication: failures, kills and bad input never disturb the live index."""

import hashlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from indexing.cli import main
from indexing.dense import DenseIndex
from indexing.index import PublishedIndex
from indexing.pipeline import IngestionPipeline, IngestionSettings, IngestionSummary
from indexing.publish import IndexPublisher, PublishError

Build = Callable[..., IngestionSummary]
Rows = list[dict[str, str]]
WriteCsv = Callable[..., Path]


def snapshot(index_dir: Path) -> dict[str, str]:
    """sha256 of every file of the live build, plus where the link points."""
    live = index_dir.resolve()
    hashes = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(live.iterdir())}
    return {"_target": str(live), **hashes}


def leftovers(out: Path) -> list[str]:
    return sorted(path.name for path in out.parent.iterdir() if path.name.endswith((".partial", ".link")))


@pytest.mark.parametrize("failing_stage", ["embed", "write"])
def test_a_failure_mid_build_leaves_the_previous_index_live(
    tmp_path: Path,
    write_csv: WriteCsv,
    sample_rows: Rows,
    build: Build,
    monkeypatch: pytest.MonkeyPatch,
    failing_stage: str,
) -> None:
    out = tmp_path / "index"
    corpus = write_csv(tmp_path / "corpus.csv", sample_rows)
    first = build(corpus, out)
    before = snapshot(out)
    write_csv(corpus, [*sample_rows, {"abstract": "A new abstract about tariffs.", "doi": "10.1/new"}])

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected failure")

    if failing_stage == "embed":
        monkeypatch.setattr("indexing.embedding.Embedder.encode", explode)
    else:  # after documents, chunks and BM25 files were written into the build directory
        monkeypatch.setattr(DenseIndex, "save", explode)
    with pytest.raises(RuntimeError, match="injected failure"):
        build(corpus, out)

    assert snapshot(out) == before
    assert PublishedIndex.load(out).manifest["build_id"] in first.index_dir.name
    assert leftovers(out) == []


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import indexing.publish as publish
    from indexing.pipeline import IngestionPipeline, IngestionSettings

    corpus, out, moment = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if moment == "while-writing":
        publish.fsync_tree = die  # files are written, the build directory is still .partial
    elif moment == "before-swap":
        real_replace = os.replace
        def replace(source, target):
            if Path(target) == out.absolute():
                die()  # the build is complete and renamed, the link not yet swapped
            return real_replace(source, target)
        publish.os.replace = replace
    IngestionPipeline(IngestionSettings(corpus=corpus, out_dir=out, faiss_index="hnsw", device="cpu")).run()
    """
)


@pytest.mark.parametrize("moment", ["while-writing", "before-swap"])
def test_a_killed_build_leaves_the_previous_index_loadable(
    tmp_path: Path, sample_corpus: Path, build: Build, moment: str
) -> None:
    out = tmp_path / "index"
    build(sample_corpus, out)
    before = snapshot(out)
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    # A settings change (HNSW) forces a rebuild that needs no model: every vector is in the cache.
    result = subprocess.run(
        [sys.executable, str(script), str(sample_corpus), str(out), moment],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == -9, result.stderr

    assert snapshot(out) == before
    assert PublishedIndex.load(out).manifest["dense"]["faiss_index"] == "flat"
    # The next run clears the debris and publishes normally.
    summary = build(sample_corpus, out, faiss_index="hnsw")
    assert summary.status == "built"
    assert leftovers(out) == []
    assert PublishedIndex.load(out).manifest["dense"]["faiss_index"] == "hnsw"


BAD_INPUTS: dict[str, Callable[[Path], None]] = {
    "missing file": lambda path: path.unlink(),
    "missing column": lambda path: path.write_text("title,doi\r\nA title,10.1/x\r\n", encoding="utf-8"),
    "undecodable bytes": lambda path: path.write_bytes(path.read_bytes().replace(b"Monsoon", b"Mon\xffsoon")),
    "empty corpus": lambda path: path.write_text(path.read_text(encoding="utf-8").splitlines()[0] + "\r\n"),
    "duplicate ids": lambda path: path.write_text(
        path.read_text(encoding="utf-8") + ",Dup,Different text.,,,10.1257/test.1,,,,\r\n", encoding="utf-8"
    ),
}
EXPECTED_MESSAGES = {
    "missing file": "file not found",
    "missing column": "missing required column(s) abstract",
    "undecodable bytes": "row 4: is not valid UTF-8",
    "empty corpus": "no usable rows",
    "duplicate ids": "rows 1, 6: identifier '10.1257/test.1' appears more than once",
}


@pytest.mark.parametrize("kind", list(BAD_INPUTS))
def test_bad_input_exits_non_zero_with_a_clear_message_and_keeps_the_index(
    tmp_path: Path, sample_corpus: Path, build: Build, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    out = tmp_path / "index"
    build(sample_corpus, out)
    before = snapshot(out)
    BAD_INPUTS[kind](sample_corpus)

    assert main(["--corpus", str(sample_corpus), "--out", str(out), "--device", "cpu"]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"error: {sample_corpus}")
    assert EXPECTED_MESSAGES[kind] in error
    assert "Traceback" not in error
    assert snapshot(out) == before


def test_previous_build_is_kept_and_older_ones_pruned(tmp_path: Path, sample_corpus: Path, build: Build) -> None:
    out = tmp_path / "index"
    builds = [build(sample_corpus, out, force=True).index_dir for _ in range(3)]
    assert out.is_symlink() and out.resolve() == builds[-1]
    assert sorted(path for path in tmp_path.glob("index.2*")) == sorted(builds[-2:])


def test_a_foreign_directory_is_never_replaced(tmp_path: Path, sample_corpus: Path, build: Build) -> None:
    out = tmp_path / "index"
    out.mkdir()
    (out / "notes.txt").write_text("someone's files")
    with pytest.raises(PublishError, match="did not publish"):
        build(sample_corpus, out)
    assert (out / "notes.txt").read_text() == "someone's files"


def test_an_empty_placeholder_directory_is_replaced(tmp_path: Path, sample_corpus: Path, build: Build) -> None:
    out = tmp_path / "index"
    out.mkdir()
    build(sample_corpus, out)
    assert out.is_symlink()


def test_two_builds_never_run_at_once(tmp_path: Path, sample_corpus: Path) -> None:
    out = tmp_path / "index"
    with IndexPublisher(out).lock(), pytest.raises(PublishError, match="Another ingestion job"):
        IngestionPipeline(IngestionSettings(corpus=sample_corpus, out_dir=out)).run()
