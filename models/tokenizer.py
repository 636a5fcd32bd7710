"""The generator's tokenizer: byte-level BPE rebuilt from GGUF metadata with the `tokenizers` library,
plus the model's chat template rendered with jinja2."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import gguf
import jinja2
import jinja2.sandbox
from tokenizers import AddedToken, Regex, decoders, pre_tokenizers
from tokenizers import Tokenizer as FastTokenizer
from tokenizers.models import BPE

# llama.cpp's pre-tokenizer names -> the split the vocabulary's merges were learned with.
_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# SmolLM/StarCoder first split every digit on its own, then apply the GPT-2 split.
_DIGITS_THEN_GPT2 = ("digits", _GPT2_SPLIT)
PRE_TOKENIZER_SPLITS: dict[str, str | tuple[str, str]] = {
    "gpt2": _GPT2_SPLIT,
    "default": _GPT2_SPLIT,
    "smollm": _DIGITS_THEN_GPT2,
    "starcoder": _DIGITS_THEN_GPT2,
    "refact": _DIGITS_THEN_GPT2,
    "llama3": _LLAMA3_SPLIT,
    "llama-bpe": _LLAMA3_SPLIT,
    "smaug-bpe": _LLAMA3_SPLIT,
    "qwen2": _QWEN2_SPLIT,
}
# Besides the file's EOS, these end a turn in common chat formats.
END_OF_TURN_TOKENS = ("<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>")
_CONTROL_TOKEN_TYPE = 3
_USER_DEFINED_TOKEN_TYPE = 4


class TokenizerError(ValueError):
    """The tokenizer cannot be built from the given files."""


def _byte_level_pre_tokenizer(split: str | tuple[str, str]) -> pre_tokenizers.PreTokenizer:
    steps: list[pre_tokenizers.PreTokenizer] = []
    if isinstance(split, tuple):
        steps.append(pre_tokenizers.Digits(individual_digits=True))
        split = split[1]
    steps.append(pre_tokenizers.Split(Regex(split), behavior="isolated"))
    steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False))
    return pre_tokenizers.Sequence(steps)


class Tokenizer:
    """encode/decode text and render chat messages into the prompt string the model was trained on."""

    def __init__(self, backend: FastTokenizer, eos_token_ids: Sequence[int], chat_template: str | None,
                 bos_token: str | None = None, add_bos: bool = False) -> None:
        self.backend = backend
        self.eos_token_ids: tuple[int, ...] = tuple(dict.fromkeys(eos_token_ids))
        self.bos_token = bos_token
        self.add_bos = add_bos
        self.chat_template = chat_template
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
        )
        env.globals["raise_exception"] = _raise_template_error
        self._template = env.from_string(chat_template) if chat_template else None
        self.vocab_size = backend.get_vocab_size(with_added_tokens=True)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_gguf(cls, reader_or_path: gguf.GGUFReader | str | Path) -> Tokenizer:
        reader = reader_or_path if isinstance(reader_or_path, gguf.GGUFReader) else gguf.GGUFReader(reader_or_path)

        def field(key: str, default: object = None) -> object:
            value = reader.fields.get(key)
            return default if value is None else value.contents()

        kind = field("tokenizer.ggml.model")
        if kind != "gpt2":
            raise TokenizerError(f"Only byte-level BPE ('gpt2') GGUF tokenizers are supported, not {kind!r}.")
        tokens: list[str] = field("tokenizer.ggml.tokens")
        token_types: list[int] = field("tokenizer.ggml.token_type", [1] * len(tokens))
        merges = [tuple(m.split(" ", 1)) for m in field("tokenizer.ggml.merges", [])]
        pre = str(field("tokenizer.ggml.pre", "default"))
        if pre not in PRE_TOKENIZER_SPLITS:
            raise TokenizerError(
                f"Unknown GGUF pre-tokenizer {pre!r}; known: {', '.join(sorted(PRE_TOKENIZER_SPLITS))}."
            )

        backend = FastTokenizer(BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, fuse_unk=False))
        backend.pre_tokenizer = _byte_level_pre_tokenizer(PRE_TOKENIZER_SPLITS[pre])
        backend.decoder = decoders.ByteLevel()
        # Control tokens (<|im_start|>, ...) must match whole when they appear in the rendered prompt.
        backend.add_special_tokens([
            AddedToken(t, special=True, normalized=False)
            for t, kind_ in zip(tokens, token_types, strict=True) if kind_ == _CONTROL_TOKEN_TYPE
        ])
        backend.add_tokens([
            AddedToken(t, special=False, normalized=False)
            for t, kind_ in zip(tokens, token_types, strict=True) if kind_ == _USER_DEFINED_TOKEN_TYPE
        ])
        eos = field("tokenizer.ggml.eos_token_id")
        bos = field("tokenizer.ggml.bos_token_id")
        vocab = {t: i for i, t in enumerate(tokens)}
        eos_ids = ([int(eos)] if eos is not None else []) + [vocab[t] for t in END_OF_TURN_TOKENS if t in vocab]
        return cls(
            backend,
            eos_ids,
            field("tokenizer.chat_template"),
            bos_token=tokens[int(bos)] if bos is not None else None,
            add_bos=bool(field("tokenizer.ggml.add_bos_token", False)),
        )

    @classmethod
    def from_hf_directory(cls, directory: Path) -> Tokenizer:
        tokenizer_file = directory / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise TokenizerError(f"{directory} has no tokenizer.json.")
        backend = FastTokenizer.from_file(str(tokenizer_file))
        config_file = directory / "tokenizer_config.json"
        config = json.loads(config_file.read_text()) if config_file.is_file() else {}
        vocab = backend.get_vocab()

        def token_text(value: object) -> str | None:
            return value.get("content") if isinstance(value, dict) else value  # type: ignore[return-value]

        eos = token_text(config.get("eos_token"))
        eos_ids = ([vocab[eos]] if eos in vocab else []) + [vocab[t] for t in END_OF_TURN_TOKENS if t in vocab]
        template = config.get("chat_template")
        template_file = directory / "chat_template.jinja"  # where newer transformers versions save it
        if template is None and template_file.is_file():
            template = template_file.read_text()
        return cls(backend, eos_ids, template, bos_token=token_text(config.get("bos_token")))

    # ------------------------------------------------------------------ use
    def encode(self, text: str) -> list[int]:
        ids = self.backend.encode(text, add_special_tokens=False).ids
        if self.add_bos and self.bos_token is not None:
            bos_id = self.backend.token_to_id(self.bos_token)
            if not ids or ids[0] != bos_id:
                ids = [bos_id, *ids]
        return ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def apply_chat_template(self, messages: Sequence[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """Render [{"role": "system"|"user"|"assistant", "content": ...}, ...] into the prompt string."""
        if self._template is None:
            raise TokenizerError("This model has no chat template; pass the prompt as plain text.")
        for message in messages:
            if "content" not in message or message.get("role") not in ("system", "user", "assistant"):
                raise ValueError(f"Chat messages need a role (system, user or assistant) and content, got {message!r}.")
        return self._template.render(
            messages=list(messages), add_generation_prompt=add_generation_prompt, bos_token=self.bos_token or ""
        )


def _raise_template_error(message: str) -> None:
    raise ValueError(f"Chat template error: {message}")
