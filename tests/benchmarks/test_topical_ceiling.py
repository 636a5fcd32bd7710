from benchmarks.topical_ceiling import SIGNALS, at_depths, papers_by
from training.evaluation.dev_questions import DevQuestion
from training.sentence_gate import Evidence


def evidence(doc_ids: list[str], judged: list[float], relevant: set[str]) -> Evidence:
    question = DevQuestion("dt-01", "What does research find?", (), "topical", "")
    count = len(doc_ids)
    return Evidence(question, frozenset(relevant), doc_ids, [0.5] * count, judged, [0.5] * count, 0.3)


def test_papers_are_ordered_by_the_signal_each_by_its_best_passage() -> None:
    item = evidence(["a", "b", "a", "c"], [0.1, 0.2, 0.9, 0.5], {"a"})
    assert papers_by(item, SIGNALS["judge P"]) == ["a", "c", "b"]
    assert papers_by(item, SIGNALS["search rank"]) == ["a", "b", "c"]


def test_precision_and_recall_at_each_depth() -> None:
    item = evidence(["a", "b", "c"], [0.9, 0.1, 0.8], {"a", "b"})
    rows = at_depths([item], SIGNALS["judge P"])
    assert rows["1"] == {"precision": 1.0, "recall": 0.5}
    assert rows["2"] == {"precision": 0.5, "recall": 0.5}
    assert rows["3"] == {"precision": 0.667, "recall": 1.0}
    assert rows["5"] == rows["3"]  # no more papers than the evidence holds
