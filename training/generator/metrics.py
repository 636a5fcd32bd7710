"""Scoring grounded answers: support and citation accuracy (the service's SupportChecker), refusals,
repetition loops and ROUGE-L against a reference finding. Used by benchmarks/grounded_eval.py."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from answering.citations import SupportChecker, is_refusal, parse_markers, strip_markers
from answering.prompt import Passage

_WORD = re.compile(r"\w+")
LOOP_NGRAM = 4
LOOP_REPEATS = 3  # a word 4-gram seen this often is a loop; twice can be a faithful quote


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def longest_common_subsequence(a: Sequence[str], b: Sequence[str]) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for item in a:
        current = [0]
        for j, other in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if item == other else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 over lower-cased word tokens ([n] markers removed); 0 when either side is empty."""
    cand, ref = words(strip_markers(candidate)), words(strip_markers(reference))
    if not cand or not ref:
        return 0.0
    lcs = longest_common_subsequence(cand, ref)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(cand), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


def has_repetition_loop(text: str, n: int = LOOP_NGRAM, repeats: int = LOOP_REPEATS) -> bool:
    """True when some word n-gram occurs `repeats` times or more: the model is going round in circles."""
    tokens = words(strip_markers(text))
    counts = Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return bool(counts) and max(counts.values()) >= repeats


@dataclass
class AnswerScore:
    answerable: bool  # False when the passages were chosen without the answer
    refused: bool
    loop: bool
    claims: int  # answer sentences that make a claim (the checker's definition)
    supported_claims: int
    markers: int
    correct_markers: int
    cites_target: bool | None  # a marker points to a passage from the target abstract (None: none shown)
    rouge_l: float | None  # vs the reference finding (answerable only)


class AnswerScorer:
    """Scores one answer against its passages; aggregate with `summarize`."""

    def __init__(self, checker: SupportChecker) -> None:
        self.checker = checker

    def score(self, answer: str, passages: Sequence[Passage], answerable: bool, reference: str = "",
              target_doc_ids: Sequence[str] = ()) -> AnswerScore:
        report = self.checker.check(answer, passages)
        claims = [s for s in report.sentences if s.is_claim]
        targets = [p.number for p in passages if p.doc_id in set(target_doc_ids)]
        markers = parse_markers(answer)
        return AnswerScore(
            answerable=answerable,
            refused=is_refusal(answer),
            loop=has_repetition_loop(answer),
            claims=len(claims),
            supported_claims=sum(s.supported for s in claims),
            markers=sum(len(s.markers) for s in report.sentences),
            correct_markers=sum(len(s.correct_markers) for s in report.sentences),
            cites_target=any(m in targets for m in markers) if answerable and targets else None,
            rouge_l=rouge_l(answer, reference) if answerable and reference else None,
        )


def _share(numerator: float, denominator: float) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def summarize(scores: Sequence[AnswerScore]) -> dict[str, float | int | None]:
    """Pooled shares: supported claims / claims, correct markers / markers, refusals / answer-removed cases."""
    answerable = [s for s in scores if s.answerable]
    removed = [s for s in scores if not s.answerable]
    with_target = [s for s in answerable if s.cites_target is not None]
    rouge = [s.rouge_l for s in answerable if s.rouge_l is not None]
    return {
        "answers": len(scores),
        "supported_sentences": _share(sum(s.supported_claims for s in scores), sum(s.claims for s in scores)),
        "correct_markers": _share(sum(s.correct_markers for s in scores), sum(s.markers for s in scores)),
        "refusal_when_absent": _share(sum(s.refused for s in removed), len(removed)),
        "false_refusal": _share(sum(s.refused for s in answerable), len(answerable)),
        "cites_target": _share(sum(bool(s.cites_target) for s in with_target), len(with_target)),
        "answers_with_markers": _share(sum(s.markers > 0 for s in answerable if not s.refused),
                                       sum(not s.refused for s in answerable)),
        "repetition_loops": _share(sum(s.loop for s in scores), len(scores)),
        "rouge_l": round(sum(rouge) / len(rouge), 4) if rouge else None,
    }
