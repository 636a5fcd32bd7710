"""The result cue: a prior that orders an abstract's sentences, results before method."""

import pytest

from answering.evidence import PaperSentences
from answering.result_cues import result_cue


@pytest.mark.parametrize("sentence", [
    "We find uninsured depositors are most likely to run.",
    "Our results show that reputation is seldom harmful.",
    "Employment fell by 4 percent in treated counties.",
    "The estimates suggest that desegregation raised private enrollment.",
])  # fmt: skip
def test_results_read_as_results(sentence: str) -> None:
    assert result_cue(sentence) == 1.0


@pytest.mark.parametrize("sentence", [
    "This paper develops a model of bank runs with heterogeneous depositors.",
    "We study how reputation works in repeated games.",
    "Previous work demonstrates that low-income achievers fail to apply to selective colleges.",
    "Prior research has documented that consumption declines at retirement.",  # someone else's result
    "Using administrative data from Denmark, our analysis covers three decades.",
    "Across two experiments, we vary the payoffs from the market relative to the game.",  # the procedure
    # a view the paper answers, not its finding
    "In his influential book, Thomas Piketty argues forcefully that wealth inequality is inherent to capitalism.",
    "Proponents of the Bayh-Dole Act argue that licensing is needed for industrial use.",
    "It is widely believed that better health in early childhood pays off in adulthood.",
    "According to conventional wisdom, long-term bonds suit conservative investors.",
    "He drops all data from Latin America and much of the data from Africa.",  # a critic's procedure
    # the method in the passive
    "The relative performance of these mechanisms is investigated when entry is costly and selective.",
])  # fmt: skip
def test_methods_and_settings_read_as_methods(sentence: str) -> None:
    assert result_cue(sentence) == -1.0


def test_a_plain_sentence_and_one_with_both_kinds_of_words_are_neutral() -> None:
    assert result_cue("Banks hold liquid assets against withdrawals.") == 0.0
    assert result_cue("We argue that some superstitions can persist.") == 0.0  # the authors' own argument
    assert result_cue("Contrary to conventional wisdom, ownership risk slows resource use.") == 0.0
    assert result_cue("When the assumptions fail, we propose weaker restrictions.") == 0.0  # a result of a method
    assert result_cue("Although it is often argued that costs are misperceived, the results show they are not.") == 0.0
    assert result_cue("We use survey data and find that knowledge of pensions is unrelated to saving.") == 0.0


def test_the_cue_reorders_close_sentences_but_not_a_clear_judgement() -> None:
    method = "This paper develops a model of bank runs."
    result = "We find that uninsured depositors run first."
    close = PaperSentences((method, result), (0.62, 0.55))
    assert close.ranked == [1, 0]
    clear = PaperSentences((method, result), (0.97, 0.05))
    assert clear.ranked == [0, 1]
    assert close.best_probability == 0.62  # the decision's bars read the judge alone
