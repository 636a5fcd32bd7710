#!/usr/bin/env bash
# Build the image and run the compose file as a user would, then check the service answers; CI runs this.
#
#   sudo deploy/smoke.sh            (needs root: it may install docker.io, docker-compose and debootstrap)
#
# 1. Installs the Docker engine and docker-compose (Debian's) when missing and starts the daemon if none runs.
#    If the daemon truly cannot start here, it says so in one loud line and exits 0; any later failure fails.
# 2. Uses python:3.11-slim when it can be pulled; otherwise makes a Debian bookworm base with debootstrap.
# 3. Serves the machine's CPU torch wheel (find / -name 'torch-2.13.0+cpu*.whl') on loopback to the build, and
#    passes the machine's extra CA certificates (a TLS-intercepting proxy in front of PyPI) to pip.
# 4. Checks the image refuses to serve beyond loopback without a key (exit 2, one line); `up`s the ingest job on
#    a sample of the corpus, then the API, through docker-compose.yml with the host network override; waits for
#    healthy; checks /readyz, /v1/search and a streamed /v1/ask; `down -v`.
# 5. Runs deploy/smoke_scale.sh (unless SMOKE_SCALE=0): the `scale` profile (PostgreSQL primary and replica, two API replicas, nginx)
#    with the same app image, its PostgreSQL and nginx images built from a Debian trixie base (debian:trixie-slim
#    when it can be pulled, else made with debootstrap like the bookworm one).
set -euo pipefail
cd "$(dirname "$0")/.."

SAMPLE_ROWS=${SMOKE_SAMPLE_ROWS:-120}
CORPUS=${SMOKE_CORPUS:-../shared/data/aer_abstracts.csv}
WORK=$(mktemp -d /tmp/aer-rag-smoke.XXXXXX)
PROJECT=aer-rag-smoke
COMPOSE=(docker-compose -p "$PROJECT" -f docker-compose.yml -f deploy/docker-compose.host.yml)
LOUD="DOCKER SMOKE TEST NOT RUN"

SMOKE_NAME=smoke
source deploy/smoke_common.sh  # log, free_port, cleanup

# --- 1. engine and daemon -------------------------------------------------------------------------------
install_if_missing() {  # command package...
    local command=$1; shift
    command -v "$command" >/dev/null 2>&1 && return 0
    log "installing $*"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
if ! docker info >/dev/null 2>&1; then
    install_if_missing dockerd docker.io || { echo "$LOUD: docker.io cannot be installed here."; exit 0; }
fi
install_if_missing docker-compose docker-compose
if ! docker info >/dev/null 2>&1; then
    log "starting dockerd"
    (dockerd >"$WORK/dockerd.log" 2>&1 &)
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    if ! docker info >/dev/null 2>&1; then
        echo "$LOUD: the Docker daemon cannot start on this machine ($(tail -n 1 "$WORK/dockerd.log"))."
        exit 0
    fi
fi

trap cleanup EXIT

# --- 2. base image --------------------------------------------------------------------------------------
if docker pull -q python:3.11-slim >/dev/null 2>&1; then
    export AER_RAG_BASE_IMAGE=python:3.11-slim
else
    export AER_RAG_BASE_IMAGE=aer-rag-base:bookworm
    if ! docker image inspect "$AER_RAG_BASE_IMAGE" >/dev/null 2>&1; then
        install_if_missing debootstrap debootstrap
        log "python:3.11-slim cannot be pulled: making $AER_RAG_BASE_IMAGE with debootstrap"
        debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$WORK/rootfs" \
            http://deb.debian.org/debian >/dev/null
        tar -C "$WORK/rootfs" -c . | docker import - "$AER_RAG_BASE_IMAGE" >/dev/null
    fi
fi
log "base image: $AER_RAG_BASE_IMAGE"

# The scale profile's PostgreSQL 17 + pgvector and nginx come from Debian 13 (trixie)'s archive.
if docker pull -q debian:trixie-slim >/dev/null 2>&1; then
    export AER_RAG_TRIXIE_IMAGE=debian:trixie-slim
else
    export AER_RAG_TRIXIE_IMAGE=aer-rag-base:trixie
    if ! docker image inspect "$AER_RAG_TRIXIE_IMAGE" >/dev/null 2>&1; then
        install_if_missing debootstrap debootstrap
        [ -e /usr/share/debootstrap/scripts/trixie ] \
            || { log "this debootstrap does not know trixie (bookworm's 1.0.128 does): upgrade it"; exit 1; }
        # trixie's Release files are signed with keys bookworm's keyring has from 2023.3+deb12u1 on.
        keyring=$(dpkg-query -W -f '${Version}' debian-archive-keyring 2>/dev/null || echo 0)
        if ! dpkg --compare-versions "$keyring" ge 2023.3+deb12u1; then
            log "updating debian-archive-keyring ($keyring) for trixie's signing keys"
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debian-archive-keyring >/dev/null
        fi
        log "debian:trixie-slim cannot be pulled: making $AER_RAG_TRIXIE_IMAGE with debootstrap"
        debootstrap --variant=minbase --include=ca-certificates trixie "$WORK/trixie" http://deb.debian.org/debian \
            >/dev/null
        rm -rf "$WORK/trixie/var/cache/apt/archives/"*.deb "$WORK/trixie/var/lib/apt/lists/"*  # the images update
        tar -C "$WORK/trixie" -c . | docker import - "$AER_RAG_TRIXIE_IMAGE" >/dev/null
    fi
fi
log "trixie image: $AER_RAG_TRIXIE_IMAGE"

# --- 3. torch wheel and CA certificates for the build ----------------------------------------------------
WHEEL=$(find / -xdev -name 'torch-2.13.0+cpu*.whl' 2>/dev/null | head -n 1 || true)
if [ -n "$WHEEL" ]; then
    # A fixed port when free: the URL is a build argument, and a new one would void Docker's layer cache.
    WHEEL_PORT=47113
    python3 -c "import socket; socket.socket().bind(('127.0.0.1', $WHEEL_PORT))" 2>/dev/null || WHEEL_PORT=$(free_port)
    python3 -m http.server --bind 127.0.0.1 --directory "$(dirname "$WHEEL")" "$WHEEL_PORT" >/dev/null 2>&1 &
    WHEEL_SERVER=$!
    export TORCH_FIND_LINKS="http://127.0.0.1:$WHEEL_PORT/"
    log "serving $(basename "$WHEEL") to the build on $TORCH_FIND_LINKS"
fi
EXTRA_CA_CERT=$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true)
export EXTRA_CA_CERT

# --- 4. build, ingest a sample, serve, check -------------------------------------------------------------
log "building the image"
"${COMPOSE[@]}" build ingest
# Published on every address without AER_RAG_API_KEY: the server refuses to start, before loading anything.
status=0
refusal=$(docker run --rm --network none -e AER_RAG_PUBLISHED_ADDRESS=0.0.0.0 aer-rag:latest 2>&1) || status=$?
[ "$status" = 2 ] && [[ "$refusal" == "aer-rag cannot start: the API is reachable on 0.0.0.0 and needs no key"* ]] \
    || { log "the image served on 0.0.0.0 without a key (exit $status): $refusal"; exit 1; }
log "without a key on 0.0.0.0 the image refuses to start: $refusal"
mkdir -p "$WORK/corpus"
python3 - "$CORPUS" "$WORK/corpus/aer_abstracts.csv" "$SAMPLE_ROWS" <<'PY'
import csv, sys
source, target, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(source, newline="", encoding="utf-8") as handle, open(target, "w", newline="", encoding="utf-8") as out:
    reader, writer = csv.reader(handle), csv.writer(out)
    for number, row in enumerate(reader):
        if number > rows:
            break
        writer.writerow(row)
PY
chmod -R a+rX "$WORK/corpus"
export AER_CORPUS_DIR="$WORK/corpus" AER_RAG_PORT
AER_RAG_PORT=$(free_port)
log "ingesting $SAMPLE_ROWS rows, then serving on 127.0.0.1:$AER_RAG_PORT"
"${COMPOSE[@]}" up -d api
BASE="http://127.0.0.1:$AER_RAG_PORT"
for _ in $(seq 120); do
    state=$(docker inspect -f '{{.State.Health.Status}}' "$("${COMPOSE[@]}" ps -q api)" 2>/dev/null || echo starting)
    [ "$state" = healthy ] && break
    sleep 5
done
[ "$state" = healthy ] || { log "the API did not become healthy ($state)"; exit 1; }
log "healthy"

python3 - "$BASE" <<'PY'
import json, sys, urllib.request
base = sys.argv[1]

def post(path, body):
    request = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return urllib.request.urlopen(request, timeout=300)

ready = json.load(urllib.request.urlopen(base + "/readyz", timeout=10))
assert ready["status"] == "ready" and ready["chunks"] > 0, ready
results = json.load(post("/v1/search", {"query": "monetary policy and interest rates", "top_k": 5}))["results"]
assert results and results[0]["document"]["title"], results
events = post("/v1/ask", {"query": "What do these papers find about prices?", "stream": True}).read().decode()
names = [line.removeprefix("event: ") for line in events.splitlines() if line.startswith("event: ")]
assert names[0] == "passages" and names[-1] == "done", names
done = json.loads(events.strip().split("\n")[-1].removeprefix("data: "))
print(f"[smoke] /readyz: {ready['chunks']} chunks; /v1/search: {len(results)} results; "
      f"/v1/ask streamed {names.count('delta')} deltas, coverage {done['coverage']}")
PY
log "passed"

# --- 5. the scale profile, with the same app image ------------------------------------------------------------
"${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1  # its memory back before the next six services start
if [ "${SMOKE_SCALE:-1}" = 1 ]; then
    SMOKE_SAMPLE_ROWS=$SAMPLE_ROWS SMOKE_CORPUS=$CORPUS deploy/smoke_scale.sh
else
    log "SMOKE_SCALE=0: the scale profile's smoke test (deploy/smoke_scale.sh) skipped"
fi
