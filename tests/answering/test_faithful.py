"""Findings faithful to their abstract: numbers and names checked exactly, sentences complete, and who found it."""

from __future__ import annotations

import pytest

from answering.attribution import attributed, attribution
from answering.citations import sentences_of
from answering.faithful import (
    finished_finding,
    is_complete,
    is_faithful,
    keeps_its_source,
    leans_back,
    source_sentence,
    unfaithful_specifics,
    unfaithful_words,
)

ABSTRACT = ("We estimate that 120,000-180,000 jobs were lost in Ohio before 1982. The regulator designs the auction "
            "(1997). Wages fell by 4.5 percent.")  # fmt: skip


def test_a_miscopied_number_year_or_name_is_caught_and_exact_ones_pass() -> None:
    assert unfaithful_specifics("The authors find 120,000-180,011 jobs were lost [1].", ABSTRACT) == ["180,011"]
    assert unfaithful_specifics("Jobs were lost before 1990 [2].", ABSTRACT) == ["1990"]
    assert unfaithful_specifics("Jobs were lost in Texas.", ABSTRACT) == ["Texas"]
    assert unfaithful_specifics("Between 120,000 and 180,000 jobs were lost in Ohio before 1982 [1].", ABSTRACT) == []
    assert unfaithful_specifics("Wages fell by 4.5 percent.", ABSTRACT) == []
    # the citation marker's number is not part of the finding
    assert unfaithful_specifics("Wages fell [3].", ABSTRACT) == []


def test_an_acronym_written_in_lower_case_is_caught_and_falls_back_to_the_abstracts_sentence() -> None:
    # the generator wrote "(us$18)" for "(US$18)", which the third person then read as "them$18"
    abstract = ("Using a field experiment in Uganda, we compare cash to a digital account. Women on the digital "
                "account had 15 percent higher (US$18) profits than those paid in cash.")  # fmt: skip
    generated = "Women on the digital account had 15 percent higher (us$18) profits than those paid in cash."
    assert unfaithful_specifics(generated, abstract) == ["us"]
    assert unfaithful_specifics(generated.replace("us$", "US$"), abstract) == []
    shown = finished_finding(generated, abstract, "", "Riley (2024)", sentences_of(abstract)[1])
    assert "(US$18)" in shown and "them" not in shown
    # where the abstract says "us" in lower case too, a lower-case "us" is not a miscopied acronym
    assert unfaithful_specifics("The data let us see profits.", "US firms. The data let us see profits.") == []


def test_a_glued_swapped_or_reformed_word_is_caught_and_who_found_it_is_not() -> None:
    abstract = ("We derive conditions for when it is efficient to prohibit side payments. Higher leverage implies "
                "larger output losses in the parties’ view.")  # fmt: skip
    assert unfaithful_words("It is shown when it isefficient to prohibit side payments.", abstract) == ["isefficient"]
    assert unfaithful_words("Higher borrowing against real estate implies larger output losses.", abstract) == [
        "borrowing", "against", "real", "estate"]
    assert unfaithful_words("The authors find it is efficiency to prohibit side payments.", abstract) == ["efficiency"]
    # who found it, the reporting verb in any form, the abstract's words in their simple forms and possessives pass
    assert unfaithful_words("The authors derive conditions for when it is efficient to prohibit side payments, "
                            "and their conditions show higher leverage implies larger output losses in the parties' "
                            "view [1].", abstract) == []  # fmt: skip
    assert unfaithful_words("Their conditions show the author's payment prohibited.", abstract) == []


def test_a_reworded_finding_falls_back_to_the_abstracts_sentence() -> None:
    who = attribution(["Harstad, Bård"], 2007)
    abstract = "I derive conditions for when it is efficient to prohibit side payments."
    assert finished_finding("The author derives conditions for when it isefficient to prohibit side payments [1].",
                            abstract, "", who, abstract) == (
        "Harstad (2007) derives conditions for when it is efficient to prohibit side payments.")  # fmt: skip


LIFE = ("The biggest premium to life satisfaction is associated with having a family. While there is also a life "
        "satisfaction premium associated with having a career, women do not seem able to double up on these premiums.")
AUCTION = ("The sequential process is always more efficient. Because the auction is more conducive to entry, it "
           "usually generates higher expected revenue.")


def test_a_generated_finding_that_splices_sentences_or_drops_its_because_falls_back() -> None:
    # every word is the abstract's, so the word checks pass, but the career premium is not the biggest one
    spliced = ("The author finds that the biggest premium to life satisfaction is associated with having a career, "
               "while women do not seem able to double up on these premiums [1].")
    assert is_faithful(spliced, LIFE) and not keeps_its_source(spliced, source_sentence(spliced, sentences_of(LIFE)))
    fallback = sentences_of(LIFE)[1]
    assert finished_finding(spliced, LIFE, "", "Bertrand (2013)", fallback) == (
        "Bertrand (2013) finds that while there is also a life satisfaction premium associated with having a career, "
        "women do not seem able to double up on these premiums.")
    # "Because" dropped: the reason is stated as a finding of its own
    dropped = "The authors find that the auction is more conducive to entry, it usually generates higher revenue [1]."
    assert not keeps_its_source(dropped, sentences_of(AUCTION)[1])
    kept = "The authors find that because the auction is more conducive to entry, it usually generates higher revenue."
    assert keeps_its_source(kept, sentences_of(AUCTION)[1])
    # the generator's usual rewrites keep their source: "We find" in the third person, a linking word dropped
    assert keeps_its_source("The authors find that employment fell by 12 percent in these industries.",
                            "Moreover, we find that employment fell by 12 percent in these industries.")


TARIFFS = ("We study the Canada-US trade agreement. For industries that experienced the deepest Canadian tariff cuts, "
           "employment fell by 12 percent. For industries that experienced the largest US tariff cuts, plant "
           "productivity soared by 14 percent. These gains were not due to exits. We also find that wages rose.")


def test_a_second_answering_sentence_follows_the_finding_said_by_who_found_it_without_the_year() -> None:
    who = attribution(["Trefler, Daniel"], 2004)
    sentences = TARIFFS.split(". ")
    best, second = sentences[1] + ".", sentences[2] + "."
    generated = "The author finds that for industries that experienced the deepest Canadian tariff cuts, " \
                "employment fell by 12 percent [1]."
    assert finished_finding(generated, TARIFFS, "", who, best, (best,), second) == (
        "Trefler (2004) finds that for industries that experienced the deepest Canadian tariff cuts, employment fell "
        "by 12 percent. Trefler finds that for industries that experienced the largest US tariff cuts, plant "
        "productivity soared by 14 percent.")  # fmt: skip
    # "We also find" is said once more by who found it, the link dropped
    assert finished_finding(generated, TARIFFS, "", who, best, (best,), "We also find that wages rose.").endswith(
        "12 percent. Trefler finds that wages rose.")


def test_two_results_of_one_paper_are_shown_in_their_abstracts_order_the_first_with_the_year() -> None:
    who = attribution(["Trefler, Daniel"], 2004)
    sentences = TARIFFS.split(". ")
    best, earlier = sentences[2] + ".", sentences[1] + "."
    generated = "The author finds that for industries that experienced the largest US tariff cuts, plant " \
                "productivity soared by 14 percent [1]."
    assert finished_finding(generated, TARIFFS, "", who, best, (best, earlier), earlier) == (
        "Trefler (2004) finds that for industries that experienced the deepest Canadian tariff cuts, employment fell "
        "by 12 percent. Trefler finds that for industries that experienced the largest US tariff cuts, plant "
        "productivity soared by 14 percent.")  # fmt: skip
    # an earlier sentence that reads less as a result than the finding (its setting) still comes after it
    assert finished_finding(generated, TARIFFS, "", who, best, (best,), "We study the Canada-US trade agreement.") == (
        "Trefler (2004) finds that for industries that experienced the largest US tariff cuts, plant productivity "
        "soared by 14 percent. Trefler studies the Canada-US trade agreement.")  # fmt: skip
    # a finding said with a possessive keeps it, without the year
    predicts = "We study wages. Wages fell by 4 percent. Our model predicts that prices rise by 2 percent."
    two = attribution(["Lee, Ann", "Kim, Bo"], 2001)
    shown = finished_finding("", predicts, "", two, "Our model predicts that prices rise by 2 percent.",
                             second="Wages fell by 4 percent.")  # fmt: skip
    assert shown == ("Lee and Kim (2001) find that wages fell by 4 percent. Lee and Kim's model predicts that prices "
                     "rise by 2 percent.")  # fmt: skip


def test_a_second_sentence_that_leans_on_another_comes_after_it_and_one_repeating_the_finding_is_left_out() -> None:
    who = attribution(["Trefler, Daniel"], 2004)
    sentences = TARIFFS.split(". ")
    best, third = sentences[1] + ".", "These gains were not due to exits."
    one = finished_finding(best, TARIFFS, "", who, best, (best,))
    # "these gains" are the US cuts' of the sentence before it, not the finding's: that sentence comes first
    assert finished_finding(best, TARIFFS, "", who, best, (best,), third) == (
        f"{one} Trefler notes that for industries that experienced the largest US tariff cuts, plant productivity "
        "soared by 14 percent. These gains were not due to exits.")
    assert finished_finding(best, TARIFFS, "", who, best, (best,), best) == one  # the finding itself
    opening = "These facts puzzle macroeconomists."  # leaning on nothing the abstract has: left out
    assert finished_finding(best, f"{opening} {TARIFFS}", "", who, best, (best,), opening) == one
    after = sentences[2] + "."  # the sentence "these gains" follows: then it may lean on it
    assert finished_finding(after, TARIFFS, "", who, after, (after,), third).endswith(
        "soared by 14 percent. Trefler finds that these gains were not due to exits.")


def test_a_finding_cut_mid_phrase_is_not_complete() -> None:
    assert is_complete("Wages fell by 4.5 percent [1].")
    assert is_complete("Wages fell by 4.5 percent. [1]")
    assert not is_complete("Wages fell by the [1]")
    assert not is_faithful("Wages fell by 4.5", ABSTRACT)


def test_an_abstract_sentence_becomes_a_finding_of_its_authors_without_changing_its_subject() -> None:
    who = attribution(["Smith, Ann"], 2001)
    assert attributed("We find that wages fell by 4.5 percent.", who) == (
        "Smith (2001) finds that wages fell by 4.5 percent.")
    assert attributed("The regulator designs the auction.", who, ABSTRACT) == (
        "Smith (2001) finds that the regulator designs the auction.")
    plural = attribution(["Smith, Ann", "Jones, Bo"], 2001)
    assert attributed("Our estimates show that we underpredict.", plural).startswith("Smith and Jones (2001) find")
    # a name opening the sentence keeps its capital
    assert attributed("Ohio lost jobs.", plural, ABSTRACT) == "Smith and Jones (2001) find that Ohio lost jobs."
    assert attributed("The authors show that X holds [2].", who) == "Smith (2001) shows that X holds."
    assert attributed("However, wages fell.", who) == "Smith (2001) finds that wages fell."
    assert attributed("It shows that wages fell.", plural) == "Smith and Jones (2001) show that wages fell."
    # several authors run together in one corpus entry are each named
    assert attribution(["Justiniano, Alejandro Primiceri, Giorgio E."], 2008) == "Justiniano and Primiceri (2008)"


def test_a_question_sentence_or_a_miscopied_finding_falls_back_to_the_best_sentence() -> None:
    who = attribution(["Smith, Ann"], 2001)
    fallback = "We find that wages fell by 4.5 percent."
    assert finished_finding("Should we count each newly insured person equally [1]?", ABSTRACT, "", who, fallback) == (
        "Smith (2001) finds that wages fell by 4.5 percent.")
    assert finished_finding("Wages fell by 4.7 percent [1].", ABSTRACT, "", who, fallback) == (
        "Smith (2001) finds that wages fell by 4.5 percent.")
    assert finished_finding("Wages fell by 4.5 percent [1].", ABSTRACT, "", who, fallback) == (
        "Smith (2001) finds that wages fell by 4.5 percent.")  # faithful: kept, attributed


def test_a_faithful_finding_written_from_a_sentence_that_does_not_answer_falls_back() -> None:
    who = attribution(["Smith, Ann"], 2001)
    abstract = "We use payroll records from Ohio firms. We find that wages fell by 4.5 percent."
    answering = ("We find that wages fell by 4.5 percent.",)
    method = "The authors use payroll records from Ohio firms [1]."  # faithful, but the method, not the result
    assert finished_finding(method, abstract, "", who, answering[0], answering) == (
        "Smith (2001) finds that wages fell by 4.5 percent.")
    result = "Wages fell by 4.5 percent [1]."
    assert finished_finding(result, abstract, "", who, answering[0], answering) == (
        "Smith (2001) finds that wages fell by 4.5 percent.")


def test_a_generated_subject_whose_verb_is_a_noun_falls_back_to_the_abstracts_sentence() -> None:
    who = attribution(["Coen-Pirani, Daniele"], 2004)
    abstract = "Second, estimates of inventory speeds in firm-level data are higher than in aggregate data."
    best = abstract
    garbled = "The author estimates of inventory speeds in firm-level data are higher than in aggregate data [1]."
    assert finished_finding(garbled, abstract, "", who, best) == (
        "Coen-Pirani (2004) finds that estimates of inventory speeds in firm-level data are higher than in aggregate "
        "data.")
    assert finished_finding("The author estimates that inventory speeds are higher in firm-level data [1].",
                            "I estimate that inventory speeds are higher in firm-level data.", "", who, best) == (
        "Coen-Pirani (2004) estimates that inventory speeds are higher in firm-level data.")


def test_a_generated_subject_whose_verb_is_followed_by_a_verb_was_a_noun() -> None:
    abstract = "Our estimate suggests that workplace bans reduce smoking by 5 percentage points."
    garbled = "The authors estimate suggests that workplace bans reduce smoking by 5 percentage points [1]."
    assert finished_finding(garbled, abstract, "", "Evans et al. (1999)", abstract) == (
        "Evans et al. (1999) find that workplace bans reduce smoking by 5 percentage points.")


def test_a_generated_findings_their_results_are_the_authors_an_abstracts_are_someone_elses() -> None:
    abstract = "Their results resolve old puzzles. Our results suggest that choice matters more than cost."
    generated = "Their results suggest that choice matters more than cost [1]."
    assert finished_finding(generated, abstract, "", "Barr and Castleman (2025)", abstract) == (
        "Barr and Castleman (2025) find that choice matters more than cost.")
    assert finished_finding("Their [1]", abstract, "", "Takahashi (2014)", "Their results resolve old puzzles.") == (
        "Takahashi (2014) finds that their results resolve old puzzles.")


LEANING = ("The nontruncated distribution of city sizes is shown to be lognormal, rather than Pareto. This provides a "
           "simple justification for proportionate growth. We study US cities.")  # fmt: skip


def test_a_finding_that_points_back_is_shown_after_the_sentence_it_points_to() -> None:
    fallback = "This provides a simple justification for proportionate growth."
    assert finished_finding("", LEANING, "", "Eeckhout (2004)", fallback) == (
        "Eeckhout (2004) notes that the nontruncated distribution of city sizes is shown to be lognormal, rather than "
        "Pareto. This provides a simple justification for proportionate growth.")
    abstract = ("Trade raises the relative wage of women in blue-collar tasks. We empirically confirm these "
                "theoretical predictions using NAFTA tariff cuts.")  # fmt: skip
    generated = "The authors empirically confirm these theoretical predictions using NAFTA tariff cuts [1]."
    assert finished_finding(generated, abstract, "", "The authors (2013)", generated) == (
        "The authors (2013) note that trade raises the relative wage of women in blue-collar tasks. The authors "
        "empirically confirm these theoretical predictions using NAFTA tariff cuts.")


def test_a_finding_speaking_of_someone_named_before_it_is_shown_after_that_sentence() -> None:
    abstract = ("We study payments for ecosystem services. If an individual would have cut down trees to sell them, "
                "his opportunity costs are front-loaded. If credit constrained, he might decline the program.")
    fallback = "If credit constrained, he might decline the program."
    assert finished_finding("", abstract, "", "The authors (2013)", fallback) == (
        "The authors (2013) note that if an individual would have cut down trees to sell them, his opportunity costs "
        "are front-loaded. If credit constrained, he might decline the program.")


@pytest.mark.parametrize("sentence", [
    "We show its asymptotic validity in simulations.",  # "its": the estimator of the sentence before
    "We find that its business-cycle implications improve on the standard model.",
    "When markups differ across sectors, this downward bias is more severe in aggregate data.",  # after a clause
    "If shocks to growth are persistent, these arguments favour a smaller discount rate.",
    "They produce a low correlation between hours and productivity (0.23).",  # "they": the abstract's, not ours
    "In failing to give more, they forgo significant tax savings.",  # "they" after a clause naming no one
    "We illustrate, in this environment, that more informed consumers can raise prices.",
    "Although such a tie-breaking procedure preserves stability, it hurts students.",
    "Moody's and S&P split more often over these financial intermediaries.",  # "these", the clause's 8th word
])  # fmt: skip
def test_a_finding_whose_its_or_main_clause_points_back_leans_on_the_sentence_before(sentence: str) -> None:
    abstract = f"We propose an estimator of aggregate speeds of adjustment. {sentence}"
    shown = attributed(sentence, "Frandsen (2022)", abstract)
    assert leans_back(shown, "Frandsen (2022)")
    # shown after the sentence it leans on, both in the abstract's words
    assert finished_finding("", abstract, "", "Frandsen (2022)", sentence).startswith(
        "Frandsen (2022) proposes an estimator of aggregate speeds of adjustment. ")


@pytest.mark.parametrize("sentence", [
    "This paper shows that wages rose.",  # the paper itself, not the sentence before
    "In spite of its simplicity, the model yields rich predictions.",  # "its" means what follows it
    "Retirement age reversed its decline in the mid-1990s.",
    "When a tax is salient, the paper finds that demand falls.",  # a clause, then no pointing
    "When a seller cannot commit, he offers a discount.",  # whom "he" means is in the sentence
    "Lee's mother and her children moved.",
    "Wages rose, although these findings fade after a year.",  # points back within its own sentence
    "When firms enter, they cut prices.",  # whom "they" means is in the clause before it
    "We show, using new data, that wages, this year, rose.",
    "We find that minority students eligible for automatic admissions and those who undergo review apply less.",
    "Nontruncated city sizes are lognormal.",
])  # fmt: skip
def test_a_finding_that_stands_alone_is_shown_alone(sentence: str) -> None:
    abstract = f"We study US cities. {sentence}"
    assert not leans_back(attributed(sentence, "Eeckhout (2004)", abstract), "Eeckhout (2004)")
    assert finished_finding("", abstract, "", "Eeckhout (2004)", sentence) == attributed(sentence, "Eeckhout (2004)",
                                                                                          abstract)  # fmt: skip


def test_a_finding_pointing_back_to_nothing_usable_is_shown_alone() -> None:
    opening = "These facts puzzle macroeconomists. We study US cities."
    assert finished_finding("", opening, "", "Lee (2001)", "These facts puzzle macroeconomists.") == (
        "Lee (2001) finds that these facts puzzle macroeconomists.")  # the abstract's first sentence: none before
    after_question = "Why do cities grow? This provides a simple justification for proportionate growth."
    assert finished_finding("", after_question, "", "Lee (2001)", "This provides a simple justification for "
                            "proportionate growth.") == ("Lee (2001) finds that this provides a simple justification "
                                                         "for proportionate growth.")  # fmt: skip


def test_the_context_a_finding_is_shown_after_is_in_its_abstracts_words() -> None:
    shown = finished_finding("", LEANING, "", "Eeckhout (2004)", "This provides a simple justification for "
                             "proportionate growth.")  # fmt: skip
    assert unfaithful_words(shown, LEANING, "Eeckhout 2004") == []  # "notes" says who, not a changed word
    assert unfaithful_specifics(shown, LEANING, "Eeckhout 2004") == []




def test_a_finding_that_leans_on_a_sentence_leaning_back_too_is_shown_after_both() -> None:
    abstract = ("Many expected the wealthy to avoid the estate tax. However, I find strong evidence that the wealthy "
                "fail to use the annual exclusion. Instead they transfer far less than permitted. In failing to give "
                "more, they forgo significant tax savings.")  # fmt: skip
    assert finished_finding("", abstract, "", "Lee (2013)", "In failing to give more, they forgo significant tax "
                            "savings.") == (
        "Lee (2013) finds strong evidence that the wealthy fail to use the annual exclusion. Instead they transfer far "
        "less than permitted. In failing to give more, they forgo significant tax savings.")


def test_an_abstracts_their_leans_back_and_its_our_shown_as_their_does_not() -> None:
    abstract = ("The data show how the poor act. We find that their elasticity of demand depends on their poverty. "
                "Our identification derives from changes in the tax credit.")  # fmt: skip
    theirs, ours = sentences_of(abstract)[1:]
    assert leans_back(attributed(theirs, "Jensen and Miller", abstract), "Jensen and Miller", theirs)
    assert finished_finding("", abstract, "", "Jensen and Miller", theirs).startswith(
        "Jensen and Miller note that the data show how the poor act. ")
    shown = attributed(ours, "Dahl and Lochner", abstract)
    assert shown.startswith("Dahl and Lochner find that their identification")  # the authors' own, said of them
    assert not leans_back(shown, "Dahl and Lochner", ours)
