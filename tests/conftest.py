"""Fixtures shared across packages.

* The real AER corpus, ingested once per test session (slow tests only).
* Service parts built here: a real index built by the ingestion job from a small CSV, a tiny random generator
  (real SmolLM2 tokenizer, random 2-layer weights) and a tiny random cross-encoder.
"""

from __future__ import annotations

import os

import torch

# Without a GPU our Triton kernels (models/triton_kernels.py) run under Triton's interpreter, which Triton reads
# when it loads: so here, before anything imports it (sentence-transformers does).
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import csv
import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
import uvicorn
from fastapi.testclient import TestClient
from transformers import AutoTokenizer, BertConfig

from app.config import GenerationQueueSettings, Settings
from app.main import create_app
from app.metrics import ServiceMetrics
from app.server import build_config
from app.services import Services, build_services, load_services
from indexing.embedding import default_model_dir
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from indexing.pipeline import IngestionPipeline, IngestionSettings, IngestionSummary
from indexing.postgres.embedded import EmbeddedPostgres, throwaway_server
from models import Generator
from models.loading import default_gguf_path
from models.model import ModelConfig, Transformer
from models.tokenizer import Tokenizer
from retrieval.cross_encoder import SegmentPoolingCrossEncoder
from retrieval.search import RerankState, load_reranker

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every model is local; never reach for a hub

REPO_ROOT = Path(__file__).resolve().parent.parent
REAL_CORPUS = REPO_ROOT.parent / "shared" / "data" / "aer_abstracts.csv"


@pytest.fixture(scope="session")
def real_corpus() -> Path:
    if not REAL_CORPUS.is_file():
        pytest.fail(f"The real corpus is expected at {REAL_CORPUS} (../shared beside the repository).")
    return REAL_CORPUS


@pytest.fixture(scope="session")
def real_index_build(tmp_path_factory: pytest.TempPathFactory, real_corpus: Path) -> IngestionSummary:
    """The real corpus ingested by the real job (about a minute on 2 cores), shared by every slow test."""
    out = tmp_path_factory.mktemp("real-index") / "index"
    return IngestionPipeline(IngestionSettings(corpus=real_corpus, out_dir=out, device="cpu")).run()


@pytest.fixture(scope="session")
def real_index_dir(real_index_build: IngestionSummary) -> Path:
    return real_index_build.index_dir.parent / "index"  # the published symlink, as a reader sees it


COLUMNS = ["date", "title", "abstract", "authors", "journal", "doi", "url", "jel_codes", "date_original", "source"]
# (doi, date, title, abstract, JEL codes): short, realistic abstracts on distinct topics.
ROWS = [
    ("10.1257/test.1", "1999-03", "Minimum Wages and Teen Employment",
     "We study how increases in the state minimum wage affect teenage employment in fast food restaurants. "
     "Employment did not fall after the increase. (JEL J23, J31)", "J23 J31"),
    ("10.1257/test.2", "2004-06", "Monetary Policy and Bank Lending",
     "We show that banks cut lending when the central bank raises interest rates. Small banks with weak "
     "balance sheets respond most strongly to monetary tightening. (JEL E44, E52, G21)", "E44 E52 G21"),
    ("10.1257/test.3", "2012-05", "Trade Shocks and Local Labor Markets",
     "Import competition from China reduced manufacturing employment in exposed local labor markets. "
     "Wages fell and disability claims rose in the most exposed regions. (JEL F14, J23, R23)", "F14 J23 R23"),
    ("10.1257/test.4", "2013-09", "Information Frictions in Job Search",
     "Job seekers search too narrowly because they misperceive their chances. Giving them information about "
     "vacancies broadens their search and raises callbacks. (JEL D83, J64)", "D83 J64"),
    ("10.1257/test.5", "2022-01", "Carbon Taxes and Emissions",
     "A carbon tax in British Columbia reduced fuel use and emissions without harming aggregate employment. "
     "Households adjusted mainly through vehicle choices. (JEL H23, Q54)", "H23 Q54"),
    ("10.1257/test.6", "2023-04", "Microfinance and Household Investment",
     "Access to microcredit raised business investment among existing entrepreneurs but did not raise "
     "average household consumption in the long run. (JEL D14, G21, O16)", "D14 G21 O16"),
    ("10.1257/test.7", "2024-02", "Inflation Expectations of Firms",
     "Firms' inflation expectations are dispersed and respond little to central bank announcements. "
     "Providing firms with inflation statistics changes their expectations and pricing. (JEL D84, E31)",
     "D84 E31"),
    ("10.1257/test.8", "2001-12", "School Vouchers and Student Achievement",
     "Students who won a lottery for private school vouchers had higher test scores after three years. "
     "The gains were concentrated among African American students. (JEL I21, I28)", "I21 I28"),
]


def write_corpus(path: Path, rows: list[tuple[str, str, str, str, str]] = ROWS) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for doi, date, title, abstract, jel in rows:
            writer.writerow([date, title, abstract, "Doe, Jane; Roe, Richard", "American Economic Review", doi,
                             f"https://doi.org/{doi}", jel, date, "test"])  # fmt: skip
    return path


@pytest.fixture(scope="session")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("service-index")
    corpus = write_corpus(root / "corpus.csv")
    out = root / "index"
    IngestionPipeline(IngestionSettings(corpus=corpus, out_dir=out, device="cpu")).run()
    return out


@pytest.fixture(scope="session")
def tiny_index(index_dir: Path) -> PublishedIndex:
    return PublishedIndex.load(index_dir)


@pytest.fixture(scope="session")
def smollm_gguf() -> Path:
    return default_gguf_path()


@pytest.fixture(scope="session")
def smollm_tokenizer(smollm_gguf: Path) -> Tokenizer:
    """The real SmolLM2 tokenizer and chat template."""
    return Tokenizer.from_gguf(smollm_gguf)


@pytest.fixture(scope="session")
def smollm_generator() -> Generator:
    """The real default generator (slow tests)."""
    return Generator.from_pretrained(device="cpu")


@pytest.fixture(scope="session")
def tiny_generator(smollm_tokenizer: Tokenizer) -> Generator:
    """The real SmolLM2 tokenizer and chat template with a random 2-layer model: fast, and it really decodes."""
    tokenizer = smollm_tokenizer
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=tokenizer.vocab_size, hidden_size=64, intermediate_size=128, num_layers=2,
                         num_heads=4, num_kv_heads=2, max_seq_len=4096)  # fmt: skip
    # Sized as the service sizes its engine (the default admission's answers, up to MAX_PAPERS findings each).
    return Generator(Transformer(config).eval(), tokenizer, model_name="tiny-random",
                     scheduler=GenerationQueueSettings().scheduler())


@pytest.fixture(scope="session")
def tiny_reranker_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer, 32-wide reranker (with the real MiniLM tokenizer), saved like a trained one."""
    tokenizer = AutoTokenizer.from_pretrained(default_model_dir(), local_files_only=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)  # fmt: skip
    model = SegmentPoolingCrossEncoder(config)
    with torch.no_grad():
        model.joint_head.weight.normal_(std=5.0)  # a random head, so scores differ beyond float16 noise
    out = tmp_path_factory.mktemp("reranker") / "tiny-cross-encoder"
    model.save(out)
    tokenizer.save_pretrained(out)
    return out


# A throwaway server: durability off, small buffers.
POSTGRES_TEST_SETTINGS = {"shared_buffers": "128MB", "maintenance_work_mem": "256MB", "fsync": "off",
                          "full_page_writes": "off"}


def throwaway_postgres(prefix: str) -> AbstractContextManager[EmbeddedPostgres]:
    """A started embedded server with the test settings, stopped and deleted on exit."""
    return throwaway_server(prefix, POSTGRES_TEST_SETTINGS)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[EmbeddedPostgres]:
    """One embedded server for the session."""
    with throwaway_postgres("aer-pg-tests-") as server:
        yield server


@pytest.fixture(scope="session")
def new_database(postgres_server: EmbeddedPostgres) -> Iterator[Callable[[], str]]:
    """new_database() creates a fresh database (with the vector extension) on the session's server; its DSN.
    They go with the server's data directory at the end of the session."""

    def create() -> str:
        name = f"test_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(postgres_server.admin_dsn, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        dsn = postgres_server.dsn.rsplit("/", 1)[0] + f"/{name}"
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute("CREATE EXTENSION vector")
        return dsn

    yield create


ServiceFactory = Callable[..., Services]


@pytest.fixture(scope="session")
def dense_answerability(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An answerability model for the tiny services (the shipped one is calibrated for the shipped reranker, not
    the random one): P(a passage answers) = sigmoid(20 (its cosine - 0.35)), with or without reranking; answers
    from 0.6, declines below 0.3."""
    model = {"features": ["dense"], "means": [0.35], "scales": [0.05], "weights": [1.0], "bias": 0.0}
    path = tmp_path_factory.mktemp("answerability") / "answerability.json"
    path.write_text(json.dumps({"reranked": model, "dense_only": model,
                                "thresholds": {"decline_below": 0.3, "answer_from": 0.6}}))  # fmt: skip
    return path


@pytest.fixture
def make_services(tiny_index: PublishedIndex, tiny_generator: Generator, tiny_reranker_dir: Path,
                  dense_answerability: Path) -> ServiceFactory:  # fmt: skip
    def make(reranker: bool = False, **overrides: object) -> Services:
        # No domain gate unless a test asks for it: these tests drive the passage decision with off-topic questions.
        answerability = {"model_path": dense_answerability, "domain_path": None,
                         **overrides.pop("answerability", {})}  # type: ignore[dict-item]
        overrides = {"answerability": answerability, **overrides}
        settings = Settings(reranker={"model_dir": tiny_reranker_dir if reranker else None}, **overrides)  # type: ignore[arg-type]
        rerank = load_reranker(settings.reranker, "cpu") if reranker else RerankState(None, "no reranker configured")
        backend = LocalIndexBackend(tiny_index)
        return build_services(settings, ServiceMetrics(), backend, tiny_index.embedder, rerank, tiny_generator, "cpu")

    return make


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


AppProcessFactory = Callable[..., AbstractContextManager[tuple[subprocess.Popen, str]]]


@pytest.fixture(scope="session")
def app_process() -> AppProcessFactory:
    """start(index_dir, env=…, log=…, ready_timeout_s=…) runs `python -m app` (this checkout, with the environment
    plus `env`) on a free loopback port until /readyz answers 200; yields (process, base URL), stops it after.
    Its output goes to `log` (a file) when given."""

    @contextmanager
    def start(index_dir: Path, env: dict[str, str] | None = None, log: Path | None = None,
              ready_timeout_s: float = 300) -> Iterator[tuple[subprocess.Popen, str]]:  # fmt: skip
        port = free_port()
        command = [sys.executable, "-m", "app", "--index", str(index_dir), "--port", str(port), "--device", "cpu"]
        with log.open("w") if log else open(os.devnull, "w") as sink:
            process = subprocess.Popen(command, cwd=REPO_ROOT, env={**os.environ, **(env or {})}, stdout=sink,
                                       stderr=subprocess.STDOUT)  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + ready_timeout_s
            while True:
                shown = log.read_text()[-2000:] if log else "the server did not become ready"
                assert process.poll() is None and time.monotonic() < deadline, shown
                try:
                    if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.5)
            yield process, base
        finally:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    return start


LiveServerFactory = Callable[..., tuple[str, Services]]


@contextmanager
def serving(services: Services) -> Iterator[str]:
    """The app over `services` in a real uvicorn server on 127.0.0.1 (its own thread); yields the base URL."""
    # The server's own configuration (app/server.py: the guarded protocol, its limits), on a free port.
    config = build_config(create_app(services.settings, services), services.settings, host="127.0.0.1",
                          port=free_port(), log_level="warning")  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def live_server(make_services: ServiceFactory) -> Iterator[LiveServerFactory]:
    """make(**overrides) serves tiny services with those settings and returns (base URL, services)."""
    with ExitStack() as stack:

        def make(**overrides: object) -> tuple[str, Services]:
            services = make_services(**overrides)
            return stack.enter_context(serving(services)), services

        yield make


@pytest.fixture(scope="session")
def real_live_server(real_index_dir: Path) -> Iterator[tuple[str, Services]]:
    """The real index, the shipped reranker and the default generator, served over HTTP (slow tests)."""
    services = load_services(Settings(index_dir=real_index_dir, device="cpu"))
    with serving(services) as base:
        yield base, services


@pytest.fixture
def client(make_services: ServiceFactory) -> Iterator[TestClient]:
    services = make_services(answering={"max_new_tokens": 16})
    with TestClient(create_app(services.settings, services)) as test_client:
        yield test_client


def parse_sse(body: str) -> list[tuple[str, dict]]:
    events = []
    for block in body.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append((fields["event"], json.loads(fields["data"])))
    return events


@pytest.fixture
def sse() -> Callable[[str], list[tuple[str, dict]]]:
    """Parse a Server-Sent Events body into (event, data) pairs."""
    return parse_sse
