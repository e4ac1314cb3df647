#!/bin/sh
# bench/streamtime.sh: where the milliseconds of one stream go, through
# mod_provider and through mod_proxy on the same mock gateway. Requests are
# sent one at a time (bench/streamtime), so the figures are waits, not
# throughput, and hold on a busy machine: for each path, the median and 90th
# percentile of when the gateway read the request and wrote each event
# (mockgw --times) and when the client received the first byte, each event
# and the last byte, in ms after the request was written.
#
#   sh bench/streamtime.sh        (as root, in a tree built without sanitizers)
#
# Paths: /v1/messages stream:true (relayed; mod_proxy relays the same path)
# and /v1/responses stream:true (translated from the gateway's chat stream;
# mod_proxy relays that chat stream, /v1/chat/completions). Two gateway
# paces: "burst", the whole stream in one write (as bench/run.sh's mockgw
# sends it), and "paced", one write per event 2 ms apart (trickle-2), as a
# model streams; and, for reference, a chat completion not streamed. Environment: STREAMTIME_COUNT (200), STREAMTIME_WARMUP (20),
# BENCH_DB (sqlite3 or pgsql), BENCH_KEEP=1.
set -eu

PROG=streamtime
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
COUNT=${STREAMTIME_COUNT:-200}
WARM=${STREAMTIME_WARMUP:-20}
MODEL=${BENCH_MODEL:-gpt-4o-mini}
BACKEND=${BENCH_DB:-sqlite3}
DBDSET=recommended
DBDMAX=${BENCH_DBDMAX:-10}
TOOL=$SRC/bench/streamtime

preflight "$MODDIR/mod_proxy.so" "$MODDIR/mod_proxy_http.so" "$MODDIR/mod_headers.so"
[ -x "$TOOL" ] || (cd "$SRC" && make bench/streamtime >/dev/null) ||
    die "could not build bench/streamtime"

pair_workdir streamtime

: >"$W/gw.times"
chmod 666 "$W/gw.times"
MOCKGW_ARGS="--times $W/gw.times"
start_mockgw
make_database stream@example.com Stream streamtime
CLAUDE=claude-sonnet-4
# model PUBLIC UPSTREAM [OPTION...]: a priced catalog model.
model() {
    m=$1 u=$2
    shift 2
    ctl model add "$m" --upstream "$u" --name "$m" "$@" >/dev/null
    ctl model price "$m" --input 0.15 --output 0.6 --cache 0.075 >/dev/null
}
model paced "$MODEL-fault-trickle-2"
model claude "$CLAUDE" --family anthropic --messages
model claude-paced "$CLAUDE-fault-trickle-2" --family anthropic --messages
chown -R "$RUNUSER:$RUNUSER" "$W/db"
mpm_conf() { mpm_fixed 1 64; }
start_pair

# body MODEL PATH: the request's body for PATH, streamed unless STREAM=false.
body() {
    case $2 in
        /v1/messages)
            echo "{\"model\":\"$1\",\"max_tokens\":16,\"stream\":$STREAM,\"messages\":[{\"role\":\"user\",\"content\":\"Say hello in five words.\"}]}" ;;
        /v1/responses)
            echo "{\"model\":\"$1\",\"max_output_tokens\":16,\"stream\":$STREAM,\"input\":\"Say hello in five words.\"}" ;;
        *)
            so=""
            [ "$STREAM" = false ] || so=',"stream_options":{"include_usage":true}'
            echo "{\"model\":\"$1\",\"max_tokens\":16,\"stream\":$STREAM$so,\"messages\":[{\"role\":\"user\",\"content\":\"Say hello in five words.\"}]}" ;;
    esac
}

# cpu_ns NAME: the CPU time (ns) so far of the NAME server's children, every
# thread (the scheduler's own count, /proc/PID/task/TID/schedstat).
cpu_ns() {
    t=0
    for pid in $(pgrep -P "$(cat "$W/run/$1.pid")"); do
        for f in /proc/"$pid"/task/*/schedstat; do
            read -r ns _ <"$f" 2>/dev/null && t=$((t + ns))
        done
    done
    echo "$t"
}

# run LABEL SERVER PORT PATH MODEL HEADER...
run() {
    label=$1 server=$2 port=$3 path=$4 model=$5
    shift 5
    body "$model" "$path" >"$W/body.json"
    echo "$label: POST $path ($model)"
    c0=$(cpu_ns "$server")
    "$TOOL" "$port" "$path" "$W/body.json" "$COUNT" "$WARM" "$W/gw.times" "$@" ||
        die "$label failed"
    c1=$(cpu_ns "$server")
    echo "  CPU of the $server server per request: $(( (c1 - c0) / 1000 / (COUNT + WARM) )) us"
    echo
}

echo "streamtime: $("$HTTPD" -v | sed -n 's/^Server version: //p'), MPM event 1 x 64 on both," \
     "$(nproc) CPUs, $BACKEND; $COUNT requests one at a time after $WARM, on one kept connection"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
AV="anthropic-version: 2023-06-01"
STREAM=false
run "mod_provider, not streamed" provider "$PROVIDER_PORT" /v1/chat/completions "$MODEL" \
    "Authorization: Bearer $KEY"
run "mod_proxy, not streamed" proxy "$PROXY_PORT" /v1/chat/completions "$MODEL"
STREAM=true
for pace in burst paced; do
    if [ $pace = burst ]; then
        pm=$MODEL up=$MODEL cm=claude cu=$CLAUDE
    else
        pm=paced up=$MODEL-fault-trickle-2 cm=claude-paced cu=$CLAUDE-fault-trickle-2
    fi
    run "mod_provider, $pace" provider "$PROVIDER_PORT" /v1/messages "$cm" "x-api-key: $KEY" "$AV"
    run "mod_proxy, $pace" proxy "$PROXY_PORT" /v1/messages "$cu" "$AV"
    run "mod_provider, $pace" provider "$PROVIDER_PORT" /v1/responses "$pm" \
        "Authorization: Bearer $KEY"
    run "mod_proxy, $pace" proxy "$PROXY_PORT" /v1/chat/completions "$up"
done
