"""Who found it: an abstract's sentence said as a finding of its authors, the way economists write it.

"We find that X" -> "Autor, Dorn, and Hanson (2013) find that X"; "X rose" -> "Smith (2001) finds that x rose"; "The
model predicts X" -> "Banzhaf and Walsh's (2008) model predicts X"; a single author's verbs agree ("Swartz makes the
case …", "… and Lee shows …"); a word linking the sentence to the one before it ("However, …") is dropped. Only the
words that say who found it change (answering/faithful.py checks everything else against the abstract).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from answering.compose import SINGULAR_FORMS, is_past_tense, third_person, third_singular
from corpus.authors import people

# A passage marker in a finding ("[1]", "[2, 3]"): not a word of it.
CITATION = re.compile(r"\s*\[\d+(?:,\s*\d+)*\]")
# Reporting verbs that take an -s after a single author ("Smith (2001) finds").
REPORTING_VERBS = frozenset(("find", "show", "argue", "document", "estimate", "provide", "develop", "study", "use",
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
_OWN_NOUN = (r"(?:(?:preferred|main|empirical|estimated|key|baseline|calibrated|simple) )?(?:model|results?|"
             r"estimates?|evidence|analysis|findings|framework|theory|simulations?|experiments?)")
_OWN_SUBJECT = re.compile(_OWN + rf" (?P<noun>{_OWN_NOUN})(?= (?:shows?|suggests?|indicates?|implies|"
                          r"imply|reveals?|demonstrates?|predicts?|explains?|supports?|yields?|generates?|confirms?|"
                          r"highlights?|provides?|can|also|thus|therefore|accounts?)\b)", re.IGNORECASE)  # fmt: skip
# "Our results contain …": "our" says whose, so any verb may follow (not a preposition: "Our results for X …").
_OUR_SUBJECT = re.compile(rf"^our (?P<noun>{_OWN_NOUN})(?= (?!(?:of|for|in|on|from|with|and|or|to|at|by|that|"
                          r"which|as|across|over|under|is|are|was|were)\b)[a-z]+\b)", re.IGNORECASE)  # fmt: skip
# "Using X, we find that Y": an opening clause, then the authors' own verb (said once, by who found it).
_LEAD_THEN_WE = re.compile(r"^(?P<lead>[^.;]{8,200}?),?\s+(?:the authors?|we|I)\s+(?P<verb>find|show|estimate|"
                           r"document|demonstrate|conclude|establish|confirm|illustrate|prove)\s+(?P<rest>.+)$",
                           re.IGNORECASE)  # fmt: skip
# A link to the finding before, between the authors and their verb ("We also show", "I further find").
_LINKING_ADVERB = re.compile(r"^(?:also|further|additionally|moreover|then|next)\s+(?=[a-z]+\b)", re.IGNORECASE)
# "No evidence was found of X": what the authors find, said once ("Who find no evidence of X").
_EVIDENCE_FOUND = re.compile(r"^(?P<evidence>(?:no|little|some|strong|weak|robust|limited|mixed|clear|scant|"
                             r"considerable|substantial|suggestive)\b[^.;]{0,40}?\bevidence\b[^.;]{0,80}?) "
                             r"(?:is|was|are|were) found\b\s*(?P<rest>.*)$", re.IGNORECASE)  # fmt: skip
# What follows the verb is a clause, not an object: a short subject, then its finite verb ("the shocks were
# effective"; not "an elasticity that is 0.5"). After "Who show, using X," it needs its "that" to read as one.
_CLAUSE_AFTER_VERB = re.compile(r"^(?!(?:that|how|whether|why|what|when|which|who|no|little|evidence)\b)"
                                r"(?:(?!(?:that|which|who)\b)[A-Za-z-]+ ){1,3}(?:is|are|was|were|has|have|had|can|"
                                r"could|will|would|does|do|did|may|might|must|should)\b")  # fmt: skip
# A lead that is a clause of its own ("X assume that Y, but we show …"), not an opening phrase ("Using X, …").
_CLAUSE_LEAD = re.compile(r"\bthat\b|\b(?:but|and|or|while|although|whereas|yet|so|as|since|because|if|when|than)$",
                          re.IGNORECASE)  # fmt: skip
# A second reporting verb of the same subject ("… and find").
_SECOND_VERB = re.compile(r"\b(and then|and|then) ([a-z]+)\b")
_FINDING_VERBS = frozenset(("find", "show", "estimate", "document", "demonstrate", "conclude", "argue"))
# Reporting verbs that are nouns too ("test scores", "model and measurement error"), and how an object opens.
_NOUNS_TOO = frozenset(("test", "model", "present", "review", "link", "report", "focus", "trace", "study", "use",
                        "offer", "address", "estimate", "measure", "note", "reach", "build", "document", "attribute",
                        "highlight"))  # fmt: skip
_OBJECT_START = re.compile(r" (?:the|a|an|its|their|this|these|that|those|how|whether|why|what|when|which|it|them|"
                           r"his|her|our|several|some|many|both|each|every|two|three|four|five|new|evidence|data)\b")
# The paper's authors reporting inside the sentence, after a clause of someone else's ("While the received theory
# assumes X, we show here that Y"; "While I find little impact on X, the results show …"): who found it goes there.
_INNER_AUTHORS = re.compile(r"(?<=[\s,;])the authors?(?= (?:also |then |here |further )?(?:find|show|estimate|"
                            r"document|demonstrate|conclude|argue|illustrate|establish|prove|propose|derive|confirm|"
                            r"develop|provide|identify|characterize|construct|offer)(?:s|es)?\b)")  # fmt: skip
# The authors named again later in a sentence they open ("Who develop a model …, and the authors show …"): "they".
_AUTHORS_AGAIN = re.compile(r"(?<=[,;] )(?P<and>and )?the authors\b(?!['’])(?: (?P<verb>[a-z]+)\b)?")
# Adverbs a subject's verb may follow ("The authors then present …").
_ADVERBS = frozenset(("then", "also", "further", "first", "finally", "next", "instead", "additionally", "here",
                      "thus", "therefore", "now", "empirically", "theoretically", "formally", "explicitly",
                      "directly", "jointly", "separately", "still", "hence"))  # fmt: skip
# Verbs that end like an adverb: any other "-ly" word before the verb is one ("We critically discuss").
_LY_VERBS = frozenset(("apply", "rely", "supply", "reply", "imply", "comply", "multiply", "ally", "rally", "tally"))
# Subjects whose verb is in its base form ("We make the case …"): after a single author any verb agrees, not only
# a reporting verb ("Swartz makes the case …").
_BASE_FORM_SUBJECT = re.compile(r"^(?:We|I|The authors|The researchers|They)\b", re.IGNORECASE)
_MODALS = frozenset(("can", "could", "may", "might", "must", "shall", "should", "will", "would", "cannot", "did"))
# Leading subjects the generator writes for a paper, replaced by who found it.
GENERIC_SUBJECT = re.compile(
    r"^(?:The authors|The author|The researchers|The study|The paper|This paper|This study|This article|"
    r"The article|This research|This work|This essay|This note|This lecture|This chapter|We|I|"
    r"It(?= (?:(?:then|also|further|first|finally) )?(?:shows|finds|argues|documents|demonstrates|suggests|"
    r"estimates|revisits|examines|analyzes|studies|develops|proposes|explores|discusses|reviews)\b)|"
    r"They(?= (?:find|show|argue|document|demonstrate|suggest|estimate)\b))\b\s*",
    re.IGNORECASE)  # fmt: skip
# Words that open a sentence by linking it to the one before ("However, …", "Second, …"): dropped when the sentence
# stands alone as a finding.
LINKING_OPENER = re.compile(
    r"^(?:(?:In contrast|By contrast|In addition|Instead)(?!\s+(?:to|of|with|from)\b)|"  # not "In contrast to X, …"
    r"However|Second|Third|First|Finally|Moreover|Furthermore|Additionally|Also|Further|Thus|Hence|"
    r"Therefore|Overall|In particular|Importantly|Consequently|As a result|"
    r"In the (?:first|second|third)(?: (?:part|half|experiment|study|paper))?|Second and finally|And|Yet|But|Still|"
    r"Nevertheless|Nonetheless|Specifically|Interestingly|Notably|Then|Next|Here|That is|At the same time|"
    r"Among other things|In sum|"
    r"In summary|Taken together|On the other hand|In turn|Surprisingly|Strikingly|"
    r"In this (?:paper|article|study|note|essay))\s*,?\s+", re.IGNORECASE)  # fmt: skip


def finding_body(shown: str, who: str) -> str:
    """A shown finding without who found it opening it ("Lee's (2001)" too); one that names them later ("While
    Shigeoka (2014) finds …") is all body."""
    for opening in (who, possessive(who)):
        if shown.startswith(opening):
            return shown[len(opening):].lstrip()
    return shown


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


def _second_agreeing(match: re.Match[str], clause: str) -> str:
    """A second reporting verb of a single author agrees ("estimates a model and examines its fit"), but not an
    infinitive's ("uses data to test for and quantify": no comma before "and", a "to <verb>" before it) nor a noun
    ("the distribution of background and test scores": a verb that is a noun too needs its object to follow)."""
    verb, before, after = match[2], clause[: match.start()], clause[match.end():]
    if verb in _FINDING_VERBS:  # "… to measure X over the half-century and finds that": the authors find
        return f"{match[1]} {third_singular(verb)}"
    if verb not in REPORTING_VERBS or after.startswith(("-", "'", "’")):
        return match[0]
    infinitive = re.search(r"\bto (\w+)\b(?!.*\bto \w+\b)", before)  # the last "to <word>" before the verb
    if infinitive and infinitive[1] in REPORTING_VERBS and not before.rstrip().endswith(","):
        return match[0]
    if verb in _NOUNS_TOO and not _OBJECT_START.match(after):
        return match[0]
    return f"{match[1]} {third_singular(verb)}"


def _agreeing(rest: str, singular: bool, base_form: bool = False) -> str:
    """'find that …' -> 'finds that …' after a single author; other words stay, but for any verb that followed
    "We" or "I" (`base_form`: "make the case" -> "makes the case", "are unable" -> "is unable")."""
    word, _, tail = rest.partition(" ")
    if tail and (word.lower() in _ADVERBS or (word.endswith("ly") and word.isalpha() and word.islower()
                                               and word not in _LY_VERBS)):  # the verb is the word after the adverb
        return f"{word} {_agreeing(tail, singular, base_form)}"
    verb = word.rstrip(",:;")  # "We find: 1) …", "as we illustrate, …": the verb without its punctuation
    punctuation = word[len(verb):]
    if singular and base_form and verb.isalpha() and verb.islower() and verb not in REPORTING_VERBS | _MODALS \
            and not is_past_tense(verb):  # "We conducted" -> "Lee conducted", not "conducteds"
        verb = SINGULAR_FORMS.get(verb, third_singular(verb))
        tail = _second_verb_agreeing(tail, punctuation)  # "call this X and argue that Y" -> "… and argues"
    elif singular and verb.lower() in REPORTING_VERBS:
        verb = third_singular(verb)
        tail = _second_verb_agreeing(tail, punctuation)
    elif not singular and not base_form:  # "It revisits X and studies Y" -> "Smith and Jones (2001) revisit X and
        # study Y": a single subject's verbs, said of several
        verb = _plural(verb)
        clause, that, after = tail.partition(" that ")
        tail = _SECOND_THIRD_SINGULAR.sub(lambda m: _second_plural(m, clause), clause) + that + after
    return f"{verb}{punctuation} {tail}".rstrip()


def _second_verb_agreeing(tail: str, punctuation: str = "") -> str:
    """"measure X and find that Y" after a single author: the second verb agrees too (before the first "that": still
    the subject's). `punctuation`: what followed the first verb ("develop, estimate, and test": ",")."""
    if punctuation:
        return _second_verb_agreeing(f"{punctuation} {tail}")[len(punctuation) + 1:]
    clause, that, after = tail.partition(" that ")
    # "develop, estimate, and test X": the verbs listed before the "and" agree too
    clause = _LISTED_VERBS.sub(lambda m: ", ".join(third_singular(verb) if verb in REPORTING_VERBS else verb
                                                   for verb in m[0].split(", ")), clause, count=1)  # fmt: skip
    return _SECOND_VERB.sub(lambda m: _second_agreeing(m, clause), clause) + that + after


# The verbs a list names between the first and its "and" ("develops, identify, and estimate": ", identify").
_LISTED_VERBS = re.compile(r"^(?:, [a-z]+)+(?=,? and )")
# A second verb of the same subject, perhaps after an adverb ("advances and empirically establishes").
_SECOND_THIRD_SINGULAR = re.compile(r"\b(and|then) ((?:[a-z]+ly )?)([a-z]+s)\b")
# Said of a paper ("Smith and Lee (2001) is the first to …"), as economists write it: these stay.
_PAPER_VERBS = frozenset(("is", "has", "was", "does"))


def _plural(verb: str) -> str:
    """A verb of a single subject as several's: 'shows' -> 'show', 'studies' -> 'study', 'focuses' -> 'focus'; a
    word that is no such form stays ('discuss', 'found', 'can', 'is')."""
    lower = verb.lower()
    if lower in _PAPER_VERBS or not (verb.isalpha() and verb.islower() and lower.endswith("s")) \
            or lower.endswith(("ss", "us", "is")):
        return verb
    for cut in (2, 1):  # the reporting verbs first: "focuses" -> "focus", "uses" -> "use"
        if lower[:-cut] in REPORTING_VERBS:
            return verb[:-cut]
    if lower.endswith("ies"):
        return verb[:-3] + "y"
    return verb[:-2] if lower.endswith(("sses", "shes", "ches", "xes", "oes")) else verb[:-1]


def _second_plural(match: re.Match[str], clause: str) -> str:
    """A second reporting verb said of several ("and estimates a framework" -> "and estimate a framework"), not a
    noun ("and tests": a verb that is a noun too needs its object to follow)."""
    verb = _plural(match[3])
    if verb == match[3] or verb not in REPORTING_VERBS:
        return match[0]
    if verb in _NOUNS_TOO and not _OBJECT_START.match(clause[match.end():]):
        return match[0]
    return f"{match[1]} {match[2]}{verb}"


def _named_again(match: re.Match[str], who: str, singular: bool) -> str:
    """The authors said again in the sentence they open: "they" for several, the author's name for one, the verb
    agreeing ("Smith develops a model, and Smith shows …", not "… and the authors show")."""
    verb = match["verb"]
    if not singular:
        return match[0].replace("the authors", "they")
    if verb is not None and verb not in _MODALS:
        verb = SINGULAR_FORMS.get(verb, third_singular(verb))
    return f"{match['and'] or ''}{who.split(' (')[0]}{'' if verb is None else ' ' + verb}"


# "X, however, Y" inside a sentence: a contrast with the abstract's sentence before, which a finding does not show.
_MID_HOWEVER = re.compile(r",\s+however,\s+")
# The first words of an opening phrase or clause ("In", "Empirically"), which keeps its comma when "however" goes ("In
# each case, however, a change …" -> "In each case, a change …"; "Skill premiums, however, have …" -> "Skill premiums
# have …").
_INTRODUCTORY = frozenset(("in", "at", "on", "under", "for", "with", "without", "after", "before", "during",
                           "unlike", "like", "as", "if", "when", "whenever", "while", "although", "though",
                           "because", "since", "once", "based", "conditional", "even", "among", "across", "within",
                           "from", "by", "given", "relative", "compared", "despite", "beyond", "over", "outside",
                           "against"))
# What keeps the comma after it too: a participle or a consequence ("dominate, providing …", "…, hence the title").
_COMMA_BEFORE = re.compile(r"^(?:[a-z]+ing|hence|thus|therefore|so)\b")


def without_however(sentence: str) -> str:
    """The sentence without a "however" that links it to the sentence before (a finding stands alone; a leading
    "However," goes with LINKING_OPENER)."""
    match = _MID_HOWEVER.search(sentence)
    if not match:
        return sentence
    segment = re.split(r"[,;:]", sentence[: match.start()])[-1].strip()
    first = segment.split(" ", 1)[0].lower() if segment else ""
    rest = sentence[match.end():]
    comma = first in _INTRODUCTORY or first.endswith("ly") or _COMMA_BEFORE.match(rest) is not None
    return f"{sentence[: match.start()]}{', ' if comma else ' '}{rest}"


def attributed(sentence: str, who: str, abstract: str = "", verb: str = "find") -> str:
    """The sentence as a finding of `who`: 'We find that X' -> 'Who find that X'; 'X rose' -> 'Who find that x
    rose' (the first word lower-cased unless the abstract capitalises it elsewhere, as a name; `verb` says it when
    the sentence has no reporting verb of its own: "note" for what is only context)."""
    sentence = without_however(LINKING_OPENER.sub("", CITATION.sub("", sentence).strip(), count=1))
    singular = _is_single(who)
    finds = third_singular("find") if singular else "find"
    results_say = _RESULTS_SAY.match(sentence)
    if results_say:  # "The results suggest that X" -> "Who find that X"
        rest = sentence[results_say.end():]
        return f"{who} {finds} that {third_person(rest)}"
    own_subject = _OWN_SUBJECT.match(sentence) or _OUR_SUBJECT.match(sentence)
    if own_subject:  # "The model predicts X" -> "Who's model predicts X"; "The experiment also shows" -> "Who's
        # experiment shows": a link to a finding not shown, as "We also show" below
        rest = re.sub(r"^ (?:also|further|additionally|moreover)(?= [a-z])", "", sentence[own_subject.end():])
        return f"{possessive(who)} {own_subject['noun']}{third_person(rest)}"
    sentence = sentence[:1].upper() + sentence[1:]
    lead_then_we = _LEAD_THEN_WE.match(sentence)
    if lead_then_we and not GENERIC_SUBJECT.match(sentence) and not _CLAUSE_LEAD.search(lead_then_we["lead"]):
        # -> "Who find, using X, that Y"
        lead, verb, rest = lead_then_we["lead"], lead_then_we["verb"].lower(), lead_then_we["rest"]
        lead = lead if _keeps_capital(lead, abstract) else lead[:1].lower() + lead[1:]
        rest = f"that {rest}" if _CLAUSE_AFTER_VERB.match(rest) else rest
        rest = _second_verb_agreeing(rest) if singular else rest  # "…, then show X" -> "…, then shows X"
        return f"{who} {_agreeing(verb, singular)}, {third_person(lead)}, {third_person(rest)}"
    subject = GENERIC_SUBJECT.match(sentence)
    if subject:  # "We also show X" -> "Who show X": a link to a finding not shown, as the openers above
        rest = third_person(_LINKING_ADVERB.sub("", sentence[subject.end():], count=1))
        base_form = _BASE_FORM_SUBJECT.match(subject[0]) is not None
        rest = _AUTHORS_AGAIN.sub(lambda m: _named_again(m, who, singular), rest)
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
    if _CITED_NAMES.match(text):  # names cited with their year: "Svensson (2006)", "Chang and Kim (2007)"
        return True
    return (first.isupper() and len(first) > 1) or any(ch.isdigit() for ch in first) or re.search(
        rf"[a-z,;]\s+{re.escape(first)}\b", abstract) is not None  # fmt: skip


# Authors cited with their year, opening a sentence: "Svensson (2006)", "Acemoglu, Johnson, and Robinson (2001)",
# "Rasmusen et al. (1991)".
_CITED_NAMES = re.compile(r"[A-Z][A-Za-z-]*(?:(?:,| and|, and) [A-Z][A-Za-z-]*)*(?: et al\.)? \(\d{4}[a-z]?\)")


def _is_single(who: str) -> bool:
    """One named author: 'Smith (2001)', not 'Smith and Jones', 'Lee et al.' or 'The authors'."""
    name = who.split(" (")[0]
    return not (name.startswith("The ") or " and " in name or "et al." in name)
