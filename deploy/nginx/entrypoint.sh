#!/bin/sh
# Writes the two parts of nginx.conf that depend on where things run, then runs nginx in the foreground.
#   NGINX_LISTEN        what nginx listens on: a port (8080) or address:port (127.0.0.1:8100 on the host's network)
#   NGINX_UPSTREAMS     the API replicas, host:port separated by spaces ("api-1:8000 api-2:8000")
#   NGINX_PROXY_BIND    the source address of the connections to the replicas (proxy_bind), which trust
#                       X-Forwarded-For from it alone; empty: the kernel's choice                    [empty]
#   NGINX_MAX_FAILS, NGINX_FAIL_TIMEOUT   passive health: a replica that failed (refused, reset, timed out) this
#                       many times within the timeout gets no requests for that long             [2, 10s]
set -eu
: "${NGINX_LISTEN:?NGINX_LISTEN: a port or address:port}"
: "${NGINX_UPSTREAMS:?NGINX_UPSTREAMS: the API replicas as host:port, separated by spaces}"
max_fails=${NGINX_MAX_FAILS:-2}
fail_timeout=${NGINX_FAIL_TIMEOUT:-10s}
proxy_bind=${NGINX_PROXY_BIND:-}

# Values go into nginx's configuration as written: allow only what an address, a port or a duration is made of.
for value in "$NGINX_LISTEN" $NGINX_UPSTREAMS "$max_fails" "$fail_timeout" "$proxy_bind"; do
    case "$value" in
        *[!A-Za-z0-9.:_\[\]-]*) echo "aer-rag-proxy: refusing the setting '$value'" >&2; exit 2 ;;
    esac
done

mkdir -p /tmp/nginx
echo "listen $NGINX_LISTEN;" >/tmp/nginx/listen.conf
: >/tmp/nginx/bind.conf
[ -z "$proxy_bind" ] || echo "proxy_bind $proxy_bind;" >/tmp/nginx/bind.conf
: >/tmp/nginx/upstreams.conf
for server in $NGINX_UPSTREAMS; do
    echo "server $server max_fails=$max_fails fail_timeout=$fail_timeout;" >>/tmp/nginx/upstreams.conf
done
echo "aer-rag-proxy: listening on $NGINX_LISTEN, balancing $NGINX_UPSTREAMS${proxy_bind:+ from $proxy_bind}" >&2
# -e stderr: nginx's own start-up messages too (before nginx.conf is read it would try /var/log/nginx).
nginx -t -q -e stderr
exec nginx -e stderr -g 'daemon off;'
