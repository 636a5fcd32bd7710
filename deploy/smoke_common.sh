# What deploy/smoke.sh and deploy/smoke_scale.sh share: sourced by each after it sets SMOKE_NAME (the log's
# prefix), COMPOSE (its docker-compose command) and WORK (its scratch directory).

log() { printf '[%s] %s\n' "$SMOKE_NAME" "$*"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

cleanup() {  # the EXIT trap: on failure the containers' last log lines, then everything this run started goes
    local status=$?
    if [ "$status" -ne 0 ]; then  # before `down`, which removes the containers and their logs
        log "FAILED; the last lines of the containers' logs:"
        "${COMPOSE[@]}" logs --tail 40 2>/dev/null || true
    fi
    "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
    [ -n "${WHEEL_SERVER:-}" ] && kill "$WHEEL_SERVER" 2>/dev/null || true  # smoke.sh's wheel server
    rm -rf "$WORK"
}
