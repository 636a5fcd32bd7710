"""Choose the reranker's two mixing weights on the development questions' calibration half, and store them.

A candidate's relevance is the cross-encoder's score + bi_encoder_weight x the bi-encoder's cosine; the reranked
order then merges with the hybrid order by first_stage_weight (retrieval/reranker.py). Each grid point is scored
by two top-1 rates on the calibration half's answerable questions, each with the service's own search stage and
settings (precision, pair length, depth):

  service top-1   the first hit after hybrid retrieval and rerank is from a relevant abstract
  hard top-1      the answering abstract outscores the 9 abstracts BM25 ranks highest for the question

The pair with the best mean of the two wins (ties: the smaller weights). The weights go into reranker.json and
the command into its command chain; the report half is never looked at.

    python -m training.reranker.calibrate [--reranker models/weights/reranker] [--index var/index]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from retrieval.hybrid import HybridSettings
from retrieval.reranker import (
    DEFAULT_RERANKER_DIR,
    RERANKER_INFO_FILE,
    CrossEncoderReranker,
    RerankerSettings,
    passage_text,
    rerank_order,
)  # fmt: skip
from retrieval.search import RerankState, build_search
from training.corpus import REPO_ROOT
from training.evaluation.dev_questions import load_dev_questions
from training.evaluation.hard_candidates import bi_encoder_scorer, candidate_set, rows_by_document
from training.reranker.card import write_model_card
from training.reranker.trainer import TrainingSettings

log = logging.getLogger("training.reranker.calibrate")

BI_ENCODER_WEIGHTS = (0.0, 5.0, 10.0, 20.0, 30.0, 40.0)
FIRST_STAGE_WEIGHTS = (0.0, 0.25, 0.5, 1.0)


@dataclass(frozen=True)
class QuestionScores:
    """One question's scores, computed once so that every grid point is a cheap recombination."""

    pool_relevant: np.ndarray  # per hybrid candidate (search order): from a relevant abstract?
    pool_scores: np.ndarray  # cross-encoder scores of the candidates
    pool_cosines: np.ndarray
    hard_owners: list[int]
    hard_scores: np.ndarray
    hard_cosines: np.ndarray
    hard_doc_count: int


def collect(index: PublishedIndex, reranker: CrossEncoderReranker, top_m: int) -> list[QuestionScores]:
    search = build_search(LocalIndexBackend(index), index.embedder, HybridSettings(), RerankState(None, "scored here"),
                          top_m)  # fmt: skip
    doc_of_doi = {document.doi: doc_id for doc_id, document in index.documents.items() if document.doi}
    rows_of, bi_encoder = rows_by_document(index), bi_encoder_scorer(index)
    collected = []
    for question in load_dev_questions(halves=("calibration",)):
        relevant = [doc_of_doi[doi] for doi in question.relevant if doi in doc_of_doi]
        if not question.answerable or not relevant:
            continue
        outcome = search.run(question.question, top_m, rerank=False)
        hits = outcome.hits
        candidates = candidate_set(index, question.question, relevant[0], relevant, rows_of)
        hard_passages = [passage_text(index.chunks[row].title, index.chunks[row].text) for row in candidates.rows]
        collected.append(QuestionScores(
            pool_relevant=np.array([hit.chunk.doc_id in relevant for hit in hits]),
            pool_scores=reranker.score(question.question, [passage_text(h.chunk.title, h.chunk.text) for h in hits]),
            pool_cosines=np.array(search.dense_similarities(outcome.query, hits)),
            hard_owners=candidates.owners,
            hard_scores=reranker.score(question.question, hard_passages),
            hard_cosines=bi_encoder(candidates),
            hard_doc_count=len(candidates.doc_ids),
        ))  # fmt: skip
    return collected


def top1_rates(scores: list[QuestionScores], bi_encoder_weight: float, first_stage_weight: float) -> dict:
    service, hard = [], []
    for q in scores:
        order = rerank_order(q.pool_scores + bi_encoder_weight * q.pool_cosines, first_stage_weight)
        service.append(bool(q.pool_relevant[order[0]]))
        best = np.full(q.hard_doc_count, -np.inf)
        np.maximum.at(best, np.asarray(q.hard_owners), q.hard_scores + bi_encoder_weight * q.hard_cosines)
        hard.append(bool(best[0] > best[1:].max()))
    return {"service_top1": round(float(np.mean(service)), 3), "hard_top1": round(float(np.mean(hard)), 3)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.reranker.calibrate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--reranker", type=Path, default=DEFAULT_RERANKER_DIR)
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    settings = RerankerSettings(model_dir=args.reranker)  # the service's precision, pair length and depth
    reranker = CrossEncoderReranker(args.reranker, "cpu", settings.max_length, settings.batch_size,
                                    settings.precision, first_stage_weight=0.0, bi_encoder_weight=0.0)  # fmt: skip
    scores = collect(PublishedIndex.load(args.index, device="cpu"), reranker, settings.top_m)
    grid = [{"bi_encoder_weight": b, "first_stage_weight": f, **top1_rates(scores, b, f)}
            for b in BI_ENCODER_WEIGHTS for f in FIRST_STAGE_WEIGHTS]  # fmt: skip
    for row in grid:
        log.info("%s", row)
    best = max(grid, key=lambda r: (r["service_top1"] + r["hard_top1"], -r["bi_encoder_weight"],
                                    -r["first_stage_weight"]))  # fmt: skip

    info_path = args.reranker / RERANKER_INFO_FILE
    info = json.loads(info_path.read_text())
    command = "python -m training.reranker.calibrate " + " ".join(sys.argv[1:] if argv is None else argv)
    info.update({
        "bi_encoder_weight": best["bi_encoder_weight"], "first_stage_weight": best["first_stage_weight"],
        "weights_calibration": {"questions": len(scores), "settings": settings.model_dump(mode="json",
                                exclude={"model_dir"}), "chosen": best, "grid": grid},
        "commands": list(dict.fromkeys([*info.get("commands", []), command.strip()])),
    })  # fmt: skip
    info_path.write_text(json.dumps(info, indent=2) + "\n")
    write_model_card(args.reranker, info, TrainingSettings(**info["training"]))
    log.info("chose %s; wrote %s", best, info_path)


if __name__ == "__main__":
    main()
