"""Tiny models and files for the generator tests: a random Llama in transformers (the reference), the same
weights written to a GGUF the way llama.cpp's converter writes them, and a crafted "bigram" model whose
next-token distribution depends only on the last token (so the best sequence is known)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import gguf
import pytest
import torch
from tokenizers import pre_tokenizers

from models import Generator
from models.loading import permute_rotary_rows
from models.model import ModelConfig, Transformer
from models.tokenizer import Tokenizer

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
BYTE_TOKENS = sorted(pre_tokenizers.ByteLevel.alphabet())
MERGES = ["h e", "Ġ t"]
TOKENS = SPECIAL_TOKENS + BYTE_TOKENS + [m.replace(" ", "") for m in MERGES]
EOS_ID = 2
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def tiny_hf_config(**overrides: object):  # -> transformers.LlamaConfig
    from transformers import LlamaConfig

    settings = dict(
        vocab_size=len(TOKENS), hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=True,
        bos_token_id=1, eos_token_id=EOS_ID, pad_token_id=EOS_ID,
    )
    settings.update(overrides)
    return LlamaConfig(**settings)


def random_hf_llama(seed: int = 0, **overrides: object):  # -> transformers.LlamaForCausalLM
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(tiny_hf_config(**overrides)).eval()
    with torch.no_grad():  # default init is tiny; larger weights make the comparison meaningful
        for param in model.parameters():
            param.normal_(0, 0.3) if param.dim() > 1 else param.uniform_(0.5, 1.5)
    return model


_BLOCK_NAMES = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def write_gguf(path: Path, hf_model, quantize: dict[str, gguf.GGMLQuantizationType] | None = None) -> Path:
    """Write hf_model as llama.cpp's converter would: GGUF names, Q/K rows permuted, tokenizer metadata."""
    config = hf_model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(config.num_hidden_layers)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(TOKENS)
    writer.add_token_types([3] * len(SPECIAL_TOKENS) + [1] * (len(TOKENS) - len(SPECIAL_TOKENS)))
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(EOS_ID)
    writer.add_chat_template(CHAT_TEMPLATE)
    for name, tensor in hf_model.state_dict().items():
        if name == "lm_head.weight" and config.tie_word_embeddings:
            continue
        weight = tensor.detach().float()
        if name.endswith("q_proj.weight"):
            weight = permute_rotary_rows(weight, config.num_attention_heads)
        elif name.endswith("k_proj.weight"):
            weight = permute_rotary_rows(weight, config.num_key_value_heads)
        gguf_name = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
                     "lm_head.weight": "output.weight"}.get(name)
        if gguf_name is None:
            _, _, layer, rest = name.split(".", 3)
            part, kind = rest.rsplit(".", 1)
            gguf_name = f"blk.{layer}.{_BLOCK_NAMES[part]}.{kind}"
        data = weight.numpy()
        qtype = (quantize or {}).get(gguf_name)
        if qtype is None:
            writer.add_tensor(gguf_name, data)
        else:
            writer.add_tensor(gguf_name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="session")
def hf_llama():
    return random_hf_llama()


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory, hf_llama) -> Path:
    return write_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", hf_llama)


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_gguf: Path) -> Tokenizer:
    return Tokenizer.from_gguf(tiny_gguf)


@pytest.fixture()
def tiny_generator(tiny_gguf: Path) -> Generator:
    return Generator.from_pretrained(tiny_gguf, device="cpu")


def token_id(tokenizer: Tokenizer, char: str) -> int:
    """The id of a single ASCII character's byte token."""
    (token,) = tokenizer.encode(char)
    return token


def bigram_generator(tokenizer: Tokenizer, transitions: dict[int, dict[int, float]]) -> Generator:
    """A Generator whose model gives P(next | last token) = transitions[last][next] (tiny mass elsewhere).

    Blocks are made the identity (zero output projections), embeddings are one-hot, so the final
    RMSNorm sees e_last and the untied lm_head column of `last` holds the log-probabilities.
    """
    vocab = tokenizer.vocab_size
    config = ModelConfig(vocab_size=vocab, hidden_size=vocab, intermediate_size=8, num_layers=1, num_heads=1,
                         num_kv_heads=1, head_dim=8, rms_norm_eps=1e-12, tie_embeddings=False, max_seq_len=64)
    model = Transformer(config).eval().requires_grad_(False)
    with torch.no_grad():
        model.embed_tokens.weight.copy_(torch.eye(vocab))
        model.layers[0].attn.o_proj.weight.zero_()
        model.layers[0].mlp.down_proj.weight.zero_()
        model.norm.weight.fill_(1.0)
        logits = torch.full((vocab, vocab), -30.0)  # [next, last]
        logits[EOS_ID, :] = 0.0  # unlisted tokens end the sequence
        for last, row in transitions.items():
            logits[:, last] = -30.0
            for nxt, prob in row.items():
                logits[nxt, last] = math.log(prob)
        model.lm_head.weight.copy_(logits / math.sqrt(vocab))  # rmsnorm(e_i) = sqrt(vocab) * e_i
    return Generator(model, tokenizer, model_name="bigram", reuse_prefix=False)


# Helpers handed to tests as fixtures (test modules do not import conftest).
@pytest.fixture(scope="session")
def make_hf_llama():
    return random_hf_llama


@pytest.fixture(scope="session")
def make_gguf():
    return write_gguf


@pytest.fixture(scope="session")
def make_bigram_generator():
    return bigram_generator


@pytest.fixture(scope="session")
def char_token():
    return token_id
