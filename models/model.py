"""A decoder-only transformer of the Llama family (Llama, SmolLM, Qwen2-style QKV biases), in plain torch.

Everything the generation path runs lives in this one file: the config, RMSNorm, rotary embeddings,
grouped-query causal attention over a preallocated KV cache, the SwiGLU MLP, the block and the model.
No modeling library is used; the tests compare the logits with transformers' implementation.

Shapes: B batch, T new tokens, L attended cache length, H query heads, KV key/value heads,
G = H // KV queries per key/value head, D head dim, C hidden size.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass
class ModelConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int | None = None  # None = hidden_size // num_heads
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    # Hugging Face style: {"rope_type": "linear"|"llama3", "factor": ..., ...}; None = plain RoPE.
    rope_scaling: dict | None = None
    attention_bias: bool = False  # Qwen2 puts biases on the Q, K and V projections
    tie_embeddings: bool = True
    max_seq_len: int = 2048  # context length the rotary tables are built for

    def __post_init__(self) -> None:
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_heads
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads",
                     "num_kv_heads", "head_dim", "max_seq_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"ModelConfig.{name} must be positive, got {getattr(self, name)}.")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads ({self.num_kv_heads})."
            )
        if self.head_dim % 2:
            raise ValueError(f"head_dim must be even for rotary embeddings, got {self.head_dim}.")
        if self.rope_scaling is not None and self.rope_scaling.get("rope_type", "default") not in (
            "default", "linear", "llama3"
        ):
            raise ValueError(f"Unsupported rope scaling {self.rope_scaling!r}; supported: linear, llama3.")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        # Normalise in float32 even for half-precision activations, as the reference does.
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def rope_inverse_frequencies(config: ModelConfig) -> Tensor:
    dim = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    scaling = config.rope_scaling or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "linear":
        inv_freq = inv_freq / scaling["factor"]
    elif kind == "llama3":
        # Llama 3.1: stretch low frequencies by `factor`, keep high ones, blend in between.
        factor = scaling["factor"]
        low, high = scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
        old_len = scaling.get("original_max_position_embeddings", 8192)
        wavelen = 2 * math.pi / inv_freq
        smooth = (old_len / wavelen - low) / (high - low)
        blended = (1 - smooth) * inv_freq / factor + smooth * inv_freq
        inv_freq = torch.where(wavelen > old_len / low, inv_freq / factor,
                               torch.where(wavelen < old_len / high, inv_freq, blended))
    return inv_freq.float()


class RotaryEmbedding(nn.Module):
    """Precomputed cos/sin tables, looked up by position (rotate-half layout, as in Hugging Face)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        positions = torch.arange(config.max_seq_len, dtype=torch.float32)
        angles = torch.outer(positions, rope_inverse_frequencies(config))
        angles = torch.cat([angles, angles], dim=-1)  # (max_seq_len, D)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, positions: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """positions (B, T) -> cos, sin of shape (B, 1, T, D), broadcast over heads."""
        return self.cos[positions].unsqueeze(1).to(dtype), self.sin[positions].unsqueeze(1).to(dtype)


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


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
    def allocate(cls, config: ModelConfig, batch: int, max_len: int, device: torch.device,
                 dtype: torch.dtype) -> KVCache:
        shape = (batch, config.num_kv_heads, max_len, config.head_dim)
        return cls(
            k=[torch.zeros(shape, device=device, dtype=dtype) for _ in range(config.num_layers)],
            v=[torch.zeros(shape, device=device, dtype=dtype) for _ in range(config.num_layers)],
        )

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


CacheWrite = Callable[[Tensor, Tensor], None]  # (cache buffer (B, KV, L, D), new keys or values (B, KV, T, D))


def _slice_write(start: int, new: int) -> CacheWrite:
    """Every row's T new entries go to slots start..start+T-1."""

    def write(buffer: Tensor, values: Tensor) -> None:
        buffer[:, :, start : start + new] = values

    return write


def _scatter_write(positions: Tensor) -> CacheWrite:
    """Row b's t-th new entry goes to slot positions[b, t] (rows at different lengths)."""
    rows = torch.arange(positions.shape[0], device=positions.device)[:, None].expand_as(positions)

    def write(buffer: Tensor, values: Tensor) -> None:
        buffer[rows, :, positions] = values.transpose(1, 2)  # (B, T, KV, D) at [row, :, slot]

    return write


class Attention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = config.num_heads, config.num_kv_heads, config.head_dim
        q_size, kv_size = config.num_heads * config.head_dim, config.num_kv_heads * config.head_dim
        self.split_sizes = (q_size, kv_size, kv_size)
        # One fused projection for Q, K and V: one matmul instead of three per layer.
        self.qkv_proj = nn.Linear(config.hidden_size, q_size + 2 * kv_size, bias=config.attention_bias)
        self.o_proj = nn.Linear(q_size, config.hidden_size, bias=False)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, cache_k: Tensor, cache_v: Tensor,
                write: CacheWrite, attend_len: int, blocked: Tensor) -> Tensor:
        batch, new, _ = x.shape
        q, k, v = self.qkv_proj(x).split(self.split_sizes, dim=-1)
        q = q.view(batch, new, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(batch, new, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(batch, new, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        write(cache_k, k)
        write(cache_v, v)
        keys, values = cache_k[:, :, :attend_len], cache_v[:, :, :attend_len]

        # Grouped-query attention without copying K/V per query head: the G query heads that share a
        # key/value head become extra rows of one matmul. Head h uses key/value head h // G.
        group = self.num_heads // self.num_kv_heads
        q = q.reshape(batch, self.num_kv_heads, group * new, self.head_dim)
        scores = torch.matmul(q * (1.0 / math.sqrt(self.head_dim)), keys.transpose(-1, -2))
        scores = scores.view(batch, self.num_kv_heads, group, new, attend_len)
        scores.masked_fill_(blocked, float("-inf"))  # in place: scores is a fresh tensor
        probs = torch.softmax(scores.float(), dim=-1).to(values.dtype)
        out = torch.matmul(probs.view(batch, self.num_kv_heads, group * new, attend_len), values)
        out = out.view(batch, self.num_heads, new, self.head_dim).transpose(1, 2).reshape(batch, new, -1)
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.intermediate_size = config.intermediate_size
        # gate and up projections fused into one matmul.
        self.gate_up_proj = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = self.gate_up_proj(x).split(self.intermediate_size, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.attn = Attention(config)
        self.mlp_norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = MLP(config)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, cache_k: Tensor, cache_v: Tensor,
                write: CacheWrite, attend_len: int, blocked: Tensor) -> Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin, cache_k, cache_v, write, attend_len, blocked)
        return x + self.mlp(self.mlp_norm(x))


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        self.rotary = RotaryEmbedding(config)

    def hidden_states(self, tokens: Tensor, cache: KVCache, start: int | Tensor,
                      attend_len: int | None = None) -> Tensor:
        """The blocks' output (B, T, C) before the final norm; forward() and loss() project it.

        start: an int (every row's new tokens go to slots start..start+T-1), or a tensor of each row's first
        slot, shape (B,) (rows at different lengths; a 0-d tensor gives one slot for all rows).
        """
        batch, new = tokens.shape
        offsets = torch.arange(new, device=tokens.device)
        if isinstance(start, int):
            positions = (start + offsets).expand(batch, new)
            write = _slice_write(start, new)
        else:
            positions = (start.reshape(-1, 1) + offsets).expand(batch, new)
            write = _scatter_write(positions)
        if attend_len is None:
            attend_len = int(positions.max()) + 1
        cos, sin = self.rotary(positions, self.embed_tokens.weight.dtype)
        # Causal attention over the row's own slots: a key is visible when its slot is at or before the query's.
        key_slots = torch.arange(attend_len, device=tokens.device)
        blocked = (key_slots[None, None, :] > positions[:, :, None])[:, None, None]  # (B, 1, 1, T, L)

        x = self.embed_tokens(tokens)
        for layer, cache_k, cache_v in zip(self.layers, cache.k, cache.v, strict=True):
            x = layer(x, cos, sin, cache_k, cache_v, write, attend_len, blocked)
        return x

    def forward(self, tokens: Tensor, cache: KVCache, start: int | Tensor, attend_len: int | None = None,
                last_only: bool = True) -> Tensor:
        """Run `tokens` (B, T) placed at cache slots start..start+T-1 (see hidden_states); logits in float32.

        A graph-captured decode step passes `start` as a tensor and attend_len = cache.max_len (attend over the
        whole buffer, masked), so that its shapes are static.
        last_only: logits for the last position only (B, V) — all generation needs, and it skips the
        vocabulary projection for the prompt; otherwise (B, T, V).
        """
        x = self.hidden_states(tokens, cache, start, attend_len)
        if last_only:
            x = x[:, -1]
        return self.lm_head(self.norm(x)).float()

    def loss(self, tokens: Tensor, loss_from: int) -> Tensor:
        """The training path: mean cross-entropy of predicting tokens[:, loss_from:] from what precedes them.

        Positions before loss_from are context only (a prompt), and the vocabulary projection (the widest
        matmul) runs only on the positions that predict a target. Runs under the caller's autocast.
        """
        batch, length = tokens.shape
        if not 0 < loss_from < length:
            raise ValueError(f"loss_from must be in [1, {length - 1}] for {length} tokens, got {loss_from}.")
        cache = KVCache.allocate(self.config, batch, length, tokens.device, self.embed_tokens.weight.dtype)
        hidden = self.hidden_states(tokens, cache, 0)[:, loss_from - 1 : -1]
        logits = self.lm_head(self.norm(hidden)).float()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, loss_from:].reshape(-1))
