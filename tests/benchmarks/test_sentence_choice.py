from answering.evidence import PaperSentences
from benchmarks.sentence_choice import second_figures

SENTENCES = ("We study wages in Ohio.", "Wages fell by 4.5 percent.", "Hours fell by 2 percent.")


def pair(question_id: str, probabilities: tuple[float, ...], best: int, finding: list[int], method: list[int]
         ) -> tuple[dict, PaperSentences]:  # fmt: skip
    row = {"qid": question_id, "best": best, "finding": finding, "method": method}
    return row, PaperSentences(SENTENCES, probabilities)


def test_the_second_sentence_rows_count_what_a_reader_would_see() -> None:
    pairs = [
        pair("d0-01", (0.1, 0.9, 0.85), best=2, finding=[1, 2], method=[0]),  # a second sentence, the best one
        pair("d0-03", (0.1, 0.9, 0.01), best=2, finding=[1, 2], method=[0]),  # no second: the best is not shown
        pair("d0-02", (0.9999, 0.99, 0.01), best=1, finding=[1], method=[0]),  # a method sentence the judge is sure of
    ]
    figures = second_figures(pairs, 0.8)
    assert figures["calibration"] == {"pairs": 2, "second_shown": 0.5, "second_is_finding": 1.0,
                                      "second_is_method": 0.0, "best_shown": 0.5, "method_shown": 0.0}  # fmt: skip
    assert figures["report"]["second_is_method"] == 1.0 and figures["report"]["method_shown"] == 1.0
