"""Findings faithful to their abstract: numbers and names checked exactly, sentences complete, and who found it."""

from __future__ import annotations

import pytest

from answering.faithful import (
    attributed,
    attribution,
    finding_body,
    finished_finding,
    is_complete,
    is_faithful,
    leans_back,
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


def test_a_second_sentence_that_leans_on_another_or_repeats_the_finding_is_left_out() -> None:
    who = attribution(["Trefler, Daniel"], 2004)
    sentences = TARIFFS.split(". ")
    best, third = sentences[1] + ".", "These gains were not due to exits."
    one = finished_finding(best, TARIFFS, "", who, best, (best,))
    assert finished_finding(best, TARIFFS, "", who, best, (best,), third) == one  # "these gains": not the finding's
    assert finished_finding(best, TARIFFS, "", who, best, (best,), best) == one  # the finding itself
    after = sentences[2] + "."  # the sentence "these gains" follows: then it may lean on it
    assert finished_finding(after, TARIFFS, "", who, after, (after,), third).endswith(
        "soared by 14 percent. Trefler finds that these gains were not due to exits.")


def test_a_capitalised_possessive_opening_a_finding_keeps_its_capital() -> None:
    abstract = "Moody's and S&P split more often over banks."
    assert attributed(abstract, "Morgan (2002)", abstract) == (
        "Morgan (2002) finds that Moody's and S&P split more often over banks.")


def test_a_finding_cut_mid_phrase_is_not_complete() -> None:
    assert is_complete("Wages fell by 4.5 percent [1].")
    assert is_complete("Wages fell by 4.5 percent. [1]")
    assert not is_complete("Wages fell by the [1]")
    assert not is_faithful("Wages fell by 4.5", ABSTRACT)


def test_attribution_reads_as_economists_write_it() -> None:
    authors = ["Autor, David H.", "Dorn, David", "Hanson, Gordon H."]
    assert attribution(authors, 2013) == "Autor, Dorn, and Hanson (2013)"
    assert attribution(["Hunt Allcott", "Matthew Gentzkow"], 2022) == "Allcott and Gentzkow (2022)"
    assert attribution(["A, B", "C, D", "E, F", "G, H"], 1999) == "A et al. (1999)"
    assert attribution([], 2013) == "The authors (2013)"
    assert attribution(["Lee, Ann"], None) == "Lee"


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


@pytest.mark.parametrize(("sentence", "expected"), [
    ("Using a first-difference approach, we find that asset prices raised work at 62.",
     "Coile and Levine (2011) find, using a first-difference approach, that asset prices raised work at 62."),
    ("Using time-diaries from before and after, the authors show the shocks were effective.",
     "Coile and Levine (2011) show, using time-diaries from before and after, the shocks were effective."),
])  # fmt: skip
def test_an_opening_clause_before_we_find_is_said_once_by_who_found_it(sentence: str, expected: str) -> None:
    assert attributed(sentence, "Coile and Levine (2011)", sentence) == expected


def test_a_single_author_after_an_opening_clause_agrees() -> None:
    sentence = "Using data from the Add Health, we find that violence lowers wages by 5.1 percent."
    assert attributed(sentence, "Sabia (2017)", sentence) == (
        "Sabia (2017) finds, using data from the Add Health, that violence lowers wages by 5.1 percent.")


@pytest.mark.parametrize(("sentence", "who", "expected"), [
    ("The results, thus, indicate that debt contracts discourage risky investment.", "Field et al. (2013)",
     "Field et al. (2013) find that debt contracts discourage risky investment."),
    ("Our estimate suggests that workplace bans reduce smoking by 5 percentage points.", "Evans et al. (1999)",
     "Evans et al. (1999) find that workplace bans reduce smoking by 5 percentage points."),
    ("The preferred estimates suggest that the regulated sector shrank by 15 percent.", "The authors (2011)",
     "The authors (2011) find that the regulated sector shrank by 15 percent."),
    # a model's prediction stays the model's, and results without "that" stay the subject: whose, by name
    ("The model predicts higher density in improved neighborhoods.", "Banzhaf and Walsh (2008)",
     "Banzhaf and Walsh's (2008) model predicts higher density in improved neighborhoods."),
    ("Among other things, the model explains why trade credit has short maturity.", "Burkart (2004)",
     "Burkart's (2004) model explains why trade credit has short maturity."),
    ("The results suggest teachers can gain information from evaluation.", "The authors (2012)",
     "The authors' (2012) results suggest teachers can gain information from evaluation."),
    ("The evidence shows no effect on wages.", "Lee et al. (2020)",
     "Lee et al.'s (2020) evidence shows no effect on wages."),
    # an opening clause without its comma before "we find"; a linking phrase dropped
    ("Counter to stylized facts, using new data we find that investors sell past winners.", "Curcuru et al. (2011)",
     "Curcuru et al. (2011) find, counter to stylized facts, using new data, that investors sell past winners."),
    ("At the same time, there remains a conflict between the right and the left.", "Gruber (2003)",
     "Gruber (2003) finds that there remains a conflict between the right and the left."),
    # a lead that is a clause of its own stays where it is, who found it named where they speak
    ("Classical approximations assume that two estimates are equivalent, but we show that this fails.",
     "The authors (2014)", "Classical approximations assume that two estimates are equivalent, but the authors "
     "(2014) show that this fails."),
    ("Our calculations indicate that mismatch explains at most 1/3 of the increase.", "Şahin et al. (2014)",
     "Şahin et al. (2014) find that mismatch explains at most 1/3 of the increase."),
    ("Our core finding is that vouchers generate long-run welfare gains.", "Chyn and Daruich (2025)",
     "Chyn and Daruich (2025) find that vouchers generate long-run welfare gains."),
    ("The author's results suggest that more information can increase polarization.", "Baysan (2022)",
     "Baysan (2022) finds that more information can increase polarization."),
    # a single author's second verb agrees; "they" is whoever the abstract speaks of, not its authors
    ("I measure monotonicity in five settings and find that it is violated.", "Sigstad (2025)",
     "Sigstad (2025) measures monotonicity in five settings and finds that it is violated."),
    ("Specifically, they produce a low correlation between hours and productivity (0.23).", "Takahashi (2014)",
     "Takahashi (2014) finds that they produce a low correlation between hours and productivity (0.23)."),
    ("Their results resolve long-standing puzzles.", "Takahashi (2014)",
     "Takahashi (2014) finds that their results resolve long-standing puzzles."),
    ("They pay a price per expected visit of more than $17.", "DellaVigna and Malmendier (2006)",
     "DellaVigna and Malmendier (2006) find that they pay a price per expected visit of more than $17."),
    # "evidence was found": said once, by who found it
    ("No evidence was found of manipulation of test scores by teachers.", "Lavy (2009)",
     "Lavy (2009) finds no evidence of manipulation of test scores by teachers."),
    ("Little systematic evidence of compensatory behavior is found among smokers.", "Abrevaya and Puzzello (2012)",
     "Abrevaya and Puzzello (2012) find little systematic evidence of compensatory behavior among smokers."),
])  # fmt: skip
def test_the_papers_own_results_and_models_are_said_by_who_found_them(sentence: str, who: str, expected: str) -> None:
    assert attributed(sentence, who, sentence) == expected


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


@pytest.mark.parametrize(("sentence", "shown"), [
    ("We also show that parents value quality.", "Andrabi et al. (2024) show that parents value quality."),
    ("I further find that costs fell.", "Andrabi et al. (2024) find that costs fell."),
    ("We then estimate a model and show that households care.",
     "Andrabi et al. (2024) estimate a model and show that households care."),
])  # fmt: skip
def test_a_link_to_a_finding_not_shown_is_dropped_between_the_authors_and_their_verb(sentence: str,
                                                                                    shown: str) -> None:
    assert attributed(sentence, "Andrabi et al. (2024)") == shown


def test_a_single_authors_verb_agrees_whatever_its_ending() -> None:
    assert attributed("We study why firms export.", "Lee (2001)") == "Lee (2001) studies why firms export."
    assert attributed("We establish that prices fall.", "Lee (2001)") == "Lee (2001) establishes that prices fall."
    # any verb "We" or "I" took agrees, not only a reporting verb; modals and plural authors stay as they are
    assert attributed("I make the case for public reinsurance.", "Swartz (2003)") == (
        "Swartz (2003) makes the case for public reinsurance.")
    assert attributed("We are unable to reject equality.", "Lee (2001)") == "Lee (2001) is unable to reject equality."
    assert attributed("We here have a proof.", "Lee (2001)") == "Lee (2001) here has a proof."
    assert attributed("We cannot reject equality.", "Lee (2001)") == "Lee (2001) cannot reject equality."
    assert attributed("We make the case for it.", "Lee and Kim (2001)") == "Lee and Kim (2001) make the case for it."


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
    "This paper shows that wages rose.",  # the paper itself, not the sentence before
    "When a seller cannot commit, he offers a discount.",  # whom "he" means is in the sentence
    "Lee's mother and her children moved.",
    "Wages rose, although these findings fade after a year.",  # points back within its own sentence
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


@pytest.mark.parametrize(("sentence", "who", "shown"), [
    ("While I find little impact on mortality, the results show that costs fell.", "Shigeoka (2014)",
     "While Shigeoka (2014) finds little impact on mortality, the results show that costs fell."),
    ("While the received theory assumes that prices clear, we show here that integration fails.", "Lee (2012)",
     "While the received theory assumes that prices clear, Lee (2012) shows here that integration fails."),
])  # fmt: skip
def test_who_found_it_is_named_where_the_abstract_says_it_not_twice(sentence: str, who: str, shown: str) -> None:
    assert attributed(sentence, who) == shown


@pytest.mark.parametrize(("shown", "who", "body"), [
    ("Autor, Dorn, and Hanson (2013) find that imports cut jobs [1].", "Autor, Dorn, and Hanson (2013)",
     "find that imports cut jobs [1]."),
    ("Lee et al. (2020) find that wages fell.", "Lee et al. (2020)", "find that wages fell."),
    ("Gershkov et al.'s (2023) model explains deductibles.", "Gershkov et al. (2023)", "model explains deductibles."),
    ("The authors' (2012) results suggest gains.", "The authors (2012)", "results suggest gains."),
    ("While Shigeoka (2014) finds little impact, costs fell.", "Shigeoka (2014)",
     "While Shigeoka (2014) finds little impact, costs fell."),  # named later: all of it is what was found
])  # fmt: skip
def test_the_attribution_is_read_apart_from_what_was_found(shown: str, who: str, body: str) -> None:
    assert finding_body(shown, who) == body


def test_authors_named_again_inside_their_sentence_read_they_and_a_late_we_takes_their_names() -> None:
    assert attributed("We develop a model of addiction, and we show that earlier estimates are biased.",
                      "Adda and Cornaglia (2006)") == (
        "Adda and Cornaglia (2006) develop a model of addiction, and they show that earlier estimates are biased.")
    assert attributed("When the assumptions fail, we propose weaker exclusion restrictions.", "Frandsen et al. (2022)"
                      ) == "When the assumptions fail, Frandsen et al. (2022) propose weaker exclusion restrictions."
    # a single author stays named; the authors' own model is not "they'"
    assert attributed("I study X; I find Y.", "Lee (2001)") == "Lee (2001) studies X; the author finds Y."
    assert attributed("We study X, and the authors' model shows Y.", "Lee and Kim (2001)") == (
        "Lee and Kim (2001) study X, and the authors' model shows Y.")
