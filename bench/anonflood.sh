#!/bin/sh
# bench/anonflood.sh: what a flood of anonymous requests costs the paid
# path (issue 31). mod_provider alone (MPM event 1 x 64 threads, SQLite or
# BENCH_DB=pgsql, the mock gateway) serves chat completions to wrk
# (bench/chat.lua, FLOOD_C connections) for FLOOD_D seconds three times:
# alone; while one client floods POST /oauth/register and GET
# /v1/auth/NAME/login (bench/anonflood.lua, 2 x 16 connections) with every
# anonymous limit lifted (ProviderAnonRateLimit CLASS 0: the server before
# the limits); and the same flood under the default limits. Prints, for
# each run, the chat completions a second, their median and p99 latency
# (wrk's: of the answers within its 2 s timeout; timeouts counted apart),
# what the flood got (2xx/3xx/429) and the rows it left (oauth_clients,
# signin_states). FLOOD_OLD=1 with BENCH_MODULE (a build from before the
# limits, which knows no ProviderAnonRateLimit): the first two runs only.
# FLOOD_IDP=hang: instead, an OpenID Provider that accepts connections and
# never answers (a listener of this script's), and FLOOD_HANG_C (default 60)
# connections of login starts at it, with the limits lifted, while chat
# runs: the paid path must not wait for the provider (no database
# connection is held across its call; one discovery fetch in flight per
# child). Two runs: no flood, then the hanging provider (with FLOOD_OLD=1
# and an older BENCH_MODULE: what that build did).
# Root, like bench/run.sh; a build without sanitizers.
PROG=anonflood
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
MODEL=${BENCH_MODEL:-gpt-4o-mini}
BACKEND=${BENCH_DB:-sqlite3}
D=${FLOOD_D:-10}
C=${FLOOD_C:-16}
LUA=$SRC/bench/chat.lua
FLUA=$SRC/bench/anonflood.lua
preflight
mpm_conf() { mpm_fixed 1 64; }
W=$(mktemp -d "/tmp/mod_provider-anonflood.XXXXXX")
chmod 755 "$W"
mkdir -p "$W/db" "$W/run" "$W/logs" "$W/htdocs"
stop_all() { stop_httpd "$W/run/provider.pid"; stop_services; }
trap stop_all EXIT
trap 'exit 130' INT TERM HUP PIPE
start_mockgw
make_database flood@example.com Flood flood
echo "flood-secret" > "$W/idp.secret"
chown -R "$RUNUSER:$RUNUSER" "$W/db"
PORT=$(free_port)

# start LIMITS: the server with the anonymous limits lifted (off) or not.
start() {
    stop_httpd "$W/run/provider.pid"
    {
        server_conf provider "$PORT"
        cat <<CONF
LoadModule dbd_module $MODDIR/mod_dbd.so
LoadModule provider_module $MODULE
ProviderEngine On
ProviderGatewayURL http://$GW
ProviderGatewayTokenFile "$W/gateway.token"
ProviderPublicURL http://127.0.0.1:$PORT
ProviderIdentityProvider flood authorization_endpoint=http://127.0.0.1:9/authorize token_endpoint=http://127.0.0.1:9/token userinfo_endpoint=http://127.0.0.1:9/user subject_field=id client_id=flood client_secret_file=$W/idp.secret
CONF
        [ -n "${HANGPORT:-}" ] && echo "ProviderIdentityProvider hang issuer=http://127.0.0.1:$HANGPORT client_id=hang client_secret_file=$W/idp.secret"
        if [ "$BACKEND" = pgsql ]; then
            echo "DBDriver pgsql"
            echo "DBDParams \"host=$W/pg port=$PGPORT user=postgres dbname=bench\""
        else
            echo "DBDriver sqlite3"
            echo "DBDParams \"$DB\""
        fi
        if [ "$1" = off ] && [ "${FLOOD_OLD:-0}" != 1 ]; then
            for c in register token authorize signin mcp; do echo "ProviderAnonRateLimit $c 0"; done
        fi
    } >"$W/provider.conf"
    $HTTPD -f "$W/provider.conf" -k start || die "apache2 did not start"
    wait_ok "$PORT"
}

# run LABEL FLOOD: chat for D seconds (with the flood when FLOOD is 1).
run() {
    q "DELETE FROM oauth_clients; DELETE FROM signin_states" >/dev/null
    fl=""
    if [ "$2" = hang ]; then
        FLOOD_KIND=login FLOOD_PROVIDER=hang wrk -t1 -c"${FLOOD_HANG_C:-60}" -d"$((D + 2))s" \
            --timeout 30s -s "$FLUA" "http://127.0.0.1:$PORT" >"$W/flood-hang.out" 2>&1 &
        p1=$!
        p2=
        sleep 1
    fi
    if [ "$2" = 1 ]; then
        FLOOD_KIND=register wrk -t1 -c16 -d"$((D + 2))s" -s "$FLUA" "http://127.0.0.1:$PORT" \
            >"$W/flood-register.out" 2>&1 &
        p1=$!
        FLOOD_KIND=login wrk -t1 -c16 -d"$((D + 2))s" -s "$FLUA" "http://127.0.0.1:$PORT" \
            >"$W/flood-login.out" 2>&1 &
        p2=$!
        sleep 1
    fi
    BENCH_MODEL=$MODEL BENCH_KEY=$KEY wrk -t2 -c"$C" -d"${D}s" -s "$LUA" \
        "http://127.0.0.1:$PORT" >"$W/chat.out" 2>&1
    if [ "$2" = 1 ]; then
        wait "$p1" "$p2"
        fl="$(sed -n 's/^FLOOD //p' "$W/flood-register.out") | $(sed -n 's/^FLOOD //p' "$W/flood-login.out")"
    fi
    if [ "$2" = hang ]; then
        wait "$p1"
        fl="$(sed -n 's/^FLOOD //p' "$W/flood-hang.out")"
    fi
    line=$(grep '^BENCH ' "$W/chat.out") || { cat "$W/chat.out" >&2; die "no figures from wrk"; }
    eval "$(echo "$line" | sed 's/^BENCH //')"
    printf '%-22s chat %7.0f req/s  p50 %6.2f ms  p99 %7.2f ms  non2xx %s  timeouts %s\n' "$1" \
        "$(echo "$requests $duration_us" | awk '{ print $1 / ($2 / 1e6) }')" \
        "$(echo "$p50_us" | awk '{ print $1 / 1000 }')" "$(echo "$p99_us" | awk '{ print $1 / 1000 }')" \
        "$non2xx" "$timeout"
    [ -n "$fl" ] && printf '%-22s flood: %s\n%-22s rows left: oauth_clients %s, signin_states %s\n' "" \
        "$fl" "" "$(q 'SELECT COUNT(*) FROM oauth_clients')" "$(q 'SELECT COUNT(*) FROM signin_states')"
    return 0
}

echo "anonflood: $BACKEND, mod_provider 1 x 64 threads, chat: wrk -t2 -c$C, ${D}s each; $(nproc) CPUs"
cpus_line
if [ "${FLOOD_IDP:-}" = hang ]; then
    HANGPORT=$(free_port)
    # accepts every connection and never answers, holding them open
    python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4096); held = []
while True: held.append(s.accept()[0])' "$HANGPORT" &
    HANGPID=$!
    trap 'kill $HANGPID 2>/dev/null; stop_all' EXIT
    start off
    run "no flood" 0
    run "hanging provider" hang
    exit 0
fi
start off
run "no flood" 0
run "flood, no limits" 1
[ "${FLOOD_OLD:-0}" = 1 ] && exit 0
start default
run "flood, default limits" 1
