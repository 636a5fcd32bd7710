"""`python -m models generate "…"` (or `aer-generate "…"`): chat with the generator from a terminal."""

from __future__ import annotations

import argparse
import sys
import time

import torch

from models import Generator, SamplingParams


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m models", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="answer one message, printing tokens as they come")
    gen.add_argument("message", help="the user message (rendered with the model's chat template)")
    gen.add_argument("--model", default=None, help="a .gguf file or Hugging Face directory (default: SmolLM2)")
    gen.add_argument("--system", default=None, help="system message (default: the template's own)")
    gen.add_argument("--raw", action="store_true", help="send the message as is, without the chat template")
    gen.add_argument("--max-new-tokens", type=int, default=256)
    gen.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    gen.add_argument("--top-k", type=int, default=0)
    gen.add_argument("--top-p", type=float, default=1.0)
    gen.add_argument("--repetition-penalty", type=float, default=1.0)
    gen.add_argument("--no-repeat-ngram-size", type=int, default=0)
    gen.add_argument("--seed", type=int, default=None)
    gen.add_argument("--stop", action="append", default=[], help="stop string (repeatable)")
    gen.add_argument("--device", default="auto", help="auto, cpu or cuda")
    gen.add_argument("--dtype", default="auto", help="auto, float32, bfloat16 or float16")
    gen.add_argument("--weights", choices=["auto", "float32", "q4_1", "q8_0"], default="auto",
                     help="the CPU decode step's weights (auto: 4-bit Q4_1 where our kernels build)")
    gen.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: all cores)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    stream = None
    try:
        params = SamplingParams(
            max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
            top_p=args.top_p, repetition_penalty=args.repetition_penalty,
            no_repeat_ngram_size=args.no_repeat_ngram_size, seed=args.seed, stop=tuple(args.stop),
        )
        if args.threads is not None:
            if args.threads < 1:
                raise ValueError(f"--threads must be at least 1, got {args.threads}.")
            torch.set_num_threads(args.threads)
        started = time.perf_counter()
        generator = Generator.from_pretrained(args.model, device=args.device, dtype=args.dtype, weights=args.weights)
        print(f"[loaded {generator.model_name} on {generator.device} ({generator.dtype}, decode {generator.weights}) "
              f"in {time.perf_counter() - started:.1f} s]", file=sys.stderr)
        if args.raw:
            prompt = args.message
        else:
            messages = [{"role": "user", "content": args.message}]
            if args.system is not None:
                messages.insert(0, {"role": "system", "content": args.system})
            prompt = generator.tokenizer.apply_chat_template(messages, add_generation_prompt=True)
        started = time.perf_counter()
        first_token_at = None
        stream = generator.stream(prompt, params)
        for delta in stream:
            first_token_at = first_token_at or time.perf_counter()
            print(delta, end="", flush=True)
    except ValueError as error:  # bad options, ContextLengthError, WeightLoadError: all ValueErrors
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if stream is not None:
            stream.close()
        print("\n[cancelled]", file=sys.stderr)
        return 130
    elapsed = time.perf_counter() - started
    print()
    first = (first_token_at or time.perf_counter()) - started
    decode_rate = (stream.generated_tokens - 1) / max(elapsed - first, 1e-9)
    print(f"[{stream.prompt_tokens} prompt tokens, {stream.generated_tokens} generated ({stream.finish_reason}); "
          f"first token {first:.2f} s, {decode_rate:.1f} tokens/s after it]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
