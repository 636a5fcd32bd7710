"""Grounded answering examples for the generator's LoRA adapter, built from the written training questions
(training/data/questions) over the non-AER training corpus.

For each paraphrase question (its abstract's split decides train or validation):
  * the passages are what the service would show the model: the hybrid retriever's top k chunks for the question,
    with the question's own abstract put in (at a random position) when retrieval missed it, each focused as the
    service focuses it (answering/focus.py: its sentences closest to the question first) — the abstract's answer
    sentences are kept in its passage, since the answer must be readable there;
  * the answer states the finding: the sentences the question's writer marked as answering it, in the third
    person, each ending with the [n] of its passage.
A share of refusals comes from the verified unanswerable questions, with their own top k passages: the answer is
the service's refusal sentence (for requests that turn the answerability decision off, where the model decides).

    python -m training.generator.data --out var/grounded_data
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from answering.focus import FocusSettings, SentenceFocus
from answering.prompt import NOT_COVERED_ANSWER, Passage
from corpus.sentences import split_sentences
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from retrieval.hybrid import HybridRetriever
from training.corpus import training_index
from training.questions.dataset import QUESTIONS_DIR, ParaphraseQuestion, load_paraphrases, load_unanswerables

log = logging.getLogger(__name__)

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


@dataclass(frozen=True)
class GroundedDataSettings:
    questions_dir: Path = QUESTIONS_DIR
    out_dir: Path = Path("var/grounded_data")
    passages: int = 3  # k, as the service's default prompt
    max_sentences: int = FocusSettings().max_sentences  # per passage, as the service focuses them
    refusal_share: float = 0.1  # refusal examples per answerable example
    max_answer_words: int = 70
    seed: int = 13

    def __post_init__(self) -> None:
        if self.passages < 2:
            raise ValueError(f"passages must be at least 2, got {self.passages}.")
        if self.max_sentences < 1 or self.max_answer_words < 10:
            raise ValueError("max_sentences must be >= 1 and max_answer_words >= 10.")
        if not 0 <= self.refusal_share <= 1:
            raise ValueError(f"refusal_share must be between 0 and 1, got {self.refusal_share}.")


@dataclass
class GroundedExample:
    example_id: str
    kind: str  # "single" | "refusal"
    question: str
    passages: list[Passage]
    answer: str  # the training target, with [n] markers
    target_doc_ids: list[str]  # the abstract the answer comes from (the question's source for refusals)
    reference: str  # the finding without markers, for ROUGE-L ("" for refusals)

    def to_json(self) -> dict:
        return {**asdict(self), "passages": [asdict(p) for p in self.passages]}

    @classmethod
    def from_json(cls, data: dict) -> GroundedExample:
        return cls(**{**data, "passages": [Passage(**p) for p in data["passages"]]})


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
    """Entry point: `build()` -> (train, validation) examples, also written as JSONL under out_dir."""

    def __init__(self, settings: GroundedDataSettings, index: PublishedIndex) -> None:
        self.settings = settings
        self.index = index
        self.retriever = HybridRetriever(LocalIndexBackend(index), index.embedder)
        self.focus = SentenceFocus(index.embedder.encode, settings.max_sentences)
        self.rng = random.Random(settings.seed)
        self.chunks_of: dict[str, list] = {}
        for chunk in index.chunks:
            self.chunks_of.setdefault(chunk.doc_id, []).append(chunk)

    def build(self) -> tuple[list[GroundedExample], list[GroundedExample]]:
        splits: dict[str, list[GroundedExample]] = {"train": [], "validation": []}
        questions = load_paraphrases(self.settings.questions_dir)
        for number, question in enumerate(questions):
            split = "validation" if question.is_validation else "train"
            example = self._answered(question, f"{split}-{number:05d}-single")
            if example is not None:
                splits[split].append(example)
            if (number + 1) % 200 == 0:
                log.info("%d of %d questions", number + 1, len(questions))
        unanswerable = load_unanswerables(self.settings.questions_dir)
        self.rng.shuffle(unanswerable)
        for split, examples in splits.items():
            wanted = round(self.settings.refusal_share * len(examples))
            pool = [q for q in unanswerable if (split == "validation") == q.is_validation][:wanted]
            examples += [self._refusal(q.question, q.source_doc_id, f"{split}-{i:05d}-refusal") for i, q in
                         enumerate(pool)]  # fmt: skip
            self.rng.shuffle(examples)
        self._write(splits["train"], splits["validation"])
        return splits["train"], splits["validation"]

    def _retrieved(self, question: str, exclude: set[str]) -> list[Passage]:
        """The hybrid top k chunks, one per document, without the excluded documents."""
        passages: list[Passage] = []
        for hit in self.retriever.retrieve(question, self.settings.passages * 4):
            if hit.chunk.doc_id in exclude or any(p.doc_id == hit.chunk.doc_id for p in passages):
                continue
            passages.append(Passage.from_chunk(len(passages) + 1, hit.chunk, hit.document.year))
            if len(passages) == self.settings.passages:
                break
        return passages

    def _answered(self, question: ParaphraseQuestion, example_id: str) -> GroundedExample | None:
        document = self.index.documents.get(question.doc_id)
        if document is None:
            return None
        sentences = question.answer_text(document)
        if not sentences or len(" ".join(sentences).split()) > self.settings.max_answer_words:
            return None
        chunk = question.answer_chunk(document, self.chunks_of[question.doc_id])
        passages = self._retrieved(question.question, exclude={question.doc_id})[: self.settings.passages - 1]
        passages.insert(self.rng.randrange(len(passages) + 1), Passage.from_chunk(0, chunk, document.year))
        passages = self._numbered(self.focus.apply(question.question, passages))
        number = next(p.number for p in passages if p.doc_id == question.doc_id)
        target = passages[number - 1]
        missing = [s for s in sentences if s not in target.text]
        if missing:  # focus dropped an answer sentence: it leads, the closest of the rest follow
            kept = [s for s in (target.text[a:b] for a, b in split_sentences(target.text)) if s not in sentences]
            text = " ".join([*sentences, *kept][: max(self.settings.max_sentences, len(sentences))])
            passages[number - 1] = Passage(target.number, target.doc_id, target.chunk_id, target.title,
                                           target.year, text)  # fmt: skip
        answer = " ".join(cite(third_person(s), number) for s in sentences)
        reference = " ".join(third_person(s) for s in sentences)
        return GroundedExample(example_id, "single", question.question, passages, answer, [question.doc_id], reference)

    def _refusal(self, question: str, source: str | None, example_id: str) -> GroundedExample:
        passages = self._numbered(self.focus.apply(question, self._retrieved(question, exclude=set())))
        return GroundedExample(example_id, "refusal", question, passages, NOT_COVERED_ANSWER,
                               [source] if source else [], "")  # fmt: skip

    @staticmethod
    def _numbered(passages: list[Passage]) -> list[Passage]:
        return [Passage(i, p.doc_id, p.chunk_id, p.title, p.year, p.text) for i, p in enumerate(passages, start=1)]

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
    parser = argparse.ArgumentParser(prog="python -m training.generator.data", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--out", type=Path, default=GroundedDataSettings.out_dir)
    parser.add_argument("--questions", type=Path, default=QUESTIONS_DIR)
    parser.add_argument("--passages", type=int, default=GroundedDataSettings.passages)
    parser.add_argument("--refusal-share", type=float, default=GroundedDataSettings.refusal_share)
    parser.add_argument("--seed", type=int, default=GroundedDataSettings.seed)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        settings = GroundedDataSettings(questions_dir=args.questions, out_dir=args.out, passages=args.passages,
                                        refusal_share=args.refusal_share, seed=args.seed)  # fmt: skip
        train, validation = GroundedDataBuilder(settings, training_index()).build()
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    print(f"wrote {len(train)} training and {len(validation)} validation examples to {args.out}")


if __name__ == "__main__":
    main()
