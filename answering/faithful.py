"""Findings faithful to their abstract, said the way economists write them.

A finding is shown only if everything specific in it is in its abstract: every number (digit runs, decimals,
percentages, ranges, years) exactly as written there, every capitalised name, every other word (but for the words
that say who found it: "the authors find", "their"), and no words cut mid-phrase. When the
generated finding fails any of these, the paper's best finding sentence stands in for it (`attributed`): the
abstract's own sentence in the third person, opened by who found it ("Autor, Dorn, and Hanson (2013) find that …").
A finding that only points back ("We empirically confirm these theoretical predictions …", "This provides a simple
justification …", "If credit constrained, he might decline …") is shown after the abstract's sentence it points to
(`with_antecedent`); an acronym the abstract spells out elsewhere is spelled out after it (answering.acronyms).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from answering.acronyms import spelled_out
from answering.citations import sentences_of
from answering.compose import third_person, third_singular
from corpus.authors import people

# A number as written: 120,000-180,000 is two numbers; 0.5, 12%, 1990s, $3.2 are one each.
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# A capitalised word that is not the first of its sentence (or of the finding): a name, place, acronym or programme.
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\]\s+)$")
_NOT_NAMES = frozenset(("I", "The", "A", "An", "In", "This", "These", "We", "Our", "Their", "They", "It"))
_CITATION = re.compile(r"\s*\[\d+(?:,\s*\d+)*\]")
# What a finding may not end on: a sentence ends on its punctuation (a closing bracket or quote may follow).
_COMPLETE_ENDING = re.compile(r"[.!?][\"'”’)\]]*$")
_FUNCTION_WORDS = frozenset(("that", "this", "these", "those", "with", "from", "their", "they", "have", "which",
                             "authors", "author", "paper", "study", "find", "finds", "show", "shows", "also", "than",
                             "more", "when", "were", "been", "into", "between", "about"))  # fmt: skip
MIN_FINDING_WORDS = 5  # fewer: the generation stopped before it said anything
# The service's own decline, in the words the fine-tuned generator uses for it.
_DECLINE = re.compile(r"\bindexed abstracts?\b|\bdo not (?:answer|address) this question\b")
# Words a finding may use that its abstract need not: who found it, in the third person, and plain connectives.
_ATTRIBUTION_WORDS = frozenset(("the", "authors", "author", "author's", "authors'", "their", "they", "them", "its",
                                "it", "that", "this", "these", "a", "an", "and", "of", "in", "to", "is", "are", "was",
                                "were", "also", "et", "al", "paper", "study", "article", "researchers", "found",
                                "shown"))  # fmt: skip
# Reporting verbs that take an -s after a single author ("Smith (2001) finds").
_BASE_VERBS = frozenset(("find", "show", "argue", "document", "estimate", "provide", "develop", "study", "use",
                         "examine", "test", "present", "propose", "demonstrate", "conclude", "establish", "explain",
                         "derive", "report", "obtain", "identify", "construct", "analyze", "analyse", "compare",
                         "characterize", "prove", "suggest", "measure", "consider", "investigate", "explore",
                         "quantify", "calibrate", "uncover", "exploit", "offer", "reach", "describe", "discuss",
                         "evaluate", "assess", "introduce", "extend", "apply", "build", "combine", "review",
                         "model", "simulate", "predict", "highlight", "emphasize", "observe", "confirm", "reject",
                         "link", "relate", "trace", "attribute", "address", "focus", "contribute",
                         "illustrate", "note"))  # fmt: skip
# Whose results or model a sentence speaks of: the paper's own ("their" in an abstract is someone else's).
_OWN = r"^(?:the|our|these|this|my|the author's|the authors')"
# "The analysis shows that …": the paper's own results as the subject, said once by who found it.
_RESULTS_SAY = re.compile(_OWN + r" (?:(?:preferred|main|empirical|key|overall|core|central) )?"
                          r"(?:analysis|results?|evidence|estimates?|findings?|calculations|simulations)"
                          r"(?:,? (?:thus|therefore|also|then|"
                          r"together),?)? (?:shows?|suggests?|indicates?|implies|imply|reveals?|demonstrates?|"
                          r"confirms?|is|are) that\s+", re.IGNORECASE)  # fmt: skip
# "The model predicts X", "The results suggest X": the paper's own model or results, whose by name ("Banzhaf and
# Walsh's (2008) model predicts X"): "find that" would turn a model's prediction into a finding.
_OWN_SUBJECT = re.compile(_OWN + r" (?P<noun>(?:(?:preferred|main|empirical|estimated|key|"
                          r"baseline|calibrated|simple) )?(?:model|results?|estimates?|evidence|analysis|findings|"
                          r"framework|theory|simulations?|experiments?))(?= (?:shows?|suggests?|indicates?|implies|"
                          r"imply|reveals?|demonstrates?|predicts?|explains?|supports?|yields?|generates?|confirms?|"
                          r"highlights?|provides?|can|also|thus|therefore|accounts?)\b)", re.IGNORECASE)  # fmt: skip
# "Using X, we find that Y": an opening clause, then the authors' own verb (said once, by who found it).
_LEAD_THEN_WE = re.compile(r"^(?P<lead>[^.;]{8,200}?),?\s+(?:the authors?|we|I)\s+(?P<verb>find|show|estimate|"
                           r"document|demonstrate|conclude|establish|confirm|illustrate|prove)\s+(?P<rest>.+)$",
                           re.IGNORECASE)  # fmt: skip
# A link to the finding before, between the authors and their verb ("We also show", "I further find").
_LINKING_ADVERB = re.compile(r"^(?:also|further|additionally|moreover|then|next)\s+(?=[a-z]+\b)", re.IGNORECASE)
# The word after a generic subject's "verb" that shows the verb was a noun ("The authors estimate suggests …").
_NOUN_THEN_VERB = r"(?:suggests|shows|indicates|implies|reveals|is|are|was|were)\b"
# "No evidence was found of X": what the authors find, said once ("Who find no evidence of X").
_EVIDENCE_FOUND = re.compile(r"^(?P<evidence>(?:no|little|some|strong|weak|robust|limited|mixed|clear|scant|"
                             r"considerable|substantial|suggestive)\b[^.;]{0,40}?\bevidence\b[^.;]{0,80}?) "
                             r"(?:is|was|are|were) found\b\s*(?P<rest>.*)$", re.IGNORECASE)  # fmt: skip
# A generated finding's own results or model ("Their results suggest …"); in an abstract "their" is someone else's.
_THEIR = re.compile(r"^Their(?= (?:(?:main|core|key|preferred) )?(?:results?|findings?|estimates?|model|analysis|"
                    r"evidence|calculations|simulations)\b)")  # fmt: skip
# A lead that is a clause of its own ("X assume that Y, but we show …"), not an opening phrase ("Using X, …").
_CLAUSE_LEAD = re.compile(r"\bthat\b|\b(?:but|and|or|while|although|whereas|yet|so)$", re.IGNORECASE)
# A second reporting verb of the same subject ("… and find").
_SECOND_VERB = re.compile(r"\b(and|then) (find|show|estimate|document|demonstrate|conclude|argue)\b")
# What a finding leans on when it only makes sense after the sentence before it: opening on "this"/"these"
# (not "this paper"), "in these treatments" or "otherwise", after at most a reporting verb ("finds that this
# provides …") …
_LEANS_BACK_FIRST = re.compile(r"^(?:\w+ (?:\w+ )?that )?(?:(?:in|under|with|for|at|from) )?(?:(?:this|these|those|"
                               r"such)\b(?! (?:paper|article|study|note|essay|lecture|chapter|book|research|work)\b)|"
                               r"otherwise\b)", re.IGNORECASE)  # fmt: skip
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
LEANING_WORDS = 8  # the words of a finding (past who found it) a pointing noun is looked for in
MAX_ANTECEDENT_WORDS = 60  # a longer sentence before a leaning finding is shown without it (too long to read)
# The paper's authors reporting inside the sentence, after a clause of someone else's ("While the received theory
# assumes X, we show here that Y"; "While I find little impact on X, the results show …"): who found it goes there.
_INNER_AUTHORS = re.compile(r"(?<=[\s,;])the authors?(?= (?:also |then |here |further )?(?:find|show|estimate|"
                            r"document|demonstrate|conclude|argue|illustrate|establish|prove|propose|derive|"
                            r"develop|provide|identify|characterize|construct|offer)(?:s|es)?\b)")  # fmt: skip
# The authors named again later in a sentence they open ("Who develop a model …, and the authors show …"): "they".
_AUTHORS_AGAIN = re.compile(r"(?<=[,;] )(?:and )?the authors\b(?!['’])")
# Adverbs a subject's verb may follow ("The authors then present …").
_ADVERBS = frozenset(("then", "also", "further", "first", "finally", "next", "instead", "additionally", "here",
                      "thus", "therefore", "now", "empirically", "theoretically", "formally", "explicitly",
                      "directly", "jointly", "separately", "still"))  # fmt: skip
# Subjects whose verb is in its base form ("We make the case …"): after a single author any verb agrees, not only
# a reporting verb ("Swartz makes the case …").
_BASE_FORM_SUBJECT = re.compile(r"^(?:We|I|The authors|The researchers|They)\b", re.IGNORECASE)
_SINGULAR_FORMS = {"are": "is", "have": "has", "do": "does", "were": "was"}
_MODALS = frozenset(("can", "could", "may", "might", "must", "shall", "should", "will", "would", "cannot", "did"))
# Leading subjects the generator writes for a paper, replaced by who found it.
_GENERIC_SUBJECT = re.compile(
    r"^(?:The authors|The author|The researchers|The study|The paper|This paper|This study|This article|"
    r"The article|We|I|It(?= (?:shows|finds|argues|documents|demonstrates|suggests|estimates)\b)|"
    r"They(?= (?:find|show|argue|document|demonstrate|suggest|estimate)\b))\b\s*",
    re.IGNORECASE)  # fmt: skip
# Words that open a sentence by linking it to the one before ("However, …", "Second, …"): dropped when the sentence
# stands alone as a finding.
_LINKING_OPENER = re.compile(
    r"^(?:However|Second|Third|First|Finally|Moreover|Furthermore|In addition|Additionally|Also|Further|Thus|Hence|"
    r"Therefore|Overall|In particular|Instead|Importantly|Consequently|As a result|In contrast|By contrast|"
    r"In the (?:first|second|third)(?: (?:part|half|experiment|study|paper))?|Second and finally|And|Yet|But|Still|"
    r"Nevertheless|Nonetheless|Specifically|Interestingly|Notably|Then|At the same time|Among other things|In sum|"
    r"In summary|Taken together|On the other hand|In turn|Surprisingly|Strikingly|"
    r"In this (?:paper|article|study|note|essay))\s*,?\s+", re.IGNORECASE)  # fmt: skip


def numbers_of(text: str) -> list[str]:
    return [match.group(0).rstrip(".,") for match in _NUMBER.finditer(_CITATION.sub("", text))]


def names_of(text: str) -> list[str]:
    """Capitalised words past the start of a sentence, markers dropped."""
    text = _CITATION.sub("", text)
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
    return list(dict.fromkeys(missing))


_ENDINGS = ("s", "es", "d", "ed")


def unfaithful_words(finding: str, abstract: str, title: str = "") -> list[str]:
    """The words of `finding` that its abstract (or title) does not have, in any of the simple forms (-s, -es, -ed,
    -d), beyond the reporting verbs and the words that say who found it: a 135M generator that rewrites a sentence
    glues words ("isefficient"), swaps them ("leverage" -> "borrowing against real estate") or changes their form
    ("efficient" -> "efficiency")."""
    source = {_plain(word) for word in _WORD.findall(f"{title}\n{abstract}")}
    missing = []
    for word in _WORD.findall(_CITATION.sub("", finding)):
        lower = _plain(word)
        forms = {lower, *(lower + end for end in _ENDINGS), *(lower[: -len(end)] for end in _ENDINGS
                                                           if lower.endswith(end) and len(lower) > len(end) + 2)}
        if lower in _ATTRIBUTION_WORDS or forms & _BASE_VERBS or forms & source:
            continue
        missing.append(word)
    return list(dict.fromkeys(missing))


def _plain(word: str) -> str:
    """A word as unfaithful_words compares it: lower case, one apostrophe, no possessive ("Ohio’s", "parties'")."""
    lower = word.lower().replace("’", "'").strip("'-")
    return lower[:-2] if lower.endswith("'s") else lower


def is_complete(finding: str) -> bool:
    """True when the finding ends a sentence (not cut mid-phrase)."""
    return bool(_COMPLETE_ENDING.search(_CITATION.sub("", finding).rstrip()))


def subject_kept(finding: str, abstract: str) -> bool:
    """False when a generic subject ("The authors design …") takes an action the abstract gives to someone else
    ("the regulator designs …"): the authors may find, show or estimate, or do what the abstract says "we" do; and
    when its "verb" is a noun ("The author estimates of X are …", read "Smith (2004) estimates of X are …")."""
    subject = _GENERIC_SUBJECT.match(finding.strip())
    if not subject:
        return True
    verb, _, after = finding.strip()[subject.end():].partition(" ")
    if after.startswith("of ") or re.match(_NOUN_THEN_VERB, after):
        return False  # "The author estimates of X are …", "The authors estimate suggests …": a noun, not a verb
    verb = verb.lower().strip(",.;:")
    stem = re.sub(r"(es|s)$", "", verb) if verb not in _BASE_VERBS else verb
    if stem in _BASE_VERBS or verb in _BASE_VERBS:
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
    text = " ".join(_CITATION.sub("", generated).split())
    usable = len(text.split()) >= MIN_FINDING_WORDS and not _DECLINE.search(text.lower()) and not is_question(text)
    usable = usable and is_faithful(text, abstract, title)
    sentences = sentences_of(abstract)
    source = source_sentence(text, sentences) if usable else None
    if usable and answering:
        usable = source in answering
    if usable:  # the generator writes in the third person: its "Their results" are the authors'
        shown = attributed(_THEIR.sub("The authors'", text, count=1), who, abstract)
    else:
        shown, source = attributed(fallback, who, abstract), fallback
    leaning = with_antecedent(shown, source, who, sentences, abstract)
    already = {source} if leaning == shown else {source, sentences[sentences.index(source) - 1]}
    return spelled_out(with_second(leaning, source, second, already, who, sentences, abstract), abstract)


def with_second(shown: str, source: str | None, second: str | None, already: set[str | None], who: str,
                sentences: Sequence[str], abstract: str) -> str:  # fmt: skip
    """The finding followed by the paper's `second` answering sentence, said by who found it without the year again
    ("… Trefler finds that for industries that experienced the largest U. S. tariff cuts, …"); left out when the
    finding shows it `already` (as its source or the sentence it leans on), when it is not a whole sentence, or
    when it leans back on a sentence other than the finding's own source."""
    if second is None or second in already or second not in sentences:
        return shown
    name = who.split(" (")[0]
    again = attributed(second, name, abstract)
    follows_source = source in sentences and sentences.index(second) == sentences.index(source) + 1
    if (leans_back(again, name) and not follows_source) or not is_complete(again):
        return shown
    return f"{shown.rstrip()} {again}"


def leans_back(shown: str, who: str) -> bool:
    """Whether a shown finding only makes sense after the sentence before it in its abstract: what it states is
    "this", "these predictions", "the second fact", or "otherwise" ("Eeckhout (2004) finds that this provides a
    simple justification …")."""
    shown = finding_body(shown, who)
    # a pointing noun counts near the start, where it is what the finding is about ("confirm these predictions"),
    # not in a later clause that points back within the sentence ("…, although these findings disappear")
    start = " ".join(re.split(r"[,;:]", shown, maxsplit=1)[0].split()[:LEANING_WORDS])
    return bool(_LEANS_BACK_FIRST.match(shown) or _LEANS_BACK_NOUN.search(start) or speaks_of_someone_before(shown))


def speaks_of_someone_before(body: str) -> bool:
    """Whether a finding's first words say "he"/"his"/"she"/"her" before naming anyone they could mean."""
    words = body.split()[:LEANING_WORDS]
    for number, word in enumerate(words):
        if _PERSON.fullmatch(word):
            return True
        if _REFERENT.fullmatch(word) or (number and word[:1].isupper()):  # an article, a possessive, a name
            return False
    return False


def finding_body(shown: str, who: str) -> str:
    """A shown finding without who found it opening it ("Lee's (2001)" too); one that names them later ("While
    Shigeoka (2014) finds …") is all body."""
    for opening in (who, possessive(who)):
        if shown.startswith(opening):
            return shown[len(opening):].lstrip()
    return shown


def with_antecedent(shown: str, source: str | None, who: str, sentences: Sequence[str], abstract: str) -> str:
    """A finding that leans back (`leans_back`) after the abstract sentence it leans on: "Who note that <the
    sentence before>. <its own sentence, in the third person>" (both the abstract's words; "note": the sentence
    before is context, often a setting, not a finding); otherwise as shown."""
    if source is None or source not in sentences or not leans_back(shown, who):
        return shown
    position = sentences.index(source)
    before = sentences[position - 1].strip() if position > 0 else ""
    if not before or is_question(before) or len(before.split()) > MAX_ANTECEDENT_WORDS:
        return shown
    own = third_person(_CITATION.sub("", source).strip())
    return f"{attributed(before, who, abstract, verb='note').rstrip()} {own[:1].upper()}{own[1:]}"


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
    return {word.lower() for word in re.findall(r"[A-Za-z][A-Za-z'-]{3,}", _CITATION.sub("", text))} - _FUNCTION_WORDS


def is_question(sentence: str) -> bool:
    """An abstract's own question ("Should we count …?") states no finding."""
    return _CITATION.sub("", sentence).rstrip().rstrip("\"'”’)]").endswith("?")


def attribution(authors: Sequence[str], year: int | None) -> str:
    """'Autor, Dorn, and Hanson (2013)', 'Smith and Jones (2001)', 'Lee et al. (2020)'; 'The authors (2013)' when
    the authors are not recorded; no year when none is recorded."""
    names = [person.last for person in people(authors)]
    if not names:
        who = "The authors"
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    elif len(names) == 3:
        who = f"{names[0]}, {names[1]}, and {names[2]}"
    else:
        who = f"{names[0]} et al."
    return f"{who} ({year})" if year else who


def _agreeing(rest: str, singular: bool, base_form: bool = False) -> str:
    """'find that …' -> 'finds that …' after a single author; other words stay, but for any verb that followed
    "We" or "I" (`base_form`: "make the case" -> "makes the case", "are unable" -> "is unable")."""
    verb, _, tail = rest.partition(" ")
    if verb.lower() in _ADVERBS and tail:  # the verb is the word after the adverb
        return f"{verb} {_agreeing(tail, singular, base_form)}"
    if singular and base_form and verb.isalpha() and verb.islower() and verb not in _BASE_VERBS | _MODALS:
        verb = _SINGULAR_FORMS.get(verb, third_singular(verb))
    elif singular and verb.lower() in _BASE_VERBS:
        verb = third_singular(verb)
        # "measure X and find that Y": the second verb agrees too (before the first "that": still the subject's)
        clause, that, after = tail.partition(" that ")
        tail = _SECOND_VERB.sub(lambda m: f"{m[1]} {third_singular(m[2])}", clause) + that + after
    elif not singular:  # "It shows" -> "Smith and Jones (2001) show"
        verb = next((verb[: -len(end)] for end in ("es", "s") if verb.lower()[: -len(end)] in _BASE_VERBS
                     and verb.lower().endswith(end)), verb)  # fmt: skip
    return f"{verb} {tail}".rstrip()


def attributed(sentence: str, who: str, abstract: str = "", verb: str = "find") -> str:
    """The sentence as a finding of `who`: 'We find that X' -> 'Who find that X'; 'X rose' -> 'Who find that x
    rose' (the first word lower-cased unless the abstract capitalises it elsewhere, as a name; `verb` says it when
    the sentence has no reporting verb of its own: "note" for what is only context)."""
    sentence = _LINKING_OPENER.sub("", _CITATION.sub("", sentence).strip(), count=1)
    singular = _is_single(who)
    finds = third_singular("find") if singular else "find"
    results_say = _RESULTS_SAY.match(sentence)
    if results_say:  # "The results suggest that X" -> "Who find that X"
        rest = sentence[results_say.end():]
        return f"{who} {finds} that {third_person(rest)}"
    own_subject = _OWN_SUBJECT.match(sentence)
    if own_subject:  # "The model predicts X" -> "Who's model predicts X"
        return f"{possessive(who)} {own_subject['noun']}{third_person(sentence[own_subject.end():])}"
    sentence = sentence[:1].upper() + sentence[1:]
    lead_then_we = _LEAD_THEN_WE.match(sentence)
    if lead_then_we and not _GENERIC_SUBJECT.match(sentence) and not _CLAUSE_LEAD.search(lead_then_we["lead"]):
        # -> "Who find, using X, that Y"
        lead, verb, rest = lead_then_we["lead"], lead_then_we["verb"].lower(), lead_then_we["rest"]
        lead = lead if _keeps_capital(lead, abstract) else lead[:1].lower() + lead[1:]
        return f"{who} {_agreeing(verb, singular)}, {third_person(lead)}, {third_person(rest)}"
    subject = _GENERIC_SUBJECT.match(sentence)
    if subject:  # "We also show X" -> "Who show X": a link to a finding not shown, as the openers above
        rest = third_person(_LINKING_ADVERB.sub("", sentence[subject.end():], count=1))
        base_form = _BASE_FORM_SUBJECT.match(subject[0]) is not None
        if not singular:
            rest = _AUTHORS_AGAIN.sub(lambda m: m[0].replace("the authors", "they"), rest)
        return f"{who} {_agreeing(rest, singular, base_form)}" if rest else who
    body = sentence if _keeps_capital(sentence, abstract) else sentence[:1].lower() + sentence[1:]
    evidence_found = _EVIDENCE_FOUND.match(body)
    if evidence_found:  # "No evidence was found of X" -> "Who find no evidence of X"
        said = " ".join(part for part in (evidence_found["evidence"], evidence_found["rest"]) if part)
        return f"{who} {finds} {third_person(said)}"
    said = third_person(sentence)
    inner = _INNER_AUTHORS.search(said)
    if inner:  # "While Shigeoka (2014) finds little impact on X, the results show …", not "… finds that while the
        # author finds …"
        named = f"the authors{who[len('The authors'):]}" if who.startswith("The authors") else who
        return f"{said[: inner.start()]}{named} {_agreeing(said[inner.end():].lstrip(), singular)}"
    return f"{who} {third_singular(verb) if singular else verb} that {third_person(body)}"


def possessive(who: str) -> str:
    """'Smith (2001)' -> "Smith's (2001)", 'The authors (2013)' -> "The authors' (2013)", 'Lee et al.' -> "Lee et
    al.'s"."""
    name, bracket, year = who.partition(" (")
    mark = "'" if name == "The authors" else "'s"
    return f"{name}{mark}{bracket}{year}"


def _keeps_capital(text: str, abstract: str) -> bool:
    """Whether the first word keeps its capital inside a sentence: an acronym, a number, or a word the abstract
    capitalises mid-sentence (a name)."""
    first = text.split(" ", 1)[0]
    if re.fullmatch(r"[A-Z][A-Za-z-]*['’]s", first):  # a capitalised possessive names someone: "Moody's and S&P"
        return True
    return (first.isupper() and len(first) > 1) or any(ch.isdigit() for ch in first) or re.search(
        rf"[a-z,;]\s+{re.escape(first)}\b", abstract) is not None  # fmt: skip


def _is_single(who: str) -> bool:
    """One named author: 'Smith (2001)', not 'Smith and Jones', 'Lee et al.' or 'The authors'."""
    name = who.split(" (")[0]
    return not (name.startswith("The ") or " and " in name or "et al." in name)
