"""The model card written beside the trained weights (MODEL_CARD.md).

The SciFact test table between the EVALUATION markers is filled in by
`benchmarks/retrieval_eval.py --update-model-card`, so retraining keeps the card's structure.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from training.reranker.trainer import TrainingSettings

CARD_FILE = "MODEL_CARD.md"
EVALUATION_START = "<!-- EVALUATION:START -->"
EVALUATION_END = "<!-- EVALUATION:END -->"
NOT_MEASURED = "Not measured yet: run `python -m benchmarks.retrieval_eval --update-model-card`."


def write_model_card(out_dir: Path, info: dict[str, Any], settings: TrainingSettings) -> Path:
    path = out_dir / CARD_FILE
    previous = path.read_text() if path.is_file() else ""
    evaluation = _between_markers(previous) or NOT_MEASURED
    lines = [
        f"# {info['name']}",
        "",
        "A BERT cross-encoder reranker for aer-rag: it reads a query and a passage together and returns one",
        "relevance score (higher = more relevant). Trained in this repository on CPU; no external model hub.",
        "",
        "## Model",
        f"- Initialised from: {info['init']}; first {settings.num_layers} encoder layers kept.",
        "- Scoring head (retrieval/cross_encoder.py): scale x cosine(mean of query tokens, mean of passage",
        "  tokens) + a linear layer on the mean of all tokens, over the joint encoding. all-MiniLM-L6-v2 was",
        "  trained with mean pooling, so a [CLS] classifier starts from a near-constant score.",
        f"- Input: `query [SEP] title\\npassage`, truncated to {settings.max_length} tokens during training.",
        "- Weights stored as 4-bit deltas against all-MiniLM-L6-v2 (retrieval/weight_deltas.py, 6 MB). On the CPU",
        "  the service runs the linear layers in int8",
        "  (dynamic quantization; precision auto); on a GPU in float16/bfloat16.",
        "",
        "## Training data (never AER rows, never SciFact test queries)",
        *[f"- {source}: {count} groups" for source, count in info["training_groups"].items()],
        "- econ-title: a non-AER economics title (econ_other_abstracts.csv) as the query for its abstract;",
        "  econ-ict: one sentence of an abstract as the query for the rest (inverse cloze);",
        "  scifact: a SciFact train claim and a cited abstract (5 in 6 of train claims; the rest is a dev split);",
        "  questions: a question written the way users ask about a non-AER economics abstract, for that",
        "  abstract (training/data/questions/; held-out abstracts' questions validate).",
        f"- Hard negatives per group: {_mining(info['mining'])},",
        "  mined with the project's own BM25 and dense retrievers over indexes built by the real",
        "  IngestionPipeline (the economics index without titles, so a title query cannot match itself).",
        "- 5% of economics documents (by a hash of their id) are held out for validation.",
        "",
        "## Training",
        *_averaged_note(info),
        "- Loss: softmax cross-entropy over each group (1 positive + its negatives).",
        f"- {settings.steps} steps of {settings.groups_per_step} groups; AdamW lr {settings.learning_rate}, "
        f"linear warm-up {settings.warmup_fraction:.0%} then decay; seed {settings.seed}.",
        f"- Settings: `{asdict(settings)}`",
        "",
        "Reproduce (in order):",
        "```",
        *info["commands"],
        "```",
        "",
        "## Validation (held-out splits; rerank of the hybrid top-30 chunks)",
        *_validation_table(info["validation"]),
        "",
        *_weights_note(info),
        "",
        "## SciFact test (BEIR, 300 queries)",
        EVALUATION_START,
        evaluation,
        EVALUATION_END,
        "",
    ]
    path.write_text("\n".join(lines))
    return path


def replace_evaluation(card_path: Path, evaluation_markdown: str) -> None:
    """Replace the text between the EVALUATION markers of an existing card."""
    text = card_path.read_text()
    start, end = text.index(EVALUATION_START), text.index(EVALUATION_END)
    card_path.write_text(text[: start + len(EVALUATION_START)] + "\n" + evaluation_markdown.strip() + "\n" + text[end:])


def _between_markers(text: str) -> str:
    if EVALUATION_START not in text or EVALUATION_END not in text:
        return ""
    return text[text.index(EVALUATION_START) + len(EVALUATION_START) : text.index(EVALUATION_END)].strip()


def _averaged_note(info: dict[str, Any]) -> list[str]:
    if "averaged_from" not in info:
        return []
    first, second = info["averaged_from"]
    return [f"- A weight average of {first} and {second}, with no training after it. The data above and the run",
            f"  below are {second}'s last run; every run of both parents is under Reproduce."]  # fmt: skip


def _weights_note(info: dict[str, Any]) -> list[str]:
    first_stage = f"{info.get('first_stage_weight', 0.0):g}"
    if "weights_calibration" not in info:
        return [f"The service merges the model's order with the hybrid order (first-stage weight {first_stage}, see",
                "`rerank_order` in retrieval/reranker.py); the weight was chosen on the first split above (nDCG@10)",
                "and is stored in reranker.json."]  # fmt: skip
    chosen = info["weights_calibration"]["chosen"]
    return [
        f"The service ranks by the model's score + {info['bi_encoder_weight']:g} x the bi-encoder's cosine "
        f"(all-MiniLM-L6-v2), then merges that order with the hybrid order (first-stage weight {first_stage}; "
        "`rerank_order` in retrieval/reranker.py). Both weights were chosen on the development questions' "
        f"calibration half by `python -m training.reranker.calibrate` ({info['weights_calibration']['questions']} "
        f"answerable questions: service top-1 {chosen['service_top1']:.3f}, top-1 among 10 hard candidates "
        f"{chosen['hard_top1']:.3f}; the grid is in reranker.json).",
    ]


def _mining(mining: dict[str, Any]) -> str:
    return (
        f"{mining['bm25_negatives']} from BM25, {mining['dense_negatives']} from dense retrieval "
        f"(top {mining['search_depth']}), {mining['random_negatives']} random"
    )


def _validation_table(validation: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """One row per (split, ranking); a metric a split does not report (top-1 vs nDCG) shows as a dash."""
    names = ("ndcg@10", "mrr@10", "recall@10", "top1")
    lines = ["| split | ranking | nDCG@10 | MRR@10 | Recall@10 | top-1 |", "| --- | --- | --- | --- | --- | --- |"]
    for split, rows in validation.items():
        for label, metrics in rows.items():
            scores = " | ".join(f"{metrics[name]:.4f}" if name in metrics else "-" for name in names)
            lines.append(f"| {split} | {label} | {scores} |")
    return lines
