import json
import random
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertModel

from indexing.embedding import default_model_dir
from retrieval.reranker import CrossEncoderReranker
from training.reranker.data import TrainingGroup, inverse_cloze
from training.reranker.trainer import RerankerTrainer, TrainingSettings
from training.splits import in_validation_split

# A signal a random tiny encoder can pick up within a few dozen steps: every relevant passage is about
# wages, no negative is.
QUERIES = ["labor market outcomes", "what happens to pay", "earnings of workers", "employment effects"]
POSITIVES = ["Minimum wage increases and wages.", "Wage growth and wage rigidity.", "Wages of wage earners."]
NEGATIVES = ["Trade flows fall with distance.", "Monetary policy shocks move rates.", "Bidders shade bids.",
             "Sovereign default and spreads.", "Housing prices and credit."]  # fmt: skip


@pytest.fixture
def tiny_encoder_dir(tmp_path: Path) -> Path:
    """A random 2-layer BERT encoder with the real tokenizer: the starting point, like all-MiniLM-L6-v2."""
    tokenizer = AutoTokenizer.from_pretrained(default_model_dir(), local_files_only=True)
    torch.manual_seed(0)
    # No dropout: with a random encoder and a few dozen steps, dropout noise hides the signal.
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)  # fmt: skip
    out = tmp_path / "encoder"
    BertModel(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def groups() -> list[TrainingGroup]:
    return [
        TrainingGroup(query, positive, tuple(NEGATIVES[(i + j) % 5] for j in range(3)), "test")
        for i, (query, positive) in enumerate((q, p) for q in QUERIES for p in POSITIVES)
    ]


def train(init_dir: Path, steps: int, num_layers: int = 2) -> tuple[RerankerTrainer, list[float]]:
    settings = TrainingSettings(steps=steps, groups_per_step=2, learning_rate=2e-3, max_length=48,
                                num_layers=num_layers, precision="float32", log_every=10)  # fmt: skip
    trainer = RerankerTrainer(init_dir, settings)
    return trainer, trainer.train(groups())


def test_training_learns_the_groups_and_saves_a_loadable_model(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    trainer, losses = train(tiny_encoder_dir, steps=60)
    assert sum(losses[-10:]) < 0.5 * sum(losses[:10])  # the positives pull ahead of their negatives
    out = tmp_path / "reranker"
    trainer.save(out, {"name": "tiny-test-reranker"})
    continued = RerankerTrainer(out, trainer.settings)  # a saved reranker is a valid starting point
    assert torch.allclose(continued.model.similarity_scale, trainer.model.similarity_scale, atol=1e-2)

    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.int4-delta.safetensors", "reranker.json"]
    assert json.loads((out / "reranker.json").read_text())["training"]["steps"] == 60
    reranker = CrossEncoderReranker(out, precision="float32")
    assert reranker.name == "tiny-test-reranker"
    scores = reranker.score("how are wages set", [*NEGATIVES, "Wage bargaining and wages."])
    assert scores.argmax() == len(NEGATIVES)


def test_zero_steps_leaves_the_initial_model_unchanged(tiny_encoder_dir: Path) -> None:
    trainer, losses = train(tiny_encoder_dir, steps=0)
    untouched = RerankerTrainer(tiny_encoder_dir, trainer.settings)
    assert losses == []
    for (name, a), (_, b) in zip(trainer.model.state_dict().items(), untouched.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_training_is_deterministic_and_can_drop_layers(tiny_encoder_dir: Path) -> None:
    first, _ = train(tiny_encoder_dir, steps=5, num_layers=1)
    second, _ = train(tiny_encoder_dir, steps=5, num_layers=1)
    assert first.model.config.num_hidden_layers == 1 and len(first.model.bert.encoder.layer) == 1
    for (name, a), (_, b) in zip(first.model.state_dict().items(), second.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_a_trained_reranker_grows_with_the_base_encoders_next_layers_and_can_be_cut(
    tiny_encoder_dir: Path, tmp_path: Path
) -> None:
    shallow, _ = train(tiny_encoder_dir, steps=5, num_layers=1)
    shallow.save(tmp_path / "shallow", {"name": "shallow"})
    grown = RerankerTrainer(tmp_path / "shallow", TrainingSettings(num_layers=2), base_encoder_dir=tiny_encoder_dir)
    donor = BertModel.from_pretrained(tiny_encoder_dir)
    assert grown.model.config.num_hidden_layers == 2 and len(grown.model.bert.encoder.layer) == 2
    for name, value in grown.model.bert.encoder.layer[1].state_dict().items():
        assert torch.equal(value, donor.encoder.layer[1].state_dict()[name]), name
    trained = RerankerTrainer(tmp_path / "shallow", TrainingSettings(num_layers=1))
    trained_first_layer = trained.model.bert.encoder.layer[0]
    for name, value in grown.model.bert.encoder.layer[0].state_dict().items():
        assert torch.equal(value, trained_first_layer.state_dict()[name]), name  # the trained layer is kept

    grown.save(tmp_path / "grown", {"name": "grown"})
    cut = RerankerTrainer(tmp_path / "grown", TrainingSettings(num_layers=1))
    assert cut.model.config.num_hidden_layers == 1 and len(cut.model.bert.encoder.layer) == 1
    with pytest.raises(ValueError, match="cannot supply layers 2-3"):
        RerankerTrainer(tmp_path / "shallow", TrainingSettings(num_layers=3), base_encoder_dir=tiny_encoder_dir)


def test_averaging_two_rerankers_interpolates_every_weight(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    base, _ = train(tiny_encoder_dir, steps=0)
    tuned, _ = train(tiny_encoder_dir, steps=5)
    tuned.save(tmp_path / "tuned", {"name": "tuned"})
    tuned_weights = RerankerTrainer(tmp_path / "tuned", tuned.settings).model.state_dict()  # float16 round trip
    start = {name: value.clone() for name, value in base.model.state_dict().items()}
    base.average_with(tmp_path / "tuned", 0.25)
    for name, value in base.model.state_dict().items():
        if value.is_floating_point():
            torch.testing.assert_close(value, 0.75 * start[name] + 0.25 * tuned_weights[name])
    shallow, _ = train(tiny_encoder_dir, steps=0, num_layers=1)
    with pytest.raises(ValueError, match="not the same architecture"):
        shallow.average_with(tmp_path / "tuned", 0.5)


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="steps=-1"):
        TrainingSettings(steps=-1)
    with pytest.raises(ValueError, match="max_length"):
        TrainingSettings(max_length=8)


def test_inverse_cloze_removes_the_query_sentence() -> None:
    abstract = (
        "We study how firms set prices when demand is uncertain. A model with menu costs is estimated. "
        "Prices respond slowly to shocks in the data. Welfare losses from rigidity are small."
    )
    query, rest = inverse_cloze(abstract, random.Random(1))  # type: ignore[misc]
    assert query in abstract and query not in rest
    assert len(rest) + len(query) + 1 == len(abstract)
    assert inverse_cloze("Too short. Two sentences.", random.Random(1)) is None


def test_validation_split_is_stable_and_roughly_sized() -> None:
    keys = [f"doc-{i}" for i in range(4000)]
    held_out = [key for key in keys if in_validation_split(key, 0.05)]
    assert held_out == [key for key in keys if in_validation_split(key, 0.05)]
    assert 150 < len(held_out) < 250
