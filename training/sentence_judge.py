"""Train the sentence judge: a cross-encoder that reads a question and ONE sentence of an abstract (under its
title) and says whether the sentence states a result that answers the question.

The passage judge (training/judge.py) says whether an abstract answers; it cannot say which sentence does, and the
sentence most like the question is usually the one that restates its topic (the method), not the one that states
the result. This model starts from the passage judge's weights and is fine-tuned, whole, with a pointwise logistic
loss on sentences:

  * finding    a sentence labelled as stating the result that answers (training/data/sentences), weight 1,
               the `best` one weight 2;
  * method     a sentence on the question's topic that states no result: a negative, weight 2 (the hard case);
  * other      the abstract's remaining sentences: negatives;
  * paraphrase the 1,800 written paraphrase questions' `answer_sentences` (not labelled finding/method): positives
               and the rest negatives, weight 0.5 (their labels are coarser);
  * near miss  a contrast question written for an abstract it does not answer: every sentence a negative;
  * neighbour  the sentences of the nearest other abstract of a paraphrase question: negatives;
  * topical    with --off-topic N, the written topical questions (several abstracts answer each in part, every
               neighbour was read): the finding sentences of each answering abstract positive, its other
               sentences negatives at half weight, and every sentence of up to N neighbours read and judged not to
               answer as negatives (on the topic, often with results of their own, but not results that answer:
               the papers a broad answer must leave out).

Pairs of abstracts in the validation split (training/sentences/dataset.py) are held out and reported: how often
the top-scored sentence is a finding, the best one, or a method sentence; and on the held-out written topical
questions, how well a paper's best sentence tells the abstracts that answer from the neighbours that do not.

    python -m training.sentence_judge [--steps 1400] [--off-topic 0] [--out models/weights/sentence-judge]
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from answering.citations import sentences_of as abstract_sentences
from corpus.documents import Document
from retrieval.cross_encoder import SegmentPoolingCrossEncoder, load_tokenizer
from retrieval.reranker import RERANKER_INFO_FILE, passage_text
from training.corpus import REPO_ROOT, load_training_corpus
from training.judge import DEFAULT_JUDGE_DIR, AffineJudge, neighbours, train
from training.questions.dataset import load_contrasts, load_paraphrases
from training.sentences.dataset import SentenceLabels, load_sentence_labels

log = logging.getLogger("training.sentence_judge")
DEFAULT_SENTENCE_JUDGE_DIR = REPO_ROOT / "models" / "weights" / "sentence-judge"
MAX_LENGTH = 128  # question, title and one sentence: 99th percentile about 100 tokens


@dataclass(frozen=True)
class SentencePair:
    question: str
    passage: str
    label: int
    source: str
    weight: float = 1.0


def sentences_of(document: Document) -> list[str]:
    return abstract_sentences(document.abstract)


def labelled_pairs(labels: list[SentenceLabels], questions: dict[str, str], corpus: dict[str, Document]
                   ) -> list[SentencePair]:  # fmt: skip
    pairs = []
    for label in labels:
        document = corpus[label.doc_id]
        for number, sentence in enumerate(sentences_of(document)):
            shown = passage_text(document.title, sentence)
            if number in label.finding:
                pairs.append(SentencePair(questions[label.question_id], shown, 1, "finding",
                                          2.0 if number == label.best else 1.0))  # fmt: skip
            elif number in label.method:
                pairs.append(SentencePair(questions[label.question_id], shown, 0, "method", 2.0))
            else:
                pairs.append(SentencePair(questions[label.question_id], shown, 0, "other"))
    return pairs


def written_questions() -> dict[str, str]:
    from training.questions.dataset import load_reworded, load_topicals

    asked = {q.question_id: q.question for q in load_paraphrases() + load_reworded()}
    asked.update({q.question_id: q.question for q in load_topicals()})
    return asked


def topical_pairs(corpus: dict[str, Document], held_out_docs: set[str], off_topic: int, seed: int
                  ) -> list[SentencePair]:  # fmt: skip
    """The written topical questions of the training split, sentence by sentence (see the module's docstring)."""
    from training.questions.dataset import load_topicals

    rng = random.Random(seed)
    pairs = []
    for question in load_topicals():
        if question.is_validation:
            continue
        for doc_id, numbers in question.findings:
            document = corpus.get(doc_id)
            if document is None or doc_id in held_out_docs:
                continue
            for number, sentence in enumerate(sentences_of(document)):
                answers = number in numbers
                pairs.append(SentencePair(question.question, passage_text(document.title, sentence), int(answers),
                                          "topical", 1.0 if answers else 0.5))  # fmt: skip
        judged_out = [d for d in question.judged if d not in question.relevant and d in corpus
                      and d not in held_out_docs]  # fmt: skip
        for doc_id in rng.sample(judged_out, min(off_topic, len(judged_out))):
            document = corpus[doc_id]
            pairs += [SentencePair(question.question, passage_text(document.title, s), 0, "topical off-topic")
                      for s in sentences_of(document)]  # fmt: skip
    return pairs


def training_pairs(labels: list[SentenceLabels], corpus: dict[str, Document], index, off_topic: int = 0,
                   seed: int = 0) -> list[SentencePair]:  # fmt: skip
    """Every pair of the training split: labelled sentences, then the coarser written questions."""
    questions = written_questions()
    held_out_docs = {label.doc_id for label in labels if label.is_validation}
    labelled = [label for label in labels if not label.is_validation]
    pairs = labelled_pairs(labelled, questions, corpus)
    labelled_questions = {label.question_id for label in labels}
    for question in load_paraphrases():
        if question.question_id in labelled_questions or question.doc_id in held_out_docs \
                or question.doc_id not in corpus or question.is_validation:  # fmt: skip
            continue
        document = corpus[question.doc_id]
        for number, sentence in enumerate(sentences_of(document)):
            pairs.append(SentencePair(question.question, passage_text(document.title, sentence),
                                      int(number in question.answer_sentences), "paraphrase", 0.5))  # fmt: skip
        for chunk in neighbours(index, question.question, question.doc_id, 1):
            other = corpus.get(chunk.doc_id)
            if other is not None and other.doc_id not in held_out_docs:
                pairs += [SentencePair(question.question, passage_text(other.title, s), 0, "neighbour", 0.5)
                          for s in sentences_of(other)]  # fmt: skip
    for near_miss in load_contrasts():
        document = corpus.get(near_miss.source_doc_id)
        if document is not None and document.doc_id not in held_out_docs:
            pairs += [SentencePair(near_miss.question, passage_text(document.title, s), 0, "near miss")
                      for s in sentences_of(document)]  # fmt: skip
    if off_topic:
        pairs += topical_pairs(corpus, held_out_docs, off_topic, seed)
    return pairs


@torch.no_grad()
def validate(model: torch.nn.Module, tokenizer, labels: list[SentenceLabels], corpus: dict[str, Document],
             questions: dict[str, str]) -> dict[str, float]:  # fmt: skip
    """On held-out abstracts: the top-scored sentence is a finding / the best / a method sentence."""
    model.eval()
    top_finding = top_best = top_method = 0
    for label in labels:
        document = corpus[label.doc_id]
        shown = [passage_text(document.title, s) for s in sentences_of(document)]
        encoded = tokenizer([questions[label.question_id]] * len(shown), shown, truncation="only_second",
                            max_length=MAX_LENGTH, padding=True, return_tensors="pt")  # fmt: skip
        top = int(torch.argmax(model(**encoded)))
        top_finding += top in label.finding
        top_best += top == label.best
        top_method += top in label.method
    count = max(1, len(labels))
    return {"pairs": len(labels), "top_is_finding": round(top_finding / count, 3),
            "top_is_best": round(top_best / count, 3), "top_is_method": round(top_method / count, 3)}  # fmt: skip


@torch.no_grad()
def validate_topical(model: torch.nn.Module, tokenizer, corpus: dict[str, Document]) -> dict[str, float]:
    """On the held-out written topical questions: does a paper's best sentence score tell the abstracts that
    answer from the on-topic neighbours that do not? The share of (answering, not answering) pairs of a question's
    judged abstracts ordered rightly (ROC AUC within questions, pooled), and how often the top paper answers."""
    from training.questions.dataset import load_topicals

    model.eval()
    ordered = pairs = top_answers = questions = 0
    for question in load_topicals():
        judged = [d for d in question.judged if d in corpus]
        if not question.is_validation or not judged:
            continue
        best = {}
        for doc_id in judged:
            document = corpus[doc_id]
            shown = [passage_text(document.title, s) for s in sentences_of(document)]
            encoded = tokenizer([question.question] * len(shown), shown, truncation="only_second",
                                max_length=MAX_LENGTH, padding=True, return_tensors="pt")  # fmt: skip
            best[doc_id] = float(model(**encoded).max())
        answering = [best[d] for d in judged if d in question.relevant]
        others = [best[d] for d in judged if d not in question.relevant]
        ordered += sum((a > o) + 0.5 * (a == o) for a in answering for o in others)
        pairs += len(answering) * len(others)
        top_answers += max(judged, key=best.__getitem__) in question.relevant
        questions += 1
    return {"topical_questions": questions, "topical_paper_auc": round(ordered / max(1, pairs), 3),
            "topical_top_answers": round(top_answers / max(1, questions), 3)}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.sentence_judge", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--init", type=Path, default=DEFAULT_JUDGE_DIR, help="the passage judge to start from")
    parser.add_argument("--out", type=Path, default=DEFAULT_SENTENCE_JUDGE_DIR)
    parser.add_argument("--steps", type=int, default=1400)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=4e-5)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--name", default="aer-rag-sentence-judge-L3")
    parser.add_argument("--easy-share", type=float, default=0.35,
                        help="share of the neighbour and near-miss negatives kept (the labelled sentences all are)")
    parser.add_argument("--off-topic", type=int, default=0,
                        help="train on the written topical questions too, with this many neighbours judged not to "
                             "answer each as negatives (0: without them, as the shipped model; docs/answering.md "
                             "measures 3)")  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    from training.corpus import training_index

    corpus = load_training_corpus()
    labels = load_sentence_labels()
    questions = written_questions()
    pairs = training_pairs(labels, corpus, training_index(), args.off_topic, args.seed)
    rng = random.Random(args.seed)
    pairs = [p for p in pairs if p.source not in ("neighbour", "near miss") or rng.random() < args.easy_share]
    counts = {source: sum(p.source == source for p in pairs) for source in dict.fromkeys(p.source for p in pairs)}
    log.info("%d sentence pairs: %s", len(pairs), counts)
    tokenizer = load_tokenizer()
    encoder = SegmentPoolingCrossEncoder.load(args.init)
    held_out = [label for label in labels if label.is_validation]
    log.info("before: %s", validate(encoder, tokenizer, held_out, corpus, questions)
             | validate_topical(encoder, tokenizer, corpus))
    judge = AffineJudge(encoder, scale=1.0, shift=0.0)
    losses = train(judge, tokenizer, pairs, args.steps, args.batch_size, args.learning_rate, MAX_LENGTH, args.seed)
    folded = judge.folded()
    figures = validate(folded, tokenizer, held_out, corpus, questions) | validate_topical(folded, tokenizer, corpus)
    log.info("after: %s", figures)
    args.out.mkdir(parents=True, exist_ok=True)
    folded.save(args.out)
    command = " ".join(["python -m training.sentence_judge", *(sys.argv[1:] if argv is None else argv)])
    info = {
        "name": args.name, "role": "sentence judge: its score is the logit of P(the sentence states a result "
        "answering the question)", "started_from": args.init.name, "max_length": MAX_LENGTH,
        "first_stage_weight": 0.0, "bi_encoder_weight": 0.0,
        "training": {"pairs": counts, "steps": args.steps, "batch_size": args.batch_size,
                     "learning_rate": args.learning_rate, "seed": args.seed,
                     "final_loss": round(float(np.mean(losses[-50:])), 4)},
        "validation": figures, "command": command,
    }  # fmt: skip
    (args.out / RERANKER_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
    log.info("wrote %s", args.out)


if __name__ == "__main__":
    main()
