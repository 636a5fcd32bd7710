"""The LoRA training loop: schedule, answer-only loss, learning, frozen base, seeded resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from answering.prompt import NOT_COVERED_ANSWER, Passage, PromptBuilder
from models.kv_cache import KVCache
from models.lora import ADAPTER_CONFIG, ADAPTER_WEIGHTS, read_adapter
from models.model import ModelConfig, Transformer
from models.tokenizer import Tokenizer
from training.generator.data import GroundedExample
from training.generator.train import Trainer, TrainSettings, answer_loss, lr_multiplier, tokenize_example

PASSAGES = [Passage(1, "a", "a#0", "Tea", 2001, "Tea is hot."), Passage(2, "b", "b#0", "Ice", 2002, "Ice is cold.")]
EXAMPLES = [
    GroundedExample("t0", "single", "Is ice cold?", PASSAGES, "Ice is cold [2].", ["b"], "Ice is cold."),
    GroundedExample("t1", "refusal", "Is milk sweet?", PASSAGES, NOT_COVERED_ANSWER, ["c"], ""),
]


def tiny_model(tokenizer: Tokenizer, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    config = ModelConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, intermediate_size=48, num_layers=1,
                         num_heads=4, num_kv_heads=2, max_seq_len=1024)
    return Transformer(config).eval().requires_grad_(False)


def settings(tmp_path: Path, **overrides: object) -> TrainSettings:
    values = dict(out_dir=tmp_path / "adapter", checkpoint_dir=tmp_path / "checkpoints", steps=20, batch_size=2,
                  learning_rate=2e-2, warmup_steps=2, rank=4, alpha=8, dropout=0.1, eval_every=10,
                  eval_examples=2, checkpoint_every=10, max_seq_len=1024, precision="float32", seed=5)
    values.update(overrides)
    return TrainSettings(**values)


def test_warmup_then_cosine() -> None:
    assert lr_multiplier(0, 10, 100, 0.1) == pytest.approx(0.1)
    assert lr_multiplier(9, 10, 100, 0.1) == pytest.approx(1.0)
    assert lr_multiplier(10, 10, 100, 0.1) == pytest.approx(1.0)
    assert lr_multiplier(55, 10, 100, 0.1) == pytest.approx(0.55)  # half way down the cosine
    assert lr_multiplier(100, 10, 100, 0.1) == pytest.approx(0.1)


def test_the_loss_covers_answer_tokens_only(smollm_tokenizer: Tokenizer) -> None:
    model = tiny_model(smollm_tokenizer)
    example = tokenize_example(EXAMPLES[0], smollm_tokenizer, PromptBuilder(smollm_tokenizer, 1024))
    prompt = smollm_tokenizer.encode(PromptBuilder(smollm_tokenizer, 1024).render("Is ice cold?", PASSAGES))
    assert example.tokens[: example.answer_start] == prompt
    assert example.tokens[example.answer_start :] == [*smollm_tokenizer.encode("Ice is cold [2]."), 2]  # + <|im_end|>

    tokens = torch.tensor([example.tokens])
    cache = KVCache.allocate(model.config, 1, tokens.shape[1], torch.device("cpu"), torch.float32)
    with torch.no_grad():
        full = model(tokens, cache, 0, last_only=False)[0]
        expected = F.cross_entropy(full[example.answer_start - 1 : -1], tokens[0, example.answer_start :])
        loss = answer_loss(model, example, torch.device("cpu"), torch.float32)
    torch.testing.assert_close(loss, expected)


def test_training_lowers_the_loss_and_only_moves_the_adapter(tmp_path: Path, smollm_tokenizer: Tokenizer) -> None:
    model = tiny_model(smollm_tokenizer)
    base = {k: v.clone() for k, v in model.state_dict().items()}
    trainer = Trainer(settings(tmp_path), model, smollm_tokenizer, EXAMPLES, EXAMPLES)
    before = trainer.validation_loss()
    summary = trainer.run(progress=False)
    assert summary is not None and summary["steps"] == 20
    assert summary["validation_loss"] < before / 3

    for name, value in model.state_dict().items():  # base weights untouched (the wrapped Linear keeps them)
        original = name.replace(".base.", ".")
        if "lora_" not in name:
            torch.testing.assert_close(value, base[original])
    config, tensors = read_adapter(tmp_path / "adapter")
    assert config.rank == 4 and config.extra["steps"] == 20
    assert len(tensors) == 2 * 4 * model.config.num_layers
    assert (tmp_path / "adapter" / ADAPTER_WEIGHTS).is_file() and (tmp_path / "adapter" / ADAPTER_CONFIG).is_file()
    history = json.loads((tmp_path / "checkpoints" / "history.json").read_text())
    assert [r["step"] for r in history] == list(range(1, 21)) and "validation_loss" in history[9]


def test_a_resumed_run_matches_an_uninterrupted_one(tmp_path: Path, smollm_tokenizer: Tokenizer) -> None:
    straight = Trainer(settings(tmp_path / "a", steps=6, checkpoint_every=2), tiny_model(smollm_tokenizer),
                       smollm_tokenizer, EXAMPLES, EXAMPLES)
    straight.run(progress=False)

    interrupted = settings(tmp_path / "b", steps=6, checkpoint_every=2)
    first = Trainer(interrupted, tiny_model(smollm_tokenizer), smollm_tokenizer, EXAMPLES, EXAMPLES)
    assert first.run(progress=False, until=3) is None  # stopped with a checkpoint, no adapter yet
    assert not (tmp_path / "b" / "adapter").exists()
    second = Trainer(interrupted, tiny_model(smollm_tokenizer), smollm_tokenizer, EXAMPLES, EXAMPLES)
    second.run(resume=True, progress=False)

    _, expected = read_adapter(tmp_path / "a" / "adapter")
    _, resumed = read_adapter(tmp_path / "b" / "adapter")
    for name, value in expected.items():
        torch.testing.assert_close(resumed[name], value)


def test_resuming_with_other_settings_is_refused(tmp_path: Path, smollm_tokenizer: Tokenizer) -> None:
    Trainer(settings(tmp_path, steps=4), tiny_model(smollm_tokenizer), smollm_tokenizer, EXAMPLES, EXAMPLES).run(
        progress=False, until=2)
    other = Trainer(settings(tmp_path, steps=4, learning_rate=1e-3), tiny_model(smollm_tokenizer), smollm_tokenizer,
                    EXAMPLES, EXAMPLES)
    with pytest.raises(ValueError, match="learning_rate"):
        other.run(resume=True, progress=False)


@pytest.mark.parametrize("overrides", [{"steps": 0}, {"warmup_steps": 20}, {"learning_rate": 0.0},
                                       {"precision": "fp8"}, {"device": "tpu"}])
def test_invalid_settings_are_rejected(tmp_path: Path, overrides: dict) -> None:
    with pytest.raises(ValueError):
        settings(tmp_path, **overrides)
