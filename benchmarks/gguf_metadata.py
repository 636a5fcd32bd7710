"""A GGUF holding only another GGUF's metadata (architecture, shapes, tokenizer, chat template), no tensors: a
few MB that stand in for the model file where only its shapes and tokenizer matter, as in
`generation_benchmark --random-weights --gguf` on a machine the 98 MB model file cannot reach.

    .venv/bin/python -m benchmarks.gguf_metadata var/smollm2-metadata.gguf
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gguf

from models.loading import default_gguf_path


def write_metadata_only(source: Path, target: Path) -> Path:
    reader = gguf.GGUFReader(source)
    writer = gguf.GGUFWriter(str(target), arch=str(reader.fields["general.architecture"].contents()))
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":  # the header; the writer adds these
            continue
        kind = field.types[0]
        sub_type = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, field.contents(), kind, sub_type=sub_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", type=Path)
    parser.add_argument("--source", type=Path, default=None, help="default: the shipped SmolLM2 GGUF")
    args = parser.parse_args(argv)
    written = write_metadata_only(args.source or default_gguf_path(), args.target)
    print(f"wrote {written} ({written.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
