"""Stage 2: sentence-aware chunks that always fit the embedding model's window (no silent truncation)."""

from __future__ import annotations

from dataclasses import dataclass

from corpus.documents import Chunk, Document, indexed_text
from corpus.sentences import split_sentences
from indexing.embedding import TokenCounter


@dataclass(frozen=True)
class ChunkingSettings:
    max_chunk_tokens: int  # the model's window, special tokens included (256 for all-MiniLM-L6-v2)
    overlap_sentences: int = 1  # sentences repeated at the start of the next chunk of a document

    def __post_init__(self) -> None:
        if self.max_chunk_tokens < 32:
            raise ValueError(f"max_chunk_tokens must be at least 32, not {self.max_chunk_tokens}.")
        if self.overlap_sentences < 0:
            raise ValueError(f"overlap_sentences must be 0 or more, not {self.overlap_sentences}.")


class SentenceChunker:
    """Packs whole sentences into chunks of at most `max_chunk_tokens` model tokens.

    The budget covers what is embedded: special tokens + the title line + the chunk text. A sentence
    that alone exceeds the budget is cut at token boundaries (preferring word starts) into pieces that
    are then packed like sentences. Consecutive chunks share `overlap_sentences` sentences.
    """

    def __init__(self, settings: ChunkingSettings, tokens: TokenCounter) -> None:
        if settings.max_chunk_tokens > tokens.max_seq_length:
            raise ValueError(
                f"max_chunk_tokens ({settings.max_chunk_tokens}) exceeds the embedding model's window "
                f"({tokens.max_seq_length} tokens); chunks would be truncated."
            )
        self.settings = settings
        self.tokens = tokens

    def chunk(self, document: Document) -> list[Chunk]:
        text = document.abstract
        # A title that would crowd out the text is shown with the chunk but not indexed with it.
        title_indexed = self._title_tokens(document.title) <= self.settings.max_chunk_tokens // 2
        window = _Window(self, text, document.title if title_indexed else "")
        units = window.units()
        chunks: list[Chunk] = []
        first = 0
        while first < len(units):
            last = first + 1  # every unit fits alone, by construction
            while last < len(units) and window.fits(units[first][0], units[last][1]):
                last += 1
            start, end = units[first][0], units[last - 1][1]
            chunks.append(
                Chunk(
                    chunk_id=f"{document.doc_id}#{len(chunks)}",
                    doc_id=document.doc_id,
                    position=len(chunks),
                    text=text[start:end],
                    char_start=start,
                    char_end=end,
                    title=document.title,
                    title_indexed=title_indexed,
                )
            )
            if last == len(units):
                break
            # Step back `overlap_sentences` units, but never to a start that leaves no room for unit `last`.
            first = max(last - self.settings.overlap_sentences, first + 1)
            while first < last and not window.fits(units[first][0], units[last][1]):
                first += 1
        return chunks

    def count_indexed_tokens(self, chunk: Chunk) -> int:
        """Tokens the model sees for `chunk`, special tokens included."""
        return self.tokens.count(chunk.indexed_text) + self.tokens.special_tokens

    def _title_tokens(self, title: str) -> int:
        return self.tokens.count(title) + 1 if title else 0


class _Window:
    """Token accounting for one document: which character spans fit the model's window."""

    def __init__(self, chunker: SentenceChunker, text: str, title: str) -> None:
        self.tokens = chunker.tokens
        self.text = text
        self.title = title
        self.limit = chunker.settings.max_chunk_tokens - chunker.tokens.special_tokens

    def fits(self, start: int, end: int) -> bool:
        return self.tokens.count(indexed_text(self.title, self.text[start:end])) <= self.limit

    def units(self) -> list[tuple[int, int]]:
        """Sentences, with any sentence too long for one chunk cut into pieces that fit."""
        if self.fits(0, len(self.text)):  # most abstracts: one chunk, one tokenizer call
            return [(0, len(self.text))]
        units: list[tuple[int, int]] = []
        for start, end in split_sentences(self.text):
            if self.fits(start, end):
                units.append((start, end))
            else:
                units.extend(self._split_long_sentence(start, end))
        return units

    def _split_long_sentence(self, start: int, end: int) -> list[tuple[int, int]]:
        spans = [(start + s, start + e) for s, e in self.tokens.token_spans(self.text[start:end])]
        pieces: list[tuple[int, int]] = []
        first = 0
        while first < len(spans):
            cut = min(len(spans), first + self.limit - (self.tokens.count(self.title) + 1 if self.title else 0))
            cut = max(cut, first + 1)
            if cut < len(spans):
                # Prefer to cut before a token that starts a word (whitespace before it).
                cut = next((c for c in range(cut, first, -1) if spans[c][0] > spans[c - 1][1]), cut)
            # Re-tokenising a piece cut inside a word can change its count: shrink until it fits.
            while cut > first + 1 and not self.fits(spans[first][0], spans[cut - 1][1]):
                cut -= 1
            pieces.append((spans[first][0], spans[cut - 1][1]))
            first = cut
        return pieces
