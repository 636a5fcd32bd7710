#!/usr/bin/env bash
# The PostgreSQL container's start: a primary (initdb on first start, roles, database, pgvector) or a streaming
# read replica (a base backup of the primary on first start), then the server in the foreground as PID 1.
#
# Environment (defaults in brackets):
#   POSTGRES_ROLE                  primary | replica                                  [primary]
#   POSTGRES_PORT                  the port to listen on (each compose service has its own: host networking)  [5432]
#   POSTGRES_LISTEN_ADDRESSES      listen_addresses: '*' on a compose network, 127.0.0.1 on the host's   [*]
#   POSTGRES_HBA_ADDRESS           which clients may connect over TCP (a pg_hba address: samenet, a CIDR)  [samenet]
#   POSTGRES_USER, POSTGRES_DB     the service's role and its database, which gets CREATE EXTENSION vector  [aer]
#   POSTGRES_PASSWORD              that role's password; with one, TCP clients need scram-sha-256, without one
#                                  they are trusted (a warning says so)
#   POSTGRES_PASSWORD_FILE         (without POSTGRES_PASSWORD) a file holding it; a primary whose file is missing
#                                  writes a random one there first (compose: the pg-secret volume, read by the
#                                  replica, the ingest and the API replicas)
#   POSTGRES_REPLICATION_USER      the role replicas stream as                        [replicator]
#   POSTGRES_REPLICATION_PASSWORD  its password                                       [POSTGRES_PASSWORD]
#   POSTGRES_PRIMARY_HOST, POSTGRES_PRIMARY_PORT   (replica) where the primary is      [postgres, 5432]
#   POSTGRES_REPLICA_NAME          (replica) its application_name in the primary's pg_stat_replication [hostname]
# Arguments are passed on to `postgres` (e.g. -c shared_buffers=1GB).
set -euo pipefail

ROLE=${POSTGRES_ROLE:-primary}
PORT=${POSTGRES_PORT:-5432}
LISTEN=${POSTGRES_LISTEN_ADDRESSES:-*}
HBA_ADDRESS=${POSTGRES_HBA_ADDRESS:-samenet}
DB_USER=${POSTGRES_USER:-aer}
DB_NAME=${POSTGRES_DB:-aer}
PASSWORD=${POSTGRES_PASSWORD:-}
PASSWORD_FILE=${POSTGRES_PASSWORD_FILE:-}
REPL_USER=${POSTGRES_REPLICATION_USER:-replicator}
: "${PGDATA:?PGDATA must name the data directory}"

log() { printf 'aer-rag-postgres (%s): %s\n' "$ROLE" "$*" >&2; }

if [ -z "$PASSWORD" ] && [ -n "$PASSWORD_FILE" ]; then
    if [ ! -s "$PASSWORD_FILE" ] && [ "$ROLE" = primary ]; then
        # 32 random bytes as hex: nothing to URL-encode. Readable by the other containers' users (0644), which
        # mount the volume read-only; written whole before anyone reads it.
        (umask 022 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$PASSWORD_FILE.tmp" && mv "$PASSWORD_FILE.tmp" "$PASSWORD_FILE")
        log "wrote a random password to $PASSWORD_FILE"
    fi
    [ -s "$PASSWORD_FILE" ] || { log "no password in $PASSWORD_FILE (the primary writes it at its first start)"; exit 2; }
    PASSWORD=$(cat "$PASSWORD_FILE")
fi
REPL_PASSWORD=${POSTGRES_REPLICATION_PASSWORD:-$PASSWORD}

if [ -n "$PASSWORD" ]; then
    AUTH=scram-sha-256
else
    AUTH=trust
    log "WARNING: no POSTGRES_PASSWORD: every TCP client from '$HBA_ADDRESS' is trusted without one"
fi

init_primary() {
    log "first start: initdb in $PGDATA"
    # C.UTF-8: byte order, no dependence on the image's locales; the database's text is UTF-8 like the corpus.
    initdb -D "$PGDATA" -U postgres --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host="$AUTH" >/dev/null
    # Only this container's processes reach the socket (trust); everyone else comes over TCP, and only from
    # HBA_ADDRESS: the service's role to its database, the replication role to stream WAL.
    cat >"$PGDATA/pg_hba.conf" <<EOF
# Written by aer-rag-postgres at initdb (deploy/postgres/entrypoint.sh).
# TYPE  DATABASE     USER           ADDRESS         METHOD
local   all          all                            trust
host    all          all            $HBA_ADDRESS    $AUTH
host    replication  $REPL_USER     $HBA_ADDRESS    $AUTH
EOF
    # A server on the socket only while the roles are made: no client can connect before the passwords exist.
    pg_ctl -D "$PGDATA" -w -s -o "-c listen_addresses='' -c port=$PORT" start
    psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres -p "$PORT" \
        -v user="$DB_USER" -v db="$DB_NAME" -v repl_user="$REPL_USER" \
        -v password="$PASSWORD" -v repl_password="$REPL_PASSWORD" <<'SQL'
CREATE ROLE :"user" LOGIN;
CREATE ROLE :"repl_user" LOGIN REPLICATION;
SELECT :'password' <> '' AS has_password \gset
\if :has_password
ALTER ROLE :"user" PASSWORD :'password';
\endif
SELECT :'repl_password' <> '' AS has_repl_password \gset
\if :has_repl_password
ALTER ROLE :"repl_user" PASSWORD :'repl_password';
\endif
CREATE DATABASE :"db" OWNER :"user";
\connect :"db"
-- pgvector needs a superuser to be created; the service's role then uses it (and may say IF NOT EXISTS).
CREATE EXTENSION vector;
SQL
    pg_ctl -D "$PGDATA" -w -s -m fast stop
    log "made role '$DB_USER', database '$DB_NAME' with pgvector, replication role '$REPL_USER'"
}

init_replica() {
    local host=${POSTGRES_PRIMARY_HOST:-postgres} port=${POSTGRES_PRIMARY_PORT:-5432}
    log "first start: waiting for the primary at $host:$port"
    for _ in $(seq 120); do
        pg_isready -q -h "$host" -p "$port" && break
        sleep 1
    done
    # -R writes standby.signal and primary_conninfo (this same connection) into the copy: it starts as a hot
    # standby that streams from the primary. -X stream: the WAL written during the copy comes along with it.
    log "pg_basebackup from $host:$port"
    # application_name: the name this replica has in the primary's pg_stat_replication.
    PGPASSWORD=$REPL_PASSWORD pg_basebackup -D "$PGDATA" -R -X stream --checkpoint=fast --no-password \
        -d "host=$host port=$port user=$REPL_USER application_name=${POSTGRES_REPLICA_NAME:-$(hostname)}"
}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    # A half-made data directory (a failed first start) would be taken for a finished one next time: remove it.
    trap 'status=$?; [ "$status" -eq 0 ] || { log "first start failed; emptying $PGDATA"; find "$PGDATA" -mindepth 1 -delete; }' EXIT
    case "$ROLE" in
        primary) init_primary ;;
        replica) init_replica ;;
        *) log "POSTGRES_ROLE must be primary or replica, not '$ROLE'"; exit 2 ;;
    esac
    trap - EXIT
fi

# Settings given here rather than written to postgresql.conf: a replica's copy of the primary's file would
# otherwise carry the primary's port and listen addresses.
#   wal_keep_size: WAL kept for a replica that fell behind (no replication slot: a slot of a replica that is gone
#     would keep WAL forever and fill the primary's disk).
#   hot_standby_feedback: the primary's vacuum spares rows a replica's running search still reads.
log "starting on ${LISTEN}:${PORT}"
exec postgres -D "$PGDATA" -c port="$PORT" -c listen_addresses="$LISTEN" \
    -c wal_keep_size=512MB -c hot_standby_feedback=on "$@"
