#!/bin/sh
# bench/seqlat.sh: the latency of requests sent one after another, as a
# client that waits for each answer sends them (Claude Code between tool
# calls, a script): mod_provider and mod_proxy side by side on the same mock
# gateway (bench/lib.sh's pair, MPM event 1 x 64 threads, SQLite or
# BENCH_DB=pgsql), SEQLAT_N chat completions per gap with curl, a new
# connection each, for each gap of SEQLAT_GAPS (seconds between an answer
# and the next request; "0 0.05 0.3" by default: back to back, within the
# billing leases' keep_idle of 100 ms, beyond it). Prints the median of
# curl's connect, first-byte and total times and the p90 of the total, in
# ms. Root, like bench/run.sh.
PROG=seqlat
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
MODEL=${BENCH_MODEL:-gpt-4o-mini}
BACKEND=${BENCH_DB:-sqlite3}
DBDSET=recommended
DBDMAX=${BENCH_DBDMAX:-10}
N=${SEQLAT_N:-100}
preflight "$MODDIR/mod_proxy.so" "$MODDIR/mod_proxy_http.so" "$MODDIR/mod_headers.so"
pair_workdir seqlat
start_mockgw
make_database seqlat@example.com Seqlat seqlat
chown -R "$RUNUSER:$RUNUSER" "$W/db"
mpm_conf() { mpm_fixed 1 64; }
start_pair

# median COLUMN FILE: the median of a column of seconds, in ms
median() { cut -d' ' -f"$1" "$2" | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] * 1000 }'; }
p90() { cut -d' ' -f"$1" "$2" | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", v[int(NR * 0.9 + 0.999)] * 1000 }'; }

# probe PORT HEADER GAP: N requests; their timings in $W/probe.txt
probe() {
    i=0
    : >"$W/probe.txt"
    while [ "$i" -lt "$N" ]; do
        curl -s -o /dev/null -w '%{time_connect} %{time_starttransfer} %{time_total}\n' \
             "http://127.0.0.1:$1/v1/chat/completions" -H "$2" -H "Content-Type: application/json" \
             -d "{\"model\":\"$MODEL\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":16}" \
             >>"$W/probe.txt" || die "curl failed"
        [ "$3" = 0 ] || sleep "$3"
        i=$((i + 1))
    done
    echo "connect $(median 1 "$W/probe.txt")  first byte $(median 2 "$W/probe.txt")  total $(median 3 "$W/probe.txt") (p90 $(p90 3 "$W/probe.txt"))"
}

echo "seqlat: $N chat completions one after another per gap, $BACKEND, ms (median)"
for gap in ${SEQLAT_GAPS:-0 0.05 0.3}; do
    echo "gap $gap s, mod_provider: $(probe "$PROVIDER_PORT" "Authorization: Bearer $KEY" "$gap")"
    echo "gap $gap s, mod_proxy:    $(probe "$PROXY_PORT" "X-Nothing: 1" "$gap")"
done
