"""The per-passage answerability decision: each passage's signals, the logistic model, and the three outcomes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from answering.answerability import (
    DEFAULT_MODEL_PATH,
    FEATURES,
    AnswerabilityModel,
    AnswerabilitySettings,
    AnswerabilityVerdict,
    JudgeGate,
    LogisticModel,
    passage_signals,
    published_before,
    select_with_judge,
)
from corpus.documents import Chunk, Document
from retrieval.types import RetrievedChunk


def hit(doc_id: str, position: int = 0, rerank: float | None = None, bm25_rank: int | None = None,
        rerank_rank: int | None = None, answer_logit: float | None = None,
        text: str = "text") -> RetrievedChunk:  # fmt: skip
    chunk = Chunk(f"{doc_id}#{position}", doc_id, position, text, 0, len(text), "Title")
    document = Document(doc_id, "", "Title", text, text, "2020", 2020)
    ranks = {} if bm25_rank is None else {"bm25": bm25_rank}
    return RetrievedChunk(chunk, document, ranks=ranks, rerank_score=rerank, rerank_rank=rerank_rank,
                          answer_logit=answer_logit)  # fmt: skip


def one_feature_model(feature: str, weight: float = 1.0) -> LogisticModel:
    return LogisticModel((feature,), (0.0,), (1.0,), (weight,), 0.0)


def test_each_passage_has_its_own_signals_relative_to_the_best() -> None:
    pool = [hit("a", rerank=7.0, bm25_rank=3, rerank_rank=1, answer_logit=2.5),
            hit("b", rerank=4.0, rerank_rank=2, answer_logit=-1.0), hit("c", rerank=1.0, rerank_rank=3)]  # fmt: skip
    first, second = passage_signals("Does text help?", pool[:2], [0.61, 0.4], pool)
    assert first["relevance"] == 7.0 and first["relevance_gap"] == 0.0 and first["answer_logit"] == 2.5
    assert second["relevance_gap"] == 3.0 and second["answer_logit"] == -1.0
    assert first["rank_weight"] == 1.0 and second["rank_weight"] == pytest.approx(1 / math.log2(3))
    assert first["bm25_weight"] == pytest.approx(1 / math.log2(4)) and second["bm25_weight"] == 0.0
    assert second["dense"] == 0.4 and second["dense_gap"] == pytest.approx(0.21)


def test_without_reranking_only_the_dense_signals_exist() -> None:
    pool = [hit("a"), hit("b", bm25_rank=1)]
    rows = passage_signals("Does text help?", pool, [0.2, 0.3], pool)
    assert all(set(row) == {"dense", "dense_gap", "bm25_weight", "specifics_unmatched"} for row in rows)


def test_a_specific_a_passage_never_names_is_its_signal() -> None:
    pool = [hit("a"), hit("b", text="Seattle raised its wage floor in 2015.")]
    rows = passage_signals("Did Seattle's wage floor cut hours in 2015?", pool, [0.5, 0.5], pool)
    assert rows[0]["specifics_unmatched"] == 1.0 and rows[1]["specifics_unmatched"] == 0.0


def test_logistic_model_round_trips_through_json() -> None:
    model = LogisticModel(("dense", "bm25_weight"), (0.5, 0.2), (0.1, 0.3), (2.0, 0.5), -0.25)
    assert LogisticModel.from_json(json.loads(json.dumps(model.to_json()))) == model
    z = -0.25 + 2.0 * (0.7 - 0.5) / 0.1 + 0.5 * (0.0 - 0.2) / 0.3
    assert model.probability({"dense": 0.7, "bm25_weight": 0.0}) == pytest.approx(1 / (1 + math.exp(-z)))


def test_every_passage_that_passes_answers_one_per_paper_up_to_the_limit() -> None:
    model = AnswerabilityModel(one_feature_model("answer_logit"), one_feature_model("dense"), 0.3, 0.7)
    logits = {"a": 3.0, "b": -3.0, "c": 2.0, "d": 4.0, "e": 1.5}
    pool = [hit(d, rerank=1.0, answer_logit=logit) for d, logit in logits.items()]
    pool.insert(1, hit("a", position=1, rerank=1.0, answer_logit=5.0))  # a's second chunk: still one paper
    verdict = model.assess("Does text help?", pool, [0.5] * len(pool), pool, max_papers=3)
    assert verdict.coverage == "covered" and verdict.covered
    assert [pool[i].chunk.doc_id for i in verdict.answering] == ["a", "c", "d"]  # rank order, b fails, cap 3
    assert verdict.probability == pytest.approx(1 / (1 + math.exp(-5.0)))
    assert len(verdict.judgements) == len(pool)


def test_no_passing_passage_gives_a_partial_answer_from_the_closest_or_a_decline() -> None:
    model = AnswerabilityModel(one_feature_model("answer_logit"), one_feature_model("dense"), 0.3, 0.7)

    def assess(*logits: float):
        pool = [hit(f"d{i}", rerank=1.0, answer_logit=logit) for i, logit in enumerate(logits)]
        return model.assess("Does text help?", pool, [0.5] * len(pool), pool)

    partial = assess(-2.0, 0.0)  # the second passage is the closest: P 0.5
    assert partial.coverage == "partial" and partial.answers and not partial.covered
    assert partial.answering == (1,)
    declined = assess(-3.0, -2.0)
    assert declined.coverage == "not_covered" and not declined.answers and declined.answering == ()
    assert declined.probability == pytest.approx(1 / (1 + math.exp(2.0)))
    assert model.assess("Does text help?", [], [], []).coverage == "not_covered"


def test_unreranked_searches_use_the_dense_model() -> None:
    model = AnswerabilityModel(one_feature_model("answer_logit"), one_feature_model("dense", 10.0), 0.3, 0.7)
    assert model.assess("Does text help?", [hit("a")], [0.5], [hit("a")]).coverage == "covered"  # sigmoid(5)
    assert model.assess("Does text help?", [hit("a")], [-0.5], [hit("a")]).coverage == "not_covered"


def test_thresholds_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="decline_below"):
        AnswerabilityModel(one_feature_model("answer_logit"), one_feature_model("dense"), 0.8, 0.2)
    with pytest.raises(ValueError, match="must not be below"):
        AnswerabilitySettings(decline_below=0.8, answer_from=0.2)
    assert AnswerabilitySettings(model_path=" ").model_path is None


def test_an_unreadable_model_file_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "answerability.json"
    broken.write_text('{"reranked": {}}')
    with pytest.raises(ValueError, match="Cannot read the answerability model"):
        AnswerabilityModel.load(broken)


def test_the_shipped_model_loads_with_every_feature() -> None:
    model = AnswerabilityModel.load(DEFAULT_MODEL_PATH)
    assert model.reranked.features == FEATURES and set(model.dense_only.features) <= set(FEATURES) | {
        "dense_gap", "bm25_weight"}  # fmt: skip
    assert 0 < model.decline_below <= model.answer_from < 1
    # A passage the answer head believes in, at the top of the ranking, clears answer_from; one it doubts, far
    # below the best, does not.
    fitted = model.reranked
    centre = dict(zip(fitted.features, fitted.means, strict=True))
    spread = dict(zip(fitted.features, fitted.scales, strict=True))
    strong = centre | {"answer_logit": centre["answer_logit"] + 2 * spread["answer_logit"], "relevance_gap": 0.0,
                       "rank_weight": 1.0, "specifics_unmatched": 0.0}  # fmt: skip
    weak = centre | {"answer_logit": centre["answer_logit"] - 2 * spread["answer_logit"],
                     "relevance_gap": centre["relevance_gap"] + 2 * spread["relevance_gap"]}  # fmt: skip
    assert fitted.probability(strong) > model.answer_from > fitted.probability(weak)
    overrides = AnswerabilityModel.load(DEFAULT_MODEL_PATH, decline_below=0.1, answer_from=0.9, judge_from=0.7)
    assert (overrides.decline_below, overrides.answer_from) == (0.1, 0.9)
    # The shipped decision asks the passage judge whether a question is answered.
    assert model.reads_judge and model.judge_gate is not None and 0 < model.judge_gate.judge_from < 1
    assert overrides.judge_gate == JudgeGate(0.7, model.judge_gate.also_from, model.judge_gate.also_within)


def test_under_the_gate_the_judges_best_passage_decides_and_leads() -> None:
    gate = JudgeGate(judge_from=0.6, also_from=0.5)
    doc_ids = ["a", "b", "a", "c", "d"]
    # The judge's best is "c" (0.9); the decision's own P adds "d" (0.8) and "a" (both chunks pass: its first is
    # kept, as select_answering keeps one passage a paper); "b" stays out.
    chosen = select_with_judge([0.1, 0.2, 0.3, 0.9, 0.4], [0.55, 0.1, 0.7, 0.2, 0.8], doc_ids, gate, max_papers=3)
    assert chosen == [0, 3, 4]  # rank order
    assert select_with_judge([0.1, 0.2, 0.3, 0.9, 0.4], [0.55, 0.1, 0.7, 0.2, 0.8], doc_ids, gate, 1) == [3]
    assert select_with_judge([0.5, 0.59], [0.99, 0.99], ["a", "b"], gate, 3) == []  # the judge doubts both
    with pytest.raises(ValueError, match="bars"):
        JudgeGate(1.5, 0.2)


def test_other_papers_must_come_within_also_within_of_the_best() -> None:
    doc_ids = ["a", "b", "c", "d"]
    judged, probabilities = [0.9, 0.2, 0.3, 0.4], [0.95, 0.8, 0.6, 0.5]
    # No relative bar: every paper reaching also_from joins the judge's best.
    assert select_with_judge(judged, probabilities, doc_ids, JudgeGate(0.6, 0.5), 5) == [0, 1, 2, 3]
    # Within 0.3 of the best P (0.95): "b" (0.8) joins, "c" (0.6) and "d" (0.5) are too far behind.
    assert select_with_judge(judged, probabilities, doc_ids, JudgeGate(0.6, 0.5, 0.3), 5) == [0, 1]
    # The width is measured from the best P of any passage ("a", 0.95), not from the judge's choice ("b", 0.5):
    # "c" (0.6) stays out.
    assert select_with_judge([0.2, 0.9, 0.1], [0.95, 0.5, 0.6], ["a", "b", "c"], JudgeGate(0.6, 0.1, 0.3), 5) == [0, 1]
    assert "within 0.30 of the best" in JudgeGate(0.6, 0.5, 0.3).describe()
    with pytest.raises(ValueError, match="bars"):
        JudgeGate(0.6, 0.5, -0.1)


def test_the_gate_applies_when_the_judges_logits_are_given_and_the_models_bars_otherwise() -> None:
    gate = JudgeGate(judge_from=0.6, also_from=0.9)
    model = AnswerabilityModel(one_feature_model("answer_logit"), one_feature_model("dense"), 0.3, 0.7,
                               judge_gate=gate)  # fmt: skip
    # The decision's own model doubts "a" (P 0.27), the judge is sure (P 0.95): covered from "a" under the gate.
    judged = [hit("a", rerank=1.0, answer_logit=-1.0), hit("b", rerank=1.0, answer_logit=-2.0)]
    verdict = model.assess("Does text help?", judged, [0.5, 0.5], judged, judge_logits=[3.0, -3.0])
    assert verdict.coverage == "covered" and verdict.answering == (0,)
    assert verdict.probability == pytest.approx(1 / (1 + math.exp(-3.0))) and "judge" in verdict.reason
    # The judge doubts every passage: no answer from the gate; the model's best (0.27) is below decline_below 0.3.
    doubted = [hit("a", rerank=1.0, answer_logit=-1.0)]
    verdict = model.assess("Does text help?", doubted, [0.5], doubted, judge_logits=[-3.0])
    assert verdict.coverage == "not_covered"
    partial = [hit("a", rerank=1.0, answer_logit=0.0)]  # P 0.5: the closest paper, with caveat
    verdict = model.assess("Does text help?", partial, [0.5], partial, judge_logits=[-3.0])
    assert verdict.coverage == "partial" and "judge" in verdict.reason
    # No judge logits (no judge loaded): the model's own bars, as without a gate.
    unjudged = [hit("a", rerank=1.0, answer_logit=2.0)]
    assert model.assess("Does text help?", unjudged, [0.5], unjudged).coverage == "covered"  # sigmoid(2) >= 0.7
    with pytest.raises(ValueError, match="2 judge logits for 1 passages"):
        model.assess("Does text help?", unjudged, [0.5], unjudged, judge_logits=[1.0, 2.0])


def test_papers_published_before_the_year_a_question_names_leave_the_answer() -> None:
    verdict = AnswerabilityVerdict("covered", 0.9, "judged", answering=(0, 2, 3))
    years = [2013, 2021, 2022, None]
    assert published_before(verdict, years, 2020).answering == (2, 3)  # an unknown year is kept
    assert published_before(verdict, years, None) == verdict
    assert published_before(verdict, years, 2010) == verdict


def test_a_paper_that_names_the_questions_year_itself_speaks_of_it_and_stays() -> None:
    verdict = AnswerabilityVerdict("covered", 0.9, "judged", answering=(0, 1))
    texts = ["Leases that may not be extended after 2047 in Hong Kong sell at a discount.",
             "Home prices fell by 20470 dollars in 2010."]  # fmt: skip
    assert published_before(verdict, [2024, 2013], 2047, texts).answering == (0,)
    assert published_before(verdict, [2024, 2013], 2047).coverage == "not_covered"


def test_a_question_whose_answering_papers_all_predate_its_year_is_declined() -> None:
    hedge = AnswerabilityVerdict("partial", 0.5, "in between", answering=(0,))
    declined = published_before(hedge, [2013], 2020)
    assert declined.coverage == "not_covered" and declined.answering == ()
    assert "names 2020" in declined.reason and "published before it" in declined.reason
    nothing = AnswerabilityVerdict("not_covered", 0.1, "no passage")
    assert published_before(nothing, [2013], 2020) == nothing
