"""The container setup: docker-compose.yml is valid Compose and runs the README's own commands.

No Docker engine runs on the CI machines, so the compose file is validated against the Compose
specification's JSON schema (shipped inside the docker-compose 1.29.2 wheel on PyPI).
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


@pytest.fixture(scope="session")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_file_matches_the_compose_specification(compose: dict, compose_schema: dict) -> None:
    jsonschema.validate(compose, compose_schema)


def test_schema_rejects_a_broken_compose_file(compose: dict, compose_schema: dict) -> None:
    broken = {**compose, "services": {**compose["services"], "api": {**compose["services"]["api"], "ports": 8000}}}
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
