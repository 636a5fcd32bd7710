"""The CUDA-graph decode step's attention span, on CPU: how a span is chosen, and that a step attending over a
bucket (slots beyond the filled part, holding stale keys and values) equals the step over the filled part."""

from __future__ import annotations

import pytest
import torch

from models.cuda_graphs import SMALLEST_ATTENTION_BUCKET, attention_bucket
from models.kv_cache import KVCache
from models.loading import build_model, config_from_hf


def test_bucket_is_the_smallest_power_of_two_span_holding_the_filled_part() -> None:
    assert attention_bucket(1, 2048) == SMALLEST_ATTENTION_BUCKET
    assert attention_bucket(SMALLEST_ATTENTION_BUCKET, 2048) == SMALLEST_ATTENTION_BUCKET
    assert attention_bucket(SMALLEST_ATTENTION_BUCKET + 1, 2048) == 2 * SMALLEST_ATTENTION_BUCKET
    assert attention_bucket(1025, 2048) == 2048
    assert attention_bucket(1500, 1600) == 1600  # capped at the slot
    assert len({attention_bucket(n, 2048) for n in range(1, 2049)}) == 4  # graphs per row count


@pytest.mark.parametrize("attend_len", [0, 2049])
def test_bucket_rejects_lengths_outside_the_slot(attend_len: int) -> None:
    with pytest.raises(ValueError, match="attend_len"):
        attention_bucket(attend_len, 2048)


def test_step_over_a_bucket_with_stale_slots_equals_step_over_the_filled_part(hf_llama) -> None:
    model = build_model(config_from_hf(hf_llama.config.to_dict()), hf_llama.state_dict())
    prompts = [[5, 17, 42, 99, 3, 8], [3, 250]]
    cache = KVCache.allocate(model.config, len(prompts), 64, torch.device("cpu"), torch.float32)
    for buffer in (*cache.k, *cache.v):
        buffer.normal_(0, 50)  # what earlier, longer answers left in the slots
    with torch.no_grad():
        for row, ids in enumerate(prompts):
            model(torch.tensor([ids]), cache.rows(row, row + 1), 0)
        step, positions = torch.tensor([[7], [11]]), torch.tensor([len(ids) for ids in prompts])
        filled = 1 + int(positions.max())
        exact = model(step, cache, positions, attend_len=filled)
        bucketed = model(step, cache, positions, attend_len=32)
    torch.testing.assert_close(bucketed, exact, atol=1e-5, rtol=1e-5)
