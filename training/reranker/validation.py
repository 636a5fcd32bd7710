"""Validation for model selection: rerank fixed hybrid candidates and compare with the hybrid order.

Queries come from held-out splits only (economics documents held out of training, SciFact train
claims held out as a dev split); SciFact test queries are never used here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase

from indexing.index import PublishedIndex
from retrieval.hybrid import HybridRetriever
from retrieval.reranker import encode_pairs, passage_text, rerank_order
from training.evaluation.hard_candidates import bi_encoder_scorer, candidate_set, ranks_first, rows_by_document
from training.evaluation.metrics import evaluate

VALIDATION_METRICS = ("ndcg@10", "mrr@10", "recall@10")


@dataclass(frozen=True)
class ValidationQuery:
    query_id: str
    text: str
    relevant_doc_ids: frozenset[str]


@dataclass(frozen=True)
class _Candidates:
    doc_ids: list[str]
    passages: list[str]


class RerankValidation:
    """Hybrid top-`depth` chunks per query, computed once; each evaluation rescores them with a model."""

    def __init__(
        self, name: str, queries: list[ValidationQuery], retriever: HybridRetriever, show_title: bool, depth: int = 30
    ) -> None:
        if not queries:
            raise ValueError(f"The validation set {name!r} has no queries.")
        self.name = name
        self.qrels = {query.query_id: dict.fromkeys(query.relevant_doc_ids, 1) for query in queries}
        self.queries = queries
        self.candidates: dict[str, _Candidates] = {}
        for query in queries:
            hits = retriever.retrieve(query.text, depth)
            self.candidates[query.query_id] = _Candidates(
                [hit.chunk.doc_id for hit in hits],
                [passage_text(hit.chunk.title if show_title else "", hit.chunk.text) for hit in hits],
            )

    def baseline(self) -> dict[str, float]:
        """The metrics of the hybrid order itself."""
        run = {qid: _unique(candidates.doc_ids) for qid, candidates in self.candidates.items()}
        return evaluate(run, self.qrels, VALIDATION_METRICS)

    def evaluate(
        self,
        model: torch.nn.Module,
        tokenizer: PreTrainedTokenizerBase,
        max_length: int,
        device: str,
        dtype: torch.dtype,
        batch_size: int = 32,
        first_stage_weights: tuple[float, ...] = (0.0,),
    ) -> dict[float, dict[str, float]]:
        """Metrics per first-stage weight (see rerank_order); the model scores each pair once."""
        queries = [q.text for q in self.queries for _ in self.candidates[q.query_id].passages]
        passages = [p for q in self.queries for p in self.candidates[q.query_id].passages]
        scores = encode_pairs(model, tokenizer, queries, passages, max_length, batch_size, device, dtype)[0]
        results: dict[float, dict[str, float]] = {}
        for weight in first_stage_weights:
            run: dict[str, list[str]] = {}
            offset = 0
            for query in self.queries:
                candidates = self.candidates[query.query_id]
                own = scores[offset : offset + len(candidates.doc_ids)]
                offset += len(candidates.doc_ids)
                order = rerank_order(own, weight)
                run[query.query_id] = _unique([candidates.doc_ids[i] for i in order])
            results[weight] = evaluate(run, self.qrels, VALIDATION_METRICS)
        return results


def _unique(doc_ids: list[str]) -> list[str]:
    """Document ranking from a chunk ranking: each document at the rank of its best chunk."""
    return list(dict.fromkeys(doc_ids))


class HardCandidateValidation:
    """Top-1 among 10 hard candidates (training/evaluation/hard_candidates.py) on held-out questions: the figure
    the development benchmark reports, so candidates are chosen on what they are judged by."""

    def __init__(self, name: str, index: PublishedIndex, questions: list[tuple[str, str]]) -> None:
        """questions: (question, the doc_id of the abstract that answers it)."""
        rows_of = rows_by_document(index)
        self.name = name
        self.index = index
        self.sets = [candidate_set(index, query, doc_id, [doc_id], rows_of) for query, doc_id in questions]
        self.passages = [
            [passage_text(index.chunks[row].title, index.chunks[row].text) for row in candidates.rows]
            for candidates in self.sets
        ]

    def baseline(self) -> dict[str, float]:
        """The bi-encoder (the dense retriever's cosine) on the same candidates."""
        scorer = bi_encoder_scorer(self.index)
        return {"top1": sum(ranks_first(c, scorer(c)) for c in self.sets) / len(self.sets)}

    def evaluate(self, model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, max_length: int, device: str,
                 dtype: torch.dtype, batch_size: int = 32) -> dict[str, float]:  # fmt: skip
        queries = [c.query for c, passages in zip(self.sets, self.passages, strict=True) for _ in passages]
        flat = [passage for passages in self.passages for passage in passages]
        scores = encode_pairs(model, tokenizer, queries, flat, max_length, batch_size, device, dtype)[0]
        hits, offset = 0, 0
        for candidates in self.sets:
            hits += ranks_first(candidates, scores[offset : offset + len(candidates.rows)])
            offset += len(candidates.rows)
        return {"top1": hits / len(self.sets)}
