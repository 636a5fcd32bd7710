"""The two records every stage passes along: a cleaned corpus row (Document) and a piece of it (Chunk)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Document:
    doc_id: str  # the DOI when present, else "sha1:" + 16 hex digits of sha1(title + "\n" + abstract)
    doi: str  # "" when none
    title: str  # cleaned display title ("" allowed)
    abstract: str  # cleaned abstract, JEL suffix removed; chunk offsets refer to this text
    abstract_original: str  # the raw CSV text, for display and audit
    date: str  # "YYYY-MM", "YYYY" or ""
    year: int | None
    authors: list[str] = field(default_factory=list)
    journal: str = ""
    url: str = ""
    jel_codes: list[str] = field(default_factory=list)  # e.g. ["D83", "G14"]
    row_number: int = 0  # 1-based data row in the CSV (the header is row 0)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Document:
        return cls(**data)


@dataclass(frozen=True)
class Chunk:
    chunk_id: str  # f"{doc_id}#{position}", deterministic
    doc_id: str
    position: int  # 0-based chunk number within the document
    text: str  # == document.abstract[char_start:char_end]
    char_start: int
    char_end: int
    title: str
    # False only when the title is too long to share the model's window with the text; then the
    # title is shown with the chunk but left out of what is embedded and BM25-indexed.
    title_indexed: bool = True

    @property
    def indexed_text(self) -> str:
        """What BM25 and the embedding model see: the title (when indexed) on a line above the text."""
        return indexed_text(self.title if self.title_indexed else "", self.text)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Chunk:
        return cls(**data)


def indexed_text(title: str, text: str) -> str:
    """Join a title and a chunk text the way they are indexed (the chunker budgets tokens for this)."""
    return f"{title}\n{text}" if title else text
