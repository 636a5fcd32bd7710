"""Where a step's new tokens go in the cache and which slots they see (models/kv_cache.py)."""

from __future__ import annotations

import os

import pytest
import torch

from benchmarks.search_burst import rss_mb
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


def _resident_mb() -> float:
    return rss_mb(os.getpid())


class _Smol:  # SmolLM2-135M's cache shape
    num_layers, num_kv_heads, head_dim = 30, 3, 64


def test_the_cpu_cache_starts_zero_and_is_resident_only_where_written() -> None:
    before = _resident_mb()
    cache = KVCache.allocate(_Smol, 8, 2048, torch.device("cpu"), torch.float32)  # 756 MB reserved
    assert _resident_mb() - before < 100
    assert all(float(buffer.abs().max()) == 0.0 for buffer in (cache.k[0], cache.v[-1]))  # reading maps no pages
    for buffer in (*cache.k, *cache.v):  # every row's first 32 tokens written: about 3% of the cache
        buffer[:, :, :32] = 1.0
    assert _resident_mb() - before < 200
    assert float(cache.k[7][7, 2, 31].sum()) == 64.0 and float(cache.k[7][7, 2, 32].sum()) == 0.0
