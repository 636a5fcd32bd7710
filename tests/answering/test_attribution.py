"""Who found it: abstract sentences said as findings of their authors, the way economists write them."""

from __future__ import annotations

import pytest

from answering.attribution import attributed, attribution, finding_body


@pytest.mark.parametrize(("sentence", "expected"), [
    ("In contrast to earlier estimates, we find no change in premiums.",
     "Lee (2001) finds, in contrast to earlier estimates, no change in premiums."),
    ("In addition to the distortions of labor supply, progressive taxes weaken the incentives to acquire education.",
     "Lee (2001) finds that in addition to the distortions of labor supply, progressive taxes weaken the incentives "
     "to acquire education."),
    ("In contrast, progressive taxes weaken the incentives to acquire education.",
     "Lee (2001) finds that progressive taxes weaken the incentives to acquire education."),
])  # fmt: skip
def test_a_linking_opener_is_dropped_but_not_when_it_opens_a_comparison(sentence: str, expected: str) -> None:
    assert attributed(sentence, "Lee (2001)") == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    ("In each case, however, a change in payoffs produces a large inconsistency.",
     "Lee (2001) finds that in each case, a change in payoffs produces a large inconsistency."),
    ("Skill premiums across experience groups, however, have become more compressed.",
     "Lee (2001) finds that skill premiums across experience groups have become more compressed."),
    ("Empirically, however, development programs sometimes increase violence.",
     "Lee (2001) finds that empirically, development programs sometimes increase violence."),
    ("Landowners resisted out-migration, however, benefiting from the status quo.",
     "Lee (2001) finds that landowners resisted out-migration, benefiting from the status quo."),
])  # fmt: skip
def test_a_however_linking_to_the_sentence_before_is_dropped(sentence: str, expected: str) -> None:
    # the contrast is with a sentence the finding does not show
    assert attributed(sentence, "Lee (2001)") == expected


def test_a_capitalised_possessive_opening_a_finding_keeps_its_capital() -> None:
    abstract = "Moody's and S&P split more often over banks."
    assert attributed(abstract, "Morgan (2002)", abstract) == (
        "Morgan (2002) finds that Moody's and S&P split more often over banks.")


def test_attribution_reads_as_economists_write_it() -> None:
    authors = ["Autor, David H.", "Dorn, David", "Hanson, Gordon H."]
    assert attribution(authors, 2013) == "Autor, Dorn, and Hanson (2013)"
    assert attribution(["Hunt Allcott", "Matthew Gentzkow"], 2022) == "Allcott and Gentzkow (2022)"
    assert attribution(["A, B", "C, D", "E, F", "G, H"], 1999) == "A et al. (1999)"
    assert attribution([], 2013) == "The authors (2013)"
    assert attribution(["Lee, Ann"], None) == "Lee"


@pytest.mark.parametrize(("sentence", "expected"), [
    ("Using a first-difference approach, we find that asset prices raised work at 62.",
     "Coile and Levine (2011) find, using a first-difference approach, that asset prices raised work at 62."),
    ("Using time-diaries from before and after, the authors show the shocks were effective.",
     "Coile and Levine (2011) show, using time-diaries from before and after, that the shocks were effective."),
    ("In a new dataset, we find retirement contributions are not sensitive to fees.",
     "Coile and Levine (2011) find, in a new dataset, that retirement contributions are not sensitive to fees."),
    ("Using census data, we estimate an elasticity that is close to one.",
     "Coile and Levine (2011) estimate, using census data, an elasticity that is close to one."),
    ("Our measures are easy to use, as we illustrate through empirical applications.",
     "Their measures are easy to use, as Coile and Levine (2011) illustrate through empirical applications."),
    ("Using both analyses, we find an economically and statistically significant effect.",
     "Coile and Levine (2011) find, using both analyses, an economically and statistically significant effect."),
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
    ("The experiment also shows that networks provide incentives to refer less qualified workers.",
     "Beaman and Magruder (2012)",
     "Beaman and Magruder's (2012) experiment shows that networks provide incentives to refer less qualified workers."),
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


@pytest.mark.parametrize(("sentence", "shown"), [
    ("We also show that parents value quality.", "Andrabi et al. (2024) show that parents value quality."),
    ("I further find that costs fell.", "Andrabi et al. (2024) find that costs fell."),
    ("We then estimate a model and show that households care.",
     "Andrabi et al. (2024) estimate a model and show that households care."),
])  # fmt: skip
def test_a_link_to_a_finding_not_shown_is_dropped_between_the_authors_and_their_verb(sentence: str,
                                                                                    shown: str) -> None:
    assert attributed(sentence, "Andrabi et al. (2024)") == shown


@pytest.mark.parametrize(("sentence", "expected"), [
    ("Our results call into question the interpretation of gaps as loss aversion.",
     "Lee's (2001) results call into question the interpretation of gaps as loss aversion."),
    ("Our results for firms are mixed.", "Lee (2001) finds that their results for firms are mixed."),
    ("This note responds to Bayer (2009).", "Lee (2001) responds to Bayer (2009)."),
    ("Here, we compare the experimental estimates with two non-experimental ones.",
     "Lee (2001) compares the experimental estimates with two non-experimental ones."),
    ("That is, they may learn without new information.",
     "Lee (2001) finds that they may learn without new information."),
    ("Svensson (2006) argues that transparency helps.",
     "Lee (2001) finds that Svensson (2006) argues that transparency helps."),
    ("Acemoglu, Johnson, and Robinson (2001) established that institutions matter.",  # several names keep capitals
     "Lee (2001) finds that Acemoglu, Johnson, and Robinson (2001) established that institutions matter."),
    ("Rasmusen et al. (1991) show that entry can be deterred.",
     "Lee (2001) finds that Rasmusen et al. (1991) show that entry can be deterred."),
])  # fmt: skip
def test_the_papers_own_words_and_others_names_read_as_economists_write_them(sentence: str, expected: str) -> None:
    assert attributed(sentence, "Lee (2001)", sentence) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    ("We experimentally test for the endowment effect.", "Lee (2001) experimentally tests for the endowment effect."),
    ("We hence compute forward rates.", "Lee (2001) hence computes forward rates."),
    ("We develop, estimate, and test a model of oligopsony.", "Lee (2001) develops, estimates, and tests a model of "
     "oligopsony."),
    ("We call this phenomenon task juggling and argue that it is pervasive.",
     "Lee (2001) calls this phenomenon task juggling and argues that it is pervasive."),
    ("We find: 1) workers take up more training.", "Lee (2001) finds: 1) workers take up more training."),
    ("We apply the model to Sweden.", "Lee (2001) applies the model to Sweden."),
])  # fmt: skip
def test_a_single_authors_verbs_agree_after_an_adverb_in_a_list_and_before_punctuation(sentence: str,
                                                                                       expected: str) -> None:
    # "experimentallies", "develops, estimate, and tests", "find: 1)" before
    assert attributed(sentence, "Lee (2001)") == expected


def test_a_verb_in_the_past_stays_and_a_later_i_is_the_author() -> None:
    assert attributed("We conducted a field experiment in Ghana.", "Lee (2001)") == (
        "Lee (2001) conducted a field experiment in Ghana.")  # was "conducteds"
    assert attributed("I found this list startling, because I had been trained as a psychologist.", "Lee (2001)") == (
        "Lee (2001) found this list startling, because the author had been trained as a psychologist.")
    assert attributed("In this essay, I explain why I am not persuaded.", "Lee (2001)") == (
        "Lee (2001) explains why the author is not persuaded.")
    assert attributed("We need a model of search.", "Lee (2001)") == "Lee (2001) needs a model of search."


def test_a_single_authors_verb_agrees_whatever_its_ending() -> None:
    assert attributed("We study why firms export.", "Lee (2001)") == "Lee (2001) studies why firms export."
    assert attributed("We establish that prices fall.", "Lee (2001)") == "Lee (2001) establishes that prices fall."
    # any verb "We" or "I" took agrees, not only a reporting verb; modals and plural authors stay as they are
    assert attributed("I make the case for public reinsurance.", "Swartz (2003)") == (
        "Swartz (2003) makes the case for public reinsurance.")
    assert attributed("We are unable to reject equality.", "Lee (2001)") == "Lee (2001) is unable to reject equality."
    assert attributed("I am unable to reject equality.", "Lee (2001)") == "Lee (2001) is unable to reject equality."
    assert attributed("We here have a proof.", "Lee (2001)") == "Lee (2001) here has a proof."
    assert attributed("We cannot reject equality.", "Lee (2001)") == "Lee (2001) cannot reject equality."
    assert attributed("We make the case for it.", "Lee and Kim (2001)") == "Lee and Kim (2001) make the case for it."


@pytest.mark.parametrize(("sentence", "expected"), [
    ("This paper studies how firms export and estimates a model of entry.",
     "Lee and Kim (2001) study how firms export and estimate a model of entry."),
    ("It then revisits the debate, analyzing when maturities matter.",
     "Lee and Kim (2001) revisit the debate, analyzing when maturities matter."),
    ("This research advances and empirically establishes the hypothesis that distance matters.",
     "Lee and Kim (2001) advance and empirically establish the hypothesis that distance matters."),
    ("This paper focuses on taxes and applies the model to Sweden.",
     "Lee and Kim (2001) focus on taxes and apply the model to Sweden."),
    ("This paper is the first to measure slant.", "Lee and Kim (2001) is the first to measure slant."),
    ("Next, we discuss how these results can be interpreted.",
     "Lee and Kim (2001) discuss how these results can be interpreted."),
    ("While we confirm that employment rates are low, beneficiaries have raised potential employment.",
     "While Lee and Kim (2001) confirm that employment rates are low, beneficiaries have raised potential "
     "employment."),
])  # fmt: skip
def test_a_papers_own_sentence_said_of_several_authors_agrees_with_them(sentence: str, expected: str) -> None:
    # "This paper studies" of two authors was "Lee and Kim (2001) studies"; "It then revisits" was "find that it …"
    assert attributed(sentence, "Lee and Kim (2001)") == expected


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


@pytest.mark.parametrize(("sentence", "expected"), [
    ("We estimate a structural model and simulate counterfactual equilibria.",
     "Lee (2001) estimates a structural model and simulates counterfactual equilibria."),
    ("We propose a simple model and test its implications in Kenya.",
     "Lee (2001) proposes a simple model and tests its implications in Kenya."),
    ("We develop a model of smoking, and we show that earlier estimates are biased.",
     "Lee (2001) develops a model of smoking, and Lee shows that earlier estimates are biased."),
    # an infinitive's verb, a noun, a compound stay as they are
    ("We use data to test for and quantify the effect.", "Lee (2001) uses data to test for and quantify the effect."),
    ("We examine the distribution of student background and test scores.",
     "Lee (2001) examines the distribution of student background and test scores."),
    ("We analyze several cases and present-day contract farming.",
     "Lee (2001) analyzes several cases and present-day contract farming."),
    # "and then", and after an opening phrase
    ("We estimate the model and then show that wages rise.", "Lee (2001) estimates the model and then shows that wages "
     "rise."),
    ("Using labor supply estimates, I find a mean estimate of 1, then show that larger values require more.",
     "Lee (2001) finds, using labor supply estimates, a mean estimate of 1, then shows that larger values require "
     "more."),
])  # fmt: skip
def test_a_single_authors_second_verb_agrees_and_a_second_we_takes_their_name(sentence: str, expected: str) -> None:
    assert attributed(sentence, "Lee (2001)") == expected  # several authors' "they": the test above
