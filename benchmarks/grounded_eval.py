"""Grounded answering, base model vs LoRA fine-tuned, same prompts, side by side.

Two sets:
  * validation: the held-out split of models/grounded_data (non-AER abstracts; refusal examples have the
    answer's abstract removed from the passages);
  * aer: the 30 questions in benchmarks/aer_questions.jsonl (written from AER abstracts, never trained on),
    passages retrieved from the real AER index (var/index) as the service retrieves them (hybrid, then the
    reranker when one is configured); each question is asked twice, with the retrieved passages and with
    the source abstract's chunks removed.
Decoding: a few candidates are tried on the validation set; the one the fine-tuned model scores best with
is then used for the AER set (for both models). Generations are cached under var/grounded_eval/.

Columns: the base model, the fine-tuned model, and "finetuned+gate", the service's whole answering path:
the coverage gate (answering/coverage.py, thresholds from app/config.py) declines or obliges the
fine-tuned model to answer from the reranker's best score over the prompt's passages.

    python -m benchmarks.grounded_eval --adapter models/weights/smollm2-grounded-lora
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from answering.citations import SupportChecker
from answering.coverage import CoverageGate, CoverageVerdict
from answering.prompt import NOT_COVERED_ANSWER, Passage, PromptBuilder
from app.config import Settings
from indexing.documents import indexed_text
from indexing.embedding import Embedder
from models import Generator, SamplingParams
from retrieval.reranker import CrossEncoderReranker, passage_text
from training.generator.data import read_examples
from training.generator.metrics import AnswerScorer, summarize

RESULTS = Path("benchmarks/results/grounded_eval.json")
QUESTIONS = Path("benchmarks/aer_questions.jsonl")
CACHE = Path("var/grounded_eval")
MAX_NEW_TOKENS = 128
# Candidates for the service's decoding defaults (all greedy: answers must be reproducible).
DECODING = {  # on a tie the first wins: the no-repeat guard costs the fine-tuned model nothing
    "norepeat4": SamplingParams(max_new_tokens=MAX_NEW_TOKENS, no_repeat_ngram_size=4),
    "greedy": SamplingParams(max_new_tokens=MAX_NEW_TOKENS),
    "rep1.15+norepeat4": SamplingParams(max_new_tokens=MAX_NEW_TOKENS, repetition_penalty=1.15,
                                        no_repeat_ngram_size=4),
}


@dataclass
class EvalCase:
    case_id: str
    question: str
    passages: list[Passage]
    answerable: bool
    reference: str
    target_doc_ids: list[str]


def validation_cases(data_dir: Path, limit: int | None) -> list[EvalCase]:
    examples = read_examples(data_dir / "validation.jsonl")[:limit]
    return [EvalCase(e.example_id, e.question, e.passages, e.kind != "refusal", e.reference, e.target_doc_ids)
            for e in examples]


def aer_cases(index_dir: Path, passages: int, limit: int | None, settings: Settings) -> list[EvalCase]:
    """Each question with the top retrieved passages, and again with its source abstract removed."""
    from answering.answerer import to_passages
    from indexing.index import PublishedIndex
    from retrieval.search import build_search, load_reranker

    index = PublishedIndex.load(index_dir)
    rerank = load_reranker(settings.reranker, "cpu")
    search = build_search(index, settings.retrieval, rerank, settings.reranker.top_m)
    doc_of_doi = {d.doi: d.doc_id for d in index.documents.values() if d.doi}
    cases = []
    for i, line in enumerate(QUESTIONS.read_text().splitlines()[:limit]):
        item = json.loads(line)
        source = doc_of_doi[item["doi"]]
        hits = search.run(item["question"], passages + 10, rerank=rerank.available).hits
        kept = hits[:passages]
        without = [h for h in hits if h.document.doc_id != source][:passages]
        cases.append(EvalCase(f"aer-{i:02d}", item["question"], to_passages(kept), True, item["reference"], [source]))
        cases.append(EvalCase(f"aer-{i:02d}-removed", item["question"], to_passages(without), False, "", [source]))
    return cases


class ModelRunner:
    """One generator (base, or base + merged adapter) that answers cases, with an on-disk cache."""

    def __init__(self, name: str, adapter: Path | None, batch_size: int, dtype: str) -> None:
        self.name = name
        self.generator = Generator.from_pretrained(dtype=dtype, adapter=adapter)
        self.prompts = PromptBuilder(self.generator.tokenizer, self.generator.max_context)
        self.batch_size = batch_size
        tag = hashlib.sha256((adapter / "adapter.safetensors").read_bytes()).hexdigest()[:10] if adapter else "base"
        self.cache_tag = f"{name}-{tag}-{dtype}"

    def answer(self, cases: list[EvalCase], decoding: str, set_name: str,
               must_answer: bool = False) -> tuple[dict[str, str], float]:
        """Answers by case id; a cached answer is reused only for the very same prompt.

        must_answer: ban the refusal's opening, as the service does when the coverage gate is confident."""
        params = DECODING[decoding]
        if must_answer:
            params = replace(params, banned_openings=(self.prompts.refusal_opening(),))
            decoding += "+must-answer"
        path = CACHE / f"{self.cache_tag}-{set_name}-{decoding}.jsonl"
        prompts = {c.case_id: self.prompts.render(c.question, c.passages) for c in cases}
        digests = {case_id: hashlib.sha256(text.encode()).hexdigest()[:16] for case_id, text in prompts.items()}
        done: dict[str, str] = {}
        if path.is_file():
            for row in map(json.loads, path.read_text().splitlines()):
                if digests.get(row["case_id"]) == row.get("prompt_sha"):
                    done[row["case_id"]] = row["answer"]
        todo = [c for c in cases if c.case_id not in done]
        started = time.perf_counter()
        path.parent.mkdir(parents=True, exist_ok=True)
        for first in range(0, len(todo), self.batch_size):
            batch = todo[first : first + self.batch_size]
            results = self.generator.generate([prompts[c.case_id] for c in batch], params)
            with path.open("a") as handle:
                for case, result in zip(batch, results, strict=True):
                    done[case.case_id] = result.text.strip()
                    row = {"case_id": case.case_id, "prompt_sha": digests[case.case_id], "answer": done[case.case_id]}
                    handle.write(json.dumps(row) + "\n")
            print(f"  {self.name} {set_name} {decoding}: {len(done)}/{len(cases)}", flush=True)
        return {case_id: done[case_id] for case_id in prompts}, time.perf_counter() - started


class ServiceGate:
    """The service's coverage gate applied to a case's passages: the dense similarity and the reranker score
    of each passage, computed by the same models the service uses."""

    def __init__(self, settings: Settings, embedder: Embedder) -> None:
        if settings.reranker.model_dir is None:
            raise SystemExit("finetuned+gate needs the reranker (AER_RAG_RERANKER__MODEL_DIR).")
        self.reranker = CrossEncoderReranker.from_settings(settings.reranker, "cpu")
        self.embedder = embedder
        self.gate = CoverageGate.from_settings(settings.coverage)

    def assess(self, case: EvalCase) -> CoverageVerdict:
        vectors = self.embedder.encode([case.question] + [indexed_text(p.title, p.text) for p in case.passages])
        dense = (vectors[1:] @ vectors[0]).tolist()
        rerank = self.reranker.score(case.question, [passage_text(p.title, p.text) for p in case.passages]).tolist()
        return self.gate.assess(dense, rerank)


class GatedRunner:
    """The service's answering path: the gate declines (no generation), obliges the model to answer, or lets
    the fine-tuned model decide."""

    def __init__(self, model: ModelRunner, gate: ServiceGate) -> None:
        self.model = model
        self.gate = gate
        self.name = f"{model.name}+gate"

    def answer(self, cases: list[EvalCase], decoding: str, set_name: str) -> tuple[dict[str, str], float]:
        verdicts = {case.case_id: self.gate.assess(case) for case in cases}
        free, free_s = self.model.answer(cases, decoding, set_name)
        obliged_cases = [case for case in cases if verdicts[case.case_id].must_answer]
        obliged, obliged_s = self.model.answer(obliged_cases, decoding, set_name, must_answer=True)
        answers = {}
        for case in cases:
            verdict = verdicts[case.case_id]
            answers[case.case_id] = (NOT_COVERED_ANSWER if not verdict.covered
                                     else obliged[case.case_id] if verdict.must_answer else free[case.case_id])
        return answers, free_s + obliged_s


def decoding_score(summary: dict) -> float:
    """How the decoding default is chosen: supported + correct markers + refusals, minus loops."""
    return sum((summary[k] or 0.0) for k in ("supported_sentences", "correct_markers", "refusal_when_absent")) - (
        2 * (summary["repetition_loops"] or 0.0))


def print_table(results: dict) -> None:
    metrics = ("supported_sentences", "correct_markers", "refusal_when_absent", "false_refusal", "cites_target",
               "repetition_loops", "rouge_l")
    for set_name, by_model in results["sets"].items():
        print(f"\n{set_name} (decoding {by_model['decoding']}, {by_model['cases']} prompts)")
        names = [m for m in by_model if m not in ("decoding", "cases")]
        print(f"{'metric':<22}" + "".join(f"{n:>14}" for n in names))
        for metric in metrics:
            cells = [by_model[n][metric] for n in names]
            print(f"{metric:<22}" + "".join(f"{'-' if v is None else f'{v:.3f}':>14}" for v in cells))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Grounded answering benchmark: base vs LoRA fine-tuned.")
    parser.add_argument("--adapter", type=Path, default=Path("models/weights/smollm2-grounded-lora"))
    parser.add_argument("--data", type=Path, default=Path("var/grounded_data"))
    parser.add_argument("--index", type=Path, default=Path("var/index"))
    parser.add_argument("--validation-limit", type=int, default=None)
    parser.add_argument("--aer-limit", type=int, default=None, help="use only the first N AER questions")
    parser.add_argument("--passages", type=int, default=3, help="passages per AER prompt")
    parser.add_argument("--dtype", default="auto", help="generator dtype (auto = the service's: float32 on CPU)")
    parser.add_argument("--decoding", nargs="+", default=list(DECODING), choices=list(DECODING))
    parser.add_argument("--models", nargs="+", default=["base", "finetuned", "finetuned+gate"],
                        choices=["base", "finetuned", "finetuned+gate"])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--validation-only", action="store_true", help="skip the AER set (e.g. to pre-fill the cache)")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0 = torch default)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    settings = Settings()
    embedder = Embedder(device="cpu")
    scorer = AnswerScorer(SupportChecker(embedder.encode, settings.answering.support_threshold))
    sets = {"validation": validation_cases(args.data, args.validation_limit)}
    if not args.validation_only:
        sets["aer"] = aer_cases(args.index, args.passages, args.aer_limit, settings)
    runners = {name: ModelRunner(name, args.adapter if name == "finetuned" else None, args.batch_size, args.dtype)
               for name in args.models if name != "finetuned+gate"}
    if "finetuned+gate" in args.models:
        if "finetuned" not in runners:
            raise SystemExit("finetuned+gate needs the finetuned model too.")
        gate = ServiceGate(settings, embedder)
        runners["finetuned+gate"] = GatedRunner(runners["finetuned"], gate)

    def evaluate(runner: ModelRunner | GatedRunner, set_name: str, decoding: str) -> dict:
        answers, seconds = runner.answer(sets[set_name], decoding, set_name)
        scores = [scorer.score(answers[c.case_id], c.passages, c.answerable, c.reference, c.target_doc_ids)
                  for c in sets[set_name]]
        return {**summarize(scores), "generation_s": round(seconds, 1)}

    validation_grid = {d: {n: evaluate(r, "validation", d) for n, r in runners.items()} for d in args.decoding}
    chooser = "finetuned" if "finetuned" in runners else next(iter(runners))
    chosen = max(args.decoding, key=lambda d: decoding_score(validation_grid[d][chooser]))
    if args.validation_only:
        print(json.dumps(validation_grid, indent=1))
        return
    results = {
        "chosen_decoding": {"name": chosen, **asdict(DECODING[chosen])},
        "support_threshold": settings.answering.support_threshold,
        "aer_passages_per_prompt": args.passages,
        "adapter": str(args.adapter),
        "validation_by_decoding": validation_grid,
        "sets": {
            "validation": {"decoding": chosen, "cases": len(sets["validation"]),
                           **validation_grid[chosen]},
            "aer": {"decoding": chosen, "cases": len(sets["aer"]),
                    **{n: evaluate(r, "aer", chosen) for n, r in runners.items()}},
        },
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print_table(results)
    print(f"\nchosen decoding: {chosen}; wrote {RESULTS}")


if __name__ == "__main__":
    main()
