"""Findings faithful to their abstract, said the way economists write them.

A finding is shown only if everything specific in it is in its abstract: every number (digit runs, decimals,
percentages, ranges, years) exactly as written there, every capitalised name, every other word (but for the words
that say who found it: "the authors find", "their"), and no words cut mid-phrase. When the
generated finding fails any of these, or strays from the order of the sentence it was written from, the paper's
best finding sentence stands in for it: the abstract's own sentence in the third person, opened by who found it
(answering.attribution: "Autor, Dorn, and Hanson (2013) find that …").
A finding that only points back ("We empirically confirm these theoretical predictions …", "This provides a simple
justification …", "If credit constrained, he might decline …") is shown after the abstract's sentence it points to
(`with_antecedent`); an acronym the abstract spells out elsewhere is spelled out after it (answering.acronyms).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from answering.acronyms import spelled_out
from answering.attribution import (
    CITATION,
    GENERIC_SUBJECT,
    LINKING_OPENER,
    REPORTING_VERBS,
    attributed,
    finding_body,
    possessive,
)
from answering.citations import sentences_of
from answering.compose import third_person
from answering.result_cues import result_cue

# A number as written: 120,000-180,000 is two numbers; 0.5, 12%, 1990s, $3.2 are one each.
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# A capitalised word that is not the first of its sentence (or of the finding): a name, place, acronym or programme.
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\]\s+)$")
_NOT_NAMES = frozenset(("I", "The", "A", "An", "In", "This", "These", "We", "Our", "Their", "They", "It"))
# What a finding may not end on: a sentence ends on its punctuation (a closing bracket or quote may follow).
_COMPLETE_ENDING = re.compile(r"[.!?][\"'”’)\]]*$")
_FUNCTION_WORDS = frozenset(("that", "this", "these", "those", "with", "from", "their", "they", "have", "which",
                             "authors", "author", "paper", "study", "find", "finds", "show", "shows", "also", "than",
                             "more", "when", "were", "been", "into", "between", "about"))  # fmt: skip
MIN_FINDING_WORDS = 5  # fewer: the generation stopped before it said anything
MIN_WORDS_IN_ORDER = 0.85  # of a generated finding's words, those its source sentence says in the same order
# The service's own decline, in the words the fine-tuned generator uses for it.
_DECLINE = re.compile(r"\bindexed abstracts?\b|\bdo not (?:answer|address) this question\b")
# Words a finding may use that its abstract need not: who found it, in the third person, and plain connectives.
_ATTRIBUTION_WORDS = frozenset(("the", "authors", "author", "author's", "authors'", "their", "they", "them", "its",
                                "it", "that", "this", "these", "a", "an", "and", "of", "in", "to", "is", "are", "was",
                                "were", "also", "et", "al", "paper", "study", "article", "researchers", "found",
                                "shown"))  # fmt: skip
# The word after a generic subject's "verb" that shows the verb was a noun ("The authors estimate suggests …").
_NOUN_THEN_VERB = r"(?:suggests|shows|indicates|implies|reveals|is|are|was|were)\b"
# A generated finding's own results or model ("Their results suggest …"); in an abstract "their" is someone else's.
_THEIR = re.compile(r"^Their(?= (?:(?:main|core|key|preferred) )?(?:results?|findings?|estimates?|model|analysis|"
                    r"evidence|calculations|simulations)\b)")  # fmt: skip
# What a finding leans on when it only makes sense after the sentence before it: opening on "this"/"these"
# (not "this paper"), "in these treatments", "otherwise" or "they" (the abstract's: ours become "the authors"),
# after at most a reporting verb and a subordinator ("finds that this provides …", "illustrate, in this
# environment, that …", "find that although such a procedure …") …
_LEANS_BACK_FIRST = re.compile(r"^(?:\w+ (?:\w+ )?that |\w+, )?(?:although |though |while |because |since |if |when )?"
                               r"(?:(?:in|under|with|for|at|from) )?(?:(?:this|these|"
                               r"those|such)\b(?! (?:paper|article|study|note|essay|lecture|chapter|book|research|"
                               r"work)\b)|otherwise\b|they\b)", re.IGNORECASE)  # fmt: skip
# … or opening its main clause that way after a clause that sets it up ("when the cyclicality of markups differs
# across sectors, this downward bias is …") …
_LEANS_BACK_CLAUSE = re.compile(r"^(?:\w+ (?:\w+ )?that )?(?:when|whenever|if|because|although|though|while|as|"
                                r"since|once|unless|after|before|given|for|in|under|with)\b(?P<clause>[^,;:]*), "
                                r"(?P<word>this|these|they)\b"
                                r"(?! (?:paper|article|study|note|essay|lecture|chapter|book|research|work)\b)",
                                re.IGNORECASE)  # fmt: skip
# ("they" only after a clause naming nothing plural it could mean: "In failing to give more, they forgo …", not
# "when firms enter, they …")
_PLURAL_NOUN = re.compile(r"\b[a-z]{3,}(?<!ss)(?<!us)(?<!is)s\b", re.IGNORECASE)
# … or, in the abstract's own words, "their" (someone else's: the authors write "our", which a shown finding turns
# into "their") as what the sentence is about: "Their results resolve …", "We find that their elasticity …" …
_ABSTRACTS_THEIR = re.compile(r"^(?:(?:we|I) \w+ (?:\w+ )?that )?their\b", re.IGNORECASE)
# … or "its" before anything it could mean, as the reported verb's object or the finding's subject ("shows its
# asymptotic validity", "finds that its effect is …"; not "in spite of its simplicity, the model …") …
_LEANS_BACK_ITS = re.compile(r"^(?:\w+ (?:\w+ )?(?:that )?)?its\b", re.IGNORECASE)
# … or naming what it is about only by pointing back: "these three forces", "this theoretical prediction", "the
# second fact".
_LEANS_BACK_NOUN = re.compile(r"\bthese\b|\bthose\b(?! (?:which|who|whose|that|with|in|of|for|at)\b)|"
                              r"\b(?:this|such|the (?:first|second|third|former|latter|above))(?: [a-z]+)? "
                              r"(?:predictions?|results?|findings?|effects?|patterns?|facts?|mechanisms?|"
                              r"hypothes[ie]s|relationships?|puzzles?|observations?|regularit(?:y|ies))\b",
                              re.IGNORECASE)  # fmt: skip
# … or speaking of someone named only before it (`speaks_of_someone_before`): "he" before any word it could mean.
_PERSON = re.compile(r"(?:he|she|him|his|her)\W*", re.IGNORECASE)
_REFERENT = re.compile(r"\W*(?:a|an|the|each|every|any|one|some|[a-z]+['’]s)\W*", re.IGNORECASE)
LEANING_WORDS = 10  # the words of a finding (past who found it) a pointing noun is looked for in
MAX_ANTECEDENT_WORDS = 60  # a longer sentence before a leaning finding is shown without it (too long to read)
MAX_LEANING_CHAIN = 2  # sentences shown before a finding that leans back, when the one before it leans back too
# A clause that opens a sentence and makes the rest conditional or contrastive: kept in any finding from it.
_SUBORDINATE_OPENING = re.compile(r"^(because|although|though|while|whereas|if|unless|when|whenever|since|once)\b",
                                  re.IGNORECASE)  # fmt: skip
_FIRST_PERSON = frozenset(("we", "our", "us", "i", "my", "me", "ours"))


def numbers_of(text: str) -> list[str]:
    return [match.group(0).rstrip(".,") for match in _NUMBER.finditer(CITATION.sub("", text))]


def names_of(text: str) -> list[str]:
    """Capitalised words past the start of a sentence, markers dropped."""
    text = CITATION.sub("", text)
    names = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        if word[0].isupper() and word not in _NOT_NAMES and not _SENTENCE_START.search(text[: match.start()]):
            names.append(re.sub(r"['’]s?$", "", word))  # possessives: "Ohio's" is Ohio
    return names


def unfaithful_specifics(finding: str, abstract: str, title: str = "") -> list[str]:
    """The numbers and names of `finding` that its abstract (or title) does not contain exactly."""
    source = f"{title}\n{abstract}"
    source_numbers = set(numbers_of(source))
    missing = [number for number in numbers_of(finding) if number not in source_numbers]
    missing += [name for name in names_of(finding)
                if not re.search(rf"(?<![A-Za-z]){re.escape(name)}", source)]  # fmt: skip
    missing += lowered_acronyms(finding, source)
    return list(dict.fromkeys(missing))


def lowered_acronyms(finding: str, source: str) -> list[str]:
    """The source's acronyms that the finding writes in lower case ("US$18" generated as "us$18", which then reads
    as the first person's "us"): words the source has only in capitals."""
    source_words = _WORD.findall(source)
    acronyms = {word.lower() for word in source_words if len(word) > 1 and word.isupper()}
    acronyms -= {word for word in source_words if word.islower()}
    return [word for word in _WORD.findall(CITATION.sub("", finding)) if word.islower() and word in acronyms]


_ENDINGS = ("s", "es", "d", "ed")


def unfaithful_words(finding: str, abstract: str, title: str = "") -> list[str]:
    """The words of `finding` that its abstract (or title) does not have, in any of the simple forms (-s, -es, -ed,
    -d), beyond the reporting verbs and the words that say who found it: a 135M generator that rewrites a sentence
    glues words ("isefficient"), swaps them ("leverage" -> "borrowing against real estate") or changes their form
    ("efficient" -> "efficiency")."""
    source = {_plain(word) for word in _WORD.findall(f"{title}\n{abstract}")}
    missing = []
    for word in _WORD.findall(CITATION.sub("", finding)):
        lower = _plain(word)
        forms = {lower, *(lower + end for end in _ENDINGS), *(lower[: -len(end)] for end in _ENDINGS
                                                           if lower.endswith(end) and len(lower) > len(end) + 2)}
        if lower in _ATTRIBUTION_WORDS or forms & REPORTING_VERBS or forms & source:
            continue
        missing.append(word)
    return list(dict.fromkeys(missing))


def _plain(word: str) -> str:
    """A word as unfaithful_words compares it: lower case, one apostrophe, no possessive ("Ohio’s", "parties'")."""
    lower = word.lower().replace("’", "'").strip("'-")
    return lower[:-2] if lower.endswith("'s") else lower


def is_complete(finding: str) -> bool:
    """True when the finding ends a sentence (not cut mid-phrase)."""
    return bool(_COMPLETE_ENDING.search(CITATION.sub("", finding).rstrip()))


def subject_kept(finding: str, abstract: str) -> bool:
    """False when a generic subject ("The authors design …") takes an action the abstract gives to someone else
    ("the regulator designs …"): the authors may find, show or estimate, or do what the abstract says "we" do; and
    when its "verb" is a noun ("The author estimates of X are …", read "Smith (2004) estimates of X are …")."""
    subject = GENERIC_SUBJECT.match(finding.strip())
    if not subject:
        return True
    verb, _, after = finding.strip()[subject.end():].partition(" ")
    if after.startswith("of ") or re.match(_NOUN_THEN_VERB, after):
        return False  # "The author estimates of X are …", "The authors estimate suggests …": a noun, not a verb
    verb = verb.lower().strip(",.;:")
    stem = re.sub(r"(es|s)$", "", verb) if verb not in REPORTING_VERBS else verb
    if stem in REPORTING_VERBS or verb in REPORTING_VERBS:
        return True
    own = r"\b(?:we|i|this (?:paper|article|study)|the (?:paper|article|study|authors?))\s+"
    return re.search(own + re.escape(stem), abstract, re.IGNORECASE) is not None


def is_faithful(finding: str, abstract: str, title: str = "") -> bool:
    return (is_complete(finding) and not unfaithful_specifics(finding, abstract, title)
            and not unfaithful_words(finding, abstract, title) and subject_kept(finding, abstract))  # fmt: skip


def finished_finding(generated: str, abstract: str, title: str, who: str, fallback: str,
                     answering: tuple[str, ...] = (), second: str | None = None) -> str:  # fmt: skip
    """The finding shown for one paper: the generated one, opened by who found it, when it is faithful to its
    abstract, not a decline and (given the passage's `answering` sentences, those the sentence judge says state
    the result) stated from one of them; otherwise the paper's best finding sentence (`fallback`), attributed.
    A `second` answering sentence follows it (`with_second`). Markers are the caller's (the text returned has
    none)."""
    text = " ".join(CITATION.sub("", generated).split())
    usable = len(text.split()) >= MIN_FINDING_WORDS and not _DECLINE.search(text.lower()) and not is_question(text)
    usable = usable and is_faithful(text, abstract, title)
    sentences = sentences_of(abstract)
    source = source_sentence(text, sentences) if usable else None
    if usable and answering:
        usable = source in answering
    if usable and source is not None:
        usable = keeps_its_source(text, source)
    if usable:  # the generator writes in the third person: its "Their results" are the authors'
        shown = attributed(_THEIR.sub("The authors'", text, count=1), who, abstract)
    else:
        shown, source = attributed(fallback, who, abstract), fallback
    before = leaned_on(shown, source, who, sentences, abstract)
    leaning = with_antecedent(shown, source, before, who, abstract)
    already = {source, *before}
    return spelled_out(with_second(leaning, source, second, already, who, sentences, abstract), abstract)


def with_second(shown: str, source: str | None, second: str | None, already: set[str | None], who: str,
                sentences: Sequence[str], abstract: str) -> str:  # fmt: skip
    """The finding followed by the paper's `second` answering sentence, said by who found it without the year again
    ("… Trefler finds that for industries that experienced the largest U. S. tariff cuts, …"); one that leans back
    on a sentence other than the finding's own source comes after that sentence ("Trefler notes that <it>. <The
    second>"); one the abstract says before the finding's source comes first, with the year ("Trefler (2004) finds
    <second>. Trefler finds <the finding>"), unless it reads less as a result (result_cue); left out when the
    finding shows it `already` (as its source or the sentence it leans on), when it is not a whole sentence, or
    when what it leans on is shown already or cannot be shown."""
    if second is None or second in already or second not in sentences:
        return shown
    name = who.split(" (")[0]
    again = attributed(second, name, abstract)
    position = sentences.index(second)
    leaning = leans_back(again, name, second)
    if leaning and not (source in sentences and position == sentences.index(source) + 1):
        # after the sentence it leans on, unless the answer shows that one already (or has none to show)
        if position == 0 or sentences[position - 1] in already:
            return shown
        chain = leaned_on(again, second, name, sentences, abstract)
        again = with_antecedent(again, second, chain, name, abstract)
        if leans_back(again, name, chain[0] if chain else second):
            return shown
    if not is_complete(again):
        return shown
    if (not leaning and source in sentences and position < sentences.index(source)
            and result_cue(second) >= result_cue(source)):  # fmt: skip
        # two results of one paper read in their abstract's order: its earlier one is more often the headline
        # than the sentence judge's first choice, unless it reads less as a result ("Across two experiments, we
        # vary the payoffs …"; docs/answering.md)
        later = _without_year(shown, who, name)
        if later is not None:
            return f"{attributed(second, who, abstract).rstrip()} {later}"
    return f"{shown.rstrip()} {again}"


def _without_year(shown: str, who: str, name: str) -> str | None:
    """A finding opened by who found it, opened by their name alone ("Trefler (2004) finds" -> "Trefler finds",
    "Lee's (2001)" -> "Lee's"); None when it does not open with them."""
    for opening, again in ((who, name), (possessive(who), possessive(name))):
        if shown.startswith(opening):
            return f"{again}{shown[len(opening):]}"
    return None


def leans_back(shown: str, who: str, source: str | None = None) -> bool:
    """Whether a shown finding only makes sense after the sentence before it in its abstract: what it states is
    "this", "these predictions", "the second fact", "its …" or "otherwise" ("Eeckhout (2004) finds that this provides
    a simple justification …"), or its `source` sentence is about "their" something."""
    if source is not None and _ABSTRACTS_THEIR.match(CITATION.sub("", source).strip()):
        return True
    shown = finding_body(shown, who)
    # a pointing noun counts near the start, where it is what the finding is about ("confirm these predictions"),
    # not in a later clause that points back within the sentence ("…, although these findings disappear")
    clause = " ".join(re.split(r"[,;:]", shown, maxsplit=1)[0].split())
    pointing = _LEANS_BACK_NOUN.search(clause)  # read on the whole clause: "those who …" points forward
    near_start = pointing is not None and pointing.start() < len(" ".join(clause.split()[:LEANING_WORDS]))
    opening = _LEANS_BACK_CLAUSE.match(shown)
    clause_leans = opening is not None and not (opening["word"].lower() == "they"
                                                and _PLURAL_NOUN.search(opening["clause"]))
    return bool(_LEANS_BACK_FIRST.match(shown) or clause_leans or _LEANS_BACK_ITS.match(shown)
                or near_start or speaks_of_someone_before(shown))


def speaks_of_someone_before(body: str) -> bool:
    """Whether a finding's first words say "he"/"his"/"she"/"her" before naming anyone they could mean."""
    words = body.split()[:LEANING_WORDS]
    for number, word in enumerate(words):
        if _PERSON.fullmatch(word):
            return True
        if _REFERENT.fullmatch(word) or (number and word[:1].isupper()):  # an article, a possessive, a name
            return False
    return False


def with_antecedent(shown: str, source: str | None, before: Sequence[str], who: str, abstract: str) -> str:
    """A finding that leans back after the abstract sentences it leans on (`before`, from `leaned_on`): "Who note
    that <the sentence before>. <its own sentence, in the third person>" (both the abstract's words; "note": the
    sentence before is context, often a setting, not a finding); as shown when `before` is empty."""
    if not before or source is None:
        return shown
    own = [third_person(CITATION.sub("", sentence).strip()) for sentence in (*before[1:], source)]
    return " ".join([attributed(before[0], who, abstract, verb="note").rstrip(),
                     *(f"{sentence[:1].upper()}{sentence[1:]}" for sentence in own)])


def leaned_on(shown: str, source: str | None, who: str, sentences: Sequence[str], abstract: str) -> list[str]:
    """The abstract sentences a finding that leans back is shown after, in order: the one before its source, and
    the one before that too when the first leans back as well ("Instead they transfer far less …" before "In failing
    to give more, they forgo …"), at most MAX_LEANING_CHAIN; [] when it does not lean back or cannot be shown so."""
    if source is None or source not in sentences or not leans_back(shown, who, source):
        return []
    chain: list[str] = []
    position = sentences.index(source)
    while position > 0 and len(chain) < MAX_LEANING_CHAIN:
        before = sentences[position - 1].strip()
        if not before or is_question(before) or len(before.split()) > MAX_ANTECEDENT_WORDS:
            break
        chain.insert(0, before)
        if not leans_back(attributed(before, who, abstract, verb="note"), who, before):
            break
        position -= 1
    return chain


def keeps_its_source(finding: str, source: str) -> bool:
    """Whether a generated finding says its source sentence's words in their order (at least
    MIN_WORDS_IN_ORDER of its own, past who found it) and keeps the clause that opens it ("Because …", "While …"):
    the 135M generator can splice two sentences into one that says what neither does ("the biggest premium to life
    satisfaction is associated with having a career" from "The biggest premium … is associated with having a
    family. While there is also a … premium associated with having a career, …"), or drop a "Because" and state
    the reason as a finding; every word is in the abstract, so the word checks pass."""
    if _drops_its_opening(finding, LINKING_OPENER.sub("", source.strip(), count=1)):
        return False
    own, theirs = _compared_words(finding), _compared_words(source)
    if not own:
        return True
    # the longest run of words the two share in order (dynamic programming over the source's words)
    row = [0] * (len(theirs) + 1)
    for word in own:
        diagonal = 0
        for j, other in enumerate(theirs):
            diagonal, row[j + 1] = row[j + 1], diagonal + 1 if word == other else max(row[j + 1], row[j])
    return row[-1] >= MIN_WORDS_IN_ORDER * len(own)


def _drops_its_opening(finding: str, source: str) -> bool:
    """Whether the finding says a source's opening clause ("Because the auction is …") without its first word."""
    opening = _SUBORDINATE_OPENING.match(source)
    if not opening:
        return False
    said, clause = _WORD.findall(finding.lower()), _WORD.findall(source.lower())[1:4]
    starts = [i for i in range(len(said)) if said[i:i + len(clause)] == clause]
    return bool(starts) and (starts[0] == 0 or said[starts[0] - 1] != opening.group(1).lower())


def _compared_words(text: str) -> list[str]:
    """A text's words as keeps_its_source compares them: plain, without those that say who found it."""
    words = [_plain(word) for word in _WORD.findall(CITATION.sub("", text))]
    return [word for word in words if word not in _ATTRIBUTION_WORDS and word not in _FIRST_PERSON
            and not {word, word.rstrip("s"), word[:-2] if word.endswith("es") else word} & REPORTING_VERBS]


def source_sentence(finding: str, sentences: list[str]) -> str | None:
    """The abstract sentence a finding was written from: the one sharing most of its content words (the generator
    copies closely); None when no sentence shares half of them."""
    words = _content_words(finding)
    if not words or not sentences:
        return None
    overlap = [len(words & _content_words(sentence)) / len(words) for sentence in sentences]
    best = max(range(len(sentences)), key=overlap.__getitem__)
    return sentences[best] if overlap[best] >= 0.5 else None


def _content_words(text: str) -> set[str]:
    return {word.lower() for word in re.findall(r"[A-Za-z][A-Za-z'-]{3,}", CITATION.sub("", text))} - _FUNCTION_WORDS


def is_question(sentence: str) -> bool:
    """An abstract's own question ("Should we count …?") states no finding."""
    return CITATION.sub("", sentence).rstrip().rstrip("\"'”’)]").endswith("?")


