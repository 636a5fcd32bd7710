"""Calibrate the service's thresholds on non-AER economics abstracts (never the AER corpus).

1. Support threshold (citations): cosine similarity between an answer sentence and the closest passage
   sentence. Claims are paper titles; a title is supported by its own abstract (positive) and not by
   the most similar *other* abstract (a hard negative). The threshold maximises balanced accuracy.
2. Coverage threshold (refuse instead of answering): the best passage's dense cosine for questions whose
   paper is in a small index (covered) against questions on other subjects entirely (off-topic). The
   threshold keeps 97.5% of covered questions answerable, with a margin above the highest off-topic score
   when there is room for one. With a reranker configured (AER_RAG_RERANKER__MODEL_DIR), its best score is
   calibrated the same way, as a comparison: the dense score separates off-topic questions better.
3. Answerability thresholds (needs the reranker): its best score over the prompt's passages for questions
   on papers the reranker never trained on, with the paper among the passages and with its chunks
   removed. Below the balanced-accuracy cut the service declines; from the 95th percentile of the
   answer-removed scores up, the generator may not decline (answering/coverage.py).

    .venv/bin/python -m benchmarks.calibrate_thresholds [--docs 1500] [--claims 400]

Prints tables and writes benchmarks/results/calibration.json; copy the chosen values into app/config.py.
"""

from __future__ import annotations

import argparse
import csv
import json
import random

import numpy as np

from answering.citations import SupportChecker
from answering.prompt import Passage
from app.config import REPO_ROOT, Settings
from indexing.index import PublishedIndex
from indexing.loader import fallback_doc_id
from indexing.pipeline import IngestionPipeline, IngestionSettings
from retrieval.search import SearchPipeline, build_search, load_reranker
from training.reranker.data import VALIDATION_FRACTION as RERANKER_VALIDATION_FRACTION
from training.reranker.data import in_validation_split

ECON = REPO_ROOT.parent / "shared" / "data" / "econ_other_abstracts.csv"
RESULTS = REPO_ROOT / "benchmarks" / "results" / "calibration.json"
WORK = REPO_ROOT / "var" / "calibration"

OFF_TOPIC = [
    "How long should sourdough bread bake and at what temperature?",
    "What is the best way to train a puppy to sit?",
    "Which planets in the solar system have rings?",
    "How do I change a flat tire on a bicycle?",
    "What are the symptoms of vitamin D deficiency?",
    "Who painted the ceiling of the Sistine Chapel?",
    "How does photosynthesis work in desert plants?",
    "What is the difference between a violin and a viola?",
    "How do volcanoes form along tectonic plate boundaries?",
    "What are good exercises for lower back pain?",
    "How do I install Python packages on Windows?",
    "What is the plot of Shakespeare's Hamlet?",
    "How many moons does Jupiter have?",
    "What is the chemical formula of table salt?",
    "How do honeybees communicate the location of flowers?",
    "What temperature does water boil at high altitude?",
    "Which football club has won the most Champions League titles?",
    "How do I knit a scarf for beginners?",
    "What causes the northern lights?",
    "How should I care for a cactus indoors?",
    "What is the tallest mountain in Africa?",
    "How do vaccines train the immune system?",
    "What were the main causes of the fall of the Roman Empire?",
    "How does a jet engine produce thrust?",
    "What is the recommended daily water intake for adults?",
    "How do octopuses change color?",
    "Which programming language should I learn for web development?",
    "How is glass made from sand?",
    "What is the life cycle of a butterfly?",
    "How do I remove a red wine stain from a carpet?",
    "What is dark matter in astrophysics?",
    "How do you play the opening moves of the Sicilian Defense in chess?",
    "What is the best season to visit Iceland?",
    "How do earthquakes get measured on the Richter scale?",
    "What does DNA polymerase do during replication?",
    "How can I improve my sleep quality?",
    "Who wrote the novel One Hundred Years of Solitude?",
    "How do solar panels convert sunlight into electricity?",
    "What is the migration route of monarch butterflies?",
    "How do I make fresh pasta at home?",
]


def read_econ_rows() -> list[dict[str, str]]:
    with ECON.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def best_threshold(positives: np.ndarray, negatives: np.ndarray) -> tuple[float, float]:
    """The cut maximising balanced accuracy (mean of true-positive and true-negative rates)."""
    candidates = np.unique(np.concatenate([positives, negatives]))
    scores = [((positives >= t).mean() + (negatives < t).mean()) / 2 for t in candidates]
    best = int(np.argmax(scores))
    return float(candidates[best]), float(scores[best])


def calibrate_support(index: PublishedIndex, rows: list[dict[str, str]], n_claims: int, seed: int) -> dict:
    rng = random.Random(seed)
    sample = rng.sample(rows, n_claims)
    abstracts = [row["abstract"] for row in sample]
    vectors = index.embedder.encode(abstracts)
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, -1)
    checker = SupportChecker(index.embedder.encode, threshold=0.0)

    def closeness(claim: str, text: str) -> float | None:
        report = checker.check(claim, [Passage(1, "d", "d#0", "", None, text)])
        claims = [s for s in report.sentences if s.is_claim]
        return max(s.similarity for s in claims) if claims else None  # type: ignore[type-var]

    positives, negatives = [], []
    for i, row in enumerate(sample):
        own = closeness(row["title"], row["abstract"])
        other = closeness(row["title"], abstracts[int(similarity[i].argmax())])
        if own is not None and other is not None:
            positives.append(own)
            negatives.append(other)
    pos, neg = np.array(positives), np.array(negatives)
    threshold, balanced = best_threshold(pos, neg)
    return {
        "pairs": len(pos),
        "threshold": round(threshold, 3),
        "balanced_accuracy": round(balanced, 3),
        "supported_rate_own_abstract": round(float((pos >= threshold).mean()), 3),
        "supported_rate_nearest_other_abstract": round(float((neg >= threshold).mean()), 3),
        "own_mean": round(float(pos.mean()), 3),
        "other_mean": round(float(neg.mean()), 3),
    }


def row_doc_id(row: dict[str, str]) -> str:
    """The id the ingestion loader gives this row's document."""
    return row["doi"].strip() or fallback_doc_id(row.get("title", ""), row["abstract"])


def reranker_held_out(row: dict[str, str]) -> bool:
    """Rows the reranker never trained on (its validation split): its scores on them are honest."""
    return in_validation_split(row_doc_id(row), RERANKER_VALIDATION_FRACTION)


def build_index(rows: list[dict[str, str]], n_docs: int, seed: int) -> tuple[PublishedIndex, list, list]:
    """An index of n_docs abstracts: every one the reranker held out, the rest drawn at random."""
    rng = random.Random(seed)
    shuffled = rows[:]
    rng.shuffle(shuffled)
    shuffled.sort(key=lambda row: not reranker_held_out(row))  # stable: held-out rows first, each group shuffled
    indexed = shuffled[:n_docs]
    WORK.mkdir(parents=True, exist_ok=True)
    corpus = WORK / "corpus.csv"
    with corpus.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(indexed)
    IngestionPipeline(IngestionSettings(corpus=corpus, out_dir=WORK / "index", show_progress=True)).run()
    return PublishedIndex.load(WORK / "index"), indexed, shuffled[n_docs:]


def calibrate_coverage(search: SearchPipeline, indexed: list[dict[str, str]], n_queries: int, seed: int) -> dict:
    rerank = search.rerank
    covered_queries = [f"What does research find about {row['title'].rstrip('.?')}?"
                       for row in random.Random(seed).sample(indexed, n_queries)]  # fmt: skip
    signals: dict[str, dict[str, list[float]]] = {"dense": {}, "rerank": {}}
    for label, queries in (("covered", covered_queries), ("off_topic", OFF_TOPIC)):
        for signal in signals:
            signals[signal][label] = []
        for query in queries:
            outcome = search.run(query, 5, rerank=rerank.available)
            signals["dense"][label].append(max(search.dense_similarities(query, outcome.hits)))
            if rerank.available:
                signals["rerank"][label].append(max(h.rerank_score for h in outcome.hits))  # type: ignore[type-var]
    report: dict = {"reranker": rerank.reason}
    for signal, by_label in signals.items():
        if not by_label["covered"]:
            continue
        covered, off_topic = np.array(by_label["covered"]), np.array(by_label["off_topic"])
        # Keep 97.5% of answerable questions; if that still refuses every off-topic one, leave a margin
        # halfway down to the highest off-topic score.
        threshold = float(np.quantile(covered, 0.025))
        if off_topic.max() < threshold:
            threshold = (threshold + float(off_topic.max())) / 2
        report[signal] = {
            "threshold": round(threshold, 3),
            "covered_answered": round(float((covered >= threshold).mean()), 3),
            "off_topic_refused": round(float((off_topic < threshold).mean()), 3),
            "covered_median": round(float(np.median(covered)), 3),
            "off_topic_median": round(float(np.median(off_topic)), 3),
            "off_topic_max": round(float(off_topic.max()), 3),
        }
    return report


def calibrate_answerability(search: SearchPipeline, indexed: list[dict[str, str]], n_queries: int, top_k: int,
                            seed: int) -> dict:
    """The reranker's best score over the passages a prompt gets, with the question's paper among them
    (answerable) and with its chunks removed (related passages only). Only papers the reranker held out
    from training are asked about, and only when retrieval found the paper, as on the AER benchmark."""
    held_out = [row for row in indexed if reranker_held_out(row) and row["title"].strip()]
    sample = random.Random(seed).sample(held_out, min(n_queries, len(held_out)))
    present, removed = [], []
    for row in sample:
        query = f"What does research find about {row['title'].rstrip('.?')}?"
        hits = search.run(query, top_k + 10, rerank=True).hits
        source = row_doc_id(row)
        if source not in {hit.document.doc_id for hit in hits[:top_k]}:
            continue
        without_source = [hit for hit in hits if hit.document.doc_id != source][:top_k]
        present.append(max(hit.rerank_score for hit in hits[:top_k]))  # type: ignore[type-var]
        removed.append(max(hit.rerank_score for hit in without_source))  # type: ignore[type-var]
    answerable, answer_removed = np.array(present), np.array(removed)
    decline_below, balanced = best_threshold(answerable, answer_removed)
    # From here up the generator may not decline: fewer than 1 in 20 answer-removed cases score this high.
    must_answer_from = max(decline_below, float(np.quantile(answer_removed, 0.95)))
    quantiles = (0.05, 0.25, 0.5, 0.75, 0.95)
    return {
        "questions": len(answerable),
        "min_rerank": round(decline_below, 3),
        "balanced_accuracy": round(balanced, 3),
        "answer_min_rerank": round(must_answer_from, 3),
        "answerable_declined": round(float((answerable < decline_below).mean()), 3),
        "answer_removed_declined": round(float((answer_removed < decline_below).mean()), 3),
        "answerable_must_answer": round(float((answerable >= must_answer_from).mean()), 3),
        "answerable_quantiles": [round(float(np.quantile(answerable, q)), 2) for q in quantiles],
        "answer_removed_quantiles": [round(float(np.quantile(answer_removed, q)), 2) for q in quantiles],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1500, help="economics abstracts in the calibration index")
    parser.add_argument("--claims", type=int, default=400, help="title/abstract pairs for the support threshold")
    parser.add_argument("--queries", type=int, default=200, help="covered questions for the coverage thresholds")
    parser.add_argument("--answerability-queries", type=int, default=300,
                        help="questions on papers the reranker held out, for the answerability thresholds")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--skip-support", action="store_true",
                        help="keep the support calibration from the last results file (e.g. after a new reranker)")
    args = parser.parse_args()

    rows = read_econ_rows()
    index, indexed, _ = build_index(rows, args.docs, args.seed)
    if args.skip_support:
        support = json.loads(RESULTS.read_text())["support"]
    else:
        support = calibrate_support(index, rows, args.claims, args.seed)
    settings = Settings()
    rerank = load_reranker(settings.reranker, "cpu")
    search = build_search(index, settings.retrieval, rerank, settings.reranker.top_m)
    coverage = calibrate_coverage(search, indexed, args.queries, args.seed)
    answerability = (
        calibrate_answerability(search, indexed, args.answerability_queries, settings.answering.top_k, args.seed)
        if rerank.available
        else None
    )

    print("\nSupport threshold (answer sentence vs closest passage sentence, cosine)")
    print("| pairs | threshold | balanced acc. | own abstract supported | nearest other supported |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {support['pairs']} | {support['threshold']} | {support['balanced_accuracy']} | "
          f"{support['supported_rate_own_abstract']} | {support['supported_rate_nearest_other_abstract']} |")
    print("\nCoverage thresholds (best passage score; covered = paper in the index, off-topic = not economics)")
    print("| signal | threshold | covered answered | off-topic refused | covered median | off-topic median |")
    print("|---|---:|---:|---:|---:|---:|")
    for signal in ("dense", "rerank"):
        if signal in coverage:
            row = coverage[signal]
            print(f"| {signal} | {row['threshold']} | {row['covered_answered']} | {row['off_topic_refused']} | "
                  f"{row['covered_median']} | {row['off_topic_median']} |")
    if answerability:
        print(f"\nAnswerability thresholds (reranker's best score over the top {settings.answering.top_k} passages; "
              "answerable = the question's paper among them, removed = its chunks taken out)")
        print("| questions | decline below | balanced acc. | answerable declined | removed declined | "
              "must answer from | answerable must answer |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        row = answerability
        print(f"| {row['questions']} | {row['min_rerank']} | {row['balanced_accuracy']} | {row['answerable_declined']} "
              f"| {row['answer_removed_declined']} | {row['answer_min_rerank']} | {row['answerable_must_answer']} |")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    results = {"support": support, "coverage": coverage, "answerability": answerability, "args": vars(args)}
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {RESULTS.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
