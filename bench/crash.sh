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
# The setup (mock gateway, database, server config) is bench/lib.sh's,
# shared with bench/run.sh.
# Environment: WRK_THREADS (2), WRK_CONNECTIONS (32), WRK_DURATION (12:
# seconds), CRASH_KILL_AT (4: seconds into the run), CRASH_GRACEFUL_AT (8),
# CRASH_CHILDREN (2), CRASH_THREADS (32 threads per child), CRASH_HOLD_TIMEOUT
# (20: seconds), BENCH_MODEL (gpt-4o-mini), BENCH_DB (sqlite3 | pgsql),
# BENCH_DBDMAX (1 on SQLite, 16 on PostgreSQL), BENCH_KEEP=1 (keep the
# temporary directory), CRASH_JOURNAL (ProviderJournalDir: default, or
# "none" to see what a kill costs without the journal).
set -eu

PROG=crash
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
LUA=$SRC/bench/crash.lua

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

preflight
[ "$KILL_AT" -lt "$GRACEFUL_AT" ] && [ "$GRACEFUL_AT" -lt "$D" ] ||
    die "CRASH_KILL_AT < CRASH_GRACEFUL_AT < WRK_DURATION (seconds) is needed"

W=$(mktemp -d /tmp/mod_provider-crash.XXXXXX)
chmod 755 "$W"
mkdir -p "$W/db" "$W/run" "$W/logs" "$W/htdocs" "$W/ids"
WRK_PID=""
cleanup() {
    [ -n "$WRK_PID" ] && kill "$WRK_PID" 2>/dev/null || true
    stop_httpd "$W/run/provider.pid"
    stop_services
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

# ---- the mock gateway ------------------------------------------------------
start_mockgw

# ---- the database: a user with a big balance, a key, the priced model ------
make_database crash@example.com Crash crash
UID_=$(q "SELECT id FROM users WHERE email = 'crash@example.com';")
chown -R "$RUNUSER:$RUNUSER" "$W/db"

# ---- the server ----------------------------------------------------------------
PORT=$(free_port)
CONF=$W/provider.conf
mpm_conf() { mpm_fixed "$CHILDREN" "$THREADS"; }
{
    server_conf provider "$PORT" error.log
    cat <<EOF
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

answers_200 "$PORT" || { tail -n 20 "$W/logs/error.log" >&2; die "the server did not answer 200"; }

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
