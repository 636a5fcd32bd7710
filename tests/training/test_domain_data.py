"""The written off-domain questions pass their checks, and the domain gate's bar is chosen as documented."""

from __future__ import annotations

import numpy as np

from training.domain import QUESTIONS, casual_problems, choose_bar, offdomain_problems, read_jsonl


def test_the_committed_offdomain_questions_pass_their_checks() -> None:
    records = read_jsonl(sorted((QUESTIONS / "offdomain").glob("batch_*.jsonl")))
    assert len(records) >= 500
    assert offdomain_problems(records) == []
    assert sum(record["trap"] is not None for record in records) >= len(records) // 4  # words in another sense
    casual = read_jsonl(sorted((QUESTIONS / "economics_casual").glob("batch_*.jsonl")))
    assert len(casual) >= 500 and casual_problems(casual) == []


def test_the_checks_catch_economics_words_lengths_and_duplicates() -> None:
    good = {"id": "qo-01-001", "kind": "off_domain", "question": "Why does a tyre lose inflation in cold weather?",
            "trap": "inflation"}  # fmt: skip
    assert offdomain_problems([good]) == []
    problems = offdomain_problems([
        good, dict(good, id="qo-01-002"),
        dict(good, id="qo-01-003", question="What do stock market prices tell us about the weather?", trap=None),
        dict(good, id="qo-01-004", question="Why rain?"),
    ])  # fmt: skip
    assert any("duplicate" in p for p in problems)
    assert any("'market'" in p for p in problems) and any("'prices'" in p for p in problems)
    assert any("2 words" in p for p in problems)


def test_the_bar_is_the_middle_of_the_gap_under_the_lowest_economics_question() -> None:
    # calibration ids are odd-numbered; the report half's are ignored
    probabilities = {"d0-01": 0.9, "du-03": 0.6, "do-05": 0.2, "do-07": 0.01, "do-02": 0.7, "d0-02": 0.05}
    kinds = {"d0-01": "paraphrase", "du-03": "unanswerable", "do-05": "offdomain", "do-07": "offdomain",
             "do-02": "offdomain", "d0-02": "paraphrase"}  # fmt: skip
    bar = choose_bar(probabilities, kinds)
    assert abs(bar - 0.3798) < 0.001  # the logit-middle of 0.2 and 0.6
    # capped where 0.2% of the economics training questions would be declined, but above every off-domain one
    assert abs(choose_bar(probabilities, kinds, np.linspace(0.25, 1.0, 1001)) - 0.2515) < 0.001
    assert choose_bar(probabilities, kinds, np.linspace(0.0, 1.0, 1001)) == 0.2001
