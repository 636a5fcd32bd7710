"""Words that mark a sentence of an abstract as a result or as its method, a prior beside the sentence judge.

The sentence judge (retrieval/sentence_judge.py) reads (question, sentence) and often rates the sentence that
restates the question's topic ("This paper develops a model of bank runs…", "Previous work demonstrates…")
as high as the one that states the result ("We find uninsured depositors are most likely to run."). Abstracts
mark results in a few words, so the sentence a finding is written from is chosen by the judge's logit plus
CUE_WEIGHT x cue, where cue is +1 for a result's words, -1 for a method's opening or a view the paper answers
("Piketty argues that …", "it is widely believed that …": shown as a finding, it reads as the paper's own), 0 for
neither (or both).

Chosen on the development questions' calibration half only (`python -m benchmarks.sentence_choice`): the top
sentence is a finding sentence in 0.80 -> 0.88 of (question, relevant paper) pairs, a method sentence in
0.13 -> 0.07; report half 0.81 -> 0.87 and 0.11 -> 0.06. It only orders sentences: the decision's bars read
the judge's probabilities alone.

An abstract's opening sentence states its question or setting far more often than its result, so it is also
lowered by OPENING_WEIGHT (abstracts of three sentences or more): on the calibration half the top sentence is a
finding sentence in 0.876 -> 0.893 of pairs, the best one in 0.587 -> 0.612, a method sentence in 0.066 -> 0.050
(report half 0.868 -> 0.896, 0.632 -> 0.623, 0.057 -> 0.019); weights 1.5-2.5 measure alike.
"""

from __future__ import annotations

import re

CUE_WEIGHT = 1.5  # logits; the best of 0-3 on the calibration half (1.0-2.0 measure alike)
OPENING_WEIGHT = 2.0  # logits taken off an abstract's first sentence; the middle of 1.5-2.5 (calibration half)

_RESULT = re.compile(
    r"\b(we|they|results?|estimates?|evidence|findings?|analysis|data)\b[^.]{0,40}"
    r"\b(find|found|finds|show|shows|showed|suggest|suggests|indicate|indicates|imply|implies|reveal|reveals|"
    r"document|documents|confirm|confirms)\b"
    r"|\bsignificant(ly)?\b|\bpercent\b|%",
    re.IGNORECASE,
)
_METHOD = re.compile(
    r"^(this|the|our) (paper|article|study|note|essay)\b"
    r"|^(we|I) (develop|study|examine|use|propose|present|build|construct|consider|analy[sz]e|investigate|"
    r"exploit|introduce|extend|test|revisit|model|employ)\b"
    r"|^([^,;]{0,80},\s+)?(we|I) (vary|randomi[sz]e|randomly|conduct|collect|combine|link)\b"  # the procedure
    r"|^(using|to|in this)\b|\b(previous|prior|earlier|existing|past) (work|studies|research)\b|\bliterature\b"
    r"|\bwe ask\b|\bone would expect\b"
    r"|\b(?:is|are) (?:investigated|examined|studied|analy[sz]ed|explored|addressed)\b",  # "X is investigated when …"
    re.IGNORECASE,
)
# What others hold, which the paper then tests or answers: never its own finding ("Piketty argues that r > g …",
# "Proponents of the Bayh-Dole Act argue …", "it is widely believed that …", "conventional wisdom holds that …").
_OTHERS_VIEW = re.compile(
    r"\b(?!We\b|I\b)(?:[A-Z][a-z]+|others|critics|proponents|economists|commentators|observers|policymakers|many)"
    r"\s+(?:has\s+|have\s+)?(?:argues?|argued|claims?|claimed|contends?|contended|asserts?|asserted|maintains?)"
    r"(?:\s+[a-z]+ly)?\s+that\b"
    r"|^(?:He|She)\s"  # what a critic named before does ("He drops all data from Latin America …")
    r"|(?i:\bit\s+(?:is|has\s+been|was)\s+(?:often\s+|widely\s+|commonly\s+|frequently\s+|generally\s+)?"
    r"(?:argued|claimed|believed|thought|asserted)\b"
    r"|\bconventional\s+wisdom\s+(?:holds|is|says|suggests)\b|\baccording\s+to\s+(?:the\s+)?conventional\s+wisdom\b"
    r"|\bin\s+(?:his|her|their)\s+(?:influential\s+|recent\s+|celebrated\s+)?book\b)"
)


def result_cue(sentence: str) -> float:
    """+1: the sentence reads as a result; -1: as the paper's method or setting, or as a view it answers; 0:
    neither or both."""
    text = sentence.strip()
    return float(bool(_RESULT.search(text))) - float(bool(_METHOD.search(text) or _OTHERS_VIEW.search(text)))


def is_opening(index: int, count: int) -> bool:
    """Whether sentence `index` of `count` opens an abstract long enough to state its setting first (3 or more)."""
    return index == 0 and count >= 3
