"""The answerer's decisions before generation (which passages answer, one prompt per answering paper, the caveat of
a partial answer, passage focus) and the answer it composes after."""

from __future__ import annotations

from dataclasses import replace

from answering.answerer import PreparedAnswer, Question
from answering.attribution import attributed, attribution
from answering.citations import sentences_of
from answering.compose import lead_sentence
from answering.domain import DEFAULT_DOMAIN_PATH
from answering.ports import GenerationOutcome
from answering.prompt import NOT_COVERED_ANSWER, PARTIAL_ANSWER_PREFACE, opening_line

COVERED = "Did the minimum wage increase reduce teenage employment in fast food restaurants?"
OFF_TOPIC = "How long should sourdough bread bake?"


def with_thresholds(decline_below: float, answer_from: float) -> dict:
    return {"answerability": {"decline_below": decline_below, "answer_from": answer_from}}


def compose(prepared: PreparedAnswer, texts: list[str]):
    """Run the composer as the service does, each finding's text in two deltas; returns it and the outcomes."""
    composer = prepared.composer()
    composer.start()
    outcomes = []
    for index, text in enumerate(texts):
        half = len(text) // 2
        composer.feed(index, text[:half])
        composer.feed(index, text[half:])
        composer.finish(index)
        outcomes.append(GenerationOutcome(text, 100, 12, "stop", 0.5))
    return composer, outcomes


def test_an_unanswerable_question_is_declined_without_a_prompt(make_services) -> None:
    answerer = make_services().answerer
    prepared = answerer.prepare(Question(query=OFF_TOPIC))
    assert not prepared.generates and prepared.findings == () and prepared.coverage == "not_covered"
    assert any("do not appear to cover" in note for note in prepared.notes)
    answer = answerer.finish(prepared, None, None)
    assert answer.text == NOT_COVERED_ANSWER and not answer.covered and answer.confidence < 0.3
    assert answer.findings == []


def test_a_covered_question_gets_one_prompt_per_answering_paper(make_services) -> None:
    answerer = make_services().answerer
    prepared = answerer.prepare(Question(query=COVERED))
    assert prepared.coverage == "covered" and prepared.generates
    assert prepared.verdict is not None and len(prepared.findings) == len(prepared.verdict.answering)
    for finding in prepared.findings:  # each prompt shows its own passage alone, as [1]
        assert [p.number for p in finding.prompt.passages] == [1]
        assert finding.prompt.passages[0].doc_id == prepared.hits[finding.passage - 1].chunk.doc_id
    assert prepared.opening == opening_line(len(prepared.findings))
    opening = answerer.prompts.refusal_opening()
    assert prepared.params.banned_openings == (opening,)
    assert answerer.prompts.tokenizer.decode(list(opening)) == "The indexed"


def test_several_papers_each_give_a_cited_finding_in_rank_order(make_services) -> None:
    answerer = make_services(**with_thresholds(0.0, 0.0)).answerer  # every passage passes
    prepared = answerer.prepare(Question(query=COVERED, top_k=3))
    numbers = [f.passage for f in prepared.findings]
    assert len(numbers) == 3 and numbers == sorted(numbers)  # the 3 most probable of those passing, ranked
    assert prepared.verdict is not None
    probabilities = sorted((j.probability for j in prepared.verdict.judgements), reverse=True)
    assert sorted(f.probability for f in prepared.findings) == sorted(probabilities[:3])
    assert len({prepared.hits[f.passage - 1].chunk.doc_id for f in prepared.findings}) == 3
    texts = [f"{prepared.hits[f.passage - 1].chunk.text.split('. ')[0].rstrip('.')} [1]." for f in prepared.findings]
    composer, outcomes = compose(prepared, texts)
    answer = answerer.finish(prepared, composer, outcomes)
    assert answer.text.startswith("Three papers in the indexed abstracts address this.")
    for number, finding in zip(numbers, answer.findings, strict=True):  # [1] became each passage's number
        assert finding.passage == number and finding.text.endswith(f"[{number}].") and finding.supported
        assert finding.text in answer.text and finding.supporting_sentence
    assert {c.passage for c in answer.report.citations} == set(numbers)
    assert not answer.report.sentences[0].is_claim  # the opening counts, it claims nothing
    assert answer.usage.generated_tokens == 36


def test_a_finding_is_checked_against_its_whole_abstract_not_only_the_retrieved_chunk(make_services) -> None:
    answerer = make_services(**with_thresholds(0.0, 0.0)).answerer
    prepared = answerer.prepare(Question(query=COVERED, top_k=1))
    number = prepared.findings[0].passage
    first, second = sentences_of(prepared.hits[number - 1].document.abstract)[:2]
    # a long abstract's chunk: the search found its opening, the finding states a sentence after it
    passages = list(prepared.passages)
    passages[number - 1] = replace(passages[number - 1], text=first)
    prepared = replace(prepared, passages=tuple(passages))
    composer, outcomes = compose(prepared, [f"{second.strip().rstrip('.')} [1]."])
    answer = answerer.finish(prepared, composer, outcomes)
    (finding,) = answer.findings
    assert finding.supported and finding.supporting_sentence == second.strip()
    assert [(c.passage, c.supporting_sentence) for c in answer.report.citations] == [(number, second.strip())]


def test_a_partial_answer_says_so_first(make_services) -> None:
    answerer = make_services(**with_thresholds(0.0, 1.0)).answerer  # every question lands in between
    prepared = answerer.prepare(Question(query=COVERED))
    assert prepared.coverage == "partial" and len(prepared.findings) == 1
    assert prepared.opening == PARTIAL_ANSWER_PREFACE and prepared.params.banned_openings
    generated = "Employment did not fall after the increase [1]."
    composer, outcomes = compose(prepared, [generated])
    answer = answerer.finish(prepared, composer, outcomes)
    document = prepared.hits[prepared.findings[0].passage - 1].document
    shown = attributed(generated, attribution(document.authors, document.year))
    assert answer.text == f"{PARTIAL_ANSWER_PREFACE} {shown[:-1]} [1]."
    assert answer.coverage == "partial" and not answer.covered
    # The caveat is the service's sentence, not a claim to support; the generated sentence is checked.
    first, second = answer.report.sentences
    assert not first.is_claim and second.is_claim and second.supported_by == [1]


def test_without_the_decision_the_top_papers_answer_unchecked(make_services) -> None:
    answerer = make_services().answerer
    prepared = answerer.prepare(Question(query=OFF_TOPIC, coverage_check=False, top_k=2))
    assert prepared.coverage == "unchecked" and prepared.params.banned_openings == ()
    assert [f.passage for f in prepared.findings] == [1, 2] and prepared.verdict is None
    off = make_services(answerability={"check": False}).answerer.prepare(Question(query=OFF_TOPIC))
    assert off.coverage == "unchecked" and off.verdict is None


def test_prompt_passages_keep_their_sentences_closest_to_the_question(make_services) -> None:
    question = Question(query="Did disability claims rise in regions exposed to imports?", top_k=1,
                        coverage_check=False)  # fmt: skip
    prepared = make_services(focus={"max_sentences": 1}).answerer.prepare(question)  # by the sentence judge
    first = prepared.findings[0].prompt.passages[0]
    assert first.text == "Wages fell and disability claims rose in the most exposed regions."
    assert "sentences" in prepared.timings_ms
    by_cosine = make_services(focus={"max_sentences": 1}, sentence_judge={"model_dir": ""}).answerer.prepare(question)
    assert by_cosine.findings[0].prompt.passages[0].text == first.text and "focus" in by_cosine.timings_ms
    whole = make_services(focus={"enabled": False}, sentence_judge={"model_dir": ""}).answerer.prepare(question)
    assert whole.findings[0].prompt.passages[0].text.startswith("Import competition from China")


def test_an_unchecked_answer_never_shows_a_decline(make_services) -> None:
    """coverage_check false skips the decision, but a finding that declines shows its paper's own sentence."""
    answerer = make_services().answerer
    prepared = answerer.prepare(Question(query=OFF_TOPIC, coverage_check=False, top_k=2))
    composer, outcomes = compose(prepared, [NOT_COVERED_ANSWER, NOT_COVERED_ANSWER.replace(".", " [1].")])
    answer = answerer.finish(prepared, composer, outcomes)
    assert "do not answer" not in answer.text and answer.coverage == "unchecked"
    assert [f.passage for f in answer.findings] == [1, 2]
    for finding in answer.findings:
        document = prepared.hits[finding.passage - 1].document
        assert finding.text.startswith(attribution(document.authors, document.year))


def test_a_chosen_paper_whose_finding_declines_gets_its_closest_sentence_instead(make_services) -> None:
    answerer = make_services(**with_thresholds(0.0, 0.0)).answerer  # every passage passes
    prepared = answerer.prepare(Question(query=COVERED, top_k=2))
    assert len(prepared.findings) == 2 and all(f.fallback for f in prepared.findings)
    first, second = prepared.findings
    assert first.fallback == lead_sentence(first.prompt.passages[0].text)  # the focused passage's first sentence
    generated = f"{prepared.hits[first.passage - 1].chunk.text.split('. ')[0].rstrip('.')} [1]."
    declined = "In this study the indexed abstracts do not answer this question."  # as the generator words it
    composer, outcomes = compose(prepared, [generated, declined])
    answer = answerer.finish(prepared, composer, outcomes)
    assert "do not answer" not in answer.text and answer.covered
    assert [f.passage for f in answer.findings] == [first.passage, second.passage]
    document = prepared.hits[second.passage - 1].document
    shown = attributed(second.fallback, attribution(document.authors, document.year), document.abstract)
    assert answer.findings[1].text == f"{shown[:-1]} [{second.passage}]." and answer.findings[1].supported
    assert answer.text.endswith(answer.findings[1].text)


def test_a_question_outside_economics_is_declined_by_the_domain_gate_first(make_services) -> None:
    answerer = make_services(answerability={"domain_path": DEFAULT_DOMAIN_PATH}).answerer
    prepared = answerer.prepare(Question(query="Why does a car tyre lose inflation faster in cold weather?"))
    assert not prepared.generates and prepared.coverage == "not_covered" and "domain" in prepared.timings_ms
    assert prepared.verdict is not None and "about economics" in prepared.verdict.reason
    assert prepared.hits  # the closest passages are still listed
    covered = answerer.prepare(Question(query=COVERED))
    assert covered.generates  # an economics question passes the gate to the passage decision


def test_a_question_outside_economics_is_declined_before_the_reranker_runs(make_services) -> None:
    answerer = make_services(reranker=True, answerability={"domain_path": DEFAULT_DOMAIN_PATH}).answerer
    outside = answerer.prepare(Question(query="Why does a car tyre lose inflation faster in cold weather?"))
    assert outside.coverage == "not_covered" and outside.hits
    assert not outside.search.reranked and "rerank" not in outside.timings_ms
    economics = answerer.prepare(Question(query=COVERED))
    assert economics.search.reranked and "rerank" in economics.timings_ms


def test_papers_published_before_the_year_the_question_names_do_not_answer_it(make_services) -> None:
    answerer = make_services(**with_thresholds(0.0, 0.0)).answerer  # every passage passes the decision
    asked = "Did the state minimum wage increases of {} reduce teenage employment in fast food restaurants?"
    earlier = answerer.prepare(Question(query=asked.format(1992)))
    assert earlier.generates and "10.1257/test.1" in {earlier.hits[f.passage - 1].document.doi
                                                      for f in earlier.findings}  # fmt: skip
    later = answerer.prepare(Question(query=asked.format(2023), top_k=8))
    years = [later.hits[f.passage - 1].document.year for f in later.findings]
    assert later.generates and years and min(years) >= 2023  # only the papers of 2023 and 2024 are left
    assert all(hit.document.year < 2030 for hit in later.hits)
    beyond = answerer.prepare(Question(query=asked.format(2030)))
    assert not beyond.generates and beyond.coverage == "not_covered"
    assert any("names 2030" in note for note in beyond.notes)
