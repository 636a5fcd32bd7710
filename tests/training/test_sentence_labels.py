"""The committed sentence labels pass their checks against the pairs they were written for (regenerated from the
training corpus by the same draw), so labels and abstracts' sentences line up."""

from __future__ import annotations

from training.sentences.checks import problems_of
from training.sentences.dataset import load_sentence_labels
from training.sentences.prepare import pairs


def test_every_committed_label_names_a_drawn_pair_and_passes_the_checks() -> None:
    labels = load_sentence_labels()
    assert len(labels) >= 1200
    drawn = pairs(paraphrases=970, topical=310, seed=2026)  # the draw of every committed batch
    as_written = [{"pair": x.pair, "n_sentences": x.n_sentences, "finding": list(x.finding), "best": x.best,
                   "method": list(x.method)} for x in labels]  # fmt: skip
    assert problems_of(as_written, drawn) == []


def test_a_label_with_its_best_outside_its_findings_is_caught() -> None:
    drawn = pairs(paraphrases=520, topical=160, seed=2026)[:1]
    label = {"pair": drawn[0]["pair"], "n_sentences": len(drawn[0]["sentences"]), "finding": [0], "best": 1,
             "method": [0]}  # fmt: skip
    problems = problems_of([label], drawn)
    assert any("best 1" in p for p in problems) and any("both finding and method" in p for p in problems)
