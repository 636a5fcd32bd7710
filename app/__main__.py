"""`python -m app`: load the index and models, then serve (the same command the container runs).

On SIGTERM or Ctrl+C the server stops accepting requests, lets answers that are generating run for
AER_RAG_GENERATION__SHUTDOWN_GRACE_S seconds, then stops them (their streams end with an error event) and exits.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from types import FrameType

import uvicorn

from app.config import Settings, unknown_environment_variables
from app.main import create_app
from app.services import Services, load_services


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    defaults = Settings()
    parser = argparse.ArgumentParser(prog="python -m app", description="Serve the aer-rag API.")
    parser.add_argument("--host", default=defaults.host, help=f"bind address (default {defaults.host})")
    parser.add_argument("--port", type=int, default=defaults.port, help=f"port (default {defaults.port})")
    parser.add_argument("--index", type=Path, default=defaults.index_dir, help="published index directory")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default=defaults.device)
    return parser.parse_args(argv)


class Server(uvicorn.Server):
    """uvicorn, whose exit on a signal stops generating answers after the grace period instead of waiting for
    every one to finish (a long answer could otherwise hold the process for minutes)."""

    def __init__(self, config: uvicorn.Config, services: Services) -> None:
        super().__init__(config)
        self.services = services

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.should_exit:
            self.services.queue.stop_after(self.services.settings.generation.shutdown_grace_s)
        super().handle_exit(sig, frame)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = Settings(host=args.host, port=args.port, index_dir=args.index, device=args.device)
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in unknown_environment_variables():
        logging.getLogger("app").warning("%s names no setting and is ignored (see the README's Settings)", name)
    try:
        services = load_services(settings)
    except Exception as error:  # a clear one-line refusal instead of a traceback
        print(f"aer-rag cannot start: {error}", file=sys.stderr)
        return 2
    grace = settings.generation.shutdown_grace_s
    config = uvicorn.Config(create_app(settings, services), host=settings.host, port=settings.port,
                            log_level=settings.log_level, timeout_graceful_shutdown=int(grace) + 5)  # fmt: skip
    Server(config, services).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
