"""The answer contract shared by the service and the generator's fine-tune.

    prompt.py     the grounding instruction, numbered passages, the refusal sentence, the token budget
    answerability.py  whether the passages answer the question at all: covered, partial or not_covered
    focus.py      each passage's sentences closest to the question first
    citations.py  which passage supports each answer sentence
    answerer.py   Answerer: prepare (search, decide, prompt) and finish (check support) -> Answer
    ports.py      what answering needs from others: Search, PassageScorer (the judge), Generator; SamplingParams
    session.py    AnswerSession: one question's answer, from preparing it to its last event
"""
