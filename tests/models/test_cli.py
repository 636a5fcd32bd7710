"""`python -m models generate` on the tiny GGUF."""

from __future__ import annotations

from pathlib import Path

import pytest

from models import Generator, SamplingParams
from models.cli import main


def test_generate_prints_the_answer_and_speed(tiny_gguf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["generate", "hello", "--model", str(tiny_gguf), "--max-new-tokens", "6", "--device", "cpu",
                 "--system", "Be brief."])
    captured = capsys.readouterr()
    assert code == 0
    generator = Generator.from_pretrained(tiny_gguf, device="cpu")
    prompt = generator.tokenizer.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]
    )
    expected = generator.generate([prompt], SamplingParams(max_new_tokens=6))[0].text
    assert captured.out == expected + "\n"
    assert "tokens/s" in captured.err and "first token" in captured.err


def test_bad_options_are_one_line_errors(tiny_gguf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "hi", "--model", str(tiny_gguf), "--top-p", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: top_p must be in (0, 1]")
    assert main(["generate", "hi", "--model", "/nonexistent.gguf"]) == 2
