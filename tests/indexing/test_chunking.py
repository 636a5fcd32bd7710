import itertools
from pathlib import Path

import pytest

from corpus.documents import Document
from corpus.sentences import split_sentences
from indexing.chunking import ChunkingSettings, SentenceChunker
from indexing.embedding import TokenCounter
from indexing.loader import CorpusLoader

SENTENCES = [
    "We study how minimum wages affect teenage employment in the United States.",
    "Using county pairs that straddle state borders, we compare adjacent labor markets.",
    "Employment effects are small and statistically insignificant in most specifications.",
    "Earnings of affected workers rise by about the amount the policy mandates.",
    "Hours worked do not fall, and turnover declines among restaurant workers.",
    "The results are robust to allowing for heterogeneous regional trends.",
    "We discuss implications for the design of federal minimum wage policy.",
]


def document(abstract: str, title: str = "Minimum Wages and Teen Employment") -> Document:
    return Document(
        doc_id="10.1/x", doi="10.1/x", title=title, abstract=abstract, abstract_original=abstract, date="", year=None
    )


def chunker(token_counter: TokenCounter, max_tokens: int = 64, overlap: int = 1) -> SentenceChunker:
    return SentenceChunker(ChunkingSettings(max_chunk_tokens=max_tokens, overlap_sentences=overlap), token_counter)


def test_split_sentences_respects_abbreviations_and_initials() -> None:
    text = (
        'We study the U.S. economy. J. Smith et al. show that e.g. firms grow. Prices rose 5.2 percent. Why? "Because."'
    )
    sentences = [text[start:end] for start, end in split_sentences(text)]
    assert sentences == [
        "We study the U.S. economy.",
        "J. Smith et al. show that e.g. firms grow.",
        "Prices rose 5.2 percent.",
        "Why?",
        '"Because."',
    ]


@pytest.mark.parametrize("max_tokens", [40, 64, 100, 256])
@pytest.mark.parametrize("overlap", [0, 1, 2])
def test_chunks_fit_the_window_and_map_back_to_the_text(
    token_counter: TokenCounter, max_tokens: int, overlap: int
) -> None:
    doc = document(" ".join(SENTENCES))
    chunks = chunker(token_counter, max_tokens, overlap).chunk(doc)
    for position, chunk in enumerate(chunks):
        # The real tokenizer, special tokens included, on exactly what gets embedded.
        assert token_counter.count(chunk.indexed_text) + token_counter.special_tokens <= max_tokens
        assert doc.abstract[chunk.char_start : chunk.char_end] == chunk.text
        assert (chunk.position, chunk.chunk_id, chunk.doc_id, chunk.title) == (
            position,
            f"10.1/x#{position}",
            "10.1/x",
            doc.title,
        )
    assert chunks[0].char_start == 0 and chunks[-1].char_end == len(doc.abstract)
    for sentence in SENTENCES:  # every sentence is in some chunk, whole
        assert any(sentence in chunk.text for chunk in chunks)
    if max_tokens == 256:
        assert len(chunks) == 1  # a typical abstract is one chunk


def test_overlap_repeats_the_last_sentence_of_the_previous_chunk(token_counter: TokenCounter) -> None:
    chunks = chunker(token_counter, max_tokens=40, overlap=1).chunk(document(" ".join(SENTENCES)))
    assert len(chunks) >= 3
    for previous, following in itertools.pairwise(chunks):
        last_sentence = previous.text[[start for start, _ in split_sentences(previous.text)][-1] :]
        assert following.text.startswith(last_sentence)
    no_overlap = chunker(token_counter, max_tokens=40, overlap=0).chunk(document(" ".join(SENTENCES)))
    for previous, following in itertools.pairwise(no_overlap):
        assert following.char_start > previous.char_end


def test_chunking_is_deterministic(token_counter: TokenCounter) -> None:
    doc = document(" ".join(SENTENCES))
    assert chunker(token_counter).chunk(doc) == chunker(token_counter).chunk(doc)


def test_a_sentence_longer_than_the_window_is_split_not_truncated(token_counter: TokenCounter) -> None:
    long_sentence = "We document " + ", ".join(f"fact number {i} about markets" for i in range(120)) + "."
    doc = document(f"A short opening. {long_sentence} A short close.")
    chunks = chunker(token_counter, max_tokens=64, overlap=0).chunk(doc)
    assert len(chunks) > 5
    for chunk in chunks:
        assert token_counter.count(chunk.indexed_text) + token_counter.special_tokens <= 64
    # Nothing is lost: consecutive chunks tile the text, separated only by whitespace.
    for previous, following in itertools.pairwise(chunks):
        assert doc.abstract[previous.char_end : following.char_start].strip() == ""
    words = " ".join(chunk.text for chunk in chunks).split()
    assert words == doc.abstract.split()


def test_a_title_too_long_to_share_the_window_is_not_indexed(token_counter: TokenCounter) -> None:
    doc = document("A short abstract.", title=" ".join(["Very long title words"] * 20))
    [chunk] = chunker(token_counter, max_tokens=64).chunk(doc)
    assert chunk.title == doc.title and not chunk.title_indexed
    assert chunk.indexed_text == "A short abstract."


def test_settings_are_validated(token_counter: TokenCounter) -> None:
    with pytest.raises(ValueError, match="at least 32"):
        ChunkingSettings(max_chunk_tokens=8)
    with pytest.raises(ValueError, match="0 or more"):
        ChunkingSettings(max_chunk_tokens=64, overlap_sentences=-1)
    with pytest.raises(ValueError, match="exceeds the embedding model's window"):
        chunker(token_counter, max_tokens=512)


@pytest.mark.slow
def test_every_real_chunk_fits_and_maps_back(token_counter: TokenCounter, real_corpus: Path) -> None:
    documents = CorpusLoader().load(real_corpus).documents
    split = chunker(token_counter, max_tokens=256)
    for doc in documents:
        chunks = split.chunk(doc)
        assert chunks[0].char_start == 0 and chunks[-1].char_end == len(doc.abstract)
        for chunk in chunks:
            assert split.count_indexed_tokens(chunk) <= 256
            assert doc.abstract[chunk.char_start : chunk.char_end] == chunk.text
