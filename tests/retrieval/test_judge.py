"""The passage judge: loads like a reranker, refuses a reranker, scores each hit (a logit), averages the logits
of several models; the shipped judge tells an answering abstract from a near miss on the same abstract."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from corpus.documents import Chunk, Document
from retrieval.cross_encoder import SegmentPoolingCrossEncoder
from retrieval.judge import DEFAULT_JUDGE_DIRS, JudgeSettings, PassageJudge
from retrieval.reranker import RERANKER_INFO_FILE, passage_text
from retrieval.types import RetrievedChunk


def hit(doc_id: str, title: str, text: str) -> RetrievedChunk:
    document = Document(doc_id=doc_id, doi="", title=title, abstract=text, abstract_original=text, date="2020",
                        year=2020, jel_codes=[])  # fmt: skip
    chunk = Chunk(chunk_id=f"{doc_id}#0", doc_id=doc_id, position=0, text=text, char_start=0, char_end=len(text),
                  title=title)  # fmt: skip
    return RetrievedChunk(chunk=chunk, document=document)


def test_no_judge_configured_or_found_means_none(tmp_path: Path) -> None:
    assert PassageJudge.load(JudgeSettings(model_dirs=""), "cpu") is None
    assert PassageJudge.load(JudgeSettings(model_dirs=str(tmp_path)), "cpu") is None
    assert JudgeSettings(model_dirs=" a , b,").model_dirs == (Path("a"), Path("b"))  # as the environment gives it


def test_a_reranker_that_adds_retrieval_scores_is_not_a_judge(tiny_reranker_dir: Path, tmp_path: Path) -> None:
    import shutil

    directory = tmp_path / "reranker"
    shutil.copytree(tiny_reranker_dir, directory)
    (directory / RERANKER_INFO_FILE).write_text(json.dumps({"name": "r", "bi_encoder_weight": 2.0}))
    with pytest.raises(ValueError, match="not a judge"):
        PassageJudge.load(JudgeSettings(model_dirs=(directory,), precision="float32"), "cpu")


def test_judging_returns_every_hits_logit_from_the_model_and_leaves_the_hits_alone(tiny_reranker_dir: Path) -> None:
    judge = PassageJudge.load(JudgeSettings(model_dirs=(tiny_reranker_dir,), precision="float32"), "cpu")
    assert judge is not None
    hits = [hit("a", "Minimum wages", "Teen employment fell."), hit("b", "Tariffs", "Prices rose.")]
    before = [replace(h) for h in hits]
    logits = judge.score("Do minimum wages cut jobs?", hits)
    expected = judge.logits("Do minimum wages cut jobs?", [passage_text(h.chunk.title, h.chunk.text) for h in hits])
    assert logits == expected and hits == before
    assert expected[0] != expected[1]
    assert judge.logits("anything", []) == []


def test_several_models_judge_by_the_mean_of_their_logits(tiny_reranker_dir: Path, tmp_path: Path) -> None:
    import shutil

    other = tmp_path / "other"
    shutil.copytree(tiny_reranker_dir, other)
    flipped = SegmentPoolingCrossEncoder.load(other)
    with torch.no_grad():
        flipped.joint_head.weight.mul_(-2.0)
        flipped.joint_head.bias.mul_(-2.0)
    flipped.save(other)
    settings = {"precision": "float32"}
    first = PassageJudge.load(JudgeSettings(model_dirs=(tiny_reranker_dir,), **settings), "cpu")
    second = PassageJudge.load(JudgeSettings(model_dirs=(other,), **settings), "cpu")
    both = PassageJudge.load(JudgeSettings(model_dirs=(tiny_reranker_dir, other), **settings), "cpu")
    assert first and second and both and len(both.models) == 2
    passages = ["Minimum wages\nTeen employment fell.", "Tariffs\nPrices rose."]
    expected = (torch.tensor(first.logits("Do minimum wages cut jobs?", passages))
                + torch.tensor(second.logits("Do minimum wages cut jobs?", passages))) / 2  # fmt: skip
    assert torch.allclose(torch.tensor(both.logits("Do minimum wages cut jobs?", passages)), expected, atol=1e-5)
    assert first.logits("Do minimum wages cut jobs?", passages) != second.logits("Do minimum wages cut jobs?", passages)
    with pytest.raises(ValueError, match="Cannot load the passage judge"):  # a missing member is an error
        PassageJudge.load(JudgeSettings(model_dirs=(tiny_reranker_dir, tmp_path / "missing"), **settings), "cpu")


def test_the_judge_reads_to_its_max_length_past_the_rerankers(tiny_reranker_dir: Path) -> None:
    """A finding stated late in a long passage reaches the judge at its default length (256), not at a shorter cut."""
    opening = "We study household saving. " * 30  # about 180 tokens of the same words
    passages = [opening + "Saving rose after the reform." * 3, opening + "Prices fell across the regions." * 3]
    question = "Did saving rise after the reform?"
    default = PassageJudge.load(JudgeSettings(model_dirs=(tiny_reranker_dir,), precision="float32"), "cpu")
    short = PassageJudge.load(JudgeSettings(model_dirs=(tiny_reranker_dir,), precision="float32", max_length=160),
                              "cpu")  # fmt: skip
    assert default is not None and short is not None and default.models[0].max_length == 256
    cut_early, read_through = short.logits(question, passages), default.logits(question, passages)
    assert cut_early[0] == pytest.approx(cut_early[1])
    assert read_through[0] != pytest.approx(read_through[1])
    with pytest.raises(ValueError):
        JudgeSettings(max_length=8)


@pytest.mark.slow
def test_the_shipped_judge_separates_what_is_asked_on_one_abstract() -> None:
    judge = PassageJudge.load(JudgeSettings(), "cpu")
    assert judge is not None, f"no judge shipped in {DEFAULT_JUDGE_DIRS[0]}"
    assert len(judge.models) == len(DEFAULT_JUDGE_DIRS) == 2
    for directory in DEFAULT_JUDGE_DIRS:
        info = json.loads((directory / RERANKER_INFO_FILE).read_text())
        assert info["bi_encoder_weight"] == 0 and info["training"]["pairs"]["contrast"] > 0
    passage = passage_text(
        "School Vouchers and Student Achievement",
        "We study a lottery that awarded vouchers for private secondary school. Lottery winners were more likely "
        "to finish secondary school and scored higher on college entrance exams than losers.",
    )
    answered = judge.logits("Did winning a private-school voucher lottery raise test scores?", [passage])[0]
    near_miss = judge.logits("Did winning a private-school voucher lottery raise earnings in middle age?", [passage])[0]
    unrelated = judge.logits("Do carbon taxes reduce emissions from power plants?", [passage])[0]
    assert answered > 0 > near_miss > unrelated  # P(answers): above a half, below it, far below it
