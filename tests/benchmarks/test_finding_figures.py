import pytest

from benchmarks.finding_figures import finding_body


@pytest.mark.parametrize(("shown", "body"), [
    ("Autor, Dorn, and Hanson (2013) find that imports cut jobs [1].", "find that imports cut jobs [1]."),
    ("Lee et al. (2020) find that wages fell.", "find that wages fell."),
    ("Gershkov et al.'s (2023) model explains deductibles.", "model explains deductibles."),
    ("The authors' (2012) results suggest gains.", "results suggest gains."),
])  # fmt: skip
def test_the_attribution_is_read_apart_from_what_was_found(shown: str, body: str) -> None:
    assert finding_body(shown) == body
