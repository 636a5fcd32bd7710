"""Cross-encoder weights stored as 4-bit deltas against the installed all-MiniLM-L6-v2."""

import pytest
import torch

from retrieval import weight_deltas
from retrieval.cross_encoder import SegmentPoolingCrossEncoder
from retrieval.judge import DEFAULT_JUDGE_DIRS
from retrieval.reranker import DEFAULT_RERANKER_DIR
from retrieval.sentence_judge import DEFAULT_SENTENCE_JUDGE_DIR


def fine_tuned_state() -> dict[str, torch.Tensor]:
    """Parent matrices moved as fine-tuning moves them, plus tensors with no parent."""
    _, parent = weight_deltas.parent_weights()
    generator = torch.Generator().manual_seed(0)
    query = parent["encoder.layer.0.attention.self.query.weight"]
    embeddings = parent["embeddings.word_embeddings.weight"].clone()
    touched = torch.tensor([5, 1000, 29000])
    embeddings[touched] += 0.01 * torch.randn(3, embeddings.shape[1], generator=generator)
    moved_query = query + 0.003 * torch.randn(query.shape, generator=generator)
    return {
        "bert.encoder.layer.0.attention.self.query.weight": moved_query,
        "bert.embeddings.word_embeddings.weight": embeddings,
        "bert.encoder.layer.0.attention.self.query.bias": torch.randn(384, generator=generator),
        "joint_head.weight": torch.randn(1, 384, generator=generator),
        "similarity_scale": torch.tensor(20.5),
    }


def test_deltas_round_trip_within_half_a_step_and_leave_untouched_rows_alone() -> None:
    state = fine_tuned_state()
    stored, metadata = weight_deltas.encode(state)
    decoded = weight_deltas.decode(stored, metadata)
    assert decoded.keys() == state.keys()
    _, parent = weight_deltas.parent_weights()
    name = "bert.encoder.layer.0.attention.self.query.weight"
    delta = state[name] - parent[name.removeprefix("bert.")]
    step = stored[f"{name}.scales"].float().repeat_interleave(weight_deltas.GROUP, dim=1)
    assert ((decoded[name] - state[name]).abs() <= step / 2 + 1e-6).all()
    assert (decoded[name] - state[name]).norm() < 0.15 * delta.norm()
    embeddings = "bert.embeddings.word_embeddings.weight"
    assert stored[f"{embeddings}.rows"].tolist() == [5, 1000, 29000]  # only the rows training moved are stored
    assert torch.equal(decoded[embeddings][6], parent["embeddings.word_embeddings.weight"][6])
    assert torch.allclose(decoded[embeddings], state[embeddings], atol=0.05 / 7 / 2)  # randn * 0.01 stays under 0.05
    assert stored["joint_head.weight"].dtype == torch.float16  # no parent: float16 as it is
    assert decoded["similarity_scale"].item() == pytest.approx(20.5)


def test_deltas_against_another_parent_are_refused() -> None:
    stored, metadata = weight_deltas.encode(fine_tuned_state())
    with pytest.raises(weight_deltas.DeltaFormatError, match="another all-MiniLM-L6-v2"):
        weight_deltas.decode(stored, {**metadata, "parent_sha256": "0" * 64})
    with pytest.raises(weight_deltas.DeltaFormatError, match="format"):
        weight_deltas.decode(stored, {"format": "pt"})


@pytest.mark.slow
@pytest.mark.parametrize("model_dir", [DEFAULT_RERANKER_DIR, *DEFAULT_JUDGE_DIRS, DEFAULT_SENTENCE_JUDGE_DIR],
                         ids=lambda path: path.name)  # fmt: skip
def test_every_shipped_cross_encoder_loads_from_its_deltas(model_dir) -> None:
    model = SegmentPoolingCrossEncoder.load(model_dir)
    assert model.config.num_hidden_layers == 3
    assert all(torch.isfinite(tensor).all() for tensor in model.state_dict().values())
