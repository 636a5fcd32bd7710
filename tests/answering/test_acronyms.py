import pytest

from answering.acronyms import definitions, spelled_out
from answering.faithful import finished_finding, unfaithful_specifics, unfaithful_words

SVA = ("We estimate and validate test score-based measures of school quality (school value added, or SVA) in "
       "Pakistan. We document substantial variation in SVA within villages. We also show that parents value SVA.")


@pytest.mark.parametrize(("abstract", "expected"), [
    (SVA, {"SVA": "school value added"}),
    ("Skill accumulation through past work, or \"learning-by-doing\" (LBD), matters.", {"LBD": "learning-by-doing"}),
    ("We use the Vehicle Ownership and Alternatives Survey (VOAS).", {"VOAS": "Vehicle Ownership and Alternatives "
                                                                              "Survey"}),
    ("An ambiguity-averse decision-maker (DM) decides how long to learn.", {"DM": "decision-maker"}),
    ("Prices rose in the US (see Table 2). GDP fell (GDP).", {}),  # no words before it that it abbreviates
])  # fmt: skip
def test_an_abstracts_acronyms_are_read_with_the_words_they_stand_for(abstract: str, expected: dict) -> None:
    assert definitions(abstract) == expected


def test_a_finding_spells_out_an_acronym_its_abstract_defines_elsewhere_in_the_abstracts_words() -> None:
    shown = finished_finding("", SVA, "", "Andrabi et al. (2024)", "We also show that parents value SVA.")
    assert shown == "Andrabi et al. (2024) show that parents value SVA (school value added)."
    assert unfaithful_words(shown, SVA, "Andrabi et al. 2024") == []
    assert unfaithful_specifics(shown, SVA, "Andrabi et al. 2024") == []


def test_an_acronym_spelled_out_already_or_not_defined_is_left_as_it_is() -> None:
    defined_here = "Measures of school value added (SVA) vary."
    assert spelled_out(defined_here, SVA) == defined_here
    assert spelled_out("US parents value GDP.", SVA) == "US parents value GDP."
    assert spelled_out("SVA and SVA again.", SVA) == "SVA (school value added) and SVA again."  # the first use only
