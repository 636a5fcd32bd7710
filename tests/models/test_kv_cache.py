"""Where a step's new tokens go in the cache and which slots they see (models/kv_cache.py)."""

from __future__ import annotations

import pytest
import torch

from models.kv_cache import KVCache, Placement
from models.model import ModelConfig

CONFIG = ModelConfig(vocab_size=8, hidden_size=8, intermediate_size=8, num_layers=2, num_heads=2, num_kv_heads=1)


def test_rows_alike_go_to_consecutive_slots_and_see_up_to_their_own() -> None:
    placement = Placement.of(batch=2, new=3, start=4, attend_len=None, device=torch.device("cpu"))
    assert placement.positions.tolist() == [[4, 5, 6], [4, 5, 6]]
    assert placement.visible.length == 7 and placement.visible.blocked is None  # causal, no mask tensor
    cache = KVCache.allocate(CONFIG, 2, 10, torch.device("cpu"), torch.float32)
    placement.write(cache.k[0], torch.ones(2, 1, 3, 4))
    assert cache.k[0][:, :, 4:7].eq(1).all() and cache.k[0].sum() == 2 * 3 * 4


def test_rows_at_their_own_positions_are_masked_each_by_its_own_slot() -> None:
    placement = Placement.of(batch=2, new=1, start=torch.tensor([2, 5]), attend_len=8, device=torch.device("cpu"))
    assert placement.positions.tolist() == [[2], [5]]
    blocked = placement.visible.blocked
    assert blocked is not None and blocked.shape == (2, 1, 1, 1, 8)
    assert blocked[0].flatten().tolist() == [False] * 3 + [True] * 5  # slot 2 sees slots 0..2
    assert blocked[1].flatten().tolist() == [False] * 6 + [True] * 2
    cache = KVCache.allocate(CONFIG, 2, 8, torch.device("cpu"), torch.float32)
    placement.write(cache.v[1], torch.stack([torch.full((1, 1, 4), 1.0), torch.full((1, 1, 4), 2.0)]))
    assert cache.v[1][0, 0, 2].eq(1).all() and cache.v[1][1, 0, 5].eq(2).all() and cache.v[1].sum() == 12


def test_rows_alike_take_no_attend_len_but_their_own() -> None:
    with pytest.raises(ValueError, match="give no attend_len"):
        Placement.of(batch=1, new=2, start=3, attend_len=9, device=torch.device("cpu"))
    assert Placement.of(batch=1, new=2, start=3, attend_len=5, device=torch.device("cpu")).visible.length == 5
