#!/bin/sh
# bench/cpucost.sh: what one request costs mod_provider in CPU (a
# non-streamed chat completion, or with CPUCOST_MODE one of the streamed
# requests of bench/run.sh's BENCH_MODE), measured in a way a shared machine does not disturb: instructions
# (valgrind's callgrind, deterministic) and system calls per request, not
# time. The stack is bench/run.sh's (lib.sh: the mock gateway, SQLite with a
# user, a big balance, the priced model and a key; apache2 with the module)
# and every request is bench/chat.lua's 105-byte POST /v1/chat/completions,
# sent by ab with keep-alive; with CPUCOST_MODE=messages (POST /v1/messages
# stream:true, relayed) or responses (POST /v1/responses stream:true,
# translated) bench/streamtime sends the streamed requests one at a time on
# one kept connection (concurrency 1: ab does not read chunked answers).
#
#   sh bench/cpucost.sh        (as root, in a tree built without sanitizers)
#
# Two passes on fresh servers:
#  1. apache2 as usual (event MPM, 1 child x 8 threads): N requests at
#     concurrency C under `perf stat -e raw_syscalls:sys_enter,task-clock` on
#     the child: system calls and CPU time per request (the time is as noisy
#     as the machine; the calls are not).
#  2. apache2 -X under callgrind: after a warm-up of W requests the counters
#     are zeroed, N requests are sent, and the counters dumped: instructions
#     per request for the whole process, for the request threads and for the
#     billing writer thread, and the top functions (self and inclusive).
#
# The writer's share depends on how many rows each of its groups holds, which
# depends on timing (under callgrind, with concurrency C, groups are small):
# compare the request threads' figure between trees, and the writer's only
# roughly.
#
# Environment: CPUCOST_MODE (chat, messages or responses), CPUCOST_N (2000
# requests), CPUCOST_C (4; chat only), CPUCOST_WARM (200),
# CPUCOST_TOP (25 functions), CPUCOST_PASS (both, perf or callgrind),
# CPUCOST_STRACE=1 (pass 1 also counts the calls by name with strace),
# BENCH_MODEL (gpt-4o-mini), BENCH_KEEP=1 (keep the work directory, with the
# callgrind files in $W/cg).
set -eu

PROG=cpucost
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

N=${CPUCOST_N:-2000}
C=${CPUCOST_C:-4}
WARM=${CPUCOST_WARM:-200}
TOP=${CPUCOST_TOP:-25}
PASS=${CPUCOST_PASS:-both}
MODEL=${BENCH_MODEL:-gpt-4o-mini}
MODE=${CPUCOST_MODE:-chat}
BACKEND=sqlite3
case $PASS in both|perf|callgrind) ;; *) die "CPUCOST_PASS must be both, perf or callgrind" ;; esac
case $MODE in
    chat) URLPATH=/v1/chat/completions ;;
    messages) URLPATH=/v1/messages ;;
    responses) URLPATH=/v1/responses ;;
    *) die "CPUCOST_MODE must be chat, messages or responses" ;;
esac
if [ "$MODE" != chat ]; then
    [ -x "$SRC/bench/streamtime" ] || (cd "$SRC" && make bench/streamtime >/dev/null) ||
        die "could not build bench/streamtime"
fi

preflight
command -v ab >/dev/null 2>&1 || die "ab is missing (apache2-utils)"
if [ "$PASS" != perf ]; then
    command -v valgrind >/dev/null 2>&1 || die "valgrind is missing"
    command -v callgrind_annotate >/dev/null 2>&1 || die "callgrind_annotate is missing"
fi
if [ "$PASS" != callgrind ]; then
    command -v perf >/dev/null 2>&1 || die "perf is missing (linux-perf)"
fi

W=$(mktemp -d /tmp/mod_provider-cpucost.XXXXXX)
chmod 755 "$W"
mkdir -p "$W/db" "$W/run" "$W/logs" "$W/htdocs" "$W/cg"
chown "$RUNUSER" "$W/cg"
VG_PID=""
cleanup() {
    stop_httpd "$W/run/provider.pid"
    if [ -n "$VG_PID" ]; then
        kill -TERM "$VG_PID" 2>/dev/null || true
        wait "$VG_PID" 2>/dev/null || true
    fi
    stop_services
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

start_mockgw
make_database cpucost@example.com Cpucost cpucost
if [ "$MODE" = messages ]; then
    ctl model add claude --upstream claude-sonnet-4 --name claude --family anthropic --messages >/dev/null
    ctl model price claude --input 0.15 --output 0.6 --cache 0.075 >/dev/null
fi
chown -R "$RUNUSER:$RUNUSER" "$W/db"
PORT=$(free_port)

mpm_conf() { mpm_fixed 1 8; }
{
    server_conf provider "$PORT"
    cat <<EOF
LoadModule dbd_module $MODDIR/mod_dbd.so
LoadModule provider_module $MODULE
ProviderEngine On
ProviderGatewayURL http://$GW
ProviderGatewayTokenFile "$W/gateway.token"
# an hour: under callgrind a request takes milliseconds, and the default 2 s
# would make key and model lookups from the database part of the figures
# (at 20,000 requests a second they are one in 40,000)
ProviderLookupCacheTTL 3600
DBDriver sqlite3
DBDParams "$DB"
EOF
} >"$W/provider.conf"
"$HTTPD" -t -f "$W/provider.conf" >"$W/logs/configtest.log" 2>&1 ||
    { cat "$W/logs/configtest.log" >&2; die "apache2 -t failed"; }

case $MODE in
    chat) printf '{"model":"%s","messages":[{"role":"user","content":"Say hello in five words."}],"max_tokens":16}' \
              "$MODEL" ;;
    messages) printf '{"model":"claude","messages":[{"role":"user","content":"Say hello in five words."}],"max_tokens":16,"stream":true}' ;;
    responses) printf '{"model":"%s","input":"Say hello in five words.","max_output_tokens":16,"stream":true}' \
                   "$MODEL" ;;
esac >"$W/body.json"

# drive COUNT: COUNT requests (at concurrency C for chat, one at a time for a
# stream); dies unless all were 2xx.
drive() {
    if [ "$MODE" = messages ]; then
        "$SRC/bench/streamtime" "$PORT" "$URLPATH" "$W/body.json" "$1" 0 - \
            "x-api-key: $KEY" "anthropic-version: 2023-06-01" >"$W/st.out" 2>&1 ||
            { cat "$W/st.out" >&2; die "not every stream was answered 200"; }
        return
    elif [ "$MODE" = responses ]; then
        "$SRC/bench/streamtime" "$PORT" "$URLPATH" "$W/body.json" "$1" 0 - \
            "Authorization: Bearer $KEY" >"$W/st.out" 2>&1 ||
            { cat "$W/st.out" >&2; die "not every stream was answered 200"; }
        return
    fi
    ab -q -k -n "$1" -c "$C" -p "$W/body.json" -T application/json \
       -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/v1/chat/completions" \
       >"$W/ab.out" 2>&1 || { cat "$W/ab.out" >&2; die "ab failed"; }
    done_n=$(sed -n 's/^Complete requests: *//p' "$W/ab.out")
    bad=$(sed -n 's/^Non-2xx responses: *//p' "$W/ab.out")
    # (ab counts an answer whose length differs from the first one's as
    # failed: the ids and figures in the answers vary in length)
    failed=$(sed -n 's/^ *(Connect: \([0-9]*\), Receive: \([0-9]*\), Length: [0-9]*, Exceptions: \([0-9]*\)).*/\1\2\3/p' "$W/ab.out")
    [ "$done_n" = "$1" ] && [ -z "$bad" ] && [ "${failed:-000}" = 000 ] ||
        { cat "$W/ab.out" >&2; die "not every request was answered 2xx"; }
}

[ "$MODE" = chat ] || C=1
echo "cpucost: $N requests (concurrency $C, keep-alive) of POST $URLPATH," \
     "$(wc -c <"$W/body.json") bytes, mockgw on $GW, SQLite"
echo "tree: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?')" \
     "$(git -C "$SRC" diff --quiet 2>/dev/null || echo '(with uncommitted changes)')"

# ---- pass 1: system calls and CPU time per request -------------------------------
if [ "$PASS" != callgrind ]; then
    "$HTTPD" -f "$W/provider.conf" -k start || die "apache2 did not start"
    answers_200 "$PORT" || die "no 200 from the server (last: $code)"
    drive "$WARM"
    CHILD=$(pgrep -P "$(cat "$W/run/provider.pid")" | head -n 1)
    [ -n "$CHILD" ] || die "no apache2 child"
    perf stat -x, -e raw_syscalls:sys_enter,task-clock,context-switches -p "$CHILD" \
        -o "$W/perf.out" sleep 3600 &
    PERF_PID=$!
    sleep 1
    drive "$N"
    # perf stops (and writes its figures) when its command ends; a
    # background job of sh ignores SIGINT, so it is the sleep that goes
    kill -TERM $(pgrep -P "$PERF_PID" sleep) 2>/dev/null || true
    wait "$PERF_PID" 2>/dev/null || true
    if [ "${CPUCOST_STRACE:-0}" = 1 ] && command -v strace >/dev/null 2>&1; then
        # which calls: counted by strace over another N requests
        strace -c -f -o "$W/strace.out" -p "$CHILD" &
        ST_PID=$!
        sleep 1
        drive "$N"
        kill -INT "$ST_PID" 2>/dev/null || kill -TERM "$ST_PID" 2>/dev/null || true
        wait "$ST_PID" 2>/dev/null || true
        echo "system calls by name, per request (strace -c):"
        awk -v n="$N" '$NF ~ /^[a-z_0-9]+$/ && $(NF-1) ~ /^[0-9]+$/ && $NF != "total" {
                           k = ($(NF-2) ~ /^[0-9]+$/ && NF == 6) ? $(NF-2) : $(NF-1)
                           printf "  %6.2f  %s\n", $4 / n, $NF }' "$W/strace.out" | sort -rn | head -n 12
    fi
    stop_httpd "$W/run/provider.pid"
    awk -F, -v n="$N" '
        $3 == "raw_syscalls:sys_enter" { printf "system calls per request:   %8.1f\n", $1 / n }
        $3 == "task-clock" { printf "CPU time per request:       %8.1f us (noisy on a shared machine)\n", $1 * 1000 / n }
        $3 == "context-switches" { printf "context switches/request:   %8.2f\n", $1 / n }
    ' "$W/perf.out"
fi

# ---- pass 2: instructions per request under callgrind ----------------------------
# Two sessions of apache2 -X under callgrind, each dumped when it stops: the
# first serves the warm-up only, the second the warm-up and then N requests;
# the difference over N is what a request costs, without start-up, stop and
# warm-up (callgrind's own zero and dump go through vgdb, whose ptrace hangs
# in some containers). The writer thread's share is writer_main's inclusive
# cost.

# callgrind_session NAME COUNT: a session serving the warm-up and COUNT more.
callgrind_session() {
    mkdir -p "$W/cg/$1"
    # as $RUNUSER from the start: callgrind opens its output file before
    # apache2 would switch users, and could not write it after
    chown -R "$RUNUSER" "$W/cg" "$W/run" "$W/logs" "$W/gateway.token"
    setpriv --reuid="$RUNUSER" --regid="$RUNUSER" --init-groups \
        valgrind --tool=callgrind --vgdb=no \
        --callgrind-out-file="$W/cg/$1/callgrind.out" \
        "$HTTPD" -X -f "$W/provider.conf" >"$W/logs/valgrind-$1.log" 2>&1 </dev/null &
    VG_PID=$!
    i=0
    until answers_200 "$PORT" >/dev/null 2>&1; do
        i=$((i + 1))
        [ "$i" -lt 10 ] || { cat "$W/logs/valgrind-$1.log" >&2; die "apache2 under callgrind did not answer"; }
    done
    drive "$WARM"
    [ "$2" = 0 ] || drive "$2"
    sleep 1
    kill -TERM "$VG_PID" 2>/dev/null || true
    wait "$VG_PID" 2>/dev/null || true
    VG_PID=""
    [ -s "$W/cg/$1/callgrind.out" ] || die "no callgrind output ($1)"
}

# functions NAME INCL: "IR function" for every function of session NAME,
# self (INCL no) or inclusive (yes), all threads together.
functions() {
    callgrind_annotate --inclusive="$2" --threshold=100 "$W/cg/$1/callgrind.out" 2>/dev/null |
        awk '/^-+$/ { sep++; next }
             sep >= 3 && $1 ~ /^[0-9,]+$/ {
                 ir = $1; gsub(",", "", ir); $1 = ""; sub(/^ +/, ""); sub(/^\([^)]*\) +/, "")
                 sub(/ \[[^]]*\]$/, ""); sub(/^.*:/, ""); print ir "\t" $0 }'
}

# per_request INCL: the functions' difference between the sessions over N,
# largest first.
per_request() {
    functions base "$1" >"$W/fn-base"
    functions run "$1" >"$W/fn-run"
    # (a name may come several times: static functions of several files,
    # summed for self cost; the inclusive cost of a function in a cycle is
    # listed once per cycle, the largest taken)
    awk -F'\t' -v n="$N" -v incl="$1" '
        function add(m, k, v) { if (incl == "yes") { if (v + 0 > m[k] + 0) m[k] = v } else m[k] += v }
        NR == FNR { add(base, $2, $1); next } { add(run, $2, $1) }
        END { for (f in run) { d = (run[f] - base[f]) / n
                               if (d >= 1 && f != "PROGRAM TOTALS") printf "%10.0f  %s\n", d, f } }' \
        "$W/fn-base" "$W/fn-run" | sort -rn
}

if [ "$PASS" != perf ]; then
    callgrind_session base 0
    callgrind_session run "$N"
    total() { sed -n 's/^totals: *\([0-9]*\).*/\1/p; s/^summary: *\([0-9]*\).*/\1/p' "$W/cg/$1/callgrind.out" | head -n 1; }
    functions base yes >"$W/incl-base"
    functions run yes >"$W/incl-run"
    writer() { awk -F'\t' '$2 == "writer_main" { print $1; exit }' "$W/incl-$1"; }
    awk -v n="$N" -v tb="$(total base)" -v tr="$(total run)" \
        -v wb="$(writer base)" -v wr="$(writer run)" 'BEGIN {
            printf "instructions per request:   %8.0f (callgrind, whole process)\n", (tr - tb) / n
            printf "  billing writer thread:    %8.0f\n", (wr - wb) / n
            printf "  the rest (requests):      %8.0f\n", (tr - tb - wr + wb) / n
        }'
    echo
    echo "top functions by their own instructions, per request:"
    per_request no | head -n "$TOP"
    echo
    # Steps whose cost does not depend on timing come first (compare them
    # between trees); the billing and database ones depend on how requests
    # fall into the writer's groups and the leases (compare them roughly).
    echo "steps, inclusive, per request (absent: not called):"
    per_request yes >"$W/steps"
    for f in provider_chat_handler provider_messages_handler provider_responses_handler \
             provider_stream_run provider_stream_write ap_read_request provider_infer_begin \
             prov_secret_hash \
             prov_chat_parse prov_chat_upstream_body prov_gateway_request \
             prov_chat_relay_read prov_json_scan_render prov_chat_read_answer \
             prov_json_answer_render provider_infer_answer provider_write_json \
             prov_journal_append json_put_cleanup \
             - writer_main prov_queue_submit prov_store_bill_ledger_insert \
             prov_store_bill_buckets_add prov_store_commit provider_db_open; do
        if [ "$f" = - ]; then echo "  timing-dependent:"; continue; fi
        awk -v f="$f" '$2 == f { printf "  %10d  %s\n", $1, f; found = 1; exit }
                       END { if (!found) printf "  %10s  %s\n", "-", f }' "$W/steps"
    done
fi
