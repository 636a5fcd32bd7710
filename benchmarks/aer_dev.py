"""The development questions through the real service path: does it answer, and cite the right papers?

Each configuration is served by `python -m app` on loopback (its settings as AER_RAG_* variables; `--repo
LABEL=PATH` serves that configuration from another checkout, e.g. the commit before a change); every
development question goes through POST /v1/search (top 10) and a streamed POST /v1/ask, as a user's would.
Printed per kind (paraphrase, topical, unanswerable) and half (calibration, report), side by side for the
configurations of one run:

  citation hit            answerable questions whose answer carries a verified citation of a relevant abstract
  citation recall         share of a question's relevant abstracts that the answer cites (verified), averaged
  citation precision      share of the answer's cited abstracts that are relevant, averaged over answers citing any
  wrongly declined        answerable questions declined (not covered, or a refusal)
  declined                unanswerable questions declined
  on-target sentences     answer sentences close (cosine >= the support threshold) to a sentence of a relevant abstract
  loops                   answers with a repeated word 4-gram (3 times or more)
  recall@10, nDCG@10      /v1/search's top 10 chunks as a document ranking, answerable questions
  reranker top-1          the answering abstract ranked first among it and the 9 abstracts BM25 ranks highest for
                          the question, by the configuration's reranker (its score with its bi-encoder term, as
                          the service ranks); the bi-encoder (all-MiniLM-L6-v2) alone beside it
  first token, total      p50 seconds of the streamed /v1/ask
  server CPU s            mean CPU seconds the server process used per /v1/ask
  finding stated, best finding (shown first), method shown, unfaithful findings, reworded findings, spliced
  findings (out of their source sentence's order, or its opening "Because …" dropped), cut findings
                          the shown finding of each cited relevant paper against what a reader judged its abstract
                          to find (benchmarks/finding_figures.py)

The extra kinds of questions_more.jsonl go through the same path: off-domain and after-the-corpus questions must be
declined; a follow-up is asked after the first turn, with the service's own first answer as history (a service
without `history` gets the follow-up alone), and again, as kind `resolved`, alone in its dataset-resolved form (the
question it means), so that what the conversation costs shows beside it; a dated question counts the cited papers
outside its window.

    python -m benchmarks.aer_dev                                   # the shipped default
    python -m benchmarks.aer_dev --config before --repo before=../aer-rag-before --config after
    python -m benchmarks.aer_dev --config try --kinds dated,followup   # a subset of the kinds, quickly

JSON to benchmarks/results/aer_dev.json (figures only; the answers themselves go to var/aer_dev/). A run of some
kinds only (`--kinds`) is recorded as LABEL@KIND+KIND (its answers in var/aer_dev/LABEL@KIND+KIND.json, its
figures under that name, with `kinds`), so it never replaces a full run's row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from dataclasses import replace
from pathlib import Path

import httpx
import numpy as np
import torch

from answering.answerer import AnsweringSettings
from answering.citations import is_refusal, is_service_sentence, sentences_of, strip_markers
from benchmarks.common import REPO_ROOT, RESULTS_DIR, git_commit, machine, relative, write_results
from benchmarks.finding_figures import FindingFigures
from benchmarks.service import (
    ServiceConfig,
    add_config_arguments,
    ask_streamed,
    configs_from,
    cpu_seconds,
    median,
    served,
)
from indexing.index import PublishedIndex
from retrieval.reranker import DEFAULT_RERANKER_DIR, CrossEncoderReranker, passage_text
from training.evaluation.dev_questions import (
    DEV_QUESTIONS,
    HALVES,
    MORE_QUESTIONS,
    DevQuestion,
    load_dev_questions,
)
from training.evaluation.hard_candidates import bi_encoder_scorer, candidate_set, ranks_first, rows_by_document
from training.evaluation.metrics import ndcg_at_k, recall_at_k
from training.generator.metrics import has_repetition_loop

DETAILS = REPO_ROOT / "var" / "aer_dev"
RESULTS = RESULTS_DIR / "aer_dev.json"
MIN_CLAIM_WORDS = 3


def served_reranker_dir(config: ServiceConfig) -> Path | None:
    """The reranker a configuration ranks with: another checkout's own, or AER_RAG_RERANKER__MODEL_DIR's here."""
    if config.repo is not None:
        return config.repo / "models/weights/reranker"
    value = config.env.get("AER_RAG_RERANKER__MODEL_DIR")
    if value is None:
        return DEFAULT_RERANKER_DIR
    return (REPO_ROOT / value) if value.strip() else None


class OnTarget:
    """Answer sentences close to a sentence of a relevant abstract (the citation checker's similarity)."""

    def __init__(self, index: PublishedIndex, threshold: float) -> None:
        self.index = index
        self.threshold = threshold
        self.doc_of_doi = {d.doi: d for d in index.documents.values() if d.doi}

    def count(self, answer: str, relevant: tuple[str, ...]) -> tuple[int, int]:
        claims = [strip_markers(s) for s in sentences_of(answer)]
        # The service's own sentences (the opening that counts the papers, a partial answer's caveat) claim nothing.
        claims = [c for c in claims if len(c.split()) >= MIN_CLAIM_WORDS and not is_service_sentence(c)]
        abstracts = [self.doc_of_doi[doi].abstract for doi in relevant if doi in self.doc_of_doi]
        evidence = [sentence for abstract in abstracts for sentence in sentences_of(abstract)]
        if not claims or not evidence:
            return 0, len(claims)
        vectors = self.index.embedder.encode(claims + evidence)
        similarity = vectors[: len(claims)] @ vectors[len(claims) :].T
        return int((similarity.max(axis=1) >= self.threshold).sum()), len(claims)


async def ask_in_context(client: httpx.AsyncClient, base: str, question: DevQuestion):
    """A follow-up after the service's own answer to its first turn, that answer as history; any other question
    alone. A service that does not take `history` (422) gets the follow-up alone."""
    if question.kind != "followup":
        return await ask_streamed(client, base, {"query": question.question})
    first = await ask_streamed(client, base, {"query": question.turns[0]})
    turn = {"question": question.turns[0], "answer": first.done.get("answer", ""),
            "doc_ids": [c["doc_id"] for c in first.done.get("findings", [])]}  # fmt: skip
    answer = await ask_streamed(client, base, {"query": question.turns[1], "history": [turn]})
    if answer.status == 422:
        answer = await ask_streamed(client, base, {"query": question.turns[1]})
    return answer


async def serve_questions(base: str, pid: int, questions: list[DevQuestion], on_target: OnTarget,
                          figures: FindingFigures) -> list[dict]:  # fmt: skip
    records = []
    year_of = {d.doi: d.year for d in on_target.index.documents.values() if d.doi}
    async with httpx.AsyncClient(timeout=600) as client:
        await ask_streamed(client, base, {"query": "What do economists know about household saving?"})  # warm-up
        for number, question in enumerate(questions, start=1):
            search = (await client.post(f"{base}/v1/search", json={"query": question.question, "top_k": 10})).json()
            ranking = list(dict.fromkeys(hit["document"]["doi"] for hit in search.get("results", [])))
            cpu_before = cpu_seconds(pid)
            answer = await ask_in_context(client, base, question)
            cpu_after = cpu_seconds(pid)
            done = answer.done
            text = done.get("answer", "")
            declined = answer.status != 200 or not done.get("covered", False) or is_refusal(text)
            cited = {citation["doi"] for citation in done.get("citations", [])} if not declined else set()
            hits, claims = on_target.count(text, question.relevant) if not declined else (0, 0)
            relevance = dict.fromkeys(question.relevant, 1)
            relevant = set(question.relevant)
            findings = [{"doi": f["doi"], "text": f["text"]} for f in done.get("findings", [])] if not declined else []
            outside = [doi for doi in cited if not in_window(year_of.get(doi), question)]
            records.append({
                "id": question.question_id, "kind": question.kind, "half": question.half,
                "answerable": question.answerable, "declined": declined, "cited_relevant": bool(cited & relevant),
                "citation_recall": len(cited & relevant) / len(relevant) if relevant else None,
                "citation_precision": len(cited & relevant) / len(cited) if cited else None,
                "cited": sorted(cited), "outside_window": outside,
                "on_target": hits, "claims": claims, "loop": has_repetition_loop(text),
                "recall@10": recall_at_k(ranking, relevance, 10) if question.answerable else None,
                "ndcg@10": ndcg_at_k(ranking, relevance, 10) if question.answerable else None,
                "first_token_s": answer.first_token_s, "total_s": answer.total_s,
                "cpu_s": round(cpu_after - cpu_before, 3) if cpu_before is not None and cpu_after is not None
                else None,
                "confidence": done.get("confidence"), "answer": text, "status": answer.status,
                "findings": findings, "finding_counts": figures.count(question.question_id, findings),
                "resolved_query": done.get("resolved_query"),
            })  # fmt: skip
            print(f"  {number}/{len(questions)} {question.question_id} declined={declined} "
                  f"cited={records[-1]['cited_relevant']} {answer.total_s:.1f}s", flush=True)  # fmt: skip
    return records


def with_resolved_forms(questions: list[DevQuestion]) -> list[DevQuestion]:
    """The questions, and after them each follow-up again as kind `resolved`: its resolved form, asked alone."""
    resolved = [replace(q, question=q.resolved, kind="resolved", turns=()) for q in questions
                if q.kind == "followup" and q.resolved]  # fmt: skip
    return questions + resolved


def in_window(year: int | None, question: DevQuestion) -> bool:
    if year is None:
        return question.year_min is None and question.year_max is None
    return (question.year_min is None or year >= question.year_min) and (
        question.year_max is None or year <= question.year_max)


def rescored(label: str, questions: list[DevQuestion], on_target: OnTarget, figures: FindingFigures) -> list[dict]:
    """A configuration's saved answers with their answer-dependent figures counted again (e.g. after a fix of the
    counting); the served figures (status, timings, citations) stay as they were."""
    relevant = {q.question_id: q.relevant for q in questions}
    records = [r for r in json.loads((DETAILS / f"{label}.json").read_text()) if r["id"] in relevant]
    for record in records:
        if not record["declined"]:
            record["on_target"], record["claims"] = on_target.count(record["answer"], relevant[record["id"]])
        record["finding_counts"] = figures.count(record["id"], record.get("findings", []))
    return records


def reranker_top1(index: PublishedIndex, questions: list[DevQuestion], reranker_dir: Path | None) -> dict[str, dict]:
    """Per answerable question: whether the reranker and the bi-encoder rank the answering abstract first."""
    doc_of_doi = {d.doi: d.doc_id for d in index.documents.values() if d.doi}
    rows_of = rows_by_document(index)
    bi_encoder = bi_encoder_scorer(index)
    reranker = CrossEncoderReranker(reranker_dir) if reranker_dir is not None else None
    results = {}
    for question in questions:
        relevant = [doc_of_doi[doi] for doi in question.relevant if doi in doc_of_doi]
        if not question.answerable or not relevant:
            continue
        candidates = candidate_set(index, question.question, relevant[0], relevant, rows_of)
        cosines = bi_encoder(candidates)
        row = {"bi_encoder": ranks_first(candidates, cosines)}
        if reranker is not None:  # scored as the service scores: the model's score plus its bi-encoder term
            passages = [passage_text(index.chunks[r].title, index.chunks[r].text) for r in candidates.rows]
            row["reranker"] = ranks_first(candidates, reranker.relevance(question.question, passages, cosines))
        results[question.question_id] = row
    return results


def share(values: list[bool | float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def summarize(records: list[dict], top1: dict[str, dict]) -> dict:
    answerable = [r for r in records if r["answerable"]]
    unanswerable = [r for r in records if not r["answerable"]]
    claims = sum(r["claims"] for r in answerable)
    ranked = [top1[r["id"]] for r in answerable if r["id"] in top1]
    keys = ("findings", "unfaithful", "reworded", "spliced", "cut", "judged", "stated", "best", "best_first", "method")
    counts = {key: sum(r.get("finding_counts", {}).get(key, 0) for r in records) for key in keys}
    judged = counts["judged"]
    return {
        "questions": len(records),
        "citation_hit": share([r["cited_relevant"] for r in answerable]),
        "citation_recall": share([r["citation_recall"] for r in answerable]),
        "citation_precision": share([r["citation_precision"] for r in answerable if r["cited"]]),
        "cited_papers": share([len(r["cited"]) for r in answerable]),
        "wrongly_declined": share([r["declined"] for r in answerable]),
        "unanswerable_declined": share([r["declined"] for r in unanswerable]),
        "on_target_sentences": round(sum(r["on_target"] for r in answerable) / claims, 3) if claims else None,
        "loops": share([r["loop"] for r in records]),
        "recall@10": share([r["recall@10"] for r in answerable]),
        "ndcg@10": share([r["ndcg@10"] for r in answerable]),
        "reranker_top1": share([row["reranker"] for row in ranked if "reranker" in row]),
        "bi_encoder_top1": share([row["bi_encoder"] for row in ranked]),
        "first_token_p50_s": median([r["first_token_s"] for r in records if r["first_token_s"] is not None]),
        "total_p50_s": median([r["total_s"] for r in records]),
        "cpu_s_mean": mean([r["cpu_s"] for r in records if r.get("cpu_s") is not None]),
        "finding_stated": round(counts["stated"] / judged, 3) if judged else None,
        "best_finding": round(counts["best"] / judged, 3) if judged else None,
        "best_finding_first": round(counts["best_first"] / judged, 3) if judged else None,
        "method_shown": round(counts["method"] / judged, 3) if judged else None,
        "unfaithful_findings": counts["unfaithful"],
        "reworded_findings": counts["reworded"],
        "spliced_findings": counts["spliced"],
        "cut_findings": counts["cut"],
        "cited_outside_window": sum(len(r.get("outside_window", [])) for r in records),
    }


def mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


KINDS = ("paraphrase", "topical", "unanswerable", "followup", "resolved", "dated", "offdomain", "aftercorpus")
FINDING_ROWS = (
    ("finding stated (cited relevant papers)", "finding_stated"), ("best finding", "best_finding"),
    ("best finding shown first", "best_finding_first"),
    ("method sentence shown", "method_shown"), ("findings not faithful to their abstract", "unfaithful_findings"),
    ("findings with a word not in their abstract", "reworded_findings"),
    ("findings straying from their source sentence", "spliced_findings"), ("findings cut mid-phrase", "cut_findings"),
)  # fmt: skip
ROWS = {
    "paraphrase": (
        ("citation hit", "citation_hit"), ("wrongly declined", "wrongly_declined"),
        ("on-target answer sentences", "on_target_sentences"), ("answers with a loop", "loops"),
        ("search recall@10", "recall@10"), ("search nDCG@10", "ndcg@10"),
        ("reranker top-1 of 10 hard candidates", "reranker_top1"),
        *FINDING_ROWS, ("first token p50 (s)", "first_token_p50_s"), ("total p50 (s)", "total_p50_s"),
        ("server CPU s per answer", "cpu_s_mean"),
    ),
    "topical": (
        ("citation recall (relevant papers cited)", "citation_recall"),
        ("citation precision (cited papers relevant)", "citation_precision"), ("papers cited", "cited_papers"),
        ("citation hit", "citation_hit"), ("wrongly declined", "wrongly_declined"),
        ("on-target answer sentences", "on_target_sentences"), ("answers with a loop", "loops"),
        ("search recall@10", "recall@10"), *FINDING_ROWS, ("first token p50 (s)", "first_token_p50_s"),
        ("total p50 (s)", "total_p50_s"), ("server CPU s per answer", "cpu_s_mean"),
    ),
    "unanswerable": (
        ("declined", "unanswerable_declined"), ("answers with a loop", "loops"), ("total p50 (s)", "total_p50_s"),
        ("server CPU s per answer", "cpu_s_mean"),
    ),
    "followup": (
        ("citation hit", "citation_hit"), ("citation recall", "citation_recall"),
        ("wrongly declined", "wrongly_declined"),
    ),
    "resolved": (
        ("citation hit", "citation_hit"), ("citation recall", "citation_recall"),
        ("wrongly declined", "wrongly_declined"),
    ),
    "dated": (
        ("citation hit", "citation_hit"), ("cited papers outside the window", "cited_outside_window"),
        ("wrongly declined", "wrongly_declined"),
    ),
    "offdomain": (("declined", "unanswerable_declined"),),
    "aftercorpus": (("declined", "unanswerable_declined"),),
}  # fmt: skip


def parse_kinds(value: str) -> tuple[str, ...]:
    """--kinds: comma-separated question kinds, in KINDS' order."""
    wanted = {kind.strip() for kind in value.split(",") if kind.strip()}
    unknown = sorted(wanted - set(KINDS))
    if unknown or not wanted:
        raise argparse.ArgumentTypeError(f"unknown kind(s) {', '.join(unknown) or '(none given)'}; choose from "
                                         f"{', '.join(KINDS)}")  # fmt: skip
    return tuple(kind for kind in KINDS if kind in wanted)


def run_name(label: str, kinds: tuple[str, ...]) -> str:
    """The name a run is recorded under: its label for all kinds, LABEL@KIND+KIND for some (never a full row)."""
    return label if set(kinds) == set(KINDS) else f"{label}@{'+'.join(kinds)}"


def table(results: dict[str, dict], kinds: tuple[str, ...] = KINDS) -> str:
    columns = [(label, half) for label in results for half in HALVES]
    lines = ["| kind | metric | " + " | ".join(f"{label}: {half}" for label, half in columns) + " |",
             "|---|---|" + "---:|" * len(columns)]  # fmt: skip
    for kind, rows in ROWS.items():
        if kind not in kinds:
            continue
        for name, key in rows:
            cells = []
            for label, half in columns:
                value = results[label]["summary"].get(kind, {}).get(half, {}).get(key)
                missing = value is None or (isinstance(value, float) and math.isnan(value))
                cells.append("–" if missing else f"{value:g}")
            lines.append(f"| {kind} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.aer_dev", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_config_arguments(parser)
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--limit", type=int, default=None, help="first N questions only (a quick look)")
    parser.add_argument("--kinds", type=parse_kinds, default=KINDS, help="comma-separated question kinds (e.g. "
                        "dated,followup; default: all); a subset run is recorded as LABEL@KIND+KIND")  # fmt: skip
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rescore", action="store_true", help="recompute the figures of the configurations' "
                        "saved answers (var/aer_dev/LABEL.json) without serving them again")  # fmt: skip
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    configs = configs_from(args)
    kinds: tuple[str, ...] = args.kinds
    questions = [q for q in with_resolved_forms(load_dev_questions() + load_dev_questions(MORE_QUESTIONS))
                 if q.kind in kinds][: args.limit]  # fmt: skip
    index = PublishedIndex.load(args.index, device="cpu")
    on_target = OnTarget(index, AnsweringSettings().support_threshold)
    figures = FindingFigures(index)
    DETAILS.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    previous = json.loads(RESULTS.read_text()).get("configs", {}) if RESULTS.is_file() else {}
    for config in configs:
        name = run_name(config.label, kinds)
        if args.rescore:
            records, top1, info = rescored(name, questions, on_target, figures), None, None
        else:
            print(f"{config.label}: serving with {config.env or 'the default settings'}", flush=True)
            with served(args.index.resolve(), "cpu", config.env, config.repo) as (server, base):
                info = httpx.get(f"{base}/v1/info").json()
                records = asyncio.run(serve_questions(base, server.pid, questions, on_target, figures))
            top1 = reranker_top1(index, questions, served_reranker_dir(config))
            for record in records:
                record["top1"] = top1.get(record["id"])
            (DETAILS / f"{name}.json").write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
        top1 = {r["id"]: r["top1"] for r in records if r.get("top1")}
        summary = {
            kind: {half: summarize([r for r in records if r["kind"] == kind and r["half"] == half], top1)
                   for half in HALVES}
            for kind in kinds
        }  # fmt: skip
        if info is None:  # rescored: the run's own record, new figures
            results[name] = {**previous[name], "summary": summary, "rescored": True}
            continue
        results[name] = {
            "settings": config.env, "reranker": info["reranker"]["model"], "generator": info["generator"]["model"],
            "commit": git_commit(config.repo), "machine": machine(), "summary": summary,
            **({} if name == config.label else {"kinds": list(kinds)}),
        }  # fmt: skip
    print(table(results, kinds))
    # Earlier runs' configurations stay in the file (e.g. "before", measured at an earlier commit).
    configs = {**previous, **results}
    payload = {"questions": relative(DEV_QUESTIONS), "configs": configs}
    print(f"wrote {relative(write_results('aer_dev', payload))}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
