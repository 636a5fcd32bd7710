"""The KV cache, and where a step's new tokens go in it and which slots they may see.

Every layer has preallocated key and value buffers of shape (B, KV, max_len, D): row b's token at position p
sits in slot p, so a decode step writes in place and allocates nothing for the cache.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor


class CacheShape(Protocol):
    """What the cache needs of a model's config (models.model.ModelConfig)."""

    num_layers: int
    num_kv_heads: int
    head_dim: int | None


@dataclass
class KVCache:
    """Preallocated key/value buffers for every layer: k[i], v[i] have shape (B, KV, max_len, D).

    Row b's token at position p sits in slot p: every row starts at slot 0 (no padding), so rows can be at
    different lengths (continuous batching) and a row's own causal mask is all the masking there is. Slots are
    written in place, so a decode step allocates nothing for the cache.
    """

    k: list[Tensor]
    v: list[Tensor]

    @classmethod
    def allocate(cls, config: CacheShape, batch: int, max_len: int, device: torch.device,
                 dtype: torch.dtype) -> KVCache:
        shape = (batch, config.num_kv_heads, max_len, config.head_dim)
        on_cpu = torch.device(device).type == "cpu"

        def zeros() -> Tensor:  # a tensor per buffer, not views of one: autograd (the training loss) refuses
            # in-place writes into sibling views once an earlier write made their base require grad
            return _untouched_zeros(shape, dtype) if on_cpu else torch.zeros(shape, device=device, dtype=dtype)

        return cls(k=[zeros() for _ in range(config.num_layers)], v=[zeros() for _ in range(config.num_layers)])

    @property
    def batch_size(self) -> int:
        return self.k[0].shape[0]

    @property
    def max_len(self) -> int:
        return self.k[0].shape[2]

    def rows(self, start: int, stop: int) -> KVCache:
        """A view of rows start..stop-1 (writes go to this cache's buffers)."""
        return KVCache([k[start:stop] for k in self.k], [v[start:stop] for v in self.v])

    def reorder(self, rows: Tensor, length: int) -> None:
        """Beam search: row i becomes old row rows[i] (the first `length` slots)."""
        for buffer in (*self.k, *self.v):
            buffer[:, :, :length] = buffer[:, :, :length].index_select(0, rows)


def _untouched_zeros(shape: tuple[int, ...], dtype: torch.dtype) -> Tensor:
    """A zeroed CPU buffer whose pages become resident only when written: an anonymous memory map, zero by
    definition, in the kernel's small pages (torch.zeros writes every page; numpy's zeros asks for huge pages, which
    one write makes resident 2 MB at a time). The cache is sized for the longest prompt (8 slots x 2,048 tokens:
    756 MB in float32) while answers use a quarter of it, so the server's resident memory holds what answers
    wrote, not the whole reservation."""
    size = math.prod(shape) * torch.empty(0, dtype=dtype).element_size()
    memory = mmap.mmap(-1, size)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):  # where transparent huge pages are "always", one write would take 2 MB
        memory.madvise(mmap.MADV_NOHUGEPAGE)
    return torch.frombuffer(memory, dtype=dtype).view(shape)  # the tensor keeps the map alive


CacheWrite = Callable[[Tensor, Tensor], None]  # (cache buffer (B, KV, L, D), new keys or values (B, KV, T, D))


def slice_write(start: int, new: int) -> CacheWrite:
    """Every row's T new entries go to slots start..start+T-1."""

    def write(buffer: Tensor, values: Tensor) -> None:
        buffer[:, :, start : start + new] = values

    return write


def scatter_write(positions: Tensor) -> CacheWrite:
    """Row b's t-th new entry goes to slot positions[b, t] (rows at different lengths)."""
    rows = torch.arange(positions.shape[0], device=positions.device)[:, None].expand_as(positions)

    def write(buffer: Tensor, values: Tensor) -> None:
        buffer[rows, :, positions] = values.transpose(1, 2)  # (B, T, KV, D) at [row, :, slot]

    return write


@dataclass(frozen=True)
class Visibility:
    """Which cache slots the new tokens may attend to (the keys are slots 0..length-1).

    blocked None: every row's T new tokens sit at the last T slots, length-T..length-1 (prefill, beam search),
    and a token sees its row's slots up to its own, so only a block's diagonal needs a mask. Otherwise the rows'
    tokens sit at different slots (continuous batching): `blocked` (B, 1, 1, T, length) is True where a key is
    hidden.
    """

    length: int
    blocked: Tensor | None = None


@dataclass(frozen=True)
class Placement:
    """Where a group of new tokens (B, T) goes in the cache, and which slots each may see."""

    positions: Tensor  # (B, T): each token's slot, also its rotary position
    write: CacheWrite
    visible: Visibility

    @classmethod
    def of(cls, batch: int, new: int, start: int | Tensor, attend_len: int | None,
           device: torch.device) -> Placement:  # fmt: skip
        """start: an int (every row's new tokens go to slots start..start+T-1, each seeing the slots up to its
        own), or a tensor of each row's first slot, shape (B,) (rows at different lengths, masked; a 0-d tensor
        gives one slot for all rows). attend_len: the slots attended with a tensor start (default: up to the
        last new token; a captured graph fixes it)."""
        offsets = torch.arange(new, device=device)
        if isinstance(start, int):
            if attend_len not in (None, start + new):
                raise ValueError("With an int start the tokens attend to slots 0..start+T-1; give no attend_len.")
            return cls((start + offsets).expand(batch, new), slice_write(start, new), Visibility(start + new))
        positions = (start.reshape(-1, 1) + offsets).expand(batch, new)
        length = int(positions.max()) + 1 if attend_len is None else attend_len
        # A key is visible when its slot is at or before the query's (each row's own slots).
        key_slots = torch.arange(length, device=device)
        blocked = (key_slots[None, None, :] > positions[:, :, None])[:, None, None]  # (B, 1, 1, T, L)
        return cls(positions, scatter_write(positions), Visibility(length, blocked))
