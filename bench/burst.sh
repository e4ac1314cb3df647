#!/bin/sh
# bench/burst.sh: bursts after idle. A client (a batch job, a team's agents
# starting together) sends BURST_C chat completions at once after BURST_IDLE
# seconds without a request, BURST_N times: through mod_provider and
# mod_proxy side by side on the same mock gateway (bench/lib.sh's pair, MPM
# event 1 x 64 threads, SQLite or BENCH_DB=pgsql), with ab. At mod_provider
# a key idle for longer than a billing lease's keep_idle (100 ms) has no
# lease, so the burst's first requests are reserved in the database. Prints
# the time each request took at the server (the access log's %D: median,
# p90 and the slowest, in ms) and, for mod_provider, how many requests were
# held in the database rather than drawn from a lease. Root, like
# bench/run.sh.
PROG=burst
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
MODEL=${BENCH_MODEL:-gpt-4o-mini}
BACKEND=${BENCH_DB:-sqlite3}
DBDSET=recommended
case $BACKEND in
    pgsql) DBDMAX=${BENCH_DBDMAX:-16} ;;
    *) DBDMAX=${BENCH_DBDMAX:-10} ;;
esac
N=${BURST_N:-10}
C=${BURST_C:-32}
IDLE=${BURST_IDLE:-0.5}
preflight "$MODDIR/mod_proxy.so" "$MODDIR/mod_proxy_http.so" "$MODDIR/mod_headers.so"
command -v ab >/dev/null 2>&1 || die "ab is missing (apache2-utils: sh scripts/install-deps.sh)"
pair_workdir burst
start_mockgw
make_database burst@example.com Burst burst
chown -R "$RUNUSER:$RUNUSER" "$W/db"
mpm_conf() { mpm_fixed 1 64; }
PAIR_EXTRA='LogFormat "%D %{provider-hold}n" burst
CustomLog "logs/access.log" burst'
start_pair
printf '{"model":"%s","messages":[{"role":"user","content":"hi"}],"max_tokens":16}' "$MODEL" \
    >"$W/body.json"

# bursts PORT HEADER: N bursts of C requests, IDLE seconds apart; their
# access-log lines in $W/burst.log.
bursts() {
    from=$(($(wc -l <"$W/logs/access.log") + 1))
    i=0
    while [ "$i" -lt "$N" ]; do
        sleep "$IDLE"
        ab -q -c "$C" -n "$C" -p "$W/body.json" -T application/json -H "$2" \
           "http://127.0.0.1:$1/v1/chat/completions" >"$W/ab.txt" 2>&1 ||
            { cat "$W/ab.txt" >&2; die "ab failed"; }
        grep -q "^Non-2xx responses" "$W/ab.txt" && { cat "$W/ab.txt" >&2; die "non-2xx answers"; }
        i=$((i + 1))
    done
    sleep 0.2                        # the last lines
    tail -n +"$from" "$W/logs/access.log" >"$W/burst.log"
}

# summary: median, p90 and the slowest of $W/burst.log's times, in ms.
summary() {
    cut -d' ' -f1 "$W/burst.log" | sort -n |
        awk '{ v[NR] = $1 } END { printf "median %.2f  p90 %.2f  slowest %.2f (%d requests)",
             v[int((NR + 1) / 2)] / 1000, v[int(NR * 0.9 + 0.999)] / 1000, v[NR] / 1000, NR }'
}

echo "burst: $N bursts of $C chat completions at once, $IDLE s apart, $BACKEND; time at the server, ms"
bursts "$PROVIDER_PORT" "Authorization: Bearer $KEY"
DB_HOLDS=$(grep -c ' database$' "$W/burst.log" || true)
echo "mod_provider: $(summary); held in the database: $DB_HOLDS"
bursts "$PROXY_PORT" "X-Nothing: 1"
echo "mod_proxy:    $(summary)"
