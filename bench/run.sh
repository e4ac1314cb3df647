#!/bin/sh
# bench/run.sh: the load benchmark. It measures what mod_provider costs on top
# of plain forwarding: the same mock gateway (tests/mockgw) is driven through
# two Apache httpd servers with identical MPM settings, one running
# mod_provider (key check, reservation, gateway call, settlement, one ledger
# row per request in SQLite) and one running mod_proxy (ProxyPass to the
# gateway, the service token added with mod_headers, nothing else). Both are
# loaded by wrk with the same small POST /v1/chat/completions (bench/chat.lua),
# one after the other, and the figures are printed side by side with the ratio
# mod_provider / mod_proxy. Afterwards the ledger is checked against the number
# of successful requests. Output goes to stdout only (reports are committed by
# hand as bench/REPORT.md).
#
#   sh bench/run.sh            (as root, in a built tree: make -j2 first)
#
# MPM for both servers (the same shape for fairness): by default event,
# 1 process x 64 threads (ServerLimit 1, ThreadsPerChild 64). BENCH_MPM=stock
# uses Debian's stock sizing instead, exactly as
# /etc/apache2/mods-available/mpm_event.conf ships it (StartServers 2,
# MinSpareThreads 25, MaxSpareThreads 75, ThreadLimit 64, ThreadsPerChild 25,
# MaxRequestWorkers 150, MaxConnectionsPerChild 0): several children of 25
# threads, all writing the one SQLite file. BENCH_MPM=package adds, after
# the stock lines, the sizing the Debian package enables
# (httpd-conf/provider-mpm.conf, conf-enabled/ being read after mods-enabled/).
#
# mod_provider's database settings (BENCH_DBD): "recommended" (the default)
# are the lines httpd-conf/example-site.conf ships for the backend; "defaults"
# gives mod_provider only DBDriver and DBDParams, i.e. mod_dbd's own pool
# sizes (DBDMin 1, DBDKeep 2, DBDMax 10 per child) and no DBDInitSQL: what an
# operator has who sets nothing else. On SQLite the two are the same now
# (the module sets its pragmas itself; until 0.1.0's hardening the
# recommended lines were two DBDInitSQL pragmas and DBDMin/DBDKeep/DBDMax 1).
# BENCH_DBDMAX sets DBDMax (and DBDKeep when below mod_dbd's default 2) in
# both: BENCH_DBDMAX=1 is the old one-connection setting.
#
# BENCH_MODE: what is sent. "chat" (the default): the chat completion above
# to both. "messages": POST /v1/messages stream:true (relayed) to both, a
# model of the messages family at mod_provider. "responses": POST
# /v1/responses stream:true to mod_provider (translated from the gateway's
# chat stream) against that chat stream relayed by mod_proxy (POST
# /v1/chat/completions stream:true): the issue 17 comparisons.
# "streams10k": many slow streams open at once through both servers, one
# after the other (bench/streams10k.sh, which this mode runs with the same
# environment: STREAMS=10000 for issue 17's ten thousand; its table and
# ledger check instead of wrk's).
#
# Environment: WRK_THREADS (2), WRK_CONNECTIONS (32), WRK_DURATION (10s),
# BENCH_WARMUP (2s, wrk run discarded before each measurement),
# BENCH_UNCAPPED=1 (chat and responses without an output cap, as Codex sends
# them: mod_provider forwards the model's maximum output; bench/chat.lua),
# BENCH_MODEL (gpt-4o-mini), BENCH_BALANCE (the account's credits, 10^9 by
# default: e.g. 10 for an account of modest means, whose leases the limits
# size; the table then says how many requests were held in the database
# rather than drawn from a lease), BENCH_KEEP=1 (keep the temporary directory),
# BENCH_ROUNDS (1: how many times both servers are measured, alternating
# which goes first; the table sums the rounds and adds each round's ratios
# and their median: on a host whose speed drifts, one pair of runs can be
# 0.1 off either way),
# BENCH_DBDMAX (mod_provider's DBDMax: mod_dbd's 10 on SQLite, 16 on PostgreSQL),
# BENCH_DB (sqlite3, or pgsql: a throwaway PostgreSQL cluster in the temp
# dir; BENCH_PG_OPTS: more of its server options, "-c name=value ..."),
# BENCH_METRICS=1 (mod_provider maps the provider-metrics handler, protected
# by Require ip as the README shows, and a scraper fetches it every second
# through the whole run, as Prometheus would; the output says how many
# scrapes there were: issue 33's "metrics cost nothing visible"),
# BENCH_MPM (one, stock or package, above), BENCH_DBD (recommended or defaults,
# above), BENCH_AUTOGROUP (see below: "off" by default, "keep" leaves the
# kernel's setting alone), BENCH_CPUS and BENCH_PG_CPUS (bench/lib.sh: the
# CPUs of the servers, mockgw and wrk, and of PostgreSQL).
#
# Compaction under load (issue 34): BENCH_COMPACT_ROWS=N fills mod_provider's
# database, before the servers start, with N synthetic ledger rows (bench/
# lib.sh's ledger_fill, the rows of bench/ledger.sh: BENCH_COMPACT_USERS
# users, 1,000 by default) created 9 to 39 days ago, and runs mod_provider
# with ProviderLedgerRetention 8 and ProviderPurgeInterval 1, so that its
# purge thread rolls them up and removes them (a round a second, resting
# after each small transaction) while mod_provider is measured. A gate holds them until then:
# the first ledger row is one of the future, and the rollup (thus the
# removal) stops at it; the script moves it into the past right before the
# first measured mod_provider run, after its warm-up. The output then says
# how many old rows were removed during each measured mod_provider run (a
# count before and after) and in all, and how many were left. N=0 is the
# control: the same settings and gate, no old rows. Compare the ratios of
# BENCH_COMPACT_ROWS=0 and BENCH_COMPACT_ROWS=N (the rows must outlast the
# runs: under load about 10,000 ids are rolled up or 500 rows removed a
# second; the output warns when none were left).
# With BENCH_ROUNDS > 1, mod_proxy's later runs share the machine with the
# purge too.
#
# The scheduler. With the kernel's autogroup on (Debian's default), every
# session is one scheduling group with an equal share of the CPUs: apache2
# starts its own session when it detaches, while wrk and mockgw share this
# script's. On 2 cores the server under test then gets at most one core
# whenever the load generator and the gateway are busy, whatever it needs,
# and its latency tail measures that split rather than the server (mod_proxy
# needs less than a core and barely notices; mod_provider needs about 1.2).
# So by default the run switches autogroup off (as the scheduler of a
# dedicated host would treat one load: thread by thread) and restores the
# setting when it ends; the header says which way the figures were taken.
set -eu

PROG=bench
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
LUA=$SRC/bench/chat.lua

T=${WRK_THREADS:-2}
C=${WRK_CONNECTIONS:-32}
D=${WRK_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-2s}
MODEL=${BENCH_MODEL:-gpt-4o-mini}
BACKEND=${BENCH_DB:-sqlite3}
case $BACKEND in
    sqlite3) DBDMAX=${BENCH_DBDMAX:-10} ;;
    pgsql) DBDMAX=${BENCH_DBDMAX:-16} ;;
    *) echo "bench: BENCH_DB must be sqlite3 or pgsql" >&2; exit 2 ;;
esac
ROUNDS=${BENCH_ROUNDS:-1}
case $ROUNDS in
    [1-9]|[1-9][0-9]) ;;
    *) echo "bench: BENCH_ROUNDS must be a number from 1 to 99" >&2; exit 2 ;;
esac
MODE=${BENCH_MODE:-chat}
case $MODE in
    chat|messages|responses) ;;
    streams10k) exec sh "$SRC/bench/streams10k.sh" ;;
    *) echo "bench: BENCH_MODE must be chat, messages, responses or streams10k" >&2; exit 2 ;;
esac
METRICS=${BENCH_METRICS:-0}
case $METRICS in
    0|1) ;;
    *) echo "bench: BENCH_METRICS must be 0 or 1" >&2; exit 2 ;;
esac
MPM=${BENCH_MPM:-one}
case $MPM in
    one|stock|package) ;;
    *) echo "bench: BENCH_MPM must be one, stock or package" >&2; exit 2 ;;
esac
DBDSET=${BENCH_DBD:-recommended}
case $DBDSET in
    recommended|defaults) ;;
    *) echo "bench: BENCH_DBD must be recommended or defaults" >&2; exit 2 ;;
esac
[ "$DBDSET" = recommended ] || DBDMAX=${BENCH_DBDMAX:-10}
COMPACT=${BENCH_COMPACT_ROWS:-}
case $COMPACT in *[!0-9]*) echo "bench: BENCH_COMPACT_ROWS must be a number of rows" >&2; exit 2 ;; esac
AUTOGROUP_FILE=/proc/sys/kernel/sched_autogroup_enabled
AUTOGROUP_WAS=""
case ${BENCH_AUTOGROUP:-off} in
    off|keep) ;;
    *) echo "bench: BENCH_AUTOGROUP must be off or keep" >&2; exit 2 ;;
esac

preflight "$MODDIR/mod_proxy.so" "$MODDIR/mod_proxy_http.so" "$MODDIR/mod_headers.so"

W=$(mktemp -d /tmp/mod_provider-bench.XXXXXX)
chmod 755 "$W"
mkdir -p "$W/db" "$W/run" "$W/logs" "$W/htdocs"
SCRAPER=""
cleanup() {
    if [ -n "$SCRAPER" ]; then
        kill "$SCRAPER" 2>/dev/null || true
        wait "$SCRAPER" 2>/dev/null || true
    fi
    if [ -n "$AUTOGROUP_WAS" ]; then
        echo "$AUTOGROUP_WAS" >"$AUTOGROUP_FILE" 2>/dev/null ||
            echo "bench: could not restore $AUTOGROUP_FILE to $AUTOGROUP_WAS" >&2
    fi
    for conf in "$W/provider.conf" "$W/proxy.conf"; do
        stop_httpd "$(sed -n 's/^PidFile "\(.*\)"$/\1/p' "$conf" 2>/dev/null || true)"
    done
    stop_services
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

SCHED="autogroup not in this kernel"
if [ -r "$AUTOGROUP_FILE" ]; then
    ag=$(cat "$AUTOGROUP_FILE")
    if [ "$ag" = 0 ]; then
        SCHED="autogroup off"
    elif [ "${BENCH_AUTOGROUP:-off}" = keep ]; then
        SCHED="autogroup on (BENCH_AUTOGROUP=keep: apache2 in a group of its own)"
    elif echo 0 >"$AUTOGROUP_FILE" 2>/dev/null; then
        AUTOGROUP_WAS=$ag
        SCHED="autogroup off for the run (restored afterwards)"
    else
        SCHED="autogroup on (could not switch it off: apache2 in a group of its own)"
    fi
fi

# ---- the mock gateway ------------------------------------------------------
start_mockgw

# ---- the database: a user with a big balance, a key, the priced model ------
make_database bench@example.com Bench bench
ctl model add claude --upstream claude-sonnet-4 --name claude --family anthropic --messages >/dev/null
ctl model price claude --input 3 --output 15 --cache 0.3 >/dev/null
# OLD_MAX: the last id of the old rows (BENCH_COMPACT_ROWS); the run's rows come after it.
OLD_MAX=0
if [ -n "$COMPACT" ]; then
    compact_fill
    PROVIDER_EXTRA="ProviderLedgerRetention 8
ProviderPurgeInterval 1"
fi
chown -R "$RUNUSER:$RUNUSER" "$W/db"

# ---- the two servers ---------------------------------------------------------
mpm_conf() {
    if [ "$MPM" = stock ] || [ "$MPM" = package ]; then
        cat <<EOF
# Debian 12's /etc/apache2/mods-available/mpm_event.conf
StartServers 2
MinSpareThreads 25
MaxSpareThreads 75
ThreadLimit 64
ThreadsPerChild 25
MaxRequestWorkers 150
MaxConnectionsPerChild 0
EOF
        # the package's conf-enabled/provider-mpm.conf, read after it
        if [ "$MPM" = package ]; then cat "$SRC/httpd-conf/provider-mpm.conf"; fi
    else
        mpm_fixed 1 64
    fi
}

if [ "$METRICS" = 1 ]; then
    PROVIDER_EXTRA="${PROVIDER_EXTRA:-}
LoadModule authz_host_module $MODDIR/mod_authz_host.so
<Location /provider-metrics>
    SetHandler provider-metrics
    Require ip 127.0.0.1
</Location>"
fi
start_pair

# scrape_loop: the provider-metrics page every second, as Prometheus's
# scrape_interval 1s; each status on a line of $W/scrapes, the last page
# in $W/metrics.last.
scrape_loop() {
    while :; do
        curl -s -o "$W/metrics.next" -w '%{http_code}\n' \
            "http://127.0.0.1:$PROVIDER_PORT/provider-metrics" >>"$W/scrapes" 2>/dev/null || echo 000 >>"$W/scrapes"
        mv -f "$W/metrics.next" "$W/metrics.last" 2>/dev/null || true
        sleep 1
    done
}
if [ "$METRICS" = 1 ]; then
    : >"$W/scrapes"
    scrape_loop &
    SCRAPER=$!
fi

export BENCH_KEY="$KEY" BENCH_MODEL="$MODEL" BENCH_KIND=chat

# request NAME: the request of BENCH_MODE for the NAME server (chat.lua's
# environment).
request() {
    case $MODE/$1 in
        messages/provider) BENCH_KIND=messages-stream BENCH_MODEL=claude ;;
        messages/proxy) BENCH_KIND=messages-stream BENCH_MODEL=claude-sonnet-4 ;;
        responses/provider) BENCH_KIND=responses-stream BENCH_MODEL=$MODEL ;;
        responses/proxy) BENCH_KIND=chat-stream BENCH_MODEL=$MODEL ;;
        *) BENCH_KIND=chat BENCH_MODEL=$MODEL ;;
    esac
}

# warm_up PORT: a discarded wrk run, then a pause for the last answers.
warm_up() {
    if [ "$WARMUP" != 0 ] && [ "$WARMUP" != 0s ]; then
        wrk -t"$T" -c"$C" -d"$WARMUP" -s "$LUA" "http://127.0.0.1:$1" >/dev/null 2>&1 || true
        sleep 1
    fi
}

# run_wrk NAME PORT: the measured run; leaves the BENCH line in $W/NAME.wrk.
run_wrk() {
    wrk -t"$T" -c"$C" -d"$D" --latency -s "$LUA" "http://127.0.0.1:$2" >"$W/$1.wrk" 2>&1 ||
        { cat "$W/$1.wrk" >&2; die "wrk failed against the $1 server"; }
    grep -q '^BENCH ' "$W/$1.wrk" || { cat "$W/$1.wrk" >&2; die "no BENCH line from wrk ($1)"; }
}

# field NAME KEY: a value from the BENCH line.
field() { sed -n "s/^BENCH .*[[:space:]]$2=\([0-9]*\).*/\1/p; s/^BENCH $2=\([0-9]*\).*/\1/p" "$W/$1.wrk" | head -n 1; }

ledger_rows() { q "SELECT COUNT(*) FROM ledger WHERE status = 'ok' AND id > $OLD_MAX;"; }
# settled_rows: ledger_rows once two reads a second apart agree (at most
# 30 s): settlements are written by the billing engine's batches and
# writer, which may still be at work when the load stops (on PostgreSQL a
# warm-up's last rows were once counted in the measured run's window).
settled_rows() {
    _prev=$(ledger_rows); _i=0
    while [ "$_i" -lt 30 ]; do
        sleep 1
        _now=$(ledger_rows)
        [ "$_now" = "$_prev" ] && break
        _prev=$_now; _i=$((_i + 1))
    done
    echo "$_prev"
}

echo "bench: mod_provider on :$PROVIDER_PORT, mod_proxy on :$PROXY_PORT, mockgw on $GW" >&2

# Round r measures both servers one after the other, mod_proxy first in odd
# rounds and mod_provider first in even ones, so that a host whose speed
# drifts during the run does not favour either; each is warmed up once,
# before its first run.
r=1
while [ "$r" -le "$ROUNDS" ]; do
    order="proxy provider"
    [ $((r % 2)) = 1 ] || order="provider proxy"
    for name in $order; do
        port=$PROXY_PORT
        [ "$name" = proxy ] || port=$PROVIDER_PORT
        request "$name"
        if [ "$r" = 1 ]; then
            warm_up "$port"
            [ "$name" = proxy ] || [ -z "$COMPACT" ] || compact_open
            # The warm-up and readiness requests are in the ledger already: count from here.
            [ "$name" = proxy ] || ROWS_BEFORE=$(settled_rows)
        fi
        [ "$name" = proxy ] || [ -z "$COMPACT" ] || old_rows >"$W/old.$r.before"
        run_wrk "$name.$r" "$port"
        [ "$name" = proxy ] || [ -z "$COMPACT" ] || old_rows >"$W/old.$r.after"
        # mod_provider's billing writer writes the run's ledger rows after
        # the answers; with PostgreSQL on the servers' CPUs it was still at
        # them for up to 4 s (10-13 % of a CPU), in the next run, often
        # mod_proxy's: that run waits until they are written.
        [ "$name" = proxy ] || settled_rows >/dev/null
    done
    r=$((r + 1))
done
CHILDREN=$(pgrep -c -P "$(cat "$W/run/provider.pid")" || true)
# Requests still in flight when wrk stops are finished (and written) by the server.
sleep 1
# The purge's transactions can hold the billing writer back for more than
# settled_rows' second: with BENCH_COMPACT_ROWS the server is stopped first
# (its children write what they hold as they stop).
[ -z "$COMPACT" ] || stop_httpd "$W/run/provider.pid"
ROWS_AFTER=$(settled_rows)

# total NAME KEY: KEY of NAME's BENCH lines summed over the rounds;
# median NAME KEY: their median; rounds NAME KEY: each round's, in order.
rounds() { i=1; while [ "$i" -le "$ROUNDS" ]; do field "$1.$i" "$2"; i=$((i + 1)); done; }
total() { rounds "$1" "$2" | awk '{ t += $1 } END { printf "%d", t }'; }
median() { rounds "$1" "$2" | sort -n | awk '{ v[NR] = $1 } END { printf "%d", (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2 }'; }

# ---- the table ---------------------------------------------------------------
# mod_provider's database lines other than the driver and the file, as one line.
DBDLINES=$(grep '^DBD' "$W/provider.conf" | grep -v '^DBDriver\|^DBDParams' | paste -sd ';' - |
           sed 's/;/; /g')
awk -v t="$T" -v c="$C" -v d="$D" -v m="$MODEL" -v cpus="$(nproc)" -v dbdmax="$DBDMAX" -v backend="$BACKEND" \
    -v sched="$SCHED" -v cpusline="$(cpus_line)" -v mpm="$MPM" -v children="$CHILDREN" -v mode="$MODE" \
    -v dbd="$DBDLINES" \
    -v httpd="$("$HTTPD" -v | sed -n 's/^Server version: //p')" \
    -v pr_req="$(total provider requests)" -v px_req="$(total proxy requests)" \
    -v pr_dur="$(total provider duration_us)" -v px_dur="$(total proxy duration_us)" \
    -v pr_p50="$(median provider p50_us)" -v px_p50="$(median proxy p50_us)" \
    -v pr_p99="$(median provider p99_us)" -v px_p99="$(median proxy p99_us)" \
    -v pr_ok="$(total provider ok2xx)" -v px_ok="$(total proxy ok2xx)" \
    -v pr_bad="$(total provider non2xx)" -v px_bad="$(total proxy non2xx)" \
    -v pr_sock="$(( $(total provider connect) + $(total provider read) + $(total provider write) + $(total provider timeout) ))" \
    -v px_sock="$(( $(total proxy connect) + $(total proxy read) + $(total proxy write) + $(total proxy timeout) ))" \
    -v pr_socks="$(total provider connect)/$(total provider read)/$(total provider write)/$(total provider timeout)" \
    -v px_socks="$(total proxy connect)/$(total proxy read)/$(total proxy write)/$(total proxy timeout)" \
    -v body="$(field provider.1 body_bytes)" -v rounds="$ROUNDS" '
function ratio(a, b) { return (b > 0) ? sprintf("%.2f", a / b) : "-" }
BEGIN {
    pr_rps = pr_req / (pr_dur / 1e6); px_rps = px_req / (px_dur / 1e6)
    if (mode == "messages")
        printf "mod_provider benchmark: wrk -t%s -c%s -d%s, POST /v1/messages stream:true, relayed by both\n", t, c, d
    else if (mode == "responses")
        printf "mod_provider benchmark: wrk -t%s -c%s -d%s, POST /v1/responses stream:true (translated) against mod_proxy relaying the gateway'"'"'s chat stream\n", t, c, d
    else
        printf "mod_provider benchmark: wrk -t%s -c%s -d%s, POST /v1/chat/completions (%d-byte body, model %s)\n", t, c, d, body, m
    if (mpm == "stock")
        printf "%s, MPM event as Debian ships it (StartServers 2, ThreadsPerChild 25, MaxRequestWorkers 150) on both servers, %d CPUs, same mock gateway\n", httpd, cpus
    else if (mpm == "package")
        printf "%s, MPM event as the package sizes it (provider-mpm.conf: 1 process x 150 threads) on both servers, %d CPUs, same mock gateway\n", httpd, cpus
    else
        printf "%s, MPM event 1 process x 64 threads on both servers, %d CPUs, same mock gateway\n", httpd, cpus
    printf "scheduler: %s\n", sched
    if (cpusline != "")
        printf "%s\n", cpusline
    if (backend == "pgsql")
        printf "mod_provider: PostgreSQL 15 (local socket, fsync off)"
    else
        printf "mod_provider: SQLite"
    printf ", %s; %s children at the end of its run\n", (dbd == "" ? "mod_dbd defaults" : dbd), children
    if (rounds > 1)
        printf "%d rounds (mod_proxy first in odd ones): requests/s over all of them, latency the median of the rounds\n", rounds
    printf "\n"
    printf "%-22s %14s %14s %10s\n", "", "mod_provider", "mod_proxy", "ratio"
    printf "%-22s %14.1f %14.1f %10s\n", "requests/s", pr_rps, px_rps, ratio(pr_rps, px_rps)
    printf "%-22s %14.2f %14.2f %10s\n", "latency p50 (ms)", pr_p50 / 1000, px_p50 / 1000, ratio(pr_p50, px_p50)
    printf "%-22s %14.2f %14.2f %10s\n", "latency p99 (ms)", pr_p99 / 1000, px_p99 / 1000, ratio(pr_p99, px_p99)
    printf "%-22s %14d %14d\n", "requests", pr_req, px_req
    printf "%-22s %14d %14d\n", "2xx", pr_ok, px_ok
    printf "%-22s %14d %14d\n", "errors: non-2xx", pr_bad, px_bad
    printf "%-22s %14d %14d   (connect/read/write/timeout: %s / %s)\n", "errors: socket", pr_sock, px_sock, pr_socks, px_socks
}'

if [ "$ROUNDS" -gt 1 ]; then
    # each round's ratios, and their median
    per_round() {
        i=1
        while [ "$i" -le "$ROUNDS" ]; do
            case $1 in
                rps) echo "$(field "provider.$i" requests) $(field "provider.$i" duration_us) $(field "proxy.$i" requests) $(field "proxy.$i" duration_us)" |
                         awk '{ printf "%.2f\n", ($1 / $2) / ($3 / $4) }' ;;
                *) echo "$(field "provider.$i" "$1") $(field "proxy.$i" "$1")" | awk '{ printf "%.2f\n", $1 / $2 }' ;;
            esac
            i=$((i + 1))
        done
    }
    for k in rps p50_us p99_us; do
        v=$(per_round "$k")
        printf "%-22s %s   (median %s)\n" "ratio by round, $(echo "$k" | sed 's/rps/req\/s/; s/_us//')" \
            "$(echo "$v" | paste -sd ' ' -)" "$(echo "$v" | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2 }')"
    done
fi

OK2XX=$(total provider ok2xx)
ROWS=$((ROWS_AFTER - ROWS_BEFORE))
echo
if [ "$METRICS" = 1 ]; then
    kill "$SCRAPER" 2>/dev/null || true
    wait "$SCRAPER" 2>/dev/null || true
    SCRAPER=""
    n=$(grep -c . "$W/scrapes" || true)
    bad=$(grep -vc '^200$' "$W/scrapes" || true)
    started=$(sed -n 's/^provider_inference_requests_started_total //p' "$W/metrics.last" 2>/dev/null)
    echo "metrics: provider-metrics scraped every second: $n scrapes, $bad not 200; the last one counted ${started:-?} inference requests"
    [ "$n" -gt 0 ] && [ "$bad" = 0 ] && [ -n "$started" ] || { echo "metrics check: FAILED"; exit 1; }
fi
[ -z "$COMPACT" ] || compact_report
echo "ledger rows (status ok) written during the mod_provider run: $ROWS; successful (2xx) requests counted by wrk: $OK2XX"
echo "ledger rows by status (whole run, including warm-up):"
q "SELECT '  ' || status || ': ' || COUNT(*) FROM ledger WHERE id > $OLD_MAX GROUP BY status ORDER BY status;"
# A row with a floor was held in the database (a reservation of its own, or
# a drawn request still running after a second); a drawn one is written
# complete, without.
echo "ledger rows held in the database rather than drawn from a lease (whole run): $(q "SELECT COUNT(*) FROM ledger WHERE floor_credits > 0 AND id > $OLD_MAX;")"
echo "balance at the end: $(q "SELECT balance FROM users;") micro-credits"
UNSETTLED=$(q "SELECT COUNT(*) FROM ledger WHERE status = 'reserved';")
# wrk stops counting at the deadline; up to one request per connection may
# still be answered (and charged) after it, so the ledger may lead by <= C.
if [ "$OK2XX" -gt 0 ] && [ "$UNSETTLED" = 0 ] &&
   [ "$ROWS" -ge "$OK2XX" ] && [ "$ROWS" -le $((OK2XX + C * ROUNDS)) ]; then
    echo "ledger check: OK (rows - 2xx = $((ROWS - OK2XX)); at most $C requests were in flight at each deadline; no reservation left unsettled)"
else
    echo "ledger check: FAILED (2xx = $OK2XX, rows - 2xx = $((ROWS - OK2XX)), reservations never settled = $UNSETTLED)"
    exit 1
fi

# Each child logs its SQLite lock waits when it stops (SQLite only).
if [ "$BACKEND" = sqlite3 ]; then
    stop_httpd "$W/run/provider.pid"
    echo "SQLite lock waits (per child, the whole run):"
    sed -n 's/.*PROV00408: SQLite lock waits in this child: /  /p' "$W/logs/provider-error.log"
fi
