import pytest

from answering.prompt import NOT_COVERED_ANSWER, SYSTEM_INSTRUCTION, Passage, PromptBuilder, PromptTooLongError

PASSAGES = [
    Passage(1, "d1", "d1#0", "Minimum Wages and Employment", 1999, "Employment did not fall after the increase."),
    Passage(2, "d2", "d2#0", "", None, "Banks cut lending when rates rise."),
]


def test_prompt_numbers_passages_with_title_and_year_and_ends_at_the_answer(tiny_generator) -> None:
    builder = PromptBuilder(tiny_generator.tokenizer, max_context=2048)
    built = builder.build("Does the minimum wage cut jobs?", PASSAGES, max_new_tokens=100)
    assert "[1] Minimum Wages and Employment (1999)\nEmployment did not fall" in built.text
    assert "[2] Untitled\nBanks cut lending" in built.text
    assert SYSTEM_INSTRUCTION in built.text and NOT_COVERED_ANSWER in built.text
    assert built.text.index("[2]") < built.text.index("Question: Does the minimum wage cut jobs?")
    assert built.text.endswith("<|im_start|>assistant\n")
    assert built.prompt_tokens == len(tiny_generator.tokenizer.encode(built.text))
    assert built.dropped_passages == 0


def test_passages_are_dropped_from_the_bottom_to_fit(tiny_generator) -> None:
    one = PromptBuilder(tiny_generator.tokenizer, 2048).build("Q?", PASSAGES[:1], 0).prompt_tokens
    built = PromptBuilder(tiny_generator.tokenizer, max_context=one + 10).build("Q?", PASSAGES, max_new_tokens=10)
    assert [p.number for p in built.passages] == [1] and built.dropped_passages == 1


def test_a_question_that_cannot_fit_is_refused(tiny_generator) -> None:
    builder = PromptBuilder(tiny_generator.tokenizer, max_context=128)
    with pytest.raises(PromptTooLongError, match="leaves no room"):
        builder.build("wages " * 200, PASSAGES, max_new_tokens=16)
