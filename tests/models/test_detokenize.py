"""Incremental detokenizing (models/detokenize.py) through the real SmolLM2 tokenizer: whatever the tokens (words,
multi-byte characters split across tokens, special tokens, random ids), the text built a window at a time and the
streamed deltas both equal one decode of all the tokens; stop strings cut both."""

from __future__ import annotations

import random

import pytest

from models.detokenize import OutputText
from models.sampling import SamplingParams
from models.tokenizer import Tokenizer

TEXTS = ["The effect of minimum wages on employment — naïve café 😀🎉 日本語", "  spaces\n\nnew lines\t tabs",
         "AER: β=0.5, σ²; “quotes” €100"]  # fmt: skip


def run(tokenizer: Tokenizer, ids: list[int], params: SamplingParams) -> tuple[OutputText, str]:
    output = OutputText(tokenizer, params)
    streamed = []
    for token in ids:
        output.push(token)
        streamed.append(output.take_delta())
        if output.finished:
            break
    output.finish("length")
    streamed.append(output.take_delta())
    return output, "".join(streamed)


def test_text_and_deltas_equal_one_decode_of_all_tokens(smollm_tokenizer: Tokenizer) -> None:
    rng = random.Random(0)
    params = SamplingParams(max_new_tokens=200, ignore_eos=True)
    sequences = [smollm_tokenizer.encode(text * 2) for text in TEXTS]
    sequences += [[rng.randrange(smollm_tokenizer.vocab_size) for _ in range(60)] for _ in range(50)]
    for ids in sequences:
        output, streamed = run(smollm_tokenizer, ids, params)
        assert output.text == streamed == smollm_tokenizer.decode(ids)


@pytest.mark.parametrize("stop", ["café", "😀", "\n\n"])
def test_a_stop_string_cuts_the_text_where_it_begins(smollm_tokenizer: Tokenizer, stop: str) -> None:
    text = TEXTS[0] + TEXTS[1]
    output, streamed = run(smollm_tokenizer, smollm_tokenizer.encode(text),
                           SamplingParams(max_new_tokens=200, ignore_eos=True, stop=(stop,)))  # fmt: skip
    assert output.finish_reason == "stop" and output.text == streamed == text[: text.index(stop)]
