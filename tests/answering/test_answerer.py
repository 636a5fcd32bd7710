"""The answerer's decisions before generation: the reranker's answerability thresholds."""

from __future__ import annotations

from answering.answerer import Question
from answering.prompt import NOT_COVERED_ANSWER

COVERED = "Did the minimum wage increase reduce teenage employment in fast food restaurants?"


def test_a_low_reranker_score_declines_without_a_prompt(make_services) -> None:
    answerer = make_services(reranker=True, coverage={"min_rerank": 1e9, "answer_min_rerank": None}).answerer
    prepared = answerer.prepare(Question(query=COVERED))
    assert prepared.prompt is None and prepared.verdict is not None and not prepared.verdict.covered
    assert any("none that answers it" in note for note in prepared.notes)
    assert answerer.finish(prepared, None).text == NOT_COVERED_ANSWER
    # Without reranking only the dense check runs, so the same question is answered.
    unranked = answerer.prepare(Question(query=COVERED, rerank=False))
    assert unranked.prompt is not None and unranked.verdict is not None and unranked.verdict.rerank_score is None


def test_a_confident_reranker_score_bans_the_refusal(make_services) -> None:
    answerer = make_services(reranker=True, coverage={"min_rerank": None, "answer_min_rerank": -1e9}).answerer
    prepared = answerer.prepare(Question(query=COVERED))
    assert prepared.verdict is not None and prepared.verdict.must_answer and prepared.prompt is not None
    opening = answerer.prompts.refusal_opening()
    assert prepared.params.banned_openings == (opening,)
    assert answerer.prompts.tokenizer.decode(list(opening)) == "The indexed"
    # Below the threshold the generator may still decline.
    free_services = make_services(reranker=True, coverage={"min_rerank": None, "answer_min_rerank": 1e9})
    free = free_services.answerer.prepare(Question(query=COVERED))
    assert free.prompt is not None and free.params.banned_openings == ()
