"""The GGUF-built tokenizer: round trips, special tokens, chat template; the real one against transformers'."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.tokenizer import Tokenizer

ODD_TEXTS = [
    "Hello, world! The quick brown fox.",
    "  leading and trailing spaces  ",
    "tabs\tand\nnew\n\nlines\r\n",
    "Ünïcödé: café, naïve, Straße, Ελληνικά, русский, 日本語, 한국어",
    "emoji 🤖🎉👩‍👩‍👧 and flags 🇫🇷",
    "numbers 1234567 3.14159 -42 1e-10 2024-01-31",
    "code: def f(x): return x**2  # comment",
    "",
    " ",
    "don't won't it's I'm we've they'll she'd",
]


@pytest.mark.parametrize("text", ODD_TEXTS)
def test_tiny_byte_level_round_trip(tiny_tokenizer: Tokenizer, text: str) -> None:
    assert tiny_tokenizer.decode(tiny_tokenizer.encode(text)) == text


def test_merges_and_special_tokens(tiny_tokenizer: Tokenizer) -> None:
    assert tiny_tokenizer.encode("he") == [tiny_tokenizer.token_to_id("he")]
    # control tokens in the rendered prompt are single ids, and are dropped when decoding answers
    ids = tiny_tokenizer.encode("<|im_start|>user\nhi<|im_end|>")
    assert ids[0] == tiny_tokenizer.token_to_id("<|im_start|>") and ids[-1] == 2
    assert tiny_tokenizer.decode(ids) == "user\nhi"
    assert 2 in tiny_tokenizer.eos_token_ids and 0 in tiny_tokenizer.eos_token_ids


def test_chat_template(tiny_tokenizer: Tokenizer) -> None:
    prompt = tiny_tokenizer.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]
    )
    assert prompt == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n"
    with pytest.raises(ValueError, match="role"):
        tiny_tokenizer.apply_chat_template([{"role": "wizard", "content": "x"}])


@pytest.mark.slow
def test_real_tokenizer_matches_transformers_gguf_loader(smollm_gguf: Path) -> None:
    from transformers import AutoTokenizer

    ours = Tokenizer.from_gguf(smollm_gguf)
    reference = AutoTokenizer.from_pretrained(smollm_gguf.parent, gguf_file=smollm_gguf.name)
    for text in [*ODD_TEXTS, "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"]:
        ids = ours.encode(text)
        assert ids == reference(text, add_special_tokens=False).input_ids, text
        if "<|" not in text:
            assert ours.decode(ids) == text
    # SmolLM's pre-tokenizer splits digits one by one (as llama.cpp's "smollm" does)
    assert len(ours.encode("1234567")) == 7
    messages = [{"role": "system", "content": "You answer briefly."}, {"role": "user", "content": "Hello"}]
    assert ours.apply_chat_template(messages) == reference.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    default_system = ours.apply_chat_template([{"role": "user", "content": "Hello"}])
    assert default_system.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
