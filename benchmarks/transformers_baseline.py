"""transformers' generate() as the generation benchmark's other baseline: the same weights in LlamaForCausalLM."""

from __future__ import annotations

import time

import torch

from models.model import ModelConfig


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


class _TimingStreamer:
    """transformers calls put() with the prompt, then with every new token: we keep the times."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def put(self, value: torch.Tensor) -> None:
        self.times.append(time.perf_counter())

    def end(self) -> None:
        pass


def reference_model(config: ModelConfig, tensors: dict[str, torch.Tensor], device: torch.device,
                    dtype: torch.dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    hf_config = LlamaConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers, num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_kv_heads, head_dim=config.head_dim, rms_norm_eps=config.rms_norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": config.rope_theta},
        max_position_embeddings=config.max_seq_len, tie_word_embeddings=config.tie_embeddings,
        bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )
    model = LlamaForCausalLM(hf_config)
    model.load_state_dict(tensors, strict=False)
    model.tie_weights()
    return model.to(device=device, dtype=dtype).eval()


def time_reference(model, ids: list[list[int]], new_tokens: int,
                   device: torch.device) -> tuple[float, float, float]:
    """(TTFT seconds, tokens/s after the first, summed over the batch; CPU seconds of the whole call) for
    a left-padded batch."""
    longest = max(map(len, ids))
    input_ids = torch.full((len(ids), longest), 2, dtype=torch.long)
    mask = torch.zeros((len(ids), longest), dtype=torch.long)
    for row, row_ids in enumerate(ids):
        input_ids[row, longest - len(row_ids):] = torch.tensor(row_ids)
        mask[row, longest - len(row_ids):] = 1
    streamer = _TimingStreamer() if len(ids) == 1 else None
    started, cpu_started = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        model.generate(input_ids.to(device), attention_mask=mask.to(device), max_new_tokens=new_tokens,
                       min_new_tokens=new_tokens, do_sample=False, streamer=streamer, pad_token_id=2)
    synchronize(device)
    ended = time.perf_counter()
    if streamer is None:
        return float("nan"), len(ids) * new_tokens / (ended - started), time.process_time() - cpu_started
    first = streamer.times[1]  # times[0] is the prompt
    return first - started, (new_tokens - 1) / (ended - first), time.process_time() - cpu_started
