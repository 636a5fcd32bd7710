"""`python -m app`: load the index and models, then serve (the same command the container runs).

On SIGTERM or Ctrl+C the server stops accepting requests, lets answers that are generating run for
AER_RAG_GENERATION__SHUTDOWN_GRACE_S seconds, then stops them (their streams end with an error event) and exits.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from app.config import Settings, unknown_environment_variables
from app.main import create_app
from app.server import Server, build_config, exposure_warning
from app.services import load_services
from runtime.arenas import limit_arenas


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    defaults = Settings()
    parser = argparse.ArgumentParser(prog="python -m app", description="Serve the aer-rag API.")
    parser.add_argument("--host", default=defaults.host, help=f"bind address (default {defaults.host})")
    parser.add_argument("--port", type=int, default=defaults.port, help=f"port (default {defaults.port})")
    parser.add_argument("--index", type=Path, default=defaults.index_dir, help="published index directory")
    parser.add_argument("--backend", choices=["local", "postgres"], default=defaults.backend.kind,
                        help="where the index lives: the --index directory, or PostgreSQL at --dsn")
    parser.add_argument("--dsn", default=None, help="PostgreSQL connection string (--backend postgres; "
                        "default AER_RAG_BACKEND__DSN)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default=defaults.device)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    defaults = Settings()
    backend = defaults.backend.model_dump() | {"kind": args.backend}
    if args.dsn is not None:
        backend["dsn"] = args.dsn
    try:
        settings = Settings(host=args.host, port=args.port, index_dir=args.index, device=args.device, backend=backend)
    except ValueError as error:
        print(f"aer-rag cannot start: {error}", file=sys.stderr)
        return 2
    # Reachable beyond loopback (the bind address, or where a container's port is published) with no key: anyone
    # who can reach it can use it. Refused, before any model is loaded, unless AER_RAG_ALLOW_NO_KEY says it is meant.
    exposure = exposure_warning(settings)
    if exposure and not settings.allow_no_key:
        print(f"aer-rag cannot start: {exposure.removesuffix('.')}, or set AER_RAG_ALLOW_NO_KEY=true if an open API "
              "is meant.", file=sys.stderr)  # fmt: skip
        return 2
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in unknown_environment_variables():
        logging.getLogger("app").warning("%s names no setting and is ignored (see the README's Settings)", name)
    if exposure:  # AER_RAG_ALLOW_NO_KEY=true: served, with the warning
        logging.getLogger("app").warning("%s (AER_RAG_ALLOW_NO_KEY=true)", exposure)
    # Before any model or pool thread exists: each thread that allocates may otherwise get an arena of its own.
    limit_arenas(settings.memory.malloc_arenas)
    try:
        services = load_services(settings)
    except Exception as error:  # a clear one-line refusal instead of a traceback
        print(f"aer-rag cannot start: {error}", file=sys.stderr)
        return 2
    Server(build_config(create_app(settings, services), settings), services).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
