"""The answer contract shared by the service and the generator's fine-tune.

    prompt.py     the grounding instruction, numbered passages, the refusal sentence, the token budget
    coverage.py   whether the passages answer the question at all (decline, or oblige an answer)
    citations.py  which passage supports each answer sentence
    answerer.py   Answerer: prepare (search, decide, prompt) and finish (check support) -> Answer
"""
