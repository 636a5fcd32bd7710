"""Logit processing and token choice."""

from __future__ import annotations

import math

import pytest
import torch

from models.sampling import (
    SamplingParams,
    apply_banned_openings,
    apply_no_repeat_ngram,
    apply_repetition_penalty,
    banned_ngram_tokens,
    choose_next_tokens,
    make_generator,
    top_k_mask,
    top_p_mask,
)

NEG = float("-inf")


def test_top_k_keeps_the_k_largest() -> None:
    logits = torch.tensor([[1.0, 5.0, 3.0, 4.0, 2.0]])
    assert torch.isfinite(top_k_mask(logits, 2)).tolist() == [[False, True, False, True, False]]
    assert torch.equal(top_k_mask(logits, 0), logits)


def test_top_p_keeps_smallest_set_reaching_p() -> None:
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    logits = probs.log()
    assert torch.isfinite(top_p_mask(logits, 0.8)).tolist() == [[True, True, False, False]]
    assert torch.isfinite(top_p_mask(logits, 0.81)).tolist() == [[True, True, True, False]]
    assert torch.isfinite(top_p_mask(logits, 0.1)).tolist() == [[True, False, False, False]]


def test_repetition_penalty_pushes_seen_tokens_down() -> None:
    logits = torch.tensor([[2.0, -2.0, 1.0]])
    out = apply_repetition_penalty(logits, torch.tensor([[0, 1, 1]]), 2.0)
    assert out.tolist() == [[1.0, -4.0, 1.0]]
    assert logits.tolist() == [[2.0, -2.0, 1.0]]  # input untouched


def test_no_repeat_ngram_bans_completions() -> None:
    history = [5, 6, 7, 5, 6]
    assert banned_ngram_tokens(history, 3) == {7}
    assert banned_ngram_tokens(history, 2) == {7}  # "6 7" seen, last token is 6
    logits = apply_no_repeat_ngram(torch.zeros(1, 10), [history], 3)
    assert logits[0, 7] == NEG and torch.isfinite(logits[0, :7]).all()


def test_banned_opening_cuts_only_at_its_last_token_at_the_start() -> None:
    openings = ((4, 9),)
    logits = apply_banned_openings(torch.zeros(3, 10), [[4], [1, 4], []], openings)
    assert logits[0, 9] == NEG and torch.isfinite(logits[0, :9]).all()  # the answer began with 4: no 9 next
    assert torch.isfinite(logits[1]).all()  # 4 later in the answer: 9 allowed
    assert torch.isfinite(logits[2]).all()  # the first token alone is not banned
    single = apply_banned_openings(torch.zeros(1, 10), [[]], ((3,),))
    assert single[0, 3] == NEG
    assert SamplingParams(banned_openings=[[4, 9]]).banned_openings == ((4, 9),)


def test_greedy_and_seeded_sampling() -> None:
    logits = torch.randn(4, 50)
    greedy = choose_next_tokens(logits, SamplingParams(), torch.zeros(4, 0, dtype=torch.long))
    assert torch.equal(greedy, logits.argmax(-1))
    params = SamplingParams(temperature=1.0, seed=123)
    no_history = torch.zeros(4, 0, dtype=torch.long)
    draws = [
        choose_next_tokens(logits, params, no_history, make_generator(123, torch.device("cpu"))) for _ in range(2)
    ]
    assert torch.equal(draws[0], draws[1])
    # top_k=1 makes sampling greedy whatever the temperature
    top1 = choose_next_tokens(logits, SamplingParams(temperature=5.0, top_k=1), torch.zeros(4, 0, dtype=torch.long))
    assert torch.equal(top1, greedy)


def test_sampling_follows_the_distribution() -> None:
    probs = torch.tensor([0.7, 0.2, 0.1])
    logits = probs.log().expand(4000, 3)
    drawn = choose_next_tokens(logits, SamplingParams(temperature=1.0), torch.zeros(4000, 0, dtype=torch.long),
                               make_generator(0, torch.device("cpu")))
    frequencies = torch.bincount(drawn, minlength=3) / 4000
    assert torch.allclose(frequencies, probs, atol=0.03)
    assert not math.isnan(frequencies.sum())


@pytest.mark.parametrize("bad", [
    {"max_new_tokens": 0}, {"temperature": -1.0}, {"top_k": -1}, {"top_p": 0.0}, {"top_p": 1.5},
    {"repetition_penalty": 0.0}, {"stop": ("",)},
    {"banned_openings": ((),)},
])
def test_invalid_params_are_clear_errors(bad: dict) -> None:
    with pytest.raises(ValueError, match=r"must"):
        SamplingParams(**bad)


@pytest.mark.parametrize("params", [
    SamplingParams(temperature=0.5, top_p=1e-50, seed=3),  # rounds to 0 in float32: the top token stays
    SamplingParams(temperature=1e-40, seed=3),  # greedy in effect; dividing by it would overflow
    SamplingParams(temperature=2.0, top_k=1000, top_p=1.0, seed=3),
    SamplingParams(temperature=1e-3, top_p=0.5, seed=3),
])  # fmt: skip
def test_sampling_never_fails_on_values_the_api_accepts(params: SamplingParams) -> None:
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0], [0.0, 0.0, 0.0, 0.0]])
    tokens = choose_next_tokens(logits, params, torch.zeros(2, 0, dtype=torch.long), make_generator(3, "cpu"))
    assert tokens.shape == (2,) and int(tokens.min()) >= 0 and int(tokens.max()) < 4
    if params.top_p < 1e-10 or params.temperature < 1e-10:
        assert int(tokens[0]) == 0  # the most likely token
