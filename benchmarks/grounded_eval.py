"""Grounded answering on the held-out split of the generator's training data (training/generator/data.py: written
questions about non-AER abstracts the adapter never saw), the base model beside LoRA adapters, same prompts.

Each model answers as the service has it answer: greedy with no repeated 4-grams, and, for the questions whose
passages hold the answer, the refusal's opening banned (the answerability decision has said "answer"); the
unanswerable questions are asked with the refusal allowed (a request with the decision off). Scored by the
service's own citation checker (training/generator/metrics.py). The headline AER figures come from
benchmarks/aer_dev.py, through the service.

    python -m benchmarks.grounded_eval --data var/grounded_data_q \\
        --adapter shipped=models/weights/smollm2-grounded-lora [--adapter other=var/adapter_x]

Prints a table and writes benchmarks/results/grounded_eval.json.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import torch

from answering.answerer import AnsweringSettings
from answering.citations import SupportChecker
from answering.prompt import PromptBuilder
from benchmarks.common import machine, relative, write_results
from indexing.embedding import Embedder
from models import Generator, SamplingParams
from training.generator.data import GroundedExample, read_examples
from training.generator.metrics import AnswerScorer, summarize

METRICS = ("supported_sentences", "correct_markers", "cites_target", "false_refusal", "refusal_when_absent",
           "repetition_loops", "rouge_l")  # fmt: skip


def answers(generator: Generator, examples: list[GroundedExample], batch_size: int) -> tuple[list[str], float]:
    settings = AnsweringSettings()
    prompts = PromptBuilder(generator.tokenizer, generator.max_context)
    free = SamplingParams(max_new_tokens=settings.max_new_tokens, no_repeat_ngram_size=settings.no_repeat_ngram_size)
    obliged = replace(free, banned_openings=(prompts.refusal_opening(),))
    started = time.perf_counter()
    texts: list[str] = []
    for first in range(0, len(examples), batch_size):
        batch = examples[first : first + batch_size]
        streams = [generator.stream(prompts.render(e.question, e.passages), free if e.kind == "refusal" else obliged)
                   for e in batch]  # fmt: skip
        texts += [stream.wait().text.strip() for stream in streams]
        print(f"  {len(texts)}/{len(examples)}", flush=True)
    return texts, time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.grounded_eval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--data", type=Path, default=Path("var/grounded_data"))
    parser.add_argument("--adapter", action="append", default=[], metavar="NAME=PATH",
                        help="an adapter to compare with the base model (repeatable)")  # fmt: skip
    parser.add_argument("--limit", type=int, default=None, help="the first N validation examples only")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    examples = read_examples(args.data / "validation.jsonl")[: args.limit]
    scorer = AnswerScorer(SupportChecker(Embedder(device="cpu").encode, AnsweringSettings().support_threshold))
    models = {"base": None, **{spec.split("=", 1)[0]: Path(spec.split("=", 1)[1]) for spec in args.adapter}}
    results = {}
    for name, adapter in models.items():
        print(f"{name}: answering {len(examples)} prompts", flush=True)
        generator = Generator.from_pretrained(device="cpu", adapter=adapter)
        texts, seconds = answers(generator, examples, args.batch_size)
        scores = [scorer.score(text, e.passages, e.kind != "refusal", e.reference, e.target_doc_ids)
                  for text, e in zip(texts, examples, strict=True)]  # fmt: skip
        results[name] = {**summarize(scores), "adapter": relative(adapter) if adapter else None,
                         "generation_s": round(seconds, 1)}  # fmt: skip
        generator.shutdown()
    print(f"\nvalidation split of {relative(args.data)}: {len(examples)} prompts")
    print("| metric | " + " | ".join(models) + " |\n|---|" + "---:|" * len(models))
    for metric in METRICS:
        cells = ["–" if results[n][metric] is None else f"{results[n][metric]:.3f}" for n in models]
        print(f"| {metric} | " + " | ".join(cells) + " |")
    out = write_results("grounded_eval", {"data": relative(args.data), "prompts": len(examples),
                                          "machine": machine(), "models": results})  # fmt: skip
    print(f"wrote {relative(out)}")


if __name__ == "__main__":
    main()
