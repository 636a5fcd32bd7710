"""The training loop: listwise softmax loss over (query, positive, hard negatives) groups."""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from indexing.embedding import default_model_dir
from retrieval.cross_encoder import SegmentPoolingCrossEncoder, load_tokenizer
from retrieval.reranker import RERANKER_INFO_FILE, autocast_for
from runtime.device import resolve_device, resolve_dtype
from training.reranker.data import TrainingGroup

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingSettings:
    steps: int = 500
    groups_per_step: int = 2  # each group = 1 positive + its negatives, scored together
    learning_rate: float = 4e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    max_length: int = 160  # query + passage tokens; longer passages are cut at the end
    num_layers: int = 3  # encoder layers (fewer = faster); a trained reranker is cut or grown to this depth
    seed: int = 13
    device: str = "cpu"
    precision: str = "auto"  # "auto": bfloat16 autocast on CUDA and on CPUs with AMX/AVX512-BF16
    log_every: int = 25

    def __post_init__(self) -> None:
        checks = {
            "steps": self.steps >= 0,  # 0: no training, only validate (and re-save) the initial model
            "groups_per_step": self.groups_per_step >= 1,
            "learning_rate": 0 < self.learning_rate < 1,
            "warmup_fraction": 0 <= self.warmup_fraction < 1,
            "weight_decay": self.weight_decay >= 0,
            "max_length": 32 <= self.max_length <= 512,
            "num_layers": 1 <= self.num_layers <= 12,
            "log_every": self.log_every >= 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            values = ", ".join(f"{name}={getattr(self, name)!r}" for name in bad)
            raise ValueError(f"Invalid training settings: {values}.")


class RerankerTrainer:
    """Fine-tunes a cross-encoder so each group's positive outscores its negatives.

    init_dir is either a plain BERT encoder (all-MiniLM-L6-v2: a new reranker is built on it, keeping
    its first num_layers layers) or an already trained reranker (training continues from it, cut or grown
    to num_layers; new layers come from base_encoder_dir, all-MiniLM-L6-v2 by default).
    """

    def __init__(self, init_dir: Path, settings: TrainingSettings, base_encoder_dir: Path | None = None) -> None:
        self.settings = settings
        torch.manual_seed(settings.seed)
        self.dtype = resolve_dtype(settings.precision, resolve_device(settings.device), auto="fast")
        self.tokenizer: PreTrainedTokenizerBase = load_tokenizer()
        if (init_dir / RERANKER_INFO_FILE).is_file():
            model = SegmentPoolingCrossEncoder.load(init_dir)
            model.set_depth(settings.num_layers, base_encoder_dir or default_model_dir())
        else:
            model = SegmentPoolingCrossEncoder.from_encoder(init_dir, settings.num_layers)
        self.model = model.to(settings.device)

    @torch.no_grad()
    def average_with(self, other_dir: Path, weight: float) -> None:
        """Move every weight to (1 - weight) * ours + weight * other's: two models fine-tuned from one
        ancestor often keep the strengths of both when averaged (WiSE-FT)."""
        other = SegmentPoolingCrossEncoder.load(other_dir).state_dict()
        ours = self.model.state_dict()
        if other.keys() != ours.keys() or any(other[k].shape != ours[k].shape for k in ours):
            raise ValueError(f"{other_dir} is not the same architecture as the starting reranker.")
        for name, value in ours.items():
            if value.is_floating_point():
                value.lerp_(other[name].to(value.device, value.dtype), weight)

    def train(self, groups: list[TrainingGroup]) -> list[float]:
        """Run settings.steps optimiser steps over shuffled groups (cycling if needed); return step losses."""
        settings = self.settings
        if settings.steps == 0:
            return []
        if not groups:
            raise ValueError("No training groups: check the data paths and the mining settings.")
        order = random.Random(settings.seed)
        optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
        )
        warmup = int(settings.steps * settings.warmup_fraction)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: _linear_schedule(step, warmup, settings.steps)
        )
        queue: list[TrainingGroup] = []
        losses: list[float] = []
        started = time.perf_counter()
        self.model.train()
        for step in range(1, settings.steps + 1):
            batch: list[TrainingGroup] = []
            while len(batch) < settings.groups_per_step:
                if not queue:
                    queue = list(groups)
                    order.shuffle(queue)
                batch.append(queue.pop())
            loss = self._step_loss(batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
            if step % settings.log_every == 0 or step == settings.steps:
                elapsed = time.perf_counter() - started
                recent = losses[-settings.log_every :]
                log.info(
                    "step %d/%d  loss %.4f  lr %.2e  %.1fs elapsed, about %.0fs left",
                    step, settings.steps, sum(recent) / len(recent), scheduler.get_last_lr()[0],
                    elapsed, elapsed / step * (settings.steps - step),
                )  # fmt: skip
        self.model.eval()
        return losses

    def _step_loss(self, batch: list[TrainingGroup]) -> torch.Tensor:
        queries = [group.query for group in batch for _ in range(1 + len(group.negatives))]
        passages = [passage for group in batch for passage in (group.positive, *group.negatives)]
        encoded = self.tokenizer(
            queries, passages, truncation="only_second", max_length=self.settings.max_length,
            padding=True, return_tensors="pt",
        ).to(self.settings.device)  # fmt: skip
        with autocast_for(self.settings.device, self.dtype):
            logits = self.model(**encoded).float()
        # Softmax over each group; the positive is always at position 0 of its group.
        loss = logits.new_zeros(())
        offset = 0
        for group in batch:
            size = 1 + len(group.negatives)
            group_logits = logits[offset : offset + size]
            loss = loss + torch.nn.functional.cross_entropy(group_logits[None, :], group_logits.new_zeros(1).long())
            offset += size
        return loss / len(batch)

    def save(self, out_dir: Path, info: dict) -> None:
        """Write the weights (4-bit deltas), config and reranker.json (name, training settings)."""
        self.model.save(out_dir)
        # info may carry "training" itself: a re-validated model keeps its original training settings.
        payload = {"max_length": self.settings.max_length, "training": asdict(self.settings), **info}
        (out_dir / RERANKER_INFO_FILE).write_text(json.dumps(payload, indent=2) + "\n")


def _linear_schedule(step: int, warmup: int, total: int) -> float:
    if step < warmup:
        return (step + 1) / (warmup + 1)
    return max(0.0, (total - step) / max(1, total - warmup))
