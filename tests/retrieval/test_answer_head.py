"""The reranker's second head (retrieval/answer_head.py): stored beside the cross-encoder, read from the same
forward pass, and set on every reranked candidate."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from corpus.documents import Chunk, Document
from retrieval.answer_head import ANSWER_HEAD_FILE, AnswerHead
from retrieval.reranker import CrossEncoderReranker, RerankerUnavailable, passage_text
from retrieval.types import RetrievedChunk

TEXTS = ["trade distance", "minimum wage employment", "monetary policy rates"]


def candidates() -> list[RetrievedChunk]:
    hits = []
    for rank, text in enumerate(TEXTS, start=1):
        document = Document(f"d{rank}", "", "", text, text, "", None)
        chunk = Chunk(f"d{rank}#0", f"d{rank}", 0, text, 0, len(text), "")
        hits.append(RetrievedChunk(chunk, document, fused_rank=rank))
    return hits


@pytest.fixture
def headed_reranker_dir(tiny_reranker_dir: Path, tmp_path: Path) -> Path:
    directory = tmp_path / "headed"
    shutil.copytree(tiny_reranker_dir, directory)
    hidden = CrossEncoderReranker(tiny_reranker_dir, precision="float32").model.config.hidden_size
    weights = np.linspace(-1.0, 1.0, hidden).astype(np.float32)
    AnswerHead(weights, 0.25, {"note": "test"}).save(directory)
    return directory


def test_the_head_round_trips_and_scores_pooled_vectors(headed_reranker_dir: Path) -> None:
    head = AnswerHead.load(headed_reranker_dir)
    assert head is not None and head.bias == 0.25 and head.info == {"note": "test"}
    pooled = np.ones((2, head.weights.shape[0]), dtype=np.float32)
    assert head.logits(pooled) == pytest.approx([float(head.weights.sum()) + 0.25] * 2, abs=1e-4)
    with pytest.raises(ValueError, match="pooled vectors"):
        head.logits(np.ones((2, 3), dtype=np.float32))


def test_reranking_sets_each_candidates_answer_logit_from_the_same_pass(headed_reranker_dir: Path) -> None:
    reranker = CrossEncoderReranker(headed_reranker_dir, precision="float32")
    passages = [passage_text("", text) for text in TEXTS]
    scores, pooled = reranker.encode("minimum wage", passages)
    expected = dict(zip(TEXTS, reranker.answer_head.logits(pooled).tolist(), strict=True))
    reranked = reranker.rerank("minimum wage", candidates(), top_m=3)
    assert {hit.chunk.text: hit.answer_logit for hit in reranked} == pytest.approx(expected, abs=1e-4)
    assert sorted(hit.rerank_score for hit in reranked) == pytest.approx(sorted(scores.tolist()), abs=1e-4)


def test_a_reranker_without_a_head_leaves_the_logit_unset(tiny_reranker_dir: Path) -> None:
    reranker = CrossEncoderReranker(tiny_reranker_dir, precision="float32")
    assert reranker.answer_head is None
    assert all(hit.answer_logit is None for hit in reranker.rerank("wage", candidates(), top_m=3))


def test_a_broken_head_file_makes_the_reranker_unavailable(headed_reranker_dir: Path) -> None:
    (headed_reranker_dir / ANSWER_HEAD_FILE).write_text('{"weights": "no"}')
    with pytest.raises(RerankerUnavailable, match="answer head"):
        CrossEncoderReranker(headed_reranker_dir, precision="float32")
