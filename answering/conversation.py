"""Follow-up questions resolved against the conversation, by rules (no LLM rewriter: ours has 135M parameters).

    resolved = resolve_followup("What about developing countries?", [Turn(question, answer, cited)])
    resolved.query            # "What about developing countries? (monetary policy affect bank lending)"
    resolved.refers_to_cited  # doc_ids of the previous answer's papers it points at ("which of those", "paper 2")

LLM chat engines (LlamaIndex's CondenseQuestionChatEngine, Haystack's and Open WebUI's query rewriting) ask a
model to rewrite the last message as a standalone question. Here the same is done in three rule steps:
1. detect: a question is a follow-up when it opens elliptically ("What about …", "And …"), points at the previous
   answer's papers ("which of those", "the second paper") or topic ("on this", "that question"), or leans on a
   pronoun or "too"/"also"/"instead" while naming little of its own; a question with enough content words of its
   own and none of these cues passes through unchanged, even after earlier turns;
2. carry: the earlier question's topic terms (itself resolved first, so chains of follow-ups keep their topic),
   less what the follow-up replaces: anything it contrasts away ("rather than classroom teachers"), places when
   it names another place ("developing countries" replaces "American"), and words it already has; optionally only
   the most specific terms (by a `term_weight` such as the corpus's IDF), so generic ones ("work", "lead") do not
   steer retrieval;
3. write: the follow-up (less its contrasted part) with the carried terms in parentheses; the earlier question's
   time window is carried only when the follow-up names none.
A time window in the follow-up ("anything published after 2020 on this?") stays in `query`: parse_time_window
(answering.time_window) reads it from the resolved query afterwards, like any question's.

`query` is for retrieval (a bag of carried terms finds the earlier topic's papers); the passage and sentence judges
were trained on questions as people write them, and read such a query as a poor question. `wording` is the
follow-up as a question they can read, time-window words left out: the follow-up alone when it names its own topic
(five topic words or more), the earlier question alone when the follow-up names none ("Anything after 2020 on
that?"), else the earlier question and then the follow-up. Both pass through `plain_question`: the judges read
"Have studies found that X?" or "What did evaluations show about whether X?" as a near miss of X (the development
questions' calibration half: the relevant abstract's judge P 0.02-0.2 in that frame, 0.4-0.98 as "Whether X?").
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from answering.time_window import parse_time_window


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOP = _words("""a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have having he her
here hers him his how i if in into is it its itself just me more most my no nor not now of off on once only or other
our out over own same she should so some such than that the their theirs them themselves then there these they this
those through to too under until up very was we were what when where which while who whom why will with would you
your yours also either instead specifically really actually well much many whether anything something else any
there's what's isn't don't doesn't didn't get gets got go goes going make makes made take takes lot lots way ways
thing things kind""")
# Question scaffolding: words that ask rather than name the topic, never carried.
GENERIC = _words("""research researchers evidence study studies paper papers article articles work literature
economists economic economics find finds found finding findings show shows shown say says said concluded conclude
conclusion evaluations evaluation published publish new newer recent recently latest question questions topic result
results know known tell happens happen explain explains aer anyone effect effects impact impacts""")
PLACES = _words("""us u.s. usa america american americans united states uk britain british england english europe
european europeans eu china chinese india indian indians japan japanese germany german france french italy italian
spain spanish mexico mexican mexicans brazil brazilian canada canadian kenya kenyan africa african africans asia
asian latin russia russian indonesia indonesian bangladesh pakistan nigeria ghana uganda ethiopia colombia chile
peru argentina vietnam philippines thailand korea korean taiwan sweden swedish norway norwegian denmark danish
developing emerging advanced rich poor low-income middle-income high-income world countries country economies
nations national international global""")
PLACE_HEADS = r"(?:countries|country|economies|nations|world|regions)"
ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "fifth": 5,
            "5th": 5, "sixth": 6, "6th": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "last": -1}  # fmt: skip
PAPER = r"(?:paper|study|article|one|source|reference|citation|work)"
MAX_OWN_CONTENT = 2  # a question naming at most this many topic words cannot stand alone
# A follow-up naming at least this many topic words is judged alone, fewer beside the earlier question (chosen on
# the development follow-ups' calibration half: those naming 4 or fewer were answered only beside it, 6-7 alone).
JUDGED_ALONE = 5
WEAK_CUE_CONTENT = 6  # with a weak cue (a pronoun, "too"), a question naming at most this many is a follow-up

_WORD = re.compile(r"[A-Za-z][A-Za-z'’.-]*[A-Za-z]|[A-Za-z]")
_OPENING = re.compile(r"^\s*(?:what|how)\s+about\b|^\s*(?:what\s+of|and|also|but|so|then|what\s+else|anything\s+else|"
                      r"any\s+others?|same|ok(?:ay)?|in\s+that\s+case)\b", re.I)  # fmt: skip
_PLACEHOLDER = re.compile(r"\b(?:this|that|the\s+same)\s+(?:question|topic|issue|result|finding|effect|point|"
                          r"literature|area|subject|relationship|pattern|puzzle|claim|conclusion)s?\b|"
                          r"\b(?:this|that|it)\s*(?=$|[?.!,;:)]|\s+(?:from|in|on|for|after|before|since|among|"
                          r"across|outside|beyond|with|by|held|hold|still|true|apply|work|generalis|generaliz))",
                          re.I)  # fmt: skip
_WEAK = re.compile(r"\b(?:too|also|either|instead|specifically|as\s+well|rather\s+than|the\s+extra|the\s+same|"
                   r"such|similar|likewise)\b", re.I)  # fmt: skip
# "those losses", "this programme": a demonstrative with a noun that the question itself never introduced
_DEMONSTRATIVE = re.compile(r"\b(?:those|these|this)\s+(?!who\b|whom\b|which\b|that\b|with\b|in\b|of\b|are\b|is\b|"
                            r"were\b|was\b|have\b|has\b|do\b|did\b|question\b|topic\b)[a-z]", re.I)  # fmt: skip
_PRONOUN = re.compile(
    r"\b(?:it|its|they|them|their|these|those)\b(?!\s+(?:who|whom|whose|with|which|that)\b)", re.I
)  # a cue only before any topic word
_CONTRAST = re.compile(r"\s*,?\s*\b(?:rather\s+than|instead\s+of|as\s+opposed\s+to|not)\s+([^?.;!]+?)"
                       r"(?=\s+(?:instead|specifically)\b|[?.;!]|$)", re.I)  # fmt: skip
_ALL_CITED = re.compile(r"\b(?:of|among|from|in|are|were|did|do|have|had)\s+(?:those|these|them)\b"
                        r"(?!\s+(?:who|whom|whose|which|that|with|in|of)\b)|"
                        r"\b(?:those|these)\s+(?:papers|studies|articles|sources|ones|works|authors|estimates)\b|"
                        r"\b(?:those|these)\s*(?=[?.!,;]|$)|\bthe\s+(?:papers|studies|articles|sources|ones)\s+"
                        r"(?:you|that\s+you|above|cited|mentioned)|\bthe\s+cited\b", re.I)  # fmt: skip
_ORDINAL = re.compile(rf"\b(?:the\s+)?({'|'.join(ORDINALS)})\s+{PAPER}s?\b|\[(\d+)\]|\b(?:paper|study|source|"
                      rf"reference)\s+(?:no\.?\s*|#\s*)?(\d+)\b", re.I)  # fmt: skip
_SINGULAR = re.compile(rf"\b(?:that|this|the)\s+{PAPER}\b(?!s)", re.I)
_SUPERLATIVE = re.compile(r"\b(most\s+recent|newest|latest|oldest|earliest|most\s+cited)\b", re.I)
_LEADING_LINK = re.compile(r"^\s*(?:and|but|so|also|then)\b[\s,]*", re.I)
# The literature frame around a question: "What evidence has the AER published that X?", "Have studies found that
# X?", "What did randomized evaluations show about whether X?", "Is there evidence that X?" (X: what is asked).
_SOURCE = (r"(?:(?:any|some|none)\s+(?:of\s+)?)?(?:the\s+|those\s+|these\s+)?(?:aer(?:['’]s)?\s+)?"
           r"(?:(?:empirical|economic|recent|new|newer|more|other|theory|theoretical|randomi[sz]ed|experimental|"
           r"published|academic|existing|earlier|later)\s+)*(?:research(?:ers)?|stud(?:y|ies)|papers?|articles?|"
           r"economists?|evaluations?|experiments?|trials?|work|literature|authors?|aer|evidence)")  # fmt: skip
_REPORTS = (r"(?:found|finds?|show[ns]?|showed|says?|said|conclude[sd]?|document(?:ed|s)?|publish(?:ed|es)?|"
            r"report(?:ed|s)?|establish(?:ed|es)?|suggest(?:ed|s)?|reveal(?:ed|s)?|demonstrate[sd]?|learn(?:ed|t)?|"
            r"tell|told|propose[sd]?)")  # fmt: skip
_CLAUSE = r"(that|whether|if|how|why)\s+"
_FRAMES = (
    re.compile(rf"^\s*(?:what|which)\s+(?:(?:new|other)\s+)?(?:evidence|results?|findings?|conclusions?|lessons?)?"
               rf"\s*(?:has|have|had|did|do|does)\s+{_SOURCE}\s+(?:ever\s+|so\s+far\s+)?{_REPORTS}\s+"
               rf"(?:(?:about|on|regarding|concerning)\s+)?{_CLAUSE}", re.I),
    re.compile(rf"^\s*(?:has|have|had|did|do|does)\s+{_SOURCE}\s+(?:ever\s+|actually\s+|really\s+)?{_REPORTS}\s+"
               rf"{_CLAUSE}", re.I),
    re.compile(rf"^\s*(?:is|was|are|were)\s+there\s+(?:any\s+)?(?:(?:new|other|more|causal|empirical)\s+)?"
               rf"(?:evidence|research|studies|work|papers)\s+(?:(?:showing|suggesting|on|about)\s+)?{_CLAUSE}",
               re.I),
)  # fmt: skip
_AER_MODIFIER = re.compile(r"(?<![Tt]he )\bAER\s+(?=[a-z])")  # "AER theory papers": the journal is no topic


class CitedPaper(NamedTuple):
    doc_id: str
    title: str
    year: int | None


@dataclass(frozen=True)
class Turn:
    question: str
    answer: str = ""
    cited: tuple[CitedPaper, ...] = ()  # in the order the answer cites them ([1], [2], …)


@dataclass(frozen=True)
class ResolvedQuestion:
    query: str  # self-contained text for retrieval (time-window words left in)
    is_followup: bool
    refers_to_cited: tuple[str, ...] = ()  # doc_ids of the previous answer's papers it points at
    carried_topic: str = ""  # the terms carried from the earlier turn
    note: str = ""  # one sentence for the response; "" for a standalone question
    wording: str = ""  # a follow-up as the judges read it: a question, no time-window words; "" when standalone


def resolve_followup(question: str, history: Sequence[Turn], term_weight: Callable[[str], float] | None = None,
                     max_carried: int | None = None) -> ResolvedQuestion:  # fmt: skip
    """The question as a self-contained query. `history`: earlier turns, oldest first. With `term_weight` and
    `max_carried`, only the `max_carried` most specific carried terms are kept (in their original order)."""
    question = question.strip()
    if not history:
        return ResolvedQuestion(question, False)
    previous = history[-1]
    referred = _referred_papers(question, previous.cited)
    own = content_words(question)
    strong = bool(referred or _OPENING.search(question) or _PLACEHOLDER.search(question))
    pronoun = _PRONOUN.search(question)
    weak = bool(_WEAK.search(question) or _DEMONSTRATIVE.search(question)) or bool(
        pronoun and not content_words(question[: pronoun.start()])
    )
    if not (strong or (weak and len(own) <= WEAK_CUE_CONTENT) or len(own) <= MAX_OWN_CONTENT):
        return ResolvedQuestion(question, False)
    # The earlier question as it was meant (itself resolved against the turns before it).
    earlier_resolved = resolve_followup(previous.question, history[:-1], term_weight, max_carried)
    earlier = earlier_resolved.query
    earlier_window = parse_time_window(earlier, latest_year=9999)
    topic_text = earlier_window.question_without_window if earlier_window else earlier
    topic = _carried_terms(topic_text, question, term_weight, max_carried)
    text = _CONTRAST.sub("", question).strip()  # retrieval cannot read "not"/"rather than": drop the contrast
    text = text if len(content_words(text)) else question
    carried = " ".join(topic)
    query = f"{text} ({carried})" if carried else text
    own_window = parse_time_window(question, latest_year=9999)
    if earlier_window is not None and own_window is None:
        # the window still holds unless the follow-up names its own; in front, where it reads as one of papers
        opening = query[:1].lower() + query[1:] if re.match(r"[A-Z][a-z]", query) else query
        query = f"{earlier_window.phrase}, {opening}"
    asked = own_window.question_without_window if own_window else question
    wording = _wording(asked, earlier_resolved.wording or _without_window(previous.question), bool(referred))
    return ResolvedQuestion(query, True, referred, carried, _note(previous, referred), wording)


def plain_question(text: str) -> str:
    """The question without its literature frame: "Have studies found that X?" and "What did evaluations show about
    whether X?" -> "Whether X?", "… about how X?" -> "How X?"; "AER" before a word dropped. Anything else as it is."""
    for frame in _FRAMES:
        match = frame.match(text)
        rest = text[match.end() :].strip() if match else ""
        if match and len(content_words(rest)) >= 2:
            clause = match.group(1).lower()
            text = ("Whether" if clause in ("that", "whether", "if") else clause.capitalize()) + " " + rest
            break
    return without_journal(text)


def without_journal(text: str) -> str:
    """The question without "AER" before a word ("What has AER research found …" -> "What has research found …"):
    every paper is the journal's, so it names no topic, and the judges read it as a near miss."""
    return _AER_MODIFIER.sub("", text)


def _wording(asked: str, earlier: str, refers: bool) -> str:
    """The follow-up as a question the judges can read (see the module's docstring); both texts window-less."""
    own = content_words(asked)
    if len(own) >= JUDGED_ALONE:
        alone = _LEADING_LINK.sub("", asked).strip() or asked
        return plain_question(alone[:1].upper() + alone[1:])
    if not own and not refers:
        return plain_question(earlier)  # "Anything after 2020 on that?": the earlier question, in a new window
    return f"{plain_question(earlier)} {plain_question(asked)}"


def _without_window(question: str) -> str:
    window = parse_time_window(question, latest_year=9999)
    return (window.question_without_window if window else question).strip()


def content_words(text: str) -> list[str]:
    """The words that name a topic: not stop words, not question scaffolding, not bare numbers."""
    words = [w.strip(".'’") for w in _WORD.findall(text)]
    return [w for w in words if w and _key(w) not in STOP and _key(w) not in GENERIC]


def idf_weights(texts: Sequence[str]) -> Callable[[str], float]:
    """A term_weight from a corpus: the inverse document frequency of a word (unseen words weigh the most)."""
    frequency: dict[str, int] = {}
    for text in texts:
        for word in {_key(w) for w in _WORD.findall(text)}:
            frequency[word] = frequency.get(word, 0) + 1
    total = len(texts)
    return lambda word: math.log((total + 1) / (frequency.get(_key(word), 0) + 0.5))


def _key(word: str) -> str:
    word = word.lower().replace("’", "'")
    return word[:-2] if word.endswith("'s") else word


def _stem(word: str) -> str:
    """Crude plural folding, so "teachers" in a contrast removes "teacher" too."""
    key = _key(word)
    return key[:-1] if len(key) > 3 and key.endswith("s") and not key.endswith("ss") else key


def _carried_terms(earlier: str, question: str, term_weight: Callable[[str], float] | None,
                   max_carried: int | None) -> list[str]:  # fmt: skip
    contrasted = {_stem(w) for match in _CONTRAST.finditer(question) for w in content_words(match.group(1))}
    has = {_stem(w) for w in content_words(_CONTRAST.sub("", question))}
    names_place = any(_key(w) in PLACES for w in has) or re.search(rf"\b\w+\s+{PLACE_HEADS}\b", question, re.I)
    terms: list[str] = []
    for word in content_words(earlier):
        stem = _stem(word)
        if stem in contrasted or stem in has or stem in {_stem(t) for t in terms}:
            continue
        if names_place and _key(word) in PLACES:
            continue  # "developing countries" replaces "American"
        terms.append(word)
    if term_weight is not None and max_carried is not None and len(terms) > max_carried:
        keep = set(sorted(range(len(terms)), key=lambda i: -term_weight(terms[i]))[:max_carried])
        terms = [term for i, term in enumerate(terms) if i in keep]
    return terms


def _referred_papers(question: str, cited: Sequence[CitedPaper]) -> tuple[str, ...]:
    """The cited papers the question points at: one by position ("the second paper", "[2]"), all ("which of
    those"), or one by a superlative ("the most recent one"); with "which of those is most recent", all of them,
    newest first, so the first is the answer."""
    if not cited:
        return ()
    ordinal = _ORDINAL.search(question)
    if ordinal:
        word, bracket, numbered = ordinal.groups()
        position = ORDINALS[word.lower()] if word else int(bracket or numbered)
        if position == -1:
            return (cited[-1].doc_id,)
        return (cited[position - 1].doc_id,) if 1 <= position <= len(cited) else ()
    superlative = _SUPERLATIVE.search(question)
    everything = bool(_ALL_CITED.search(question))
    if superlative and "cited" not in superlative.group(1).lower():
        oldest_first = superlative.group(1).lower() in ("oldest", "earliest")
        dated = sorted(cited, key=lambda p: (p.year is None, (p.year or 0) * (1 if oldest_first else -1)))
        ordered = tuple(p.doc_id for p in dated)
        return ordered if everything else ordered[:1] if re.search(rf"\b{PAPER}\b", question, re.I) else ()
    if everything:
        return tuple(p.doc_id for p in cited)
    if len(cited) == 1 and _SINGULAR.search(question):
        return (cited[0].doc_id,)  # "that paper" after an answer citing one
    return ()


def _note(previous: Turn, referred: tuple[str, ...]) -> str:
    earlier = previous.question.strip().rstrip("?.!")
    if not referred:
        return f"Read as a follow-up to: “{earlier}?”"
    titles = {p.doc_id: p for p in previous.cited}
    if len(referred) == 1:
        paper = titles[referred[0]]
        year = f", {paper.year}" if paper.year else ""
        return f"Read as a follow-up to: “{earlier}?”, about the paper it cited: {paper.title}{year}."
    return f"Read as a follow-up to: “{earlier}?”, about the {len(referred)} papers its answer cited."
