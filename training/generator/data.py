"""Grounded question-answering examples for fine-tuning the generator, built from non-AER abstracts only.

For a target abstract the builder writes:
  * a question derived by rules from its title; optionally (written_question_share > 0) a share of them is
    written by the base model itself from the abstract's key finding, kept only if it passes a filter
    (QuestionWriter). Measured: written questions did not lower false refusals on AER questions (they
    mostly copy the finding's words; see the adapter card), so the shipped recipe uses titles only,
  * k passages in the service's prompt format: one window of the target abstract (the one holding its key
    finding) at a random position among hard negatives (windows of other abstracts that the project's
    BM25 ranks highest for the question),
  * the answer: the key finding sentence(s), close to the abstract's own words, each followed by [n].
Three kinds of examples: "single" (one target), "multi" (two targets, each cited) and "refusal" (the
target removed, the answer is exactly NOT_COVERED_ANSWER). The validation split is held out by abstract.

    python -m training.generator.data --out var/grounded_data --train 1500 --validation 60
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from answering.prompt import NOT_COVERED_ANSWER, Passage
from indexing.bm25 import Bm25Index, Bm25Settings
from indexing.chunking import ChunkingSettings, SentenceChunker, split_sentences
from indexing.documents import Chunk, Document
from models import Generator
from training.corpus import TRAINING_CORPUS, load_training_corpus
from training.generator.question_writer import QuestionWriter

log = logging.getLogger(__name__)

DEFAULT_CORPUS = TRAINING_CORPUS
# Sentences that state a result; the earlier a cue appears in this list, the stronger it is.
FINDING_CUES = (
    "we find",
    "find that",
    "finds that",
    "results show",
    "results suggest",
    "we show",
    "show that",
    "shows that",
    "evidence",
    "results indicate",
    "suggest that",
    "suggests that",
    "we estimate",
    "conclude",
    "demonstrate",
    "implies that",
    "results",
)
QUESTION_TEMPLATES = (
    "What does research find about {topic}?",
    "What is known about {topic}?",
    "What do the abstracts say about {topic}?",
    "What are the findings on {topic}?",
    "What does the evidence show about {topic}?",
)
MULTI_TEMPLATE = "What do studies find about {first} and about {second}?"
# First-person phrasing of abstracts, rewritten so that the answer reports the study rather than speaks for it.
_VOICE = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"\bIn this (paper|article|study), (we|I)\b", "The authors"),
        (r"\b(This|this) (paper|article)\b", r"\1 study"),
        (r"\bWe\b", "The authors"),
        (r"\bwe\b", "the authors"),
        (r"\bOur\b", "Their"),
        (r"\bour\b", "their"),
        (r"\bus\b", "them"),
        (r"(^|[.!?] )I\b", r"\1The authors"),
        (r"\bI\b", "the authors"),
        (r"\bMy\b", "Their"),
        (r"\bmy\b", "their"),
    )
)


class WordCounter:
    """The chunker's token counter, counting words: passages for the generator are sized in words
    so that the data do not depend on the embedding model's files."""

    max_seq_length = 512
    special_tokens = 0

    def count(self, text: str) -> int:
        return len(text.split())

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [match.span() for match in re.finditer(r"\S+", text)]


@dataclass(frozen=True)
class GroundedDataSettings:
    corpus: Path = DEFAULT_CORPUS
    out_dir: Path = Path("var/grounded_data")
    train_abstracts: int = 1500  # target abstracts used for training examples
    validation_abstracts: int = 60  # held out: never a target, a negative or a second target in training
    passages: int = 3  # k, passages per prompt
    max_passage_words: int = 60  # keeps prompts short (CPU training); title words count too
    multi_share: float = 0.2
    refusal_share: float = 0.25
    max_answer_words: int = 60
    # Share of single and refusal examples whose question the base model writes from the finding (0: all
    # questions come from titles by rules, and no model is loaded).
    written_question_share: float = 0.0
    seed: int = 13

    def __post_init__(self) -> None:
        if self.train_abstracts < 1 or self.validation_abstracts < 1:
            raise ValueError("train_abstracts and validation_abstracts must be at least 1.")
        if self.passages < 2:
            raise ValueError(f"passages must be at least 2 (multi-passage examples cite two), got {self.passages}.")
        if self.max_passage_words < 32 or self.max_answer_words < 10:
            raise ValueError("max_passage_words must be >= 32 (the chunker's minimum) and max_answer_words >= 10.")
        if not (self.multi_share >= 0 and self.refusal_share >= 0 and self.multi_share + self.refusal_share < 1):
            raise ValueError("multi_share and refusal_share must be >= 0 and sum to less than 1.")
        if not 0 <= self.written_question_share <= 1:
            raise ValueError(f"written_question_share must be between 0 and 1, got {self.written_question_share}.")


@dataclass
class GroundedExample:
    example_id: str
    kind: str  # "single" | "multi" | "refusal"
    question: str
    passages: list[Passage]
    answer: str  # the training target, with [n] markers
    target_doc_ids: list[str]  # abstracts whose findings the answer states (the removed one for refusals)
    reference: str  # the finding(s) without markers, for ROUGE-L ("" for refusals)

    def to_json(self) -> dict:
        return {**asdict(self), "passages": [asdict(p) for p in self.passages]}

    @classmethod
    def from_json(cls, data: dict) -> GroundedExample:
        return cls(**{**data, "passages": [Passage(**p) for p in data["passages"]]})


def question_topic(title: str) -> str:
    """A title turned into the object of a question: "Trade and Growth: Evidence" -> "trade and growth"."""
    topic = re.split(r":|\?| - ", title)[0].strip().rstrip(".")
    words = topic.split()
    if len(words) > 1 and words[0] in ("On", "Of"):
        words = words[1:]
    if words and words[0] in ("A", "An", "The"):  # title case is kept otherwise ("Public Schooling")
        words[0] = words[0].lower()
    return " ".join(words)


def finding_score(sentence: str) -> int:
    lower = sentence.lower()
    return max((len(FINDING_CUES) - i for i, cue in enumerate(FINDING_CUES) if cue in lower), default=0)


def third_person(sentence: str) -> str:
    for pattern, replacement in _VOICE:
        sentence = pattern.sub(replacement, sentence)
    return sentence


def cite(sentence: str, number: int) -> str:
    """Put the [n] marker before the sentence's closing punctuation: "... growth [2]."."""
    body = sentence.rstrip()
    end = body[-1] if body and body[-1] in ".!?" else "."
    return f"{body.rstrip('.!?').rstrip()} [{number}]{end}"


class GroundedDataBuilder:
    """Entry point: `build()` -> (train, validation) examples, also written as JSONL under out_dir.

    question_writer: used when settings.written_question_share > 0; by default the base SmolLM2 is loaded.
    """

    def __init__(self, settings: GroundedDataSettings, question_writer: QuestionWriter | None = None) -> None:
        self.settings = settings
        self.rng = random.Random(settings.seed)
        self.question_writer = question_writer
        self.written_questions: dict[str, str] = {}  # target doc id -> accepted written question

    # ------------------------------------------------------------------ corpus
    def load_documents(self) -> list[Document]:
        documents = load_training_corpus(Path(self.settings.corpus)).values()  # refuses AER rows
        return [d for d in documents if d.title and len(split_sentences(d.abstract)) >= 2]

    def build(self) -> tuple[list[GroundedExample], list[GroundedExample]]:
        documents = self.load_documents()
        chunker = SentenceChunker(ChunkingSettings(self.settings.max_passage_words, overlap_sentences=0), WordCounter())
        self.chunks: list[Chunk] = [c for d in documents for c in chunker.chunk(d)]
        self.documents = {d.doc_id: d for d in documents}
        self.doc_of_row = np.array([c.doc_id for c in self.chunks])
        self.chunks_of_doc: dict[str, list[Chunk]] = {}
        for chunk in self.chunks:
            self.chunks_of_doc.setdefault(chunk.doc_id, []).append(chunk)
        self.bm25 = Bm25Index.build([c.indexed_text for c in self.chunks], Bm25Settings())

        order = list(self.documents)
        self.rng.shuffle(order)
        needed = self.settings.train_abstracts + self.settings.validation_abstracts
        if len(order) < needed + self.settings.passages:
            raise ValueError(f"The corpus has {len(order)} usable abstracts; {needed} targets were asked for.")
        validation_ids = order[: self.settings.validation_abstracts]
        train_ids = order[self.settings.validation_abstracts : needed]
        self._write_questions(order[:needed])
        # Validation abstracts appear nowhere in training, not even as negatives.
        in_validation = np.isin(self.doc_of_row, validation_ids)
        train = self._examples(train_ids, negatives=~in_validation, partners=~in_validation, split="train")
        # Validation negatives may come from anywhere (a negative reveals no validation answer), but a second
        # target must itself be held out.
        validation = self._examples(
            validation_ids, negatives=np.ones(len(self.chunks), dtype=bool), partners=in_validation, split="validation"
        )
        self._write(train, validation)
        return train, validation

    # ------------------------------------------------------------------ examples
    def _examples(
        self, targets: list[str], negatives: np.ndarray, partners: np.ndarray, split: str
    ) -> list[GroundedExample]:
        """negatives: rows allowed as hard negatives; partners: rows allowed as the second target of "multi"."""
        examples = []
        for i, doc_id in enumerate(targets):
            draw = self.rng.random()
            if draw < self.settings.refusal_share:
                kind = "refusal"
            elif draw < self.settings.refusal_share + self.settings.multi_share:
                kind = "multi"
            else:
                kind = "single"
            if kind == "multi":
                example = self._multi(doc_id, negatives, partners)
            else:
                example = getattr(self, f"_{kind}")(doc_id, negatives)
            if example is not None:
                example.example_id = f"{split}-{i:05d}-{kind}"
                examples.append(example)
        return examples

    def _finding(self, doc_id: str) -> tuple[Chunk, list[str]]:
        """The target's passage (the window holding its key finding) and its finding sentence(s)."""
        candidates = []
        for chunk in self.chunks_of_doc[doc_id]:
            for position, (start, end) in enumerate(split_sentences(chunk.text)):
                sentence = chunk.text[start:end]
                candidates.append((finding_score(sentence), chunk.position, position, chunk, sentence))
        # The strongest cue wins; among equals the later sentence (abstracts end with their results).
        best = max(candidates, key=lambda c: (c[0], c[1], c[2]))
        chunk = best[3]
        sentences = [chunk.text[s:e] for s, e in split_sentences(chunk.text)]
        index = sentences.index(best[4])
        finding = [best[4]]
        # A second sentence when it also states a result and the answer stays short.
        if (
            index + 1 < len(sentences)
            and finding_score(sentences[index + 1]) > 0
            and len((best[4] + " " + sentences[index + 1]).split()) <= self.settings.max_answer_words
        ):
            finding.append(sentences[index + 1])
        return chunk, [third_person(s) for s in finding]

    def _write_questions(self, targets: list[str]) -> None:
        """Written questions for a seeded share of the targets (drawn before any example, so the draw does
        not depend on which questions the filter rejects)."""
        if self.settings.written_question_share == 0:
            return  # no draws: a titles-only build is identical to one made before written questions existed
        chosen = [doc_id for doc_id in targets if self.rng.random() < self.settings.written_question_share]
        if not chosen:
            return
        if self.question_writer is None:
            self.question_writer = QuestionWriter(Generator.from_pretrained(dtype="auto"))
        findings = [" ".join(self._finding(doc_id)[1]) for doc_id in chosen]
        written = self.question_writer.write(findings)
        self.written_questions = {doc_id: q for doc_id, q in zip(chosen, written, strict=True) if q is not None}
        log.info("%d of %d written questions accepted", len(self.written_questions), len(chosen))

    def _question(self, doc_id: str) -> str:
        template = self.rng.choice(QUESTION_TEMPLATES)  # drawn always, so the rng sequence stays aligned
        return self.written_questions.get(doc_id) or template.format(topic=question_topic(self.documents[doc_id].title))

    def _negatives(self, question: str, exclude: set[str], allowed: np.ndarray, count: int) -> list[Chunk]:
        """The BM25 top windows for the question from other abstracts, one per abstract."""
        mask = allowed & ~np.isin(self.doc_of_row, list(exclude))
        picked: list[Chunk] = []
        for row, _ in self.bm25.search(question, top_n=count * 4, allowed=mask):
            chunk = self.chunks[row]
            if chunk.doc_id not in {c.doc_id for c in picked}:
                picked.append(chunk)
            if len(picked) == count:
                return picked
        # Too few lexical matches: fill with random allowed windows.
        rows = np.flatnonzero(mask)
        while len(picked) < count:
            chunk = self.chunks[int(self.rng.choice(rows))]
            if chunk.doc_id not in {c.doc_id for c in picked}:
                picked.append(chunk)
        return picked

    def _passages(self, chunks: list[Chunk]) -> list[Passage]:
        return [Passage.from_chunk(i, c, self.documents[c.doc_id].year) for i, c in enumerate(chunks, start=1)]

    def _single(self, doc_id: str, allowed: np.ndarray) -> GroundedExample | None:
        question = self._question(doc_id)
        target, finding = self._finding(doc_id)
        chunks = self._negatives(question, {doc_id}, allowed, self.settings.passages - 1)
        chunks.insert(self.rng.randrange(len(chunks) + 1), target)
        number = chunks.index(target) + 1
        answer = " ".join(cite(s, number) for s in finding)
        return GroundedExample("", "single", question, self._passages(chunks), answer, [doc_id], " ".join(finding))

    def _multi(self, doc_id: str, allowed: np.ndarray, partners: np.ndarray) -> GroundedExample | None:
        # The second target: a related abstract (BM25 neighbour by title), so the two topics sit together.
        first_title = self.documents[doc_id].title
        neighbours = self._negatives(first_title, {doc_id}, partners, 1)
        second_id = neighbours[0].doc_id
        question = MULTI_TEMPLATE.format(
            first=question_topic(first_title), second=question_topic(self.documents[second_id].title)
        )
        (first, first_finding), (second, second_finding) = self._finding(doc_id), self._finding(second_id)
        chunks = self._negatives(question, {doc_id, second_id}, allowed, self.settings.passages - 2)
        for target in (first, second):
            chunks.insert(self.rng.randrange(len(chunks) + 1), target)
        answer = " ".join(
            cite(finding[0], chunks.index(target) + 1)
            for target, finding in ((first, first_finding), (second, second_finding))
        )
        reference = f"{first_finding[0]} {second_finding[0]}"
        return GroundedExample("", "multi", question, self._passages(chunks), answer, [doc_id, second_id], reference)

    def _refusal(self, doc_id: str, allowed: np.ndarray) -> GroundedExample | None:
        question = self._question(doc_id)
        chunks = self._negatives(question, {doc_id}, allowed, self.settings.passages)
        return GroundedExample("", "refusal", question, self._passages(chunks), NOT_COVERED_ANSWER, [doc_id], "")

    def _write(self, train: list[GroundedExample], validation: list[GroundedExample]) -> None:
        out = Path(self.settings.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, examples in (("train", train), ("validation", validation)):
            write_examples(out / f"{name}.jsonl", examples)
        settings = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self.settings).items()}
        (out / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")


def write_examples(path: Path, examples: list[GroundedExample]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for example in examples:
            handle.write(json.dumps(example.to_json(), ensure_ascii=False) + "\n")


def read_examples(path: Path) -> list[GroundedExample]:
    with Path(path).open(encoding="utf-8") as handle:
        return [GroundedExample.from_json(json.loads(line)) for line in handle if line.strip()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build grounded QA examples from non-AER abstracts.")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--out", type=Path, default=Path("var/grounded_data"))
    parser.add_argument("--train", type=int, default=1500, help="target abstracts for training")
    parser.add_argument("--validation", type=int, default=60, help="held-out target abstracts")
    parser.add_argument("--passages", type=int, default=3)
    parser.add_argument("--max-passage-words", type=int, default=60)
    parser.add_argument(
        "--written-question-share",
        type=float,
        default=0.0,
        help="share of questions the base model writes from the key finding (0: titles only, no model loaded)",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads for the question writer")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    try:
        settings = GroundedDataSettings(
            corpus=args.corpus,
            out_dir=args.out,
            train_abstracts=args.train,
            validation_abstracts=args.validation,
            passages=args.passages,
            max_passage_words=args.max_passage_words,
            written_question_share=args.written_question_share,
            seed=args.seed,
        )
        train, validation = GroundedDataBuilder(settings).build()
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    print(f"wrote {len(train)} training and {len(validation)} validation examples to {args.out}")


if __name__ == "__main__":
    main()
