"""A decoder-only transformer of the Llama family (Llama, SmolLM, Qwen2-style QKV biases), in plain torch.

Everything the generation path runs lives in this one file: the config, RMSNorm, rotary embeddings,
grouped-query causal attention over a preallocated KV cache, the SwiGLU MLP, the block and the model.
No modeling library is used; the tests compare the logits with transformers' implementation.

Shapes: B batch, T new tokens, L attended cache length, H query heads, KV key/value heads,
G = H // KV queries per key/value head, D head dim, C hidden size.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from models.kv_cache import KVCache, Placement


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


# Up to this many rows (decode steps, small batches), a CPU projection splits the weight among the threads.
SPLIT_WEIGHT_MAX_ROWS = 64


class Linear(nn.Linear):
    """nn.Linear, but a product of few rows on CPU uses every thread: MKL runs a one-row (or few-row) product
    on one thread, which reads the weight at half the memory bandwidth of two cores. The weight's output rows
    are split into one matrix per thread of a batched matmul, which gives each thread its own matrix."""

    def forward(self, x: Tensor) -> Tensor:
        rows = x.numel() // self.in_features
        threads = torch.get_num_threads()
        if x.device.type != "cpu" or rows > SPLIT_WEIGHT_MAX_ROWS or threads == 1 or self.out_features % threads:
            return F.linear(x, self.weight, self.bias)
        weight = self.weight.view(threads, self.out_features // threads, self.in_features)
        columns = x.reshape(rows, self.in_features).t().unsqueeze(0).expand(threads, -1, -1)
        out = torch.bmm(weight, columns).permute(2, 0, 1).reshape(*x.shape[:-1], self.out_features)
        return out if self.bias is None else out + self.bias


class RotaryEmbedding(nn.Module):
    """Precomputed cos/sin tables, looked up by position (rotate-half layout, as in Hugging Face)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        positions = torch.arange(config.max_seq_len, dtype=torch.float32)
        angles = torch.outer(positions, rope_inverse_frequencies(config))
        self.register_buffer("cos", torch.cat([angles.cos(), angles.cos()], dim=-1), persistent=False)  # (L, D)
        # The rotate-half sign folded into the table: x rotated = x * cos + swap_halves(x) * signed_sin.
        self.register_buffer("signed_sin", torch.cat([-angles.sin(), angles.sin()], dim=-1), persistent=False)

    def forward(self, positions: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """positions (B, T) -> cos, signed sin of shape (B, 1, T, D), broadcast over heads."""
        return self.cos[positions].unsqueeze(1).to(dtype), self.signed_sin[positions].unsqueeze(1).to(dtype)


def apply_rotary(x: Tensor, cos: Tensor, signed_sin: Tensor) -> Tensor:
    """Rotate-half RoPE: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin), in three passes over x."""
    half = x.shape[-1] // 2
    return torch.addcmul(x * cos, torch.cat([x[..., half:], x[..., :half]], dim=-1), signed_sin)


# Queries per score block when prefilling on CPU: a block's scores (G x 64 rows by L keys per key/value head) stay
# in cache, and only the block's diagonal needs a causal mask; blocks also skip the keys after their last query.
# On a GPU the whole chunk is one block (fewer kernel launches).
CPU_QUERY_BLOCK = 64
_scratch = threading.local()  # per thread: the scheduler's thread and callers of the model directly


def _score_buffer(numel: int, like: Tensor) -> Tensor | None:
    """A flat scratch buffer for score blocks, reused across layers and calls: on CPU, allocating megabytes per
    block costs more than the softmax. None where a fresh tensor is needed (autograd, or on a GPU, whose caching
    allocator makes allocation free)."""
    if like.device.type != "cpu" or torch.is_grad_enabled():
        return None
    buffer = getattr(_scratch, "scores", None)
    if buffer is None or buffer.numel() < numel or buffer.dtype != like.dtype:
        buffer = _scratch.scores = torch.empty(numel, dtype=like.dtype)
    return buffer[:numel]


def _softmax(scores: Tensor, dtype: torch.dtype) -> Tensor:
    """Softmax over the keys in float32 (in place when the scores are float32 scratch)."""
    if scores.dtype == torch.float32 and not torch.is_grad_enabled():
        return torch.softmax(scores, dim=-1, out=scores)
    return torch.softmax(scores.float(), dim=-1).to(dtype)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = config.num_heads, config.num_kv_heads, config.head_dim
        self.group = config.num_heads // config.num_kv_heads  # G query heads share a key/value head
        q_size, kv_size = config.num_heads * config.head_dim, config.num_kv_heads * config.head_dim
        self.split_sizes = (q_size, kv_size, kv_size)
        # One fused projection for Q, K and V: one matmul instead of three per layer.
        self.qkv_proj = Linear(config.hidden_size, q_size + 2 * kv_size, bias=config.attention_bias)
        self.o_proj = Linear(q_size, config.hidden_size, bias=False)

    def forward(self, x: Tensor, groups: list[PlacedSegment], layer: int, last_only: bool = False) -> Tensor:
        """x (N, C), the groups' tokens one after another -> (N, C), or with last_only one row per group row
        (its last token; the keys and values of every token still go to the cache). The projections run on all
        groups at once, attention per group."""
        parts = self.qkv_proj(x).split([group.tokens for group in groups])
        out = [self._attend(part, group, layer, last_only) for part, group in zip(parts, groups, strict=True)]
        return self.o_proj(out[0] if len(out) == 1 else torch.cat(out))

    def _attend(self, qkv: Tensor, group: PlacedSegment, layer: int, last_only: bool) -> Tensor:
        """One group's projections (B*T, Q+2KV) -> attention output (B*T, H*D), or (B, H*D) with last_only."""
        batch, new, visible = group.batch, group.new, group.placement.visible
        cos, sin, cache_k, cache_v = group.cos, group.sin, group.cache.k[layer], group.cache.v[layer]
        q, k, v = qkv.view(batch, new, -1).split(self.split_sizes, dim=-1)
        k = k.view(batch, new, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(batch, new, self.num_kv_heads, self.head_dim).transpose(1, 2)
        group.placement.write(cache_k, apply_rotary(k, cos, sin))
        group.placement.write(cache_v, v)
        keys, values = cache_k[:, :, : visible.length], cache_v[:, :, : visible.length]
        if last_only:
            q, cos, sin, new = q[:, -1:], cos[:, :, -1:], sin[:, :, -1:], 1
        q = q.view(batch, new, self.num_heads, self.head_dim).transpose(1, 2)
        scale = 1.0 / math.sqrt(self.head_dim)  # folded into the (T, D) tables, not applied to q
        q = apply_rotary(q, cos * scale, sin * scale)
        # Grouped-query attention without copying K/V per query head: the G query heads that share a
        # key/value head become extra rows of one matmul. Head h uses key/value head h // G.
        q = q.view(batch, self.num_kv_heads, self.group, new, self.head_dim)
        if visible.blocked is not None:
            blocked = visible.blocked[..., -1:, :] if last_only else visible.blocked
            out = self._attend_masked(q, keys, values, blocked)
        else:
            out = self._attend_causal(q, keys, values, first=visible.length - new)
        return out.reshape(batch * new, -1)

    def _attend_masked(self, q: Tensor, keys: Tensor, values: Tensor, blocked: Tensor) -> Tensor:
        """Rows at different lengths: one score matrix over all `length` slots, masked. -> (B, T, KV, G, D)"""
        batch, kv, group, new, dim = q.shape
        scores = torch.matmul(q.reshape(batch, kv, group * new, dim), keys.transpose(-1, -2))
        scores = scores.view(batch, kv, group, new, -1).masked_fill_(blocked, float("-inf"))
        probs = _softmax(scores, values.dtype).view(batch, kv, group * new, -1)
        return torch.matmul(probs, values).view(batch, kv, group, new, dim).permute(0, 3, 1, 2, 4)

    def _attend_causal(self, q: Tensor, keys: Tensor, values: Tensor, first: int) -> Tensor:
        """Queries at slots first..first+T-1, each seeing the slots up to its own, a block of queries at a time:
        the block's scores cover only the keys up to its last query. -> (B, T, KV, G, D)

        On CPU a batched matmul gives each thread whole matrices, so 3 key/value heads on 2 threads leave one
        idle a third of the time: each head's query rows are split `splits` ways (6 matrices on 2 threads), and
        the keys and values repeated to match, once per call rather than once per block.
        """
        batch, kv, group, new, dim = q.shape
        length = keys.shape[2]
        on_cpu = q.device.type == "cpu"
        block = CPU_QUERY_BLOCK if on_cpu else new
        splits = _row_splits(batch * kv, group * min(block, new)) if on_cpu else 1
        matrices = batch * kv * splits
        keys = keys.unsqueeze(2).expand(batch, kv, splits, length, dim).reshape(matrices, length, dim)
        values = values.unsqueeze(2).expand(batch, kv, splits, length, dim).reshape(matrices, length, dim)
        out = torch.empty(batch, new, kv, group, dim, device=q.device, dtype=q.dtype)
        buffer = _score_buffer(batch * kv * group * min(block, new) * length, q)
        for begin in range(0, new, block):
            rows = min(block, new - begin)
            end = first + begin + rows  # keys 0..end-1
            split = splits if (group * rows) % splits == 0 else 1  # a last, odd block is not split
            shape = (batch * kv * split, group * rows // split, end)
            block_q = q[:, :, :, begin : begin + rows].reshape(*shape[:2], dim)
            block_keys = keys[:: splits // split, :end].transpose(1, 2)
            if buffer is None:
                scores = torch.bmm(block_q, block_keys)
            else:
                scores = torch.bmm(block_q, block_keys, out=buffer[: math.prod(shape)].view(shape))
            diagonal = scores.view(batch, kv, group, rows, end)[..., end - rows :]
            diagonal.masked_fill_(_upper_triangle(rows, q.device), float("-inf"))
            probs = _softmax(scores, values.dtype)
            block_out = torch.bmm(probs, values[:: splits // split, :end]).view(batch, kv, group, rows, dim)
            out[:, begin : begin + rows] = block_out.permute(0, 3, 1, 2, 4)
        return out


def _row_splits(matrices: int, rows: int) -> int:
    """Ways to split each head's query rows so that the matrices of a batched matmul divide evenly among the
    threads, keeping at least 48 rows a matrix."""
    threads = torch.get_num_threads()
    splits = threads // math.gcd(matrices, threads)
    while splits > 1 and rows // splits < 48:
        splits //= 2
    return splits


@functools.lru_cache(maxsize=8)
def _upper_triangle(size: int, device: torch.device) -> Tensor:
    """True above the diagonal: within a block, query i may not see the block's keys j > i. Made outside inference
    mode, so that a mask first cached while serving can also take part in a training step's autograd."""
    with torch.inference_mode(False):
        return torch.ones(size, size, dtype=torch.bool, device=device).triu_(1)


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.intermediate_size = config.intermediate_size
        # gate and up projections fused into one matmul.
        self.gate_up_proj = Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.down_proj = Linear(config.intermediate_size, config.hidden_size, bias=False)

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

    def forward(self, x: Tensor, groups: list[PlacedSegment], layer: int, keep: Tensor | None = None) -> Tensor:
        """x (N, C) -> (N, C); keep: the rows to compute beyond attention (each group row's last token)."""
        attended = self.attn(self.attn_norm(x), groups, layer, last_only=keep is not None)
        x = (x if keep is None else x.index_select(0, keep)) + attended
        return x + self.mlp(self.mlp_norm(x))


@dataclass(frozen=True)
class Segment:
    """New tokens (B, T) of the rows of `cache` (a KVCache or a view of some of its rows), placed at slots
    start..start+T-1: see kv_cache.Placement.of for start and attend_len."""

    tokens: Tensor
    cache: KVCache
    start: int | Tensor
    attend_len: int | None = None


@dataclass(frozen=True)
class PlacedSegment:
    """A segment as every layer needs it: its shape, cache rows, placement and rotary tables."""

    batch: int
    new: int
    cache: KVCache
    placement: Placement
    cos: Tensor
    sin: Tensor

    @property
    def tokens(self) -> int:
        return self.batch * self.new


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        self.rotary = RotaryEmbedding(config)

    def forward(self, tokens: Tensor, cache: KVCache, start: int | Tensor, attend_len: int | None = None,
                last_only: bool = True) -> Tensor:
        """Run `tokens` (B, T) placed at cache slots start..start+T-1 (see Segment); logits in float32.

        A graph-captured decode step passes `start` as a tensor and a fixed attend_len (a bucket of slots beyond
        the filled part, masked by position), so that its shapes are static.
        last_only: logits for the last position only (B, V) — all generation needs, and it skips the last
        layer's work and the vocabulary projection for the rest of the prompt; otherwise (B, T, V).
        """
        return self.forward_segments([Segment(tokens, cache, start, attend_len)], last_only)[0]

    def forward_segments(self, segments: list[Segment], last_only: bool = True) -> list[Tensor]:
        """One forward for several segments, e.g. a prompt's chunk beside the running answers' decode step
        (continuous batching): the projections and the MLP read the weights once for all of them, attention
        runs per segment. Logits per segment, as forward() returns them."""
        logits = self.lm_head(self.norm(self.hidden_states(segments, last_only))).float()
        shapes = [s.tokens.shape[:1] if last_only else s.tokens.shape for s in segments]
        return [part.view(*shape, -1) for part, shape in zip(logits.split([math.prod(sh) for sh in shapes]),
                                                              shapes, strict=True)]

    def hidden_states(self, segments: list[Segment], last_only: bool = False) -> Tensor:
        """The blocks' output before the final norm: (N, C) for the segments' N tokens one after another, or with
        last_only one row per segment row, its last token: the last layer computes only those (every layer
        still writes the keys and values of all tokens)."""
        groups = [self._place(segment) for segment in segments]
        x = self.embed_tokens(torch.cat([segment.tokens.reshape(-1) for segment in segments]))
        keep = None  # the rows the last layer computes: each row's last token, in the flattened order
        if last_only and any(group.new > 1 for group in groups):  # (a decode step's rows are all last tokens)
            offsets = itertools.accumulate([group.tokens for group in groups], initial=0)
            keep = torch.cat([first + group.new - 1 + group.new * torch.arange(group.batch, device=x.device)
                              for first, group in zip(offsets, groups, strict=False)])  # fmt: skip
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            x = layer(x, groups, index, keep if index == last else None)
        return x

    def _place(self, segment: Segment) -> PlacedSegment:
        batch, new = segment.tokens.shape
        placement = Placement.of(batch, new, segment.start, segment.attend_len, segment.tokens.device)
        cos, sin = self.rotary(placement.positions, self.embed_tokens.weight.dtype)
        return PlacedSegment(batch, new, segment.cache, placement, cos, sin)

    def loss(self, tokens: Tensor, loss_from: int) -> Tensor:
        """The training path: mean cross-entropy of predicting tokens[:, loss_from:] from what precedes them.

        Positions before loss_from are context only (a prompt), and the vocabulary projection (the widest
        matmul) runs only on the positions that predict a target. Runs under the caller's autocast.
        """
        batch, length = tokens.shape
        if not 0 < loss_from < length:
            raise ValueError(f"loss_from must be in [1, {length - 1}] for {length} tokens, got {loss_from}.")
        cache = KVCache.allocate(self.config, batch, length, tokens.device, self.embed_tokens.weight.dtype)
        hidden = self.hidden_states([Segment(tokens, cache, 0)]).view(batch, length, -1)[:, loss_from - 1 : -1]
        logits = self.lm_head(self.norm(hidden)).float()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, loss_from:].reshape(-1))
