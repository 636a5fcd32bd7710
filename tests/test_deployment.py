"""The container setup, read as files: the compose files are valid Compose and run the README's own commands;
the Dockerfile takes the build arguments deploy/smoke.sh needs and copies the weights once.

The image itself is built and run by deploy/smoke.sh, which CI runs after the test suite (.ci/run). The compose
files are validated here against the Compose specification's JSON schema (inside the docker-compose 1.29.2 wheel).
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_WHEEL = "docker-compose==1.29.2"


@pytest.fixture(scope="session")
def compose_schema() -> dict:
    cache = ROOT / "var" / "cache" / "compose-spec"  # git-ignored; downloaded once from PyPI
    cache.mkdir(parents=True, exist_ok=True)
    wheels = list(cache.glob("docker_compose-*.whl"))
    if not wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(cache), SCHEMA_WHEEL],
            check=True,
        )
        wheels = list(cache.glob("docker_compose-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        return yaml.safe_load(wheel.read("compose/config/compose_spec.json"))


COMPOSE_FILES = ("docker-compose.yml", "docker-compose.override.yml", "deploy/docker-compose.host.yml")


@pytest.fixture(scope="session")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_compose_files_match_the_compose_specification(name: str, compose_schema: dict) -> None:
    jsonschema.validate(yaml.safe_load((ROOT / name).read_text()), compose_schema)


def test_users_get_published_ports_and_the_host_network_override_gets_none(compose: dict) -> None:
    override = yaml.safe_load((ROOT / "docker-compose.override.yml").read_text())  # read by `docker compose up`
    assert override["services"]["api"]["ports"] == ["${AER_RAG_PUBLISH_ADDRESS:-127.0.0.1}:${AER_RAG_PORT:-8000}:8000"]
    assert not any("ports" in service for service in compose["services"].values())
    host = yaml.safe_load((ROOT / "deploy" / "docker-compose.host.yml").read_text())["services"]
    assert all(service["network_mode"] == "host" and service["build"]["network"] == "host"
               for service in host.values())  # fmt: skip
    assert "${AER_RAG_PORT:-8000}" in host["api"]["command"]


def test_schema_rejects_a_broken_compose_file(compose: dict, compose_schema: dict) -> None:
    broken = {**compose, "services": {**compose["services"], "api": {**compose["services"]["api"], "ports": 8000}}}
    assert broken["services"]["api"]["ports"] == 8000
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, compose_schema)


def test_api_starts_after_a_successful_ingest_and_checks_readiness(compose: dict) -> None:
    api = compose["services"]["api"]
    assert api["depends_on"]["ingest"]["condition"] == "service_completed_successfully"
    assert "/readyz" in " ".join(api["healthcheck"]["test"])
    assert any(volume.startswith("index:") for volume in api["volumes"])
    assert "index" in compose["volumes"]


def test_corpus_is_mounted_read_only_from_a_configurable_path(compose: dict) -> None:
    mounts = compose["services"]["ingest"]["volumes"]
    corpus = next(m for m in mounts if "/data/corpus" in m)
    assert corpus.startswith("${AER_CORPUS_DIR") and corpus.endswith(":ro")


def test_gpu_profile_reserves_an_nvidia_device(compose: dict) -> None:
    gpu = compose["services"]["api-gpu"]
    assert gpu["profiles"] == ["gpu"]
    device = gpu["deploy"]["resources"]["reservations"]["devices"][0]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]


def test_containers_run_the_same_commands_as_the_readme(compose: dict) -> None:
    readme = (ROOT / "README.md").read_text()
    ingest = compose["services"]["ingest"]["command"]
    serve = compose["services"]["api"]["command"]
    assert ingest[:3] == ["python", "-m", "indexing"] and serve[:3] == ["python", "-m", "app"]
    makefile = (ROOT / "Makefile").read_text()
    assert "-m indexing --corpus" in makefile and "-m app --index" in makefile
    assert re.search(r"^make run$", readme, re.MULTILINE) and re.search(r"^make test$", readme, re.MULTILINE)
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert '"python", "-m", "app"' in dockerfile
    assert "USER aer" in dockerfile  # never run as root


def test_the_dockerfile_builds_from_any_base_and_copies_the_weights_once() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ARG BASE_IMAGE=python:3.11-slim" in dockerfile and "FROM ${BASE_IMAGE}" in dockerfile
    for argument in ("TORCH_INDEX_URL", "TORCH_FIND_LINKS", "EXTRA_CA_CERT"):
        assert f"ARG {argument}" in dockerfile
    # The project is run from its folder, not installed: a `pip install .` would copy the weights a second time.
    assert not re.search(r"pip install[^\n]*\s\.(\s|$)", dockerfile)
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignored[ignored.index("*") :][:1] == ["*"] and "!models/" in ignored and "!tests/" not in ignored


def test_the_smoke_script_checks_the_service_through_the_compose_files() -> None:
    script = (ROOT / "deploy" / "smoke.sh").read_text()
    assert "docker-compose.yml" in script and "deploy/docker-compose.host.yml" in script
    assert "down -v" in script and "DOCKER SMOKE TEST NOT RUN" in script
    for endpoint in ("/readyz", "/v1/search", "/v1/ask"):
        assert endpoint in script
    assert "deploy/smoke.sh" in (ROOT / ".ci" / "run").read_text()


def test_ports_are_published_on_loopback_unless_told_otherwise_and_the_server_knows_where(compose: dict) -> None:
    override = yaml.safe_load((ROOT / "docker-compose.override.yml").read_text())["services"]
    for name in ("api", "api-gpu"):
        (port,) = override[name]["ports"]
        assert port.startswith("${AER_RAG_PUBLISH_ADDRESS:-127.0.0.1}:")  # not every interface by default
        assert override[name]["environment"]["AER_RAG_PUBLISHED_ADDRESS"] == "${AER_RAG_PUBLISH_ADDRESS:-127.0.0.1}"
    host = yaml.safe_load((ROOT / "deploy" / "docker-compose.host.yml").read_text())["services"]["api"]
    assert host["command"][host["command"].index("--host") + 1] == "127.0.0.1"


def test_compose_turns_the_rate_limit_on_for_both_api_services(compose: dict) -> None:
    for name in ("api", "api-gpu"):
        environment = compose["services"][name]["environment"]
        assert environment["AER_RAG_RATE_LIMIT__ENABLED"] == "${AER_RAG_RATE_LIMIT__ENABLED:-true}"
        assert environment["AER_RAG_API_KEY"] == "${AER_RAG_API_KEY:-}"
    assert compose["services"]["api-gpu"]["environment"]["AER_RAG_DEVICE"] == "cuda"
