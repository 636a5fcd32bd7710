"""The container setup, read as files: the compose files are valid Compose and run the README's own commands;
the Dockerfile takes the build arguments deploy/smoke.sh needs and copies the weights once.

The image itself is built and run by deploy/smoke.sh, which CI runs after the test suite (.ci/run). The compose
files are validated here against the Compose specification's JSON schema (inside the docker-compose 1.29.2 wheel).
"""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
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


# --- the `scale` profile: PostgreSQL primary + replica, ingest-pg, api-1/api-2, nginx ------------------------------

SCALE_SERVICES = ("postgres", "postgres-replica", "ingest-pg", "api-1", "api-2", "proxy")
NGINX_CONF = ROOT / "deploy" / "nginx" / "nginx.conf"


@pytest.fixture(scope="session")
def host() -> dict:
    return yaml.safe_load((ROOT / "deploy" / "docker-compose.host.yml").read_text())["services"]


SECRET = "/run/aer-rag-secret/pg-password"  # the pg-secret volume's file: the password the primary makes
WITH_SECRET = f"set -e; PGPASSWORD=$$(cat {SECRET}); export PGPASSWORD; exec "


def _dsn(value: str) -> tuple[str, str]:
    """The host and port of a compose DSN: postgresql://user@host:port/db (no password: libpq's PGPASSWORD, from
    the secret), port an ${…} expression."""
    match = re.fullmatch(r"postgresql://aer@([\w.-]+):(\$\{[A-Z_0-9]+:-\d+\})/aer", value)
    assert match, value
    return match[1], match[2]


def _with_secret(command: list[str]) -> list[str]:
    """The command a `sh -c` runs once PGPASSWORD holds the secret (compose's $$ is a literal $)."""
    assert command[:2] == ["sh", "-c"] and command[2].startswith(WITH_SECRET), command
    return shlex.split(command[2].removeprefix(WITH_SECRET))


def _ingest_dsn(command: list[str]) -> str:
    command = _with_secret(command)
    assert command[:3] == ["python", "-m", "indexing"] and command[command.index("--backend") + 1] == "postgres"
    return command[command.index("--dsn") + 1]


def test_the_scale_profile_has_its_services_and_the_default_profile_only_ingest_and_api(compose: dict) -> None:
    services = compose["services"]
    for name in SCALE_SERVICES:
        assert services[name]["profiles"] == ["scale"], name
    # `docker compose up` (no profile) starts exactly what it started before the scale profile existed.
    assert sorted(name for name, service in services.items() if "profiles" not in service) == ["api", "ingest"]
    assert {services[name]["image"] for name in ("api-1", "api-2", "ingest-pg")} == {"aer-rag:latest"}
    assert {"pg-primary", "pg-replica"} <= set(compose["volumes"])


def test_the_replicas_read_the_replica_and_the_ingest_writes_the_primary(compose: dict, host: dict) -> None:
    services = compose["services"]
    primary_port = services["postgres"]["environment"]["POSTGRES_PORT"]
    replica_port = services["postgres-replica"]["environment"]["POSTGRES_PORT"]
    assert primary_port != replica_port
    replica = services["postgres-replica"]["environment"]
    assert replica["POSTGRES_ROLE"] == "replica"
    assert (replica["POSTGRES_PRIMARY_HOST"], replica["POSTGRES_PRIMARY_PORT"]) == ("postgres", primary_port)
    assert replica["POSTGRES_PASSWORD_FILE"] == services["postgres"]["environment"]["POSTGRES_PASSWORD_FILE"] == SECRET
    assert services["postgres-replica"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert _dsn(_ingest_dsn(services["ingest-pg"]["command"])) == ("postgres", primary_port)
    assert _dsn(_ingest_dsn(host["ingest-pg"]["command"])) == ("127.0.0.1", primary_port)
    for name in ("api-1", "api-2"):
        environment = services[name]["environment"]
        assert environment["AER_RAG_BACKEND__KIND"] == "postgres"
        assert _with_secret(services[name]["command"]) == ["python", "-m", "app"]
        assert _dsn(environment["AER_RAG_BACKEND__DSN"]) == ("postgres-replica", replica_port)
        assert _dsn(host[name]["environment"]["AER_RAG_BACKEND__DSN"]) == ("127.0.0.1", replica_port)
        assert services[name]["depends_on"]["ingest-pg"]["condition"] == "service_completed_successfully"
        assert "/readyz" in " ".join(services[name]["healthcheck"]["test"])
        assert environment["AER_RAG_RATE_LIMIT__ENABLED"] == "${AER_RAG_RATE_LIMIT__ENABLED:-true}"
        assert host[name]["environment"]["AER_RAG_HOST"] == "127.0.0.1"  # on the host's network: loopback only
    assert host["postgres"]["environment"]["POSTGRES_LISTEN_ADDRESSES"] == "127.0.0.1"
    assert host["postgres-replica"]["environment"]["POSTGRES_PRIMARY_HOST"] == "127.0.0.1"


def test_the_proxy_balances_both_replicas_after_they_are_healthy(compose: dict, host: dict) -> None:
    services = compose["services"]
    ports = [services[name]["environment"]["AER_RAG_PORT"] for name in ("api-1", "api-2")]
    assert ports[0] != ports[1]
    assert services["proxy"]["environment"]["NGINX_UPSTREAMS"].split() == [f"api-1:{ports[0]}", f"api-2:{ports[1]}"]
    assert host["proxy"]["environment"]["NGINX_UPSTREAMS"].split() == [f"127.0.0.1:{port}" for port in ports]
    assert host["proxy"]["environment"]["NGINX_LISTEN"].startswith("127.0.0.1:")
    assert all(services["proxy"]["depends_on"][name]["condition"] == "service_healthy" for name in ("api-1", "api-2"))
    override = yaml.safe_load((ROOT / "docker-compose.override.yml").read_text())["services"]
    (published,) = override["proxy"]["ports"]
    assert published.startswith("${AER_RAG_PUBLISH_ADDRESS:-127.0.0.1}:")
    assert not any("ports" in override.get(name, {}) for name in SCALE_SERVICES if name != "proxy")


def test_scale_ports_are_distinct_and_clear_of_the_default_profiles(compose: dict) -> None:
    services = compose["services"]
    expressions = [
        services["postgres"]["environment"]["POSTGRES_PORT"],
        services["postgres-replica"]["environment"]["POSTGRES_PORT"],
        services["api-1"]["environment"]["AER_RAG_PORT"],
        services["api-2"]["environment"]["AER_RAG_PORT"],
        services["proxy"]["environment"]["NGINX_LISTEN"],
    ]
    defaults = [int(re.fullmatch(r"\$\{(AER_RAG_[A-Z_0-9]+):-(\d+)\}", value)[2]) for value in expressions]
    assert len(set(defaults)) == len(defaults) and not {8000, 8001} & set(defaults)
    assert len({re.match(r"\$\{(\w+)", value)[1] for value in expressions}) == len(expressions)  # each its own variable


def _nginx_directives(text: str) -> list[tuple[str, list[str]]]:
    """(name, arguments) of every simple directive, comments removed, in order."""
    text = re.sub(r"#[^\n]*", "", text)
    return [(words[0], words[1:]) for statement in re.split(r"[;{}]", text) if (words := statement.split())]


def _size(value: str) -> int:
    return int(value[:-1]) * {"k": 1024, "m": 1024 * 1024}[value[-1].lower()] if value[-1].isalpha() else int(value)


def _seconds(value: str) -> float:
    assert value.endswith("s"), value
    return float(value[:-1])


def test_the_proxy_enforces_the_apps_own_client_limits() -> None:
    from app.config import GenerationQueueSettings, Settings
    from app.limits import ConnectionSettings

    directives = dict(_nginx_directives(NGINX_CONF.read_text()))  # the last of each name (the http level's first)
    all_of = _nginx_directives(NGINX_CONF.read_text())
    limits = ConnectionSettings()
    assert _size(directives["client_max_body_size"][0]) == Settings.model_fields["max_body_bytes"].default
    assert _size(directives["client_body_buffer_size"][0]) >= _size(directives["client_max_body_size"][0])
    count, size = directives["large_client_header_buffers"]
    assert _size(size) == limits.max_header_bytes and int(count) >= 2
    assert _seconds(directives["client_header_timeout"][0]) == limits.header_timeout_s
    assert _seconds(directives["client_body_timeout"][0]) == limits.body_timeout_s
    assert "send_timeout" in directives
    # Idle connections to a replica end before the app's keep-alive closes them (no request on a closing one).
    keepalives = [_seconds(arguments[0]) for name, arguments in all_of if name == "keepalive_timeout"]
    assert min(keepalives) < limits.keep_alive_s
    # Answers: unbuffered (SSE), and allowed the app's whole generation timeout.
    text = NGINX_CONF.read_text()
    ask = re.search(r"location ~ \^/v1/\(ask\|chat/completions\)\$ \{(.*?)\}", text, re.DOTALL)
    assert ask, "no location for /v1/ask"
    ask_directives = dict(_nginx_directives(ask[1]))
    assert ask_directives["proxy_buffering"] == ["off"]
    assert _seconds(ask_directives["proxy_read_timeout"][0]) > GenerationQueueSettings().timeout_s
    # Balancing with passive health, shared by the workers; the replica's address in a response header.
    upstream = re.search(r"upstream aer_rag_api \{(.*?)\}", text, re.DOTALL)[1]
    assert {"least_conn", "zone", "include", "keepalive"} <= {name for name, _ in _nginx_directives(upstream)}
    assert "max_fails=" in (ROOT / "deploy" / "nginx" / "entrypoint.sh").read_text()
    headers = [arguments for name, arguments in all_of if name in ("add_header", "proxy_set_header")]
    assert ["X-Upstream", "$upstream_addr", "always"] in headers and ["X-Forwarded-For", "$remote_addr"] in headers


def test_the_scale_images_build_from_trixie_and_run_without_root() -> None:
    postgres = (ROOT / "deploy" / "postgres" / "Dockerfile").read_text()
    nginx = (ROOT / "deploy" / "nginx" / "Dockerfile").read_text()
    for dockerfile in (postgres, nginx):
        assert "ARG BASE_IMAGE=debian:trixie-slim" in dockerfile and "FROM ${BASE_IMAGE}" in dockerfile
    assert "postgresql-17 postgresql-17-pgvector" in postgres and "USER postgres" in postgres
    assert "USER www-data" in nginx
    entrypoint = (ROOT / "deploy" / "postgres" / "entrypoint.sh").read_text()
    assert "CREATE EXTENSION vector" in entrypoint and "pg_basebackup" in entrypoint and " -R " in entrypoint
    for script in ("deploy/postgres/entrypoint.sh", "deploy/nginx/entrypoint.sh", "deploy/smoke_scale.sh"):
        assert (ROOT / script).stat().st_mode & 0o111, f"{script} is not executable (COPY keeps the mode)"


def test_the_image_copies_every_package_the_service_runs_from() -> None:
    packages = sorted(path.parent.name for path in ROOT.glob("*/__init__.py"))
    served = [name for name in packages if name not in {"tests", "training", "benchmarks"}]
    dockerfile = (ROOT / "Dockerfile").read_text()
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    for name in served:
        assert f"COPY {name} ./{name}" in dockerfile and f"!{name}/" in ignored, name


def test_the_scale_smoke_runs_the_profile_and_checks_replication_balancing_and_a_reingest() -> None:
    assert "deploy/smoke_scale.sh" in (ROOT / "deploy" / "smoke.sh").read_text()
    script = (ROOT / "deploy" / "smoke_scale.sh").read_text()
    assert "--profile scale" in script and "deploy/docker-compose.host.yml" in script
    # Torn down on exit by the cleanup both smoke scripts share.
    assert "source deploy/smoke_common.sh" in script and "trap cleanup EXIT" in script
    assert "down -v" in (ROOT / "deploy" / "smoke_common.sh").read_text()
    checks = ["pg_stat_replication", "pg_is_in_recovery", "X-Upstream", "/readyz", "/v1/search", "/v1/ask"]
    for check in [*checks, "run --rm --no-deps ingest-pg", "/v1/documents/"]:
        assert check in script, check


# --- issue 37: no open API by default, no default password, forwarding headers from the proxy only ---------------

DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")


def _defaults(value: str) -> str:
    """A compose value with every ${VAR:-default} replaced by its default (what a plain `up` gets)."""
    return DEFAULT.sub(lambda match: match[2], value)


def _yaml(name: str) -> dict:
    return yaml.safe_load((ROOT / name).read_text())


def test_no_file_holds_a_default_postgresql_password(compose: dict, host: dict) -> None:
    # Nowhere a password with a default (the old ${AER_RAG_PG_PASSWORD:-aer-rag}), nor one written out.
    files = [
        *COMPOSE_FILES,
        "README.md",
        *(str(path.relative_to(ROOT)) for path in (ROOT / "deploy").rglob("*") if path.is_file()),
    ]
    for name in files:
        text = (ROOT / name).read_text()
        assert "AER_RAG_PG_PASSWORD" not in text and "aer-rag}" not in text, name
        assert not re.search(r"postgresql://aer:(?!…)", text), name  # a DSN's password: only an elided one in docs
    # The primary makes a random password into the pg-secret volume at its first start; the replica, the ingest and
    # the API replicas read it from there, read-only.
    services = compose["services"]
    assert "pg-secret" in compose["volumes"]
    for name in ("postgres", "postgres-replica"):
        environment = services[name]["environment"]
        assert "POSTGRES_PASSWORD" not in environment and environment["POSTGRES_PASSWORD_FILE"] == SECRET
    assert "pg-secret:/run/aer-rag-secret" in services["postgres"]["volumes"]
    for name in ("postgres-replica", "ingest-pg", "api-1", "api-2"):
        assert "pg-secret:/run/aer-rag-secret:ro" in services[name]["volumes"], name
    for command in (services["ingest-pg"]["command"], host["ingest-pg"]["command"],
                    services["api-1"]["command"], services["api-2"]["command"]):  # fmt: skip
        _with_secret(command)
    entrypoint = (ROOT / "deploy" / "postgres" / "entrypoint.sh").read_text()
    assert "POSTGRES_PASSWORD_FILE" in entrypoint and "/dev/urandom" in entrypoint
    assert (
        "install -d -o postgres -g postgres -m 0755 /run/aer-rag-secret"
        in (ROOT / "deploy" / "postgres" / "Dockerfile").read_text()
    )


def test_the_replicas_trust_forwarding_headers_from_the_proxy_only(compose: dict, host: dict) -> None:
    override = _yaml("docker-compose.override.yml")
    # On the compose network (docker-compose.yml with docker-compose.override.yml): the proxy has a fixed address
    # on a network of its own with the replicas, which are on no other network (the proxy reaches them from there).
    network = ipaddress.ip_network(_defaults(override["networks"]["aer-proxy"]["ipam"]["config"][0]["subnet"]))
    proxy_address = _defaults(override["services"]["proxy"]["networks"]["aer-proxy"]["ipv4_address"])
    assert ipaddress.ip_address(proxy_address) in network and "default" in override["services"]["proxy"]["networks"]
    for name in ("api-1", "api-2"):
        environment = compose["services"][name]["environment"]
        assert _defaults(environment["FORWARDED_ALLOW_IPS"]) == proxy_address  # not "*"
        assert json.loads(_defaults(environment["AER_RAG_CONNECTIONS__UNLIMITED_CLIENTS"])) == [proxy_address]
        assert environment["FORWARDED_ALLOW_IPS"] in environment["AER_RAG_CONNECTIONS__UNLIMITED_CLIENTS"]  # one var
        assert override["services"][name]["networks"] == ["aer-proxy"]
    assert "aer-proxy" in override["services"]["postgres-replica"]["networks"]  # what the replicas read
    # On the host's network: nginx connects to the replicas from 127.0.0.2 and they trust that address alone
    # (anyone on the host reaches 127.0.0.1:8101 from 127.0.0.1).
    assert host["proxy"]["environment"]["NGINX_PROXY_BIND"] == "127.0.0.2"
    for name in ("api-1", "api-2"):
        environment = host[name]["environment"]
        assert environment["FORWARDED_ALLOW_IPS"] == "127.0.0.2"
        assert json.loads(environment["AER_RAG_CONNECTIONS__UNLIMITED_CLIENTS"]) == ["127.0.0.2"]
    # The proxy's bind address reaches nginx's configuration (proxy_bind) and nowhere else trusts anyone.
    entrypoint = (ROOT / "deploy" / "nginx" / "entrypoint.sh").read_text()
    assert 'echo "proxy_bind $proxy_bind;"' in entrypoint and "include /tmp/nginx/bind.conf;" in NGINX_CONF.read_text()
    assert compose["services"]["proxy"]["environment"]["NGINX_PROXY_BIND"] == ""
    trusted = [service["environment"]["FORWARDED_ALLOW_IPS"] for name in COMPOSE_FILES
               for service in _yaml(name)["services"].values()
               if "FORWARDED_ALLOW_IPS" in service.get("environment", {})]  # fmt: skip
    assert len(trusted) == 4 and not {"*", "127.0.0.1"} & {_defaults(value) for value in trusted}, trusted


def test_the_api_refuses_an_open_port_without_a_key_and_compose_says_where_it_is_published(compose: dict) -> None:
    # Every API service passes the opt-out through, off unless the user sets it.
    for name in ("api", "api-gpu", "api-1", "api-2"):
        assert compose["services"][name]["environment"]["AER_RAG_ALLOW_NO_KEY"] == "${AER_RAG_ALLOW_NO_KEY:-false}"
        assert "AER_RAG_PUBLISHED_ADDRESS" not in compose["services"][name]["environment"]  # said where published
    # The published address is the address the port is published on (the default `up`: loopback, so it starts;
    # AER_RAG_PUBLISH_ADDRESS=0.0.0.0 without a key: it refuses).
    override = _yaml("docker-compose.override.yml")["services"]
    for name in ("api", "api-gpu", "api-1", "api-2"):
        published = override[name]["environment"]["AER_RAG_PUBLISHED_ADDRESS"]
        assert published == "${AER_RAG_PUBLISH_ADDRESS:-127.0.0.1}" and _defaults(published) == "127.0.0.1"
    assert all(port.startswith("${AER_RAG_PUBLISH_ADDRESS:-127.0.0.1}:")
               for name in ("api", "api-gpu", "proxy") for port in override[name]["ports"])  # fmt: skip
    host = _yaml("deploy/docker-compose.host.yml")["services"]
    assert host["api"]["environment"]["AER_RAG_PUBLISHED_ADDRESS"] == "127.0.0.1"
    assert host["api-1"]["environment"]["AER_RAG_HOST"] == host["api-1"]["environment"]["AER_RAG_PUBLISHED_ADDRESS"]
    from app.config import Settings

    assert Settings.model_fields["allow_no_key"].default is False
    assert "`AER_RAG_ALLOW_NO_KEY`" in (ROOT / "docs" / "settings.md").read_text()
