#!/usr/bin/env bash
# The `scale` compose profile, run as a user would and checked: PostgreSQL primary + streaming read replica, one
# ingest into the primary, two API replicas reading from the replica, nginx in front. deploy/smoke.sh runs this
# after its own check, with the app image built and these exported:
#   AER_RAG_TRIXIE_IMAGE   a Debian 13 image to build the PostgreSQL and nginx images from (debootstrap'd there)
#   SMOKE_CORPUS, SMOKE_SAMPLE_ROWS   the corpus and the rows of the first ingest (then SMOKE_ADDED_ROWS more)
# On its own (as root, Docker running, `aer-rag:latest` built):  deploy/smoke_scale.sh
#
# Checks, on the host's network (deploy/docker-compose.host.yml; every service on its own free 127.0.0.1 port):
#   - the replica streams from the primary (pg_stat_replication) and is read-only (pg_is_in_recovery);
#   - /readyz on each API replica directly; requests through the proxy reach both (its X-Upstream header);
#     /v1/search through the proxy has results; a streamed /v1/ask comes through the proxy as SSE;
#     the proxy refuses a body over the app's limit (413) and a header over its limit, without a replica;
#   - the replicas trust X-Forwarded-For from the proxy alone: a client of api-1 that sends one of its own per
#     request still runs out of its rate limit, and the requests the proxy then sends api-1 for that client
#     (same address, forwarded) are limited too;
#   - the PostgreSQL password is the random one the primary wrote into the pg-secret volume (no file holds one);
#   - with api-2 stopped, the proxy answers every request from api-1 (passive health, retry on refusal);
#   - the APIs read from the replica, not the primary;
#   - an ingest of SMOKE_ADDED_ROWS more rows (`run ingest-pg` again) becomes visible on both replicas, without a
#     restart, within SMOKE_VISIBLE_WITHIN_S: a document only in the added rows is found.
# The app image's `python -m app` and `python -m indexing` must take `--backend postgres` (an image without it is
# stale: a failure).
set -euo pipefail
cd "$(dirname "$0")/.."

SAMPLE_ROWS=${SMOKE_SAMPLE_ROWS:-120}
ADDED_ROWS=${SMOKE_ADDED_ROWS:-40}
CORPUS=${SMOKE_CORPUS:-../shared/data/aer_abstracts.csv}
VISIBLE_WITHIN_S=${SMOKE_VISIBLE_WITHIN_S:-60}
export AER_RAG_TRIXIE_IMAGE=${AER_RAG_TRIXIE_IMAGE:-debian:trixie-slim}
APP_IMAGE=aer-rag:latest
WORK=$(mktemp -d /tmp/aer-rag-smoke-scale.XXXXXX)
PROJECT=aer-rag-smoke-scale
COMPOSE=(docker-compose -p "$PROJECT" --profile scale -f docker-compose.yml -f deploy/docker-compose.host.yml)
SMOKE_NAME=smoke-scale
source deploy/smoke_common.sh  # log, free_port, cleanup
trap cleanup EXIT

wait_healthy() {  # service... : each one's container reports healthy within 5 minutes
    local service state
    for service in "$@"; do
        for _ in $(seq 150); do
            state=$(docker inspect -f '{{.State.Health.Status}}' "$("${COMPOSE[@]}" ps -q "$service")" 2>/dev/null \
                || echo starting)
            [ "$state" = healthy ] && break
            sleep 2
        done
        [ "$state" = healthy ] || { log "$service did not become healthy ($state)"; return 1; }
    done
}

quietly() {  # command...: its output only when it fails
    "$@" >"$WORK/output.log" 2>&1 || { local status=$?; tail -n 40 "$WORK/output.log"; return "$status"; }
}

sql() {  # service port query: one psql query in that container, as postgres over its socket; rows as a|b
    docker exec "$("${COMPOSE[@]}" ps -q "$1")" psql -X -A -t -q -v ON_ERROR_STOP=1 -U postgres -d aer -p "$2" -c "$3"
}

forwarded_trust() {  # X-Forwarded-For counts from the proxy (127.0.0.2, NGINX_PROXY_BIND), not from anyone else
    python3 - "$AER_RAG_PROXY_PORT" "$AER_RAG_API_1_PORT" "$OLD_DOC" <<'PY'
import sys, urllib.error, urllib.request
proxy, api_1, doc = sys.argv[1:]

def status(port, forwarded=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/documents/{doc}",
                                     headers={"X-Forwarded-For": forwarded} if forwarded else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers.get("X-Upstream")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("X-Upstream")

# Straight to api-1 from 127.0.0.1, a new made-up address in each request: were the header trusted, each would be
# a client of its own with a full bucket (30 at once); it is not, so 127.0.0.1's bucket runs out.
direct = [status(api_1, f"203.0.113.{n}")[0] for n in range(40)]
assert set(direct) <= {200, 429} and direct.count(429) >= 5, direct
# Through the proxy, this same client's requests reach api-1 as 127.0.0.1 (the proxy's X-Forwarded-For, trusted
# from 127.0.0.2): limited with that empty bucket. Had api-1 not trusted the proxy, they would all be 200.
through = [status(proxy, "198.51.100.7") for _ in range(8)]
on_api_1 = [code for code, upstream in through if upstream.rsplit(":", 1)[1] == api_1]
assert on_api_1 and 429 in on_api_1, through
print(f"[smoke-scale] X-Forwarded-For: ignored from a client of api-1 ({direct.count(429)} of 40 spoofed requests "
      f"limited), trusted from the proxy ({on_api_1.count(429)} of {len(on_api_1)} forwarded to api-1 limited)")
PY
}

failover() {  # with api-2 stopped, every request through the proxy is still answered, by api-1
    log "stopping api-2: the proxy must answer everything from api-1"
    quietly "${COMPOSE[@]}" stop api-2
    python3 - "$AER_RAG_PROXY_PORT" "$AER_RAG_API_1_PORT" <<'PY'
import json, sys, urllib.request
proxy, api_1 = sys.argv[1:]
for _ in range(6):
    with urllib.request.urlopen(f"http://127.0.0.1:{proxy}/readyz", timeout=30) as response:
        assert json.load(response)["status"] == "ready"
        # X-Upstream lists every replica tried: api-2's refused connection, then api-1's answer
        assert response.headers["X-Upstream"].rsplit(":", 1)[1] == api_1, response.headers["X-Upstream"]
print("[smoke-scale] api-2 stopped: 6 of 6 requests through the proxy answered by api-1")
PY
}

sample() {  # rows: the corpus's header and its first `rows` rows, as the corpus the containers read
    python3 - "$CORPUS" "$WORK/corpus/aer_abstracts.csv" "$1" <<'PY'
import csv, sys
source, target, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(source, newline="", encoding="utf-8") as handle, open(target + ".tmp", "w", newline="", encoding="utf-8") as out:
    reader, writer = csv.reader(handle), csv.writer(out)
    for number, row in enumerate(reader):
        if number > rows:
            break
        writer.writerow(row)
PY
    mv "$WORK/corpus/aer_abstracts.csv.tmp" "$WORK/corpus/aer_abstracts.csv"  # the ingest never reads half a file
    chmod -R a+rX "$WORK/corpus"
}

# --- ports, password, corpus, images ----------------------------------------------------------------------
export AER_RAG_PG_PORT AER_RAG_PG_REPLICA_PORT AER_RAG_API_1_PORT AER_RAG_API_2_PORT AER_RAG_PROXY_PORT
AER_RAG_PG_PORT=$(free_port); AER_RAG_PG_REPLICA_PORT=$(free_port)
AER_RAG_API_1_PORT=$(free_port); AER_RAG_API_2_PORT=$(free_port); AER_RAG_PROXY_PORT=$(free_port)
export AER_CORPUS_DIR="$WORK/corpus"  # (no PostgreSQL password to choose: the primary makes one)
mkdir -p "$WORK/corpus"
sample "$SAMPLE_ROWS"

# A document of the first sample (found from the start) and one only in the added rows (found after the second
# ingest): the ids the service gives them (the DOI), from rows with a title and an abstract.
read -r OLD_DOC NEW_DOC < <(python3 - "$CORPUS" "$SAMPLE_ROWS" "$ADDED_ROWS" <<'PY'
import csv, sys
source, rows, added = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(source, newline="", encoding="utf-8") as handle:
    records = list(csv.DictReader(handle))
usable = lambda r: r["doi"].strip() and r["title"].strip() and len(r["abstract"].strip()) > 200
first = [r["doi"].strip() for r in records[:rows] if usable(r)]
later = [r["doi"].strip() for r in records[rows:rows + added] if usable(r) and r["doi"].strip() not in first]
print(first[-1], later[-1])
PY
)
log "a document of the first $SAMPLE_ROWS rows: $OLD_DOC; one only in the $ADDED_ROWS added rows: $NEW_DOC"

docker image inspect "$APP_IMAGE" >/dev/null 2>&1 || { log "$APP_IMAGE is not built (deploy/smoke.sh builds it)"; exit 1; }
log "building the PostgreSQL and nginx images from $AER_RAG_TRIXIE_IMAGE"
"${COMPOSE[@]}" build -q postgres proxy

for module in app indexing; do
    docker run --rm "$APP_IMAGE" python -m "$module" --help | grep -q -- '--backend' \
        || { log "$APP_IMAGE: python -m $module takes no --backend (a stale image?)"; exit 1; }
done

# --- up ------------------------------------------------------------------------------------------------------
log "up: postgres, postgres-replica, ingest-pg ($SAMPLE_ROWS rows), api-1, api-2, proxy"
"${COMPOSE[@]}" up -d proxy
wait_healthy postgres postgres-replica api-1 api-2 proxy
log "healthy"

# --- PostgreSQL: streaming, read-only replica -------------------------------------------------------------------
replication=$(sql postgres "$AER_RAG_PG_PORT" "SELECT application_name || '|' || state FROM pg_stat_replication")
[ "$replication" = "postgres-replica|streaming" ] || { log "pg_stat_replication on the primary: '$replication'"; exit 1; }
[ "$(sql postgres-replica "$AER_RAG_PG_REPLICA_PORT" "SELECT pg_is_in_recovery()")" = t ] \
    || { log "the replica is not in recovery"; exit 1; }
[ "$(sql postgres-replica "$AER_RAG_PG_REPLICA_PORT" "SELECT count(*) FROM pg_extension WHERE extname = 'vector'")" = 1 ] \
    || { log "no pgvector in the replica's database"; exit 1; }
# The password: the one the primary wrote into the pg-secret volume, 64 hex digits (none in the compose files).
PG_PASSWORD=$(docker exec "$("${COMPOSE[@]}" ps -q postgres)" cat /run/aer-rag-secret/pg-password)
[[ "$PG_PASSWORD" =~ ^[0-9a-f]{64}$ ]] || { log "the generated PostgreSQL password is not 64 hex digits"; exit 1; }
# A write on the primary is read on the replica (the API's TCP role and that password, over the host's loopback).
PGPASSWORD=$PG_PASSWORD docker exec -e PGPASSWORD "$("${COMPOSE[@]}" ps -q postgres)" psql -X -q -v ON_ERROR_STOP=1 \
    -h 127.0.0.1 -p "$AER_RAG_PG_PORT" -U aer -d aer \
    -c "CREATE TABLE smoke_replication (v vector(3)); INSERT INTO smoke_replication VALUES ('[1,2,3]')"
for _ in $(seq 20); do
    seen=$(sql postgres-replica "$AER_RAG_PG_REPLICA_PORT" \
        "SELECT v::text FROM smoke_replication" 2>/dev/null || true)
    [ "$seen" = "[1,2,3]" ] && break
    sleep 0.5
done
[ "$seen" = "[1,2,3]" ] || { log "a row written on the primary did not reach the replica"; exit 1; }
sql postgres "$AER_RAG_PG_PORT" "DROP TABLE smoke_replication" >/dev/null
log "PostgreSQL: postgres-replica streaming from the primary, read-only, pgvector there; a write replicated"

# --- the APIs, directly and through the proxy -----------------------------------------------------------------
python3 - "$AER_RAG_PROXY_PORT" "$AER_RAG_API_1_PORT" "$AER_RAG_API_2_PORT" "$OLD_DOC" <<'PY'
import http.client, json, sys, time, urllib.error, urllib.request
proxy, api_1, api_2, old_doc = sys.argv[1:]
through = f"http://127.0.0.1:{proxy}"

def get(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.headers, json.load(response)

def post(url, body, timeout=300):
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return urllib.request.urlopen(request, timeout=timeout)

for port in (api_1, api_2):
    _, ready = get(f"http://127.0.0.1:{port}/readyz")
    assert ready["status"] == "ready", (port, ready)
upstreams = [get(f"{through}/readyz")[0]["X-Upstream"] for _ in range(8)]
assert {u.rsplit(":", 1)[1] for u in upstreams} == {api_1, api_2}, upstreams

response = post(f"{through}/v1/search", {"query": "monetary policy and interest rates", "top_k": 5})
results = json.load(response)["results"]
assert results and results[0]["document"]["title"], results
headers, document = get(f"{through}/v1/documents/{old_doc}")  # the same documents as the corpus's sample
assert document, old_doc

# Through the proxy, the answer streams as Server-Sent Events, each as the replica writes it (proxy_buffering off
# for /v1/ask): the passages arrive well before the end of the answer, not together with it.
stream = post(f"{through}/v1/ask", {"query": "What do these papers find about prices?", "stream": True})
assert stream.headers["Content-Type"].startswith("text/event-stream"), stream.headers
arrivals = [(time.monotonic(), line.decode().rstrip("\n")) for line in stream]
names = [line.removeprefix("event: ") for _, line in arrivals if line.startswith("event: ")]
assert names[0] == "passages" and names[-1] == "done", names
first, last = (next(at for at, line in arrivals if line == f"event: {name}") for name in ("passages", "done"))
assert last - first > 0.2, f"the stream came in one piece ({last - first:.3f} s from passages to done): buffered?"

# The proxy's limits: the app's (64 KiB bodies; 16 KiB a header), refused by nginx before a replica sees them.
def status(path, body=None, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", int(proxy), timeout=30)
    connection.request("POST" if body is not None else "GET", path, body=body, headers=headers or {})
    response = connection.getresponse()
    response.read()
    return response.status, response.getheader("X-Upstream")
assert status("/v1/search", b"x" * (64 * 1024 + 1), {"Content-Type": "application/json"}) == (413, None)
assert status("/readyz", headers={"X-Padding": "a" * (16 * 1024 + 1)})[0] == 400
print(f"[smoke-scale] /readyz on both replicas; through the proxy: {len(upstreams)} requests reached "
      f"{sorted(set(upstreams))}; /v1/search {len(results)} results; /v1/ask streamed {names.count('delta')} "
      f"deltas over {last - first:.1f} s; 413 and 400 from the proxy at the app's limits")
PY

# --- the APIs read the replica; a larger ingest shows on both without a restart ------------------------------
on_primary=$(sql postgres "$AER_RAG_PG_PORT" \
    "SELECT count(*) FROM pg_stat_activity WHERE usename = 'aer' AND backend_type = 'client backend'")
[ "$on_primary" = 0 ] || { log "$on_primary sessions of the API role on the primary: the APIs should read the replica"; exit 1; }
for port in "$AER_RAG_API_1_PORT" "$AER_RAG_API_2_PORT"; do  # not there yet: the check below means something
    code=$(python3 -c 'import sys, urllib.error, urllib.request
try: print(urllib.request.urlopen(sys.argv[1], timeout=10).status)
except urllib.error.HTTPError as error: print(error.code)' "http://127.0.0.1:$port/v1/documents/$NEW_DOC")
    [ "$code" = 404 ] || { log "$NEW_DOC on 127.0.0.1:$port before the second ingest: $code, not 404"; exit 1; }
done
started() { docker inspect -f '{{.State.StartedAt}}' "$("${COMPOSE[@]}" ps -q api-1)" "$("${COMPOSE[@]}" ps -q api-2)"; }
before=$(started)

sample $((SAMPLE_ROWS + ADDED_ROWS))
log "ingesting $((SAMPLE_ROWS + ADDED_ROWS)) rows into the primary while the replicas serve"
quietly "${COMPOSE[@]}" run --rm --no-deps ingest-pg
python3 - "$AER_RAG_API_1_PORT" "$AER_RAG_API_2_PORT" "$NEW_DOC" "$VISIBLE_WITHIN_S" <<'PY'
import json, sys, time, urllib.error, urllib.request
api_1, api_2, new_doc, within = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
start, waiting = time.monotonic(), {api_1, api_2}
while waiting and time.monotonic() - start < within:
    for port in sorted(waiting):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/documents/{new_doc}", timeout=10).read()
            waiting.discard(port)
        except urllib.error.HTTPError as error:
            assert error.code == 404, (port, error.code)
    time.sleep(2)
assert not waiting, f"{new_doc} not found on 127.0.0.1:{sorted(waiting)} {within:.0f} s after the ingest"
print(f"[smoke-scale] the added rows' {new_doc} found on both replicas {time.monotonic() - start:.0f} s after the ingest")
PY
[ "$(started)" = "$before" ] || { log "an API replica restarted during the re-ingest"; exit 1; }
forwarded_trust
failover
log "passed"
