#!/bin/sh
# bench/crash.sh: the crash check of the billing engine under load. One
# apache2 with mod_provider and several children (StartServers/ServerLimit
# CRASH_CHILDREN, 2 by default, so that one survives the kill) is loaded by
# wrk with the request of bench/chat.lua (bench/crash.lua also records the
# x-request-id of every 2xx answer); mid-run one child is killed with
# SIGKILL, later the server is restarted gracefully (apache2 -k graceful),
# both while the load goes on. When wrk is done and the holds of the killed
# child have expired (ProviderHoldTimeout is short here), it prints:
# the 2xx answers counted by the client; the ledger rows (by status); the
# answered requests that have no ledger row (served free: must be 0); the
# rows whose answer the client never got (requests it abandoned when wrk
# stopped, or cut by the kill after they were settled: the gateway did the
# work, so they are charged); reserved rows and leases left; the balance,
# the top-ups and top-ups - sum(ledger charges); and OK or MISMATCH (exit 1).
#
#   sh bench/crash.sh                  (as root, in a built tree, not a sanitizer build)
#   BENCH_DB=pgsql sh bench/crash.sh   (mod_provider on a throwaway PostgreSQL)
#
# The setup (mock gateway, database, server config) mirrors bench/run.sh.
# Environment: WRK_THREADS (2), WRK_CONNECTIONS (32), WRK_DURATION (12:
# seconds), CRASH_KILL_AT (4: seconds into the run), CRASH_GRACEFUL_AT (8),
# CRASH_CHILDREN (2), CRASH_THREADS (32 threads per child), CRASH_HOLD_TIMEOUT
# (20: seconds), BENCH_MODEL (gpt-4o-mini), BENCH_DB (sqlite3 | pgsql),
# BENCH_DBDMAX (1 on SQLite, 16 on PostgreSQL), BENCH_KEEP=1 (keep the
# temporary directory), CRASH_JOURNAL (ProviderJournalDir: default, or
# "none" to see what a kill costs without the journal).
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
HTTPD=/usr/sbin/apache2
MODDIR=/usr/lib/apache2/modules
MODULE=$SRC/mod_provider/.libs/mod_provider.so
CTL=$SRC/cli/providerctl
MOCKGW=$SRC/tests/mockgw/mockgw
LUA=$SRC/bench/crash.lua
RUNUSER=www-data

T=${WRK_THREADS:-2}
C=${WRK_CONNECTIONS:-32}
D=${WRK_DURATION:-12}
KILL_AT=${CRASH_KILL_AT:-4}
GRACEFUL_AT=${CRASH_GRACEFUL_AT:-8}
CHILDREN=${CRASH_CHILDREN:-2}
THREADS=${CRASH_THREADS:-32}
HOLD_TIMEOUT=${CRASH_HOLD_TIMEOUT:-20}
MODEL=${BENCH_MODEL:-gpt-4o-mini}
BACKEND=${BENCH_DB:-sqlite3}
case $BACKEND in
    sqlite3) DBDMAX=${BENCH_DBDMAX:-1} ;;
    pgsql) DBDMAX=${BENCH_DBDMAX:-16} ;;
    *) echo "crash: BENCH_DB must be sqlite3 or pgsql" >&2; exit 2 ;;
esac
PGBIN=/usr/lib/postgresql/15/bin

die() { printf 'crash: error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run me as root (apache2 starts as root and runs as $RUNUSER)"
for f in "$MODULE" "$CTL" "$MOCKGW" "$HTTPD"; do
    [ -f "$f" ] || die "$f is missing (build first: autoreconf -fi && ./configure && make -j2)"
done
command -v wrk >/dev/null 2>&1 || die "wrk is missing (sh scripts/install-deps.sh)"
command -v sqlite3 >/dev/null 2>&1 || die "sqlite3 is missing (sh scripts/install-deps.sh)"
if grep -q '^SAN_CFLAGS = -f' "$SRC/Makefile" 2>/dev/null; then
    die "the tree is built with sanitizers: reconfigure without --enable-sanitizers and rebuild"
fi
[ "$KILL_AT" -lt "$GRACEFUL_AT" ] && [ "$GRACEFUL_AT" -lt "$D" ] ||
    die "CRASH_KILL_AT < CRASH_GRACEFUL_AT < WRK_DURATION (seconds) is needed"

W=$(mktemp -d /tmp/mod_provider-crash.XXXXXX)
chmod 755 "$W"
mkdir -p "$W/db" "$W/run" "$W/logs" "$W/htdocs" "$W/ids"
MOCKGW_PID=""
WRK_PID=""
cleanup() {
    [ -n "$WRK_PID" ] && kill "$WRK_PID" 2>/dev/null || true
    pf="$W/run/provider.pid"
    if [ -s "$pf" ]; then
        pid=$(cat "$pf")
        kill -TERM "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    fi
    if [ -n "${PGDATA_DIR:-}" ] && [ -f "$PGDATA_DIR/postmaster.pid" ]; then
        su postgres -s /bin/sh -c "$PGBIN/pg_ctl -D '$PGDATA_DIR' -m fast -w stop" >/dev/null 2>&1 || true
    fi
    if [ -n "$MOCKGW_PID" ]; then
        kill -TERM "$MOCKGW_PID" 2>/dev/null || true
        wait "$MOCKGW_PID" 2>/dev/null || true
    fi
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        echo "crash: kept $W" >&2
    else
        rm -rf "$W"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

free_port() {
    p=$(( 20000 + $(od -An -tu2 -N2 /dev/urandom | tr -d ' ') % 20000 ))
    while ss -Hltn "sport = :$p" | grep -q .; do p=$((p + 1)); done
    echo "$p"
}

# ---- the mock gateway ------------------------------------------------------
umask 077
od -An -tx1 -N24 /dev/urandom | tr -d ' \n' >"$W/gateway.token"
umask 022
: >"$W/logs/mockgw.log"
"$MOCKGW" --listen 127.0.0.1:0 --token-file "$W/gateway.token" >>"$W/logs/mockgw.log" 2>&1 </dev/null &
MOCKGW_PID=$!
GW=""
i=0
while [ -z "$GW" ]; do
    GW=$(sed -n 's/^mockgw listening on //p' "$W/logs/mockgw.log" 2>/dev/null || true)
    if [ -z "$GW" ]; then
        i=$((i + 1))
        if [ "$i" -ge 100 ] || ! kill -0 "$MOCKGW_PID" 2>/dev/null; then
            cat "$W/logs/mockgw.log" >&2; die "mockgw did not start"
        fi
        sleep 0.1
    fi
done

# ---- the database: a user with a big balance, a key, the priced model ------
DB=$W/db/provider.db
DBSPEC="sqlite3:$DB"
if [ "$BACKEND" = pgsql ]; then
    PGDATA_DIR=$W/pg/data
    PGPORT=$(free_port)
    mkdir -p "$W/pg" && chown postgres "$W/pg"
    su postgres -s /bin/sh -c "$PGBIN/initdb -D '$PGDATA_DIR' --auth=trust -U postgres --no-sync" \
        >"$W/logs/initdb.log" 2>&1 || { cat "$W/logs/initdb.log" >&2; die "initdb failed"; }
    su postgres -s /bin/sh -c "$PGBIN/pg_ctl -D '$PGDATA_DIR' -w -l '$W/pg/log' -o \"-p $PGPORT -k $W/pg -c listen_addresses='' -c fsync=off\" start" \
        >/dev/null 2>&1 || { cat "$W/pg/log" >&2; die "PostgreSQL did not start"; }
    psql -h "$W/pg" -p "$PGPORT" -U postgres -qc 'CREATE DATABASE bench' || die "cannot create the database"
    DBSPEC="pgsql:host=$W/pg port=$PGPORT user=postgres dbname=bench"
fi
ctl() { "$CTL" --db "$DBSPEC" "$@"; }
q() {
    if [ "$BACKEND" = pgsql ]; then
        psql -h "$W/pg" -p "$PGPORT" -U postgres -d bench -At -c "$1"
    else
        sqlite3 -cmd '.timeout 5000' "$DB" "$1"
    fi
}
ctl db migrate >/dev/null
ctl user add crash@example.com --name Crash >/dev/null
ctl balance add crash@example.com 1000000000 --reason crash >/dev/null
ctl model add "$MODEL" --upstream "$MODEL" --name "$MODEL" >/dev/null
ctl model price "$MODEL" --input 0.15 --output 0.6 --cache 0.075 >/dev/null
KEY=$(ctl key create crash@example.com --name crash --json |
      sed -n 's/.*"secret"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
case $KEY in sk-prov-*) ;; *) die "could not read the key from providerctl key create --json" ;; esac
UID_=$(q "SELECT id FROM users WHERE email = 'crash@example.com';")
chown -R "$RUNUSER:$RUNUSER" "$W/db"

# ---- the server ----------------------------------------------------------------
PORT=$(free_port)
CONF=$W/provider.conf
{
    cat <<EOF
ServerRoot "$W"
ServerName 127.0.0.1
Listen 127.0.0.1:$PORT
PidFile "$W/run/provider.pid"
DefaultRuntimeDir "$W/run"
Mutex file:$W/run default
User $RUNUSER
Group $RUNUSER
DocumentRoot "$W/htdocs"
LoadModule mpm_event_module $MODDIR/mod_mpm_event.so
LoadModule authz_core_module $MODDIR/mod_authz_core.so
StartServers $CHILDREN
ServerLimit $CHILDREN
ThreadLimit $THREADS
ThreadsPerChild $THREADS
MaxRequestWorkers $((CHILDREN * THREADS))
MinSpareThreads 1
MaxSpareThreads $((CHILDREN * THREADS))
MaxConnectionsPerChild 0
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 30
ErrorLog "$W/logs/error.log"
LogLevel warn
LoadModule dbd_module $MODDIR/mod_dbd.so
LoadModule provider_module $MODULE
ProviderEngine On
ProviderGatewayURL http://$GW
ProviderGatewayTokenFile "$W/gateway.token"
ProviderHoldTimeout $HOLD_TIMEOUT
EOF
    [ -z "${CRASH_JOURNAL:-}" ] || echo "ProviderJournalDir ${CRASH_JOURNAL}"
    if [ "$BACKEND" = pgsql ]; then
        cat <<EOF
DBDriver pgsql
DBDParams "host=$W/pg port=$PGPORT user=postgres dbname=bench"
DBDMin 1
DBDKeep $DBDMAX
DBDMax $DBDMAX
EOF
    else
        cat <<EOF
DBDriver sqlite3
DBDParams "$DB"
DBDInitSQL "PRAGMA synchronous=NORMAL"
DBDInitSQL "PRAGMA busy_timeout=5000"
DBDMin 1
DBDKeep 1
DBDMax $DBDMAX
EOF
    fi
} >"$CONF"
"$HTTPD" -t -f "$CONF" >"$W/logs/configtest.log" 2>&1 ||
    { cat "$W/logs/configtest.log" >&2; die "apache2 -t failed"; }
"$HTTPD" -f "$CONF" -k start || die "the server did not start"

i=0
while :; do
    code=$(curl -s -o "$W/last-answer" -w '%{http_code}' "http://127.0.0.1:$PORT/v1/chat/completions" \
           -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" \
           -d "{\"model\":\"$MODEL\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":16}" \
           2>/dev/null) || code=000
    [ "$code" = 200 ] && break
    i=$((i + 1))
    [ "$i" -lt 100 ] || { tail -n 20 "$W/logs/error.log" >&2; die "the server did not answer 200"; }
    sleep 0.1
done

children() { pgrep -P "$(cat "$W/run/provider.pid")" | sort -n; }

# ---- the run: load, a kill, a graceful restart ----------------------------------
MAXID=$(q "SELECT COALESCE(MAX(id), 0) FROM ledger;")
export BENCH_KEY="$KEY" BENCH_MODEL="$MODEL" CRASH_IDS_DIR="$W/ids"
echo "crash: $CHILDREN children x $THREADS threads on :$PORT ($BACKEND), wrk -t$T -c$C -d${D}s;" \
     "SIGKILL to one child at ${KILL_AT}s, graceful restart at ${GRACEFUL_AT}s" >&2
wrk -t"$T" -c"$C" -d"${D}s" -s "$LUA" "http://127.0.0.1:$PORT" >"$W/wrk.out" 2>&1 &
WRK_PID=$!
sleep "$KILL_AT"
set -- $(children)
[ "$#" -ge 2 ] || echo "crash: warning: only $# child(ren) before the kill" >&2
VICTIM=$1
kill -KILL "$VICTIM"
echo "crash: killed child $VICTIM at ${KILL_AT}s" >&2
sleep $((GRACEFUL_AT - KILL_AT))
"$HTTPD" -f "$CONF" -k graceful || die "apache2 -k graceful failed"
echo "crash: graceful restart at ${GRACEFUL_AT}s" >&2
wait "$WRK_PID" || { cat "$W/wrk.out" >&2; die "wrk failed"; }
WRK_PID=""
grep -q '^BENCH ' "$W/wrk.out" || { cat "$W/wrk.out" >&2; die "no BENCH line from wrk"; }
field() { sed -n "s/^BENCH .*[[:space:]]$1=\([0-9]*\).*/\1/p; s/^BENCH $1=\([0-9]*\).*/\1/p" "$W/wrk.out" | head -n 1; }

# ---- after: replay, expiry --------------------------------------------------------
# The killed child's journal is replayed within a second or two; its holds
# (requests it had in flight) expire after ProviderHoldTimeout.
i=0
while [ "$i" -lt $((HOLD_TIMEOUT + 30)) ]; do
    left=$(q "SELECT (SELECT COUNT(*) FROM ledger WHERE status = 'reserved') + (SELECT COUNT(*) FROM billing_leases);")
    [ "$left" = 0 ] && break
    sleep 1
    i=$((i + 1))
done

cat "$W"/ids/ids-* 2>/dev/null | sort -u >"$W/answered"
q "SELECT request_id FROM ledger WHERE status <> 'reserved' AND id > $MAXID;" | sort -u >"$W/rows"
OK2XX=$(field ok2xx)
NOID=$(field noid)
ANSWERED=$(wc -l <"$W/answered")
FREE=$(comm -23 "$W/answered" "$W/rows" | wc -l)
UNSEEN=$(comm -13 "$W/answered" "$W/rows" | wc -l)
ROWS=$(q "SELECT COUNT(*) FROM ledger WHERE id > $MAXID;")
RESERVED=$(q "SELECT COUNT(*) FROM ledger WHERE status = 'reserved';")
LEASES=$(q "SELECT COUNT(*) FROM billing_leases;")
BALANCE=$(q "SELECT balance FROM users WHERE id = $UID_;")
TOPUPS=$(q "SELECT COALESCE(SUM(amount), 0) FROM balance_events WHERE user_id = $UID_;")
CHARGED=$(q "SELECT COALESCE(SUM(credits), 0) FROM ledger WHERE user_id = $UID_;")
EXPECT=$((TOPUPS - CHARGED))

micro() { awk -v v="$1" 'BEGIN { printf "%.6f", v / 1000000 }'; }
echo
echo "mod_provider crash check: $CHILDREN children x $THREADS threads, $BACKEND, wrk -t$T -c$C -d${D}s,"
echo "SIGKILL to one child at ${KILL_AT}s, apache2 -k graceful at ${GRACEFUL_AT}s, ProviderHoldTimeout ${HOLD_TIMEOUT}s,"
echo "ProviderJournalDir ${CRASH_JOURNAL:-(default)}; the killed child's journal: $(grep -o 'PROV00384: .*' "$W/logs/error.log" | head -n 1 || true)"
echo
printf '%-50s %s\n' "2xx answers counted by the client (wrk)" "$OK2XX"
printf '%-50s %s\n' "  of them with an x-request-id recorded" "$ANSWERED (missing ids: $NOID)"
printf '%-50s %s\n' "non-2xx answers / socket errors" "$(field non2xx) / $(( $(field connect) + $(field read) + $(field write) + $(field timeout) ))"
printf '%-50s %s\n' "ledger rows written during the run" "$ROWS"
q "SELECT status, COUNT(*) FROM ledger WHERE id > $MAXID GROUP BY status ORDER BY status;" |
    while IFS='|' read -r st n; do printf '%-50s %s\n' "  status $st" "$n"; done
printf '%-50s %s\n' "answered requests without a ledger row (free)" "$FREE"
printf '%-50s %s\n' "rows whose answer the client never got" "$UNSEEN (abandoned at the end or cut by the kill; at most $C in flight at each)"
printf '%-50s %s\n' "reserved rows left after replay and expiry" "$RESERVED"
printf '%-50s %s\n' "leases left" "$LEASES"
printf '%-50s %s\n' "balance (credits)" "$(micro "$BALANCE")"
printf '%-50s %s\n' "top-ups (credits)" "$(micro "$TOPUPS")"
printf '%-50s %s\n' "sum of ledger charges (credits)" "$(micro "$CHARGED")"
printf '%-50s %s\n' "top-ups - sum of ledger charges (credits)" "$(micro "$EXPECT")"
echo
if [ "$FREE" = 0 ] && [ "$NOID" = 0 ] && [ "$RESERVED" = 0 ] && [ "$LEASES" = 0 ] &&
   [ "$BALANCE" = "$EXPECT" ] && [ "$UNSEEN" -ge 0 ] && [ "$UNSEEN" -le $((2 * C)) ] &&
   [ "$OK2XX" -gt 0 ]; then
    echo "OK: every answered request has its ledger row, and the balance is the top-ups minus the ledger"
else
    echo "MISMATCH"
    grep -E 'PROV|exit signal' "$W/logs/error.log" | tail -n 20 >&2 || true
    exit 1
fi
