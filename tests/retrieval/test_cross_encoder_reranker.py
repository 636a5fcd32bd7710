import json
from pathlib import Path

import numpy as np
import pytest

from corpus.documents import Chunk, Document
from indexing.embedding import default_model_dir
from retrieval.reranker import CrossEncoderReranker, RerankerUnavailable, passage_text, rerank_order
from retrieval.types import RetrievedChunk


def candidate(doc_id: str, text: str, fused_rank: int) -> RetrievedChunk:
    document = Document(doc_id=doc_id, doi="", title="", abstract=text, abstract_original=text, date="", year=None)
    chunk = Chunk(chunk_id=f"{doc_id}#0", doc_id=doc_id, position=0, text=text, char_start=0, char_end=len(text),
                  title="")  # fmt: skip
    return RetrievedChunk(chunk=chunk, document=document, fused_score=1 / fused_rank, fused_rank=fused_rank)


TEXTS = ["trade distance", "minimum wage employment", "monetary policy rates", "risk labor market", "the wage"]


def test_rerank_orders_by_the_model_scores_and_sets_them(tiny_reranker_dir: Path) -> None:
    reranker = CrossEncoderReranker(tiny_reranker_dir, precision="float32")
    query = "minimum wage"
    scores = reranker.score(query, [passage_text("", text) for text in TEXTS])
    # Feed the candidates worst-first by the model's own score, so a correct rerank must reverse them.
    ascending = sorted(range(len(TEXTS)), key=lambda i: scores[i])
    candidates = [candidate(f"d{i}", TEXTS[i], rank) for rank, i in enumerate(ascending, start=1)]

    reranked = reranker.rerank(query, candidates, top_m=5)

    assert [hit.chunk.doc_id for hit in reranked] == [f"d{i}" for i in reversed(ascending)]
    assert [hit.rerank_rank for hit in reranked] == [1, 2, 3, 4, 5]
    assert [hit.rerank_score for hit in reranked] == pytest.approx(sorted(scores.tolist(), reverse=True), abs=1e-5)
    assert reranked[0].fused_rank == 5  # earlier stages' ranks are kept for display
    # The scores come on new hits: the candidates given are left as they were.
    assert all(hit.rerank_score is None and hit.rerank_rank is None for hit in candidates)
    # A call may give its own first-stage weight: a huge one keeps the first-stage order.
    kept = reranker.rerank(query, candidates, top_m=5, first_stage_weight=1e6)
    assert [hit.chunk.doc_id for hit in kept] == [f"d{i}" for i in ascending]


def test_only_top_m_are_scored_and_returned(tiny_reranker_dir: Path) -> None:
    reranker = CrossEncoderReranker(tiny_reranker_dir, precision="float32")
    candidates = [candidate(f"d{i}", text, i + 1) for i, text in enumerate(TEXTS)]
    reranked = reranker.rerank("trade", candidates, top_m=3)
    assert {hit.chunk.doc_id for hit in reranked} == {"d0", "d1", "d2"}
    assert all(hit.rerank_score is None for hit in candidates[3:])
    assert reranker.rerank("trade", [], top_m=3) == []


def test_rerank_order_with_and_without_the_first_stage() -> None:
    scores = np.array([0.1, 0.9, 0.5, 0.5])  # candidates arrive in first-stage order
    assert rerank_order(scores).tolist() == [1, 2, 3, 0]  # equal scores keep the first-stage order
    # The first-stage leader (the model's last) climbs as the first stage's weight grows:
    # weight 0.1: 1/64 + 0.1/61 < 1/63 + 0.1/64, it stays last; weight 1: 1/64 + 1/61 beats 1/62 + 1/63.
    assert rerank_order(scores, 0.1).tolist() == [1, 2, 3, 0]
    assert rerank_order(scores, 1.0).tolist() == [1, 0, 2, 3]
    # A huge weight restores the first-stage order.
    assert rerank_order(scores, 1e6).tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="first_stage_weight"):
        rerank_order(scores, -1.0)


def test_first_stage_weight_comes_from_the_model_unless_given(tiny_reranker_dir: Path, tmp_path: Path) -> None:
    assert CrossEncoderReranker(tiny_reranker_dir, precision="float32").first_stage_weight == 0.0
    model_dir = tmp_path / "reranker"
    model_dir.mkdir()
    for path in tiny_reranker_dir.iterdir():
        (model_dir / path.name).write_bytes(path.read_bytes())
    info_path = model_dir / "reranker.json"
    info = json.loads(info_path.read_text()) if info_path.is_file() else {}
    info_path.write_text(json.dumps({**info, "first_stage_weight": 2.0}))
    assert CrossEncoderReranker(model_dir, precision="float32").first_stage_weight == 2.0
    assert CrossEncoderReranker(model_dir, precision="float32", first_stage_weight=0.5).first_stage_weight == 0.5
    with pytest.raises(ValueError, match="first_stage_weight"):
        CrossEncoderReranker(model_dir, precision="float32", first_stage_weight=-1)


def test_missing_or_invalid_model_dir_is_reported(tmp_path: Path, tiny_reranker_dir: Path) -> None:
    with pytest.raises(RerankerUnavailable, match="No reranker model"):
        CrossEncoderReranker(tmp_path / "nothing")
    with pytest.raises(RerankerUnavailable, match="Could not load"):
        CrossEncoderReranker(default_model_dir())  # a plain encoder, not a reranker
    with pytest.raises(ValueError, match="precision"):
        CrossEncoderReranker(tiny_reranker_dir, precision="int4")


def test_the_bi_encoder_term_adds_weighted_cosines(tiny_reranker_dir: Path) -> None:
    plain = CrossEncoderReranker(tiny_reranker_dir, precision="float32")
    mixed = CrossEncoderReranker(tiny_reranker_dir, precision="float32", bi_encoder_weight=3.0)
    passages = [passage_text("", text) for text in TEXTS]
    cosines = [0.1, 0.5, -0.2, 0.9, 0.0]
    assert plain.bi_encoder_weight == 0.0
    assert plain.relevance("wage", passages).tolist() == pytest.approx(plain.score("wage", passages).tolist())
    expected = plain.score("wage", passages) + 3.0 * np.array(cosines)
    assert mixed.relevance("wage", passages, cosines).tolist() == pytest.approx(expected.tolist(), abs=1e-5)
    with pytest.raises(ValueError, match="cosine"):
        mixed.relevance("wage", passages)  # the weight needs the cosines
    # rerank_score is that relevance, and a dominant bi-encoder term orders by the cosines.
    candidates = [candidate(f"d{i}", text, i + 1) for i, text in enumerate(TEXTS)]
    dominant = CrossEncoderReranker(tiny_reranker_dir, precision="float32", bi_encoder_weight=1e4)
    reranked = dominant.rerank("wage", candidates, top_m=5, cosines=cosines)
    assert [hit.chunk.doc_id for hit in reranked] == ["d3", "d1", "d0", "d4", "d2"]


def test_int8_is_the_cpu_default_and_close_to_float32(tiny_reranker_dir: Path) -> None:
    int8 = CrossEncoderReranker(tiny_reranker_dir)
    float32 = CrossEncoderReranker(tiny_reranker_dir, precision="float32")
    assert (int8.precision, float32.precision) == ("int8", "float32")
    passages = [passage_text("", text) for text in TEXTS]
    reference = float32.score("minimum wage", passages)
    quantized = int8.score("minimum wage", passages)
    assert np.abs(quantized - reference).max() <= 0.1 * np.abs(reference).max()
