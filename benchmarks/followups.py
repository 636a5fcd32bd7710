"""Follow-up resolution and time windows at the retrieval level, on the development follow-ups and dated questions.

    .venv/bin/python -m benchmarks.followups [--index var/index]

For each `followup` question of ../shared/eval/aer_dev/questions_more.jsonl: the first turn goes through the
service's hybrid retriever and its top 5 papers stand for the first answer's citations; then recall@5 and @10 of
the relevant papers (by DOI) for the follow-up searched as
  (a) the follow-up alone, (b) answering.conversation's resolved query (each design variant),
  (c) the dataset's `resolved` form (the ceiling), (d) the first question and the follow-up concatenated.
Every form goes through answering.time_window first, as the service would: its window becomes the year filter
and its words leave the searched text. Design variants are chosen on the calibration half (odd ids) only; both
halves are reported. Also: parse_time_window's exact match on the `dated` questions' windows and on the windows
the follow-ups carry (expected: the window of the dataset's `resolved` form, as parse_time_window reads it, so
that row checks consistency; disagreements are listed, with whether they admit the same corpus years).
Writes benchmarks/results/followups.json.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from answering.conversation import CitedPaper, ResolvedQuestion, Turn, idf_weights, resolve_followup
from answering.time_window import parse_time_window
from benchmarks.common import REPO_ROOT, git_commit, relative, write_results
from corpus.filters import SearchFilters
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from retrieval.hybrid import HybridRetriever
from training.evaluation.dev_questions import HALVES, MORE_QUESTIONS, half_of

CITED = 5  # the first answer cites from the top 5 retrieved papers
DEPTH = 50  # chunks retrieved per query; documents are ranked by their best chunk
# Design variants of (b): how many carried terms to keep (None: all), by the corpus's IDF.
VARIANTS: dict[str, int | None] = {"carry all terms": None, "carry 6 rarest": 6, "carry 4 rarest": 4}


class Searcher:
    def __init__(self, index: PublishedIndex) -> None:
        self.index = index
        self.retriever = HybridRetriever(LocalIndexBackend(index), index.embedder)
        self.latest_year = max(d.year for d in index.documents.values() if d.year is not None)

    def ranking(self, text: str) -> tuple[list[str], dict[str, Any]]:
        """doc_ids best first, and how the text was searched (after its time window was read)."""
        window = parse_time_window(text, self.latest_year)
        searched = window.question_without_window if window else text
        filters = SearchFilters(year_min=window.year_min, year_max=window.year_max) if window else None
        hits = self.retriever.retrieve(searched, DEPTH, filters)
        ranked = list(dict.fromkeys(hit.chunk.doc_id for hit in hits))
        applied = [window.year_min, window.year_max] if window else None
        return ranked, {"text": text, "searched": searched, "window": applied}

    def dois(self, doc_ids: list[str]) -> list[str]:
        return [self.index.documents[d].doi or "" for d in doc_ids]


def recall(ranked_dois: list[str], relevant: list[str], k: int) -> float:
    return len(set(ranked_dois[:k]) & set(relevant)) / len(relevant)


def evaluate_followups(searcher: Searcher, rows: list[dict[str, Any]], weight: Callable[[str], float]
                       ) -> list[dict[str, Any]]:  # fmt: skip
    results = []
    for row in rows:
        first, followup = row["turns"]
        first_ranked, _ = searcher.ranking(first)
        cited = tuple(CitedPaper(d, searcher.index.documents[d].title, searcher.index.documents[d].year)
                      for d in first_ranked[:CITED])  # fmt: skip
        history = [Turn(first, "", cited)]
        forms: dict[str, str] = {"(a) follow-up alone": followup}
        resolutions: dict[str, ResolvedQuestion] = {}
        for name, max_carried in VARIANTS.items():
            resolutions[name] = resolve_followup(followup, history, weight, max_carried)
            forms[f"(b) resolved: {name}"] = resolutions[name].query
        forms["(c) dataset resolved (ceiling)"] = row["resolved"]
        forms["(d) first + follow-up"] = f"{first} {followup}"
        scores = {}
        for name, text in forms.items():
            ranked, searched = searcher.ranking(text)
            dois = searcher.dois(ranked)
            relevant = row["relevant"]
            scores[name] = {"recall@5": recall(dois, relevant, 5), "recall@10": recall(dois, relevant, 10), **searched}
        resolution = resolutions["carry all terms"]
        cited_dois = searcher.dois(list(resolution.refers_to_cited))
        results.append({"id": row["id"], "half": half_of(row["id"]), "is_followup": resolution.is_followup,
                        "refers_to_cited": len(resolution.refers_to_cited),
                        "relevant_among_referred": len(set(cited_dois) & set(row["relevant"])),
                        "relevant": len(row["relevant"]), "forms": scores})  # fmt: skip
    return results


def window_checks(rows: list[dict[str, Any]], latest_year: int, corpus_years: set[int]) -> list[dict[str, Any]]:
    checks = []
    for row in rows:
        if row["kind"] == "dated":
            text, expected = row["question"], [row.get("year_min"), row.get("year_max")]
        elif row["kind"] == "followup" and (stated := parse_time_window(row["resolved"], latest_year)) is not None:
            text, expected = row["turns"][1], [stated.year_min, stated.year_max]
        else:
            continue
        window = parse_time_window(text, latest_year)
        got = [window.year_min, window.year_max] if window else [None, None]
        checks.append({"id": row["id"], "half": half_of(row["id"]), "kind": row["kind"], "text": text,
                       "expected": expected, "got": got, "phrase": window.phrase if window else None,
                       "exact": got == expected, "same_corpus_years": _years(got, corpus_years) ==
                       _years(expected, corpus_years)})  # fmt: skip
    return checks


def _years(bounds: list[int | None], corpus_years: set[int]) -> set[int]:
    low, high = bounds
    return {y for y in corpus_years if (low is None or y >= low) and (high is None or y <= high)}


def summary(results: list[dict[str, Any]], checks: list[dict[str, Any]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for half in HALVES:
        rows = [r for r in results if r["half"] == half]
        forms = rows[0]["forms"] if rows else {}
        table[half] = {"questions": len(rows), "forms": {
            name: {metric: round(sum(r["forms"][name][metric] for r in rows) / len(rows), 4)
                   for metric in ("recall@5", "recall@10")} for name in forms}}  # fmt: skip
        for kind in ("dated", "followup"):
            mine = [c for c in checks if c["half"] == half and c["kind"] == kind]
            table[half][f"window_exact_{kind}"] = f"{sum(c['exact'] for c in mine)}/{len(mine)}"
            table[half][f"window_same_corpus_years_{kind}"] = f"{sum(c['same_corpus_years'] for c in mine)}/{len(mine)}"
    return table


def chosen_variant(table: dict[str, Any]) -> str:
    """The (b) variant with the best calibration recall@10 (then @5): the report half plays no part."""
    forms = table["calibration"]["forms"]
    names = [f"(b) resolved: {name}" for name in VARIANTS]
    return max(names, key=lambda n: (forms[n]["recall@10"], forms[n]["recall@5"], -names.index(n)))


def markdown(table: dict[str, Any], chosen: str) -> str:
    lines = [
        "| form | calibration R@5 | calibration R@10 | report R@5 | report R@10 |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in table["calibration"]["forms"]:
        cal, rep = table["calibration"]["forms"][name], table["report"]["forms"][name]
        mark = " *chosen*" if name == chosen else ""
        lines.append(f"| {name}{mark} | {cal['recall@5']:.3f} | {cal['recall@10']:.3f} | {rep['recall@5']:.3f} | "
                     f"{rep['recall@10']:.3f} |")  # fmt: skip
    for kind in ("dated", "followup"):
        lines.append(f"| window exact match, {kind} | {table['calibration'][f'window_exact_{kind}']} | | "
                     f"{table['report'][f'window_exact_{kind}']} | |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--questions", type=Path, default=MORE_QUESTIONS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    rows = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    searcher = Searcher(PublishedIndex.load(args.index, device="cpu"))
    weight = idf_weights([f"{d.title} {d.abstract}" for d in searcher.index.documents.values()])
    results = evaluate_followups(searcher, [r for r in rows if r["kind"] == "followup"], weight)
    corpus_years = {d.year for d in searcher.index.documents.values() if d.year is not None}
    checks = window_checks(rows, searcher.latest_year, corpus_years)
    table = summary(results, checks)
    chosen = chosen_variant(table)
    print(markdown(table, chosen))
    for check in checks:
        if not check["exact"]:
            print(f"window mismatch {check['id']}: {check['text']!r} expected {check['expected']} got "
                  f"{check['got']} (same corpus years: {check['same_corpus_years']})")  # fmt: skip
    path = write_results("followups", {
        "questions": relative(args.questions), "index": relative(args.index), "commit": git_commit(),
        "latest_year": searcher.latest_year, "cited_per_first_answer": CITED, "chosen_variant": chosen,
        "summary": table, "table_markdown": markdown(table, chosen), "per_question": results, "windows": checks,
    })  # fmt: skip
    print(f"wrote {relative(path)}")


if __name__ == "__main__":
    main()
