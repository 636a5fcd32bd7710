"""Stage 3: BM25 (rank-bm25's Okapi) over a tokenisation for English academic text.

Persisted as JSON (the tokenised corpus plus settings), never pickle: BM25Okapi is rebuilt at load,
which takes well under a second for this corpus and keeps the file format safe and inspectable.

Scoring: rank-bm25 computes the IDF table, but its get_scores() loops over every document in Python
for every query term (milliseconds per query). At load we precompute each (term, row) BM25 weight into
a sparse term x row matrix, so a query's scores are one sparse row-vector product, equal to
get_scores() up to float rounding.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi
from scipy import sparse

# NLTK's English stop-word list. Deliberately not scikit-learn's, which drops content words that
# matter in economics ("interest", "bill", "system", "found", "fire").
_STOP_WORDS = """a about above after again against ain all am an and any are aren as at be because been before
being below between both but by can couldn d did didn do does doesn doing don down during each few
for from further had hadn has hasn have haven having he her here hers herself him himself his how i
if in into is isn it its itself just ll m ma me mightn more most mustn my myself needn no nor not now
o of off on once only or other our ours ourselves out over own re s same shan she should shouldn so
some such t than that the their theirs them themselves then there these they this those through to
too under until up ve very was wasn we were weren what when where which while who whom why will with
won wouldn y you your yours yourself yourselves"""
ENGLISH_STOP_WORDS = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[^\W_]+")  # runs of letters/digits; hyphens and apostrophes separate words


@dataclass(frozen=True)
class Bm25Settings:
    lowercase: bool = True
    remove_stop_words: bool = True
    stemmer: str | None = "english"  # Snowball (PyStemmer) language, or None for no stemming
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25  # rank-bm25's floor for the idf of very common terms

    def __post_init__(self) -> None:
        if self.k1 < 0 or not 0 <= self.b <= 1 or self.epsilon < 0:
            raise ValueError(f"BM25 needs k1 >= 0, 0 <= b <= 1 and epsilon >= 0; got {self}.")
        if self.stemmer is not None:
            import Stemmer

            if self.stemmer not in Stemmer.algorithms():
                raise ValueError(f"Unknown Snowball stemmer {self.stemmer!r}; see Stemmer.algorithms().")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Bm25Tokenizer:
    """lower-case -> strip accents -> split on non-alphanumerics -> drop stop words -> Snowball stem."""

    def __init__(self, settings: Bm25Settings) -> None:
        self.settings = settings

    @cached_property
    def _stemmer(self) -> Any:
        import Stemmer

        return Stemmer.Stemmer(self.settings.stemmer) if self.settings.stemmer else None

    def tokenize(self, text: str) -> list[str]:
        text = unicodedata.normalize("NFKD", text)
        text = "".join(char for char in text if not unicodedata.combining(char))
        if self.settings.lowercase:
            text = text.lower()
        words = _WORD.findall(text)
        if self.settings.remove_stop_words:
            words = [word for word in words if word.lower() not in ENGLISH_STOP_WORDS]
        if self._stemmer is not None:
            words = self._stemmer.stemWords(words)
        return words


class Bm25Index:
    """BM25 over the indexed text of each chunk; row i is chunk i."""

    FILE_NAME = "bm25.json"

    def __init__(self, settings: Bm25Settings, corpus_tokens: list[list[str]]) -> None:
        if not corpus_tokens:
            raise ValueError("A BM25 index needs at least one document.")
        self.settings = settings
        self.tokenizer = Bm25Tokenizer(settings)
        self.corpus_tokens = corpus_tokens
        okapi = BM25Okapi(corpus_tokens, k1=settings.k1, b=settings.b, epsilon=settings.epsilon)
        self._term_ids, self._weights = _weight_matrix(okapi)

    def _query_vector(self, terms: list[str]) -> sparse.csr_matrix:
        """Counts of the known query terms (a repeated term counts again, as in get_scores())."""
        counts: dict[int, int] = {}
        for term in terms:
            term_id = self._term_ids.get(term)
            if term_id is not None:
                counts[term_id] = counts.get(term_id, 0) + 1
        columns = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        values = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        return sparse.csr_matrix((values, (np.zeros(len(counts), dtype=np.int64), columns)),
                                 shape=(1, self._weights.shape[0]))  # fmt: skip

    @classmethod
    def build(cls, texts: Sequence[str], settings: Bm25Settings) -> Bm25Index:
        tokenizer = Bm25Tokenizer(settings)
        return cls(settings, [tokenizer.tokenize(text) for text in texts])

    def __len__(self) -> int:
        return len(self.corpus_tokens)

    def weight_matrix(self) -> tuple[list[str], sparse.csr_matrix]:
        """(the terms by row, the terms x rows matrix of BM25 weights): what another store of the postings
        (indexing.postgres) writes, so its sums are get_scores() exactly as here."""
        terms = [""] * len(self._term_ids)
        for term, term_id in self._term_ids.items():
            terms[term_id] = term
        return terms, self._weights

    def save(self, directory: Path) -> Path:
        path = directory / self.FILE_NAME
        payload = {"settings": self.settings.to_json(), "corpus_tokens": self.corpus_tokens}
        path.write_text(json.dumps(payload, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
        return path

    @classmethod
    def load(cls, directory: Path) -> Bm25Index:
        payload = json.loads((directory / cls.FILE_NAME).read_text(encoding="utf-8"))
        return cls(Bm25Settings(**payload["settings"]), payload["corpus_tokens"])

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every row for `query` (all zeros when the query has no indexable word)."""
        return self.term_scores(self.tokenizer.tokenize(query))

    def term_scores(self, terms: list[str]) -> np.ndarray:
        """BM25 score of every row for already tokenised query terms."""
        if not terms:
            return np.zeros(len(self), dtype=np.float64)
        return np.asarray((self._query_vector(terms) @ self._weights).todense(), dtype=np.float64).ravel()

    def search(self, query: str, top_n: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Best rows first. Only rows that match at least one query term are returned; with `allowed`,
        rows outside the mask are removed before the cut, so up to top_n allowed matches come back."""
        scores = self.scores(query)
        candidates = scores > 0
        if allowed is not None:
            candidates &= check_mask(allowed, len(self))
        return top_rows(scores, np.flatnonzero(candidates), top_n)


def _weight_matrix(okapi: BM25Okapi) -> tuple[dict[str, int], sparse.csr_matrix]:
    """(term -> row of the matrix, terms x documents matrix of BM25 weights), exactly the summands of
    BM25Okapi.get_scores(): idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avgdl))."""
    term_ids = {term: i for i, term in enumerate(okapi.idf)}
    rows, columns, values = [], [], []
    for document, (frequencies, length) in enumerate(zip(okapi.doc_freqs, okapi.doc_len, strict=True)):
        norm = okapi.k1 * (1 - okapi.b + okapi.b * length / okapi.avgdl)
        for term, tf in frequencies.items():
            rows.append(term_ids[term])
            columns.append(document)
            values.append(okapi.idf[term] * tf * (okapi.k1 + 1) / (tf + norm))
    shape = (len(term_ids), len(okapi.doc_freqs))
    return term_ids, sparse.csr_matrix((values, (rows, columns)), shape=shape, dtype=np.float64)


def check_mask(allowed: np.ndarray, rows: int) -> np.ndarray:
    mask = np.asarray(allowed)
    if mask.dtype != np.bool_ or mask.shape != (rows,):
        raise ValueError(f"allowed must be a boolean array of shape ({rows},), got {mask.dtype} {mask.shape}.")
    return mask


def top_rows(scores: np.ndarray, rows: np.ndarray, top_n: int) -> list[tuple[int, float]]:
    """The `top_n` of `rows` by score, best first; ties keep row order so results are deterministic."""
    if top_n <= 0 or rows.size == 0:
        return []
    order = np.argsort(-scores[rows], kind="stable")[:top_n]
    return [(int(rows[i]), float(scores[rows[i]])) for i in order]
