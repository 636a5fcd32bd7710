import math
import random

import pytest

from training.evaluation.metrics import evaluate, mrr_at_k, ndcg_at_k, per_query_scores, recall_at_k

RANKED = ["a", "b", "c", "d"]
RELEVANT = {"b": 1, "d": 1, "e": 1}  # "e" is never retrieved


def test_ndcg_by_hand() -> None:
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(RANKED, RELEVANT, 4) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(RANKED, RELEVANT, 4) == pytest.approx(0.498190, abs=1e-6)


def test_ndcg_uses_graded_gains_and_cutoff() -> None:
    # Linear gains (trec_eval): the grade-2 document ranked second costs against the ideal order.
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert ndcg_at_k(["x", "a"], {"a": 1}, 1) == 0.0
    assert ndcg_at_k(["a", "x"], {"a": 1}, 10) == 1.0


def test_recall_and_mrr_by_hand() -> None:
    assert recall_at_k(RANKED, RELEVANT, 2) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, RELEVANT, 4) == pytest.approx(2 / 3)
    assert mrr_at_k(RANKED, RELEVANT, 10) == 0.5
    assert mrr_at_k(RANKED, RELEVANT, 1) == 0.0
    assert mrr_at_k(["x", "y", "d"], RELEVANT, 10) == pytest.approx(1 / 3)


def test_non_positive_grades_are_not_relevant() -> None:
    assert recall_at_k(["a"], {"a": 0, "b": 1}, 10) == 0.0
    assert mrr_at_k(["a", "b"], {"a": -1, "b": 1}, 10) == 0.5


def test_evaluate_averages_judged_queries_and_scores_missing_ones_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}  # q3 has no relevant document: left out
    run = {"q1": ["a", "b"]}  # q2 missing from the run
    scores = evaluate(run, qrels, ("ndcg@10", "recall@10", "mrr@10"))
    assert scores == {"ndcg@10": 0.5, "recall@10": 0.5, "mrr@10": 0.5}
    assert set(per_query_scores(run, qrels, ("mrr@10",))["mrr@10"]) == {"q1", "q2"}


def test_bad_input_is_rejected_with_clear_messages() -> None:
    with pytest.raises(ValueError, match="Unknown metric"):
        evaluate({}, {"q": {"a": 1}}, ("map@10",))
    with pytest.raises(ValueError, match="more than once"):
        evaluate({"q": ["a", "a"]}, {"q": {"a": 1}})
    with pytest.raises(ValueError, match="at least 1"):
        ndcg_at_k(["a"], {"a": 1}, 0)


def test_agrees_with_pytrec_eval_on_random_runs() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(0)
    docs = [f"d{i}" for i in range(60)]
    qrels = {f"q{i}": {doc: rng.choice([1, 1, 2]) for doc in rng.sample(docs, rng.randint(1, 5))} for i in range(40)}
    run = {qid: rng.sample(docs, 30) for qid in qrels}
    ours = per_query_scores(run, qrels, ("ndcg@10", "recall@10", "recall@100"))
    # pytrec_eval ranks by score, so give each document a strictly decreasing score.
    scored_run = {qid: {doc: float(len(ranked) - i) for i, doc in enumerate(ranked)} for qid, ranked in run.items()}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10", "recall.100"}).evaluate(scored_run)
    for qid in qrels:
        assert ours["ndcg@10"][qid] == pytest.approx(reference[qid]["ndcg_cut_10"], abs=1e-9)
        assert ours["recall@10"][qid] == pytest.approx(reference[qid]["recall_10"], abs=1e-9)
        assert ours["recall@100"][qid] == pytest.approx(reference[qid]["recall_100"], abs=1e-9)
