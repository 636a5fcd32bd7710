import json
from pathlib import Path

from benchmarks.finding_figures import FindingFigures, spliced
from corpus.sentences import split_sentences
from indexing.index import PublishedIndex


def test_a_finding_shown_after_its_context_is_judged_by_what_it_states(tiny_index: PublishedIndex,
                                                                        tmp_path: Path) -> None:
    abstract = next(d.abstract for d in tiny_index.documents.values() if d.doi == "10.1257/test.3")
    sentences = [abstract[start:end] for start, end in split_sentences(abstract)]
    judged = {"qid": "q1", "doi": "10.1257/test.3", "sentences": sentences, "finding": [1], "best": 1, "method": [0]}
    path = tmp_path / "findings.jsonl"
    path.write_text(json.dumps(judged) + "\n", encoding="utf-8")
    figures = FindingFigures(tiny_index, path)
    setting = "Doe and Roe (2012) note that import competition from China reduced manufacturing employment in " \
              "exposed local labor markets [1]."
    result = "Wages fell and disability claims rose in the most exposed regions [1]."
    with_context = figures.count("q1", [{"doi": "10.1257/test.3", "text": f"{setting} {result}"}])
    context_only = figures.count("q1", [{"doi": "10.1257/test.3", "text": setting}])
    assert (with_context["stated"], with_context["best"], with_context["method"]) == (1, 1, 0)
    assert (context_only["stated"], context_only["best"], context_only["method"]) == (0, 0, 1)


def test_the_best_finding_counts_as_shown_first_only_before_any_other_finding(tiny_index: PublishedIndex,
                                                                              tmp_path: Path) -> None:
    abstract = next(d.abstract for d in tiny_index.documents.values() if d.doi == "10.1257/test.3")
    sentences = [abstract[start:end] for start, end in split_sentences(abstract)]
    judged = {"qid": "q1", "doi": "10.1257/test.3", "sentences": sentences, "finding": [0, 1], "best": 1,
              "method": []}  # fmt: skip
    path = tmp_path / "findings.jsonl"
    path.write_text(json.dumps(judged) + "\n", encoding="utf-8")
    figures = FindingFigures(tiny_index, path)
    employment = "Doe and Roe (2012) find that import competition from China reduced manufacturing employment in " \
                 "exposed local labor markets [1]."
    wages = "Doe and Roe find that wages fell and disability claims rose in the most exposed regions [1]."
    best_second = figures.count("q1", [{"doi": "10.1257/test.3", "text": f"{employment} {wages}"}])
    best_first = figures.count("q1", [{"doi": "10.1257/test.3", "text": f"{wages} {employment}"}])
    assert (best_second["best"], best_second["best_first"]) == (1, 0)
    assert (best_first["best"], best_first["best_first"]) == (1, 1)


def test_a_finding_straying_from_its_source_sentence_is_counted_spliced(tiny_index: PublishedIndex,
                                                                         tmp_path: Path) -> None:
    path = tmp_path / "findings.jsonl"
    path.write_text("", encoding="utf-8")
    figures = FindingFigures(tiny_index, path)
    copied = "Doe and Roe (2012) find that wages fell and disability claims rose in the most exposed regions [1]."
    # every word is the abstract's, but the regions and the markets trade places: not what it says
    spliced = "Doe and Roe (2012) find that disability claims rose in exposed local labor markets and wages fell [1]."
    counts = [figures.count("q1", [{"doi": "10.1257/test.3", "text": text}]) for text in (copied, spliced)]
    assert [(c["reworded"], c["spliced"]) for c in counts] == [(0, 0), (0, 1)]


def test_who_found_it_named_inside_a_finding_is_not_counted_as_straying() -> None:
    abstract = ("We study disability claims. While we confirm that employment rates of rejected applicants are low, "
                "younger beneficiaries have raised the potential employment of beneficiaries.")
    who = "von Wachter, Song, and Manchester (2011)"
    shown = (f"While {who} confirm that employment rates of rejected applicants are low, younger beneficiaries have "
             "raised the potential employment of beneficiaries [1].")
    assert not spliced(shown, abstract, who)
    assert spliced(shown, abstract)  # read with the names as words of its own, it strays
