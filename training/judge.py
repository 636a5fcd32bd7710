"""Train the passage judge: a cross-encoder that reads a question and one passage and says whether the passage
answers it (issue 20's per-passage decision).

The reranker learned relevance: it ranks an abstract on the right topic first whether or not it answers what is
asked. The judge starts from the reranker's weights and is fine-tuned, whole, with a pointwise logistic loss on
pairs that contrast *what is asked* on one abstract:

  * positive   a written paraphrase question and the chunk of its abstract that answers it;
  * contrast   a near miss written for that same abstract (training/data/questions/contrast): the same topic, in
               the same voice, asking about an outcome, population, place, period or mechanism the abstract does
               not cover; the pair (near miss, that abstract) is a negative;
  * reworded   with --with-reworded: a second paraphrase of a contrast abstract worded far from it
               (training/data/questions/reworded) and the chunk that answers it, as a positive;
  * neighbour  the nearest other abstracts (dense retrieval) of either question: negatives (a little noise: a
               neighbour may answer a paraphrase too).

Only the questions of the reranker's training split are used: the held-out paraphrases, the topical and the
unanswerable questions fit the decision and its gate (python -m training.judge_gate), so
the judge must not have seen them. The logit is an affine map of the cross-encoder's score, folded into its
weights when saved, so the judge is stored (models/weights/judge/) and loaded like a reranker.

    python -m training.judge [--steps 1100] [--out models/weights/judge]
    python -m training.judge --with-reworded --steps 1300 --name aer-rag-judge-reworded-L3 \
        --out models/weights/judge-reworded          # the service averages the two judges' logits
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from corpus.documents import Chunk
from indexing.index import PublishedIndex
from retrieval.cross_encoder import SegmentPoolingCrossEncoder, load_tokenizer
from retrieval.reranker import DEFAULT_RERANKER_DIR, INFERENCE_MAX_LENGTH, RERANKER_INFO_FILE, passage_text
from training.corpus import REPO_ROOT, training_index
from training.questions.dataset import load_contrasts, load_paraphrases, load_reworded

log = logging.getLogger("training.judge")
DEFAULT_JUDGE_DIR = REPO_ROOT / "models" / "weights" / "judge"


class LabelledPair(Protocol):
    """What `train` reads of a pair (a passage's here, a sentence's in training/sentence_judge.py)."""

    question: str
    passage: str
    label: int
    weight: float


@dataclass(frozen=True)
class JudgePair:
    question: str
    passage: str
    label: int
    source: str  # "positive", "reworded", "contrast" or "neighbour"
    weight: float = 1.0  # the pair's share of the loss, beside its class's


def chunks_by_doc(index: PublishedIndex) -> dict[str, list[Chunk]]:
    chunks: dict[str, list[Chunk]] = {}
    for chunk in index.chunks:
        chunks.setdefault(chunk.doc_id, []).append(chunk)
    return chunks


def neighbours(index: PublishedIndex, question: str, exclude: str, count: int) -> list[Chunk]:
    """The `count` nearest chunks by the bi-encoder, other abstracts than `exclude`."""
    rows = [row for row, _ in index.search_dense(question, count + 4)]
    return [index.chunks[row] for row in rows if index.chunks[row].doc_id != exclude][:count]


def judge_pairs(index: PublishedIndex, neighbours_per_question: int = 2, with_reworded: bool = False
                ) -> list[JudgePair]:  # fmt: skip
    documents = index.documents
    chunks = chunks_by_doc(index)
    pairs: list[JudgePair] = []
    show = lambda chunk: passage_text(chunk.title, chunk.text)  # noqa: E731
    answerable = [("positive", q, neighbours_per_question) for q in load_paraphrases()]
    answerable += [("reworded", q, 1) for q in (load_reworded() if with_reworded else [])]
    for source, question, neighbour_count in answerable:
        if question.is_validation or question.doc_id not in documents:
            continue
        answer = question.answer_chunk(documents[question.doc_id], chunks[question.doc_id])
        pairs.append(JudgePair(question.question, show(answer), 1, source))
        pairs += [JudgePair(question.question, show(c), 0, "neighbour")
                  for c in neighbours(index, question.question, question.doc_id, neighbour_count)]  # fmt: skip
    for near_miss in load_contrasts():
        source = near_miss.source_doc_id
        if source not in documents:
            continue
        pairs += [JudgePair(near_miss.question, show(c), 0, "contrast") for c in chunks[source]]
        pairs += [JudgePair(near_miss.question, show(c), 0, "neighbour")
                  for c in neighbours(index, near_miss.question, source, 1)]  # fmt: skip
    return pairs


class AffineJudge(torch.nn.Module):
    """logit = scale * cross-encoder score + shift; folded into the cross-encoder's weights when saved."""

    def __init__(self, encoder: SegmentPoolingCrossEncoder, scale: float, shift: float) -> None:
        super().__init__()
        self.encoder = encoder
        self.scale = torch.nn.Parameter(torch.tensor(scale))
        self.shift = torch.nn.Parameter(torch.tensor(shift))

    def forward(self, **encoded: torch.Tensor) -> torch.Tensor:
        return self.scale * self.encoder(**encoded) + self.shift

    @torch.no_grad()
    def folded(self) -> SegmentPoolingCrossEncoder:
        """The cross-encoder whose score is this judge's logit: scale times every term of the score, plus shift."""
        encoder = self.encoder
        encoder.similarity_scale.mul_(self.scale)
        encoder.joint_head.weight.mul_(self.scale)
        encoder.joint_head.bias.mul_(self.scale).add_(self.shift)
        self.scale.fill_(1.0)
        self.shift.fill_(0.0)
        return encoder


def train(judge: AffineJudge, tokenizer, pairs: Sequence[LabelledPair], steps: int, batch_size: int,
          learning_rate: float, max_length: int, seed: int) -> list[float]:  # fmt: skip
    rng = random.Random(seed)
    positives = sum(p.label for p in pairs)
    # Class-balanced: each class weighs half of the loss.
    weight = {1: len(pairs) / (2 * positives), 0: len(pairs) / (2 * (len(pairs) - positives))}
    optimizer = torch.optim.AdamW([
        {"params": judge.encoder.parameters(), "lr": learning_rate, "weight_decay": 0.01},
        {"params": [judge.scale, judge.shift], "lr": 1e-2, "weight_decay": 0.0},
    ])  # fmt: skip
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (steps - s) / (steps - warmup)))
    queue: list[LabelledPair] = []
    losses: list[float] = []
    started = time.perf_counter()
    judge.train()
    for step in range(1, steps + 1):
        batch = []
        while len(batch) < batch_size:
            if not queue:
                queue = list(pairs)
                rng.shuffle(queue)
            batch.append(queue.pop())
        encoded = tokenizer([p.question for p in batch], [p.passage for p in batch], truncation="only_second",
                            max_length=max_length, padding=True, return_tensors="pt")  # fmt: skip
        logits = judge(**encoded)
        labels = torch.tensor([float(p.label) for p in batch])
        weights = torch.tensor([weight[p.label] * p.weight for p in batch])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels, weight=weights)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(judge.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if step % 25 == 0 or step == steps:
            elapsed = time.perf_counter() - started
            log.info("step %d/%d  loss %.4f  scale %.3f shift %.3f  %.0fs, about %.0fs left", step, steps,
                     float(np.mean(losses[-25:])), judge.scale.item(), judge.shift.item(), elapsed,
                     elapsed / step * (steps - step))  # fmt: skip
    judge.eval()
    return losses


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.judge", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--init", type=Path, default=DEFAULT_RERANKER_DIR, help="the reranker to start from")
    parser.add_argument("--out", type=Path, default=DEFAULT_JUDGE_DIR)
    parser.add_argument("--steps", type=int, default=1100)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=4e-5)
    parser.add_argument("--max-length", type=int, default=INFERENCE_MAX_LENGTH)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--with-reworded", action="store_true", help="the reworded paraphrases as positives too")
    parser.add_argument("--name", default="aer-rag-judge-L3", help="the model's name (reranker.json)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    pairs = judge_pairs(training_index(), with_reworded=args.with_reworded)
    counts = {source: sum(p.source == source for p in pairs)
              for source in ("positive", "reworded", "contrast", "neighbour")}  # fmt: skip
    counts = {source: count for source, count in counts.items() if count}
    log.info("%d pairs: %s", len(pairs), counts)
    tokenizer = load_tokenizer()
    judge = AffineJudge(SegmentPoolingCrossEncoder.load(args.init), scale=0.25, shift=-2.5)
    losses = train(judge, tokenizer, pairs, args.steps, args.batch_size, args.learning_rate, args.max_length,
                   args.seed)  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    judge.folded().save(args.out)
    init_info = json.loads((args.init / RERANKER_INFO_FILE).read_text())
    command = " ".join(["python -m training.judge", *(sys.argv[1:] if argv is None else argv)])
    info = {
        "name": args.name, "role": "judge: its score is the logit of P(the passage answers the question)",
        "started_from": init_info.get("name", args.init.name), "max_length": args.max_length,
        "first_stage_weight": 0.0, "bi_encoder_weight": 0.0,
        "training": {"pairs": counts, "steps": args.steps, "batch_size": args.batch_size,
                     "learning_rate": args.learning_rate, "seed": args.seed,
                     "final_loss": round(float(np.mean(losses[-50:])), 4)},
        "command": command,
    }  # fmt: skip
    (args.out / RERANKER_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
    if (args.out / "answer_head.json").exists():
        (args.out / "answer_head.json").unlink()  # the judge's score is its answer; it has no second head
    log.info("wrote %s", args.out)


if __name__ == "__main__":
    main()
