"""Training groups for the reranker: a query, one relevant passage and mined hard negatives.

Sources (never AER rows, never SciFact test queries):
* economics abstracts (../shared/data/econ_other_abstracts.csv): the title as a query for its
  abstract, and an inverse-cloze query (one sentence of the abstract as the query for the rest);
* the written paraphrase questions about those abstracts (training/data/questions), asked the way users ask;
* SciFact train claims (qrels/train.tsv) with their cited abstracts (in-domain variant only).

Hard negatives come from the project's own BM25 and dense retrievers over a PublishedIndex built by
the real IngestionPipeline; the economics index is built from a title-less copy of the CSV, so a
title query cannot be answered by matching the title itself.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from corpus.documents import Chunk, Document
from corpus.sentences import split_sentences
from indexing.index import PublishedIndex
from retrieval.reranker import passage_text
from training.corpus import load_training_corpus
from training.evaluation.beir import BeirDataset, corpus_id_of, write_ingestion_csv
from training.questions.dataset import ParaphraseQuestion, load_paraphrases
from training.splits import in_validation_split

log = logging.getLogger(__name__)
PROGRESS_EVERY = 200  # groups between progress lines while mining


@dataclass(frozen=True)
class TrainingGroup:
    query: str
    positive: str
    negatives: tuple[str, ...]
    source: str  # "econ-title", "econ-ict" or "scifact"


@dataclass(frozen=True)
class MiningSettings:
    bm25_negatives: int = 4
    dense_negatives: int = 3
    random_negatives: int = 0
    search_depth: int = 30  # negatives are drawn from this many results of each retriever
    skip_top: int = 0  # leave the very top results out (they are sometimes unlabelled positives)

    def __post_init__(self) -> None:
        for name in ("bm25_negatives", "dense_negatives", "random_negatives", "skip_top"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more, not {getattr(self, name)}.")
        if self.search_depth < self.skip_top + max(self.bm25_negatives, self.dense_negatives):
            raise ValueError("search_depth must leave room for skip_top plus the requested negatives.")

    @property
    def negatives_per_group(self) -> int:
        return self.bm25_negatives + self.dense_negatives + self.random_negatives


# Share of economics documents (by a hash of their id) held out from reranker training, for validation.
VALIDATION_FRACTION = 0.05


class HardNegativeMiner:
    """Picks negatives for a query from the index's BM25 and dense results, skipping relevant documents."""

    def __init__(self, index: PublishedIndex, settings: MiningSettings, seed: int) -> None:
        self.index = index
        self.settings = settings
        self.random = random.Random(seed)

    def mine(self, query: str, relevant_doc_ids: set[str], show_title: bool) -> tuple[str, ...]:
        settings = self.settings
        chosen: list[int] = []
        for search, wanted in (
            (self.index.search_bm25, settings.bm25_negatives),
            (self.index.search_dense, settings.dense_negatives),
        ):
            if wanted == 0:
                continue
            rows = [row for row, _ in search(query, settings.search_depth)][settings.skip_top :]
            usable = [row for row in rows if self._is_negative(row, relevant_doc_ids) and row not in chosen]
            chosen.extend(usable[:wanted])
        while len(chosen) < settings.negatives_per_group:
            row = self.random.randrange(len(self.index.chunks))
            if self._is_negative(row, relevant_doc_ids) and row not in chosen:
                chosen.append(row)
        return tuple(self.passage(row, show_title) for row in chosen)

    def passage(self, row: int, show_title: bool) -> str:
        chunk = self.index.chunks[row]
        return passage_text(chunk.title if show_title else "", chunk.text)

    def _is_negative(self, row: int, relevant_doc_ids: set[str]) -> bool:
        return self.index.chunks[row].doc_id not in relevant_doc_ids


class EconomicsPairs:
    """Title → abstract and inverse-cloze groups from the non-AER economics abstracts."""

    def __init__(self, csv_path: Path, validation_fraction: float = VALIDATION_FRACTION) -> None:
        if not 0 < validation_fraction < 1:
            raise ValueError(f"validation_fraction must be between 0 and 1, not {validation_fraction}.")
        self.csv_path = csv_path
        self.validation_fraction = validation_fraction
        self.documents: list[Document] = list(load_training_corpus(csv_path).values())  # refuses AER rows

    def is_validation(self, document: Document) -> bool:
        return in_validation_split(document.doc_id, self.validation_fraction)

    def write_untitled_csv(self, path: Path) -> int:
        """The corpus without titles: the index the negatives (and validation candidates) come from."""
        rows = (
            {"abstract": document.abstract, "doi": document.doi, "date": document.date, "journal": document.journal}
            for document in self.documents
        )
        return write_ingestion_csv(rows, path)

    def training_groups(
        self, miner: HardNegativeMiner, untitled_ids: dict[str, str], limit: int, ict_share: float, seed: int
    ) -> list[TrainingGroup]:
        """Up to `limit` groups from training documents; `ict_share` of them are inverse-cloze queries.

        untitled_ids maps a document's id here to its id in the title-less index (they differ for
        documents without a DOI, whose id hashes the title).
        """
        rng = random.Random(seed)
        train_documents = [
            d for d in self.documents if not self.is_validation(d) and d.title.strip() and d.doc_id in untitled_ids
        ]
        rng.shuffle(train_documents)
        groups: list[TrainingGroup] = []
        for document in train_documents[:limit]:
            relevant = {untitled_ids[document.doc_id]}
            ict = inverse_cloze(document.abstract, rng) if rng.random() < ict_share else None
            if ict is not None:
                query, positive = ict
                groups.append(TrainingGroup(query, positive, miner.mine(query, relevant, False), "econ-ict"))
            else:
                negatives = miner.mine(document.title, relevant, False)
                groups.append(TrainingGroup(document.title, document.abstract, negatives, "econ-title"))
            if len(groups) % PROGRESS_EVERY == 0:
                log.info("mined %d of %d economics groups", len(groups), min(limit, len(train_documents)))
        return groups

    def validation_queries(self, untitled_ids: dict[str, str], limit: int) -> list[tuple[str, str]]:
        """(title query, relevant id in the title-less index) for held-out documents, in a fixed order."""
        held_out = sorted(
            (d for d in self.documents if self.is_validation(d) and d.title.strip() and d.doc_id in untitled_ids),
            key=lambda d: d.doc_id,
        )
        return [(document.title, untitled_ids[document.doc_id]) for document in held_out[:limit]]


def untitled_id_map(documents: Sequence[Document], untitled_index: PublishedIndex) -> dict[str, str]:
    """Match each titled document to its title-less copy by abstract text."""
    by_abstract = {document.abstract: doc_id for doc_id, document in untitled_index.documents.items()}
    return {
        document.doc_id: by_abstract[document.abstract] for document in documents if document.abstract in by_abstract
    }


def inverse_cloze(abstract: str, rng: random.Random) -> tuple[str, str] | None:
    """(one sentence, the abstract without it); None when the abstract is too short to split."""
    spans = [span for span in split_sentences(abstract) if 40 <= span[1] - span[0] <= 300]
    if len(split_sentences(abstract)) < 3 or not spans:
        return None
    start, end = rng.choice(spans)
    rest = (abstract[:start] + abstract[end:]).strip()
    return abstract[start:end], " ".join(rest.split())


class SciFactTrainPairs:
    """SciFact train claims and their cited abstracts; a fixed share of claims is held out as a dev split."""

    def __init__(self, dataset_dir: Path, dev_fraction: float = 0.2) -> None:
        self.dataset = BeirDataset.load(dataset_dir, split="train")
        self.dev_fraction = dev_fraction

    def is_dev(self, query_id: str) -> bool:
        return in_validation_split(f"scifact:{query_id}", self.dev_fraction)

    def training_groups(self, miner: HardNegativeMiner, index: PublishedIndex) -> list[TrainingGroup]:
        doc_id_of = {corpus_id_of(document): doc_id for doc_id, document in index.documents.items()}
        groups: list[TrainingGroup] = []
        for query_id, query in self.dataset.queries.items():
            if self.is_dev(query_id):
                continue
            cited = [cid for cid, grade in self.dataset.qrels[query_id].items() if grade > 0 and cid in doc_id_of]
            relevant = {doc_id_of[cid] for cid in cited}
            for corpus_id in cited:
                document = self.dataset.corpus[corpus_id]
                positive = passage_text(document.title, document.text)
                groups.append(TrainingGroup(query, positive, miner.mine(query, relevant, True), "scifact"))
            if len(groups) % PROGRESS_EVERY == 0:
                log.info("mined %d SciFact groups", len(groups))
        return groups


class WrittenQuestionPairs:
    """The written paraphrase questions (training/data/questions): each question with the chunk of its abstract
    that holds the answer, as the service shows it (title above text), against mined hard negatives. The
    questions of held-out abstracts (training.questions.dataset's split) are for validation only."""

    def __init__(self, index: PublishedIndex, questions_dir: Path | None = None) -> None:
        self.index = index
        self.questions = load_paraphrases(questions_dir) if questions_dir else load_paraphrases()
        self.rows_of: dict[str, list[int]] = {}
        for row, chunk in enumerate(index.chunks):
            self.rows_of.setdefault(chunk.doc_id, []).append(row)
        missing = [q.question_id for q in self.questions if q.doc_id not in self.rows_of]
        if missing:
            raise ValueError(f"{len(missing)} questions name abstracts missing from the index, e.g. {missing[0]}.")

    def positive(self, question: ParaphraseQuestion) -> Chunk:
        chunks = [self.index.chunks[row] for row in self.rows_of[question.doc_id]]
        return question.answer_chunk(self.index.documents[question.doc_id], chunks)

    def training_groups(self, miner: HardNegativeMiner) -> list[TrainingGroup]:
        groups = []
        for question in self.questions:
            if question.is_validation:
                continue
            chunk = self.positive(question)
            positive = passage_text(chunk.title, chunk.text)
            negatives = miner.mine(question.question, {question.doc_id}, True)
            groups.append(TrainingGroup(question.question, positive, negatives, "questions"))
            if len(groups) % PROGRESS_EVERY == 0:
                log.info("mined %d written-question groups", len(groups))
        return groups

    def validation_questions(self) -> list[ParaphraseQuestion]:
        return [question for question in self.questions if question.is_validation]


def count_by_source(groups: Iterable[TrainingGroup]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for group in groups:
        counts[group.source] = counts.get(group.source, 0) + 1
    return counts
