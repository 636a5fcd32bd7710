"""`python -m indexing` / `aer-ingest`: build, or check, the published index."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from indexing.embedding import EmbeddingModelMissing
from indexing.loader import CorpusError
from indexing.pipeline import IngestionPipeline, IngestionSettings
from indexing.postgres.writer import PostgresPublishError
from indexing.publish import PublishError

DEFAULT_CORPUS = Path("../shared/data/aer_abstracts.csv")
DEFAULT_OUT = Path("var/index")
DEFAULT_PG_CACHE = Path("var/pg-embedding-cache")
DSN_VARIABLE = "AER_RAG_BACKEND__DSN"  # the same variable the service reads

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aer-ingest",
        description="Chunk the AER abstracts, build BM25 and dense indexes, and publish them atomically: "
        "into a directory (--backend local, the default) or into PostgreSQL + pgvector (--backend postgres).",
    )
    parser.add_argument("--backend", choices=("local", "postgres"), default="local",
                        help="publish into the directory --out (local) or the database --dsn (postgres)")
    parser.add_argument("--dsn", default=os.environ.get(DSN_VARIABLE),
                        help=f"PostgreSQL URL for --backend postgres (default: ${DSN_VARIABLE})")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="CSV corpus (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="index path, a symlink (default: %(default)s)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="embedding device")
    parser.add_argument("--batch-size", type=int, default=64, help="embedding batch size (default: %(default)s)")
    parser.add_argument("--precision", choices=("auto", "float32", "bfloat16"), default="auto",
                        help="auto: bfloat16 where the hardware runs it natively")
    parser.add_argument(
        "--check",
        action="store_true",
        help="verify the published index against its manifest and the corpus; exit 1 if corrupt or stale",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if the index is up to date")
    parser.add_argument("--faiss-index", choices=("flat", "hnsw"), default="flat", help="exact (flat) or HNSW")
    parser.add_argument("--overlap-sentences", type=int, default=1, help="sentences shared by adjacent chunks")
    parser.add_argument("--max-chunk-tokens", type=int, default=None, help="default: the model's window (256)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help=f"embedding cache (default: <out>.cache; with postgres {DEFAULT_PG_CACHE})")
    parser.add_argument("--no-progress", action="store_true", help="hide the embedding progress bar")
    parser.add_argument("--allow-shrink", action="store_true",
                        help="publish even when the corpus drops more than --max-shrink of the live index's documents")
    parser.add_argument("--max-shrink", type=float, default=0.05,
                        help="share of the live index's documents a build may drop (default: %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.backend == "postgres" and not args.dsn:
        parser.error(f"--backend postgres needs --dsn postgresql://… (or ${DSN_VARIABLE})")
    target = None
    try:
        if args.backend == "postgres":
            from indexing.postgres.target import PostgresTarget

            target = PostgresTarget(args.dsn)
        settings = IngestionSettings(
            corpus=args.corpus,
            out_dir=args.out,
            device=args.device,
            batch_size=args.batch_size,
            precision=args.precision,
            chunk_overlap_sentences=args.overlap_sentences,
            max_chunk_tokens=args.max_chunk_tokens,
            faiss_index=args.faiss_index,
            cache_dir=args.cache_dir or (DEFAULT_PG_CACHE if args.backend == "postgres" else None),
            force=args.force,
            show_progress=not args.no_progress,
            max_shrink=args.max_shrink,
            allow_shrink=args.allow_shrink,
        )
        pipeline = IngestionPipeline(settings, target=target)
        if args.check:
            problems = pipeline.check()
            for problem in problems:
                print(f"check failed: {problem}", file=sys.stderr)
            if not problems:
                where = pipeline.target.describe() if target else args.out
                print(f"{where}: index intact and up to date with {args.corpus}.")
            return EXIT_CHECK_FAILED if problems else EXIT_OK
        print(pipeline.run().format())
        return EXIT_OK
    except (CorpusError, PublishError, EmbeddingModelMissing, ValueError, PostgresPublishError) as error:
        print(f"error: {error}", file=sys.stderr)
        print("The previously published index (if any) is unchanged.", file=sys.stderr)
        return EXIT_BAD_INPUT
