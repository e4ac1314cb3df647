#!/bin/sh
# bench/streams10k.sh: N agents streaming at once on one node (issue 17,
# item 2). The same N slow streams (one event every STREAMS_PACE_MS ms,
# STREAMS_EVENTS text events: by default 500 ms x 60, about 30 s) are opened
# at once (bench/streamload, one epoll loop; /v1/messages stream:true,
# relayed) through mod_provider, then, in the same run, through mod_proxy
# relaying the same mock gateway, one server at a time (the other stopped:
# its threads would count against kernel.pid_max), each sized alike for
# them: MPM event, STREAMS_PROCS children of (N + 64) / STREAMS_PROCS
# threads, ThreadStackSize STREAMS_STACK. Several children, because
# RLIMIT_NOFILE is per process and each stream holds two descriptors in
# its child (the client's socket and the gateway's): by default a child
# holds at most 2,600 threads, so 10,000 streams run in 4 children of
# 2,516 (about 5,300 descriptors each). For each server it reports the
# streams completed, failed with 502, 504 or otherwise, the server's RSS
# per open stream (children's VmRSS with every stream open, less before),
# the connections it holds to the gateway and the connects it made to it
# while the streams opened, how the connects reached the gateway and the
# server (the deepest each listen queue got, the most connects left
# waiting on a dropped SYN, and the kernel's listen overflows and SYN
# retransmissions meanwhile), and,
# with every stream open, the latency of a plain chat completion (not
# streamed: STREAMS_PLAIN of them, one after the other with
# STREAMS_PLAIN_GAP_MS between them; median, p90 and max), checked to
# have ended before the first stream did, and on mod_provider how many of
# them drew their hold from the key's lease in memory (the access log's
# provider-hold note: lease or database) rather than reserving it in the
# database: a count that timing does not blur. Then a second wave of the same N
# streams (STREAMS_WAVES=1: none): its completions and errors, and the
# connects it made to the gateway (none when the first wave's connections,
# kept by the threads, are reused). For mod_provider also the ledger: one
# row per completed stream of both waves, status ok, all charged the same.
# The default N is small (500) for a shared machine; STREAMS=10000 is the
# issue's figure (about 2 GB of memory, 20,000 threads: httpd's and
# mockgw's; ulimit -n is raised for the servers and mockgw, as far as the
# hard limit allows: each process needs 2 x its threads + 256, mockgw and
# streamload N + 256).
#
#   sh bench/streams10k.sh               (as root, a tree built without sanitizers)
#   STREAMS=10000 sh bench/streams10k.sh
#
# Environment: STREAMS (500), STREAMS_PACE_MS (500), STREAMS_EVENTS (60),
# STREAMS_PROCS (children per server: (N + 64) / 2600 rounded up),
# STREAMS_STACK (ThreadStackSize, 524288), STREAMS_WAVES (2), STREAMS_PLAIN (100),
# STREAMS_PLAIN_GAP_MS (50), STREAMS_NETNS (1; 0: the host's network
# namespace), STREAMS_SOMAXCONN (65535, in the run's own namespace),
# STREAMS_BACKLOG (both servers' ListenBacklog; unset: httpd's 511),
# STREAMS_SHOW=1 (one stream's answer first), BENCH_DB (sqlite3 or pgsql),
# BENCH_DBDMAX, BENCH_KEEP=1.
set -eu

# A network namespace of its own (STREAMS_NETNS=0: the host's), with its
# loopback up: the kernel's TCP counters then count this run alone (not
# the other work on the host), and net.core.somaxconn, which is per
# namespace, is raised there to STREAMS_SOMAXCONN (65535) so that the
# gateway's listen backlog takes the burst of connects, as docs/tuning.md
# asks of a gateway's host for 10,000 agents; httpd keeps its
# ListenBacklog (511) in both servers unless STREAMS_BACKLOG says otherwise
# (docs/tuning.md's 10,000-agent lines raise it). The host's own setting is
# untouched.
if [ "${STREAMS_NETNS:-1}" = 1 ] && [ -z "${STREAMS_IN_NETNS:-}" ] && command -v unshare >/dev/null; then
    self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
    STREAMS_IN_NETNS=1 exec unshare -n -- sh -c \
        'ip link set lo up && sysctl -qw net.core.somaxconn="$1" && exec sh "$2"' \
        sh "${STREAMS_SOMAXCONN:-65535}" "$self"
fi

PROG=streams10k
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
N=${STREAMS:-500}
PACE=${STREAMS_PACE_MS:-500}
EVENTS=${STREAMS_EVENTS:-60}
STACK=${STREAMS_STACK:-524288}
PROCS=${STREAMS_PROCS:-$(( (N + 64 + 2599) / 2600 ))}
THREADS=$(( (N + 64 + PROCS - 1) / PROCS ))
PLAIN_N=${STREAMS_PLAIN:-100}
PLAIN_GAP=${STREAMS_PLAIN_GAP_MS:-50}
WAVES=${STREAMS_WAVES:-2}
case $WAVES in 1|2) ;; *) echo "streams10k: STREAMS_WAVES must be 1 or 2" >&2; exit 2 ;; esac
MODEL=${BENCH_MODEL:-gpt-4o-mini}
BACKEND=${BENCH_DB:-sqlite3}
DBDSET=recommended
DBDMAX=${BENCH_DBDMAX:-10}
TOOL=$SRC/bench/streamload
UPSTREAM="claude-sonnet-4-fault-trickle-$PACE,pieces-$EVENTS"
AV="anthropic-version: 2023-06-01"

preflight "$MODDIR/mod_proxy.so" "$MODDIR/mod_proxy_http.so" "$MODDIR/mod_headers.so"
[ -x "$TOOL" ] || (cd "$SRC" && make bench/streamload >/dev/null) ||
    die "could not build bench/streamload"

# Descriptors: each stream holds a client socket and a gateway socket in its
# server child, one in mockgw and one in streamload (limits are per process).
# Raised to 65536 (or more) where the hard limit allows it.
NEED=$((THREADS * 2 + 256))
[ "$NEED" -ge $((N + 256)) ] || NEED=$((N + 256))
FDS=$((NEED + 4096))
[ "$FDS" -ge 65536 ] || FDS=65536
ulimit -Hn "$FDS" 2>/dev/null || FDS=$(ulimit -Hn)
ulimit -n "$FDS" 2>/dev/null || true
[ "$(ulimit -n)" -ge "$NEED" ] ||
    die "ulimit -n is $(ulimit -n) (hard limit $(ulimit -Hn)): $N streams in $PROCS children need $NEED per process (STREAMS_PROCS)"

pair_workdir streams

start_mockgw
GWPORT=${GW##*:}
make_database agents@example.com Agents streams
ctl model add slow --upstream "$UPSTREAM" --name slow --family anthropic --messages >/dev/null
ctl model price slow --input 0.15 --output 0.6 --cache 0.075 >/dev/null
chown -R "$RUNUSER:$RUNUSER" "$W/db"
mpm_conf() {
    mpm_fixed "$PROCS" "$THREADS"
    echo "ThreadStackSize $STACK"
}
# the plain requests' access log: how each one's hold was taken (only
# mod_provider sets the note; mod_proxy's lines say "-")
PAIR_EXTRA="LogFormat \"%{local}p %{provider-hold}n\" hold
CustomLog \"$W/logs/plain.log\" hold \"expr=%{REQUEST_URI} == '/v1/chat/completions'\"
${STREAMS_BACKLOG:+ListenBacklog $STREAMS_BACKLOG}"
start_pair
# one server at a time (start_server): each holds PROCS x THREADS threads
stop_httpd "$W/run/proxy.pid"

# start_server NAME PORT: starts the NAME server again, once it answers.
start_server() {
    "$HTTPD" -f "$W/$1.conf" -k start || die "the $1 server did not start"
    wait_ok "$2"
}

# rss_kb NAME: the VmRSS (KiB) of the NAME server's processes, parent included.
rss_kb() {
    main=$(cat "$W/run/$1.pid")
    t=0
    for pid in "$main" $(pgrep -P "$main"); do
        kb=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null || echo 0)
        t=$((t + ${kb:-0}))
    done
    echo "$t"
}

# cpu_ticks PID...: the CPU time (clock ticks, user and system) the
# processes PID have used so far, all their threads.
cpu_ticks() {
    for pid in "$@"; do
        sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null || true
    done | awk '{ t += $12 + $13 } END { printf "%d", t }'
}

# server_pids NAME: the NAME server's processes, parent included.
server_pids() { main=$(cat "$W/run/$1.pid"); echo "$main" $(pgrep -P "$main"); }

# gateway_conns NAME: the connections the NAME server's processes hold to the gateway.
gateway_conns() {
    main=$(cat "$W/run/$1.pid")
    ss -Htnp state established "( dport = :$GWPORT )" |
        grep -c -E "pid=($(pgrep -P "$main" | paste -sd '|' -)|$main)," || true
}

# plain PORT AUTH MODEL: PLAIN_N chat completions one after the other,
# PLAIN_GAP ms apart; "median p90 max" of their times in ms.
plain() {
    i=0
    gap=$(awk "BEGIN { print $PLAIN_GAP / 1000 }")
    while [ "$i" -lt "$PLAIN_N" ]; do
        curl -s -o /dev/null -w '%{http_code} %{time_total}\n' "http://127.0.0.1:$1/v1/chat/completions" \
             -H "$2" -H "Content-Type: application/json" \
             -d "{\"model\":\"$3\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":16}" ||
            :                      # (-w writes "000 TIME" for a failure)
        sleep "$gap"
        i=$((i + 1))
    done | awk '$1 != 200 { bad++ } { print $2 * 1000 } END { if (bad) print bad " not 200" > "/dev/stderr" }' |
        sort -n | awk '{ v[NR] = $1 } END {
            p90 = int(NR * 0.9 + 0.999); printf "%.1f %.1f %.1f", v[int((NR + 1) / 2)], v[p90], v[NR] }'
}

# now_ms: the time (ms) on a clock shared with elapsed figures below.
now_ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }

# tcpext NAME: the kernel's TcpExt counter NAME (all sockets).
tcpext() {
    awk -v k="$1" '/^TcpExt:/ { if (!h) { for (i = 2; i <= NF; i++) n[i] = $i; h = 1 }
                                else for (i = 2; i <= NF; i++) if (n[i] == k) print $i }' /proc/net/netstat
}

# tcp NAME: the kernel's Tcp counter NAME (ActiveOpens: connects made).
tcp() {
    awk -v k="$1" '/^Tcp:/ { if (!h) { for (i = 2; i <= NF; i++) n[i] = $i; h = 1 }
                             else for (i = 2; i <= NF; i++) if (n[i] == k) print $i }' /proc/net/snmp
}

# queues PORT...: until $W/queues.stop exists, every 20 ms, the accept
# queue of each listening PORT and the connects to it still waiting for
# the handshake (SYN-SENT: a SYN dropped by a full queue waits 1 s, 3 s...
# before it is sent again); then "PORT:deepest:most_waiting" per port.
queues() {
    : >"$W/queues.log"
    while [ ! -e "$W/queues.stop" ]; do
        ss -Hltn | awk '{ n = split($4, a, ":"); print "q", a[n], $2 }' >>"$W/queues.log"
        for p in "$@"; do
            echo "s $p $(ss -Htn state syn-sent "( dport = :$p )" | wc -l)" >>"$W/queues.log"
        done
        sleep 0.02
    done
    for p in "$@"; do
        awk -v p="$p" '$2 == p && $1 == "q" && $3 > m { m = $3 }
                       $2 == p && $1 == "s" && $3 > w { w = $3 }
                       END { printf "%s:%d:%d ", p, m, w }' "$W/queues.log"
    done
}

# run NAME PORT MODEL AUTH: the N streams (/v1/messages) through one
# server; leaves NAME.load (streamload's line) and NAME.vars (rss, gateway
# connections, listen queues, plain-request latency and when it was taken).
run() {
    name=$1 port=$2 model=$3 hdr=$4
    echo "{\"model\":\"$model\",\"max_tokens\":16,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
        >"$W/$name.body"
    auth=$hdr
    [ "$name" = proxy ] || auth="Authorization: Bearer $KEY"
    idle=$(plain "$port" "$auth" "$MODEL")
    before=$(rss_kb "$name")
    over0=$(tcpext ListenOverflows) syn0=$(tcpext TCPSynRetrans) act0=$(tcp ActiveOpens)
    rm -f "$W/queues.stop"
    queues "$GWPORT" "$port" >"$W/$name.queues" &
    qp=$!
    : >"$W/$name.err"
    t0=$(now_ms)
    "$TOOL" "$port" /v1/messages "$W/$name.body" "$N" "event: message_stop" "$hdr" "$AV" \
        >"$W/$name.load" 2>"$W/$name.err" &
    lp=$!
    # (with STREAMS_SHOW=1, one stream's whole answer first: what streamload gets)
    if [ "${STREAMS_SHOW:-0}" = 1 ]; then
        curl -sS -N "http://127.0.0.1:$port/v1/messages" -H "$hdr" -H "$AV" \
             -H "Content-Type: application/json" -d @"$W/$name.body" | tail -c 300 >&2
    fi
    i=0
    while ! grep -q OPEN "$W/$name.err" && kill -0 "$lp" 2>/dev/null && [ "$i" -lt 1200 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    sleep 3                        # every request through the module to the gateway
    touch "$W/queues.stop"
    wait "$qp" || true
    during=$(rss_kb "$name")
    gwconns=$(gateway_conns "$name")
    over=$(($(tcpext ListenOverflows) - over0)) syn=$(($(tcpext TCPSynRetrans) - syn0))
    # every connect made meanwhile less streamload's N: the server's to the gateway
    gwopens=$(($(tcp ActiveOpens) - act0 - N))
    [ "${STREAMS_SHOW:-0}" != 1 ] || gwopens=$((gwopens - 1))
    p0=$(($(now_ms) - t0))
    c0=$(cpu_ticks $(server_pids "$name")) g0=$(cpu_ticks "$MOCKGW_PID") act2=$(tcp ActiveOpens)
    l0=$(wc -l <"$W/logs/plain.log")
    lat=$(plain "$port" "$auth" "$MODEL")
    p1=$(($(now_ms) - t0))
    leased=$(tail -n +"$((l0 + 1))" "$W/logs/plain.log" | awk -v p="$port" '$1 == p && $2 == "lease"' | wc -l)
    # the connects made meanwhile less curl's: the server's for the plain requests
    plainopens=$(($(tcp ActiveOpens) - act2 - PLAIN_N))
    # CPU meanwhile, in % of one CPU (ticks are 1/CLK_TCK s)
    hz=$(getconf CLK_TCK)
    cpu=$(( ($(cpu_ticks $(server_pids "$name")) - c0) * 100000 / hz / (p1 - p0 + 1) ))
    gcpu=$(( ($(cpu_ticks "$MOCKGW_PID") - g0) * 100000 / hz / (p1 - p0 + 1) ))
    wait "$lp" || die "streamload failed against the $name server"
    # the second wave: the same N streams again, on the threads (and their
    # kept gateway connections) the first left
    gwopens2=0
    if [ "$WAVES" = 2 ]; then
        act1=$(tcp ActiveOpens)
        "$TOOL" "$port" /v1/messages "$W/$name.body" "$N" "event: message_stop" "$hdr" "$AV" \
            >"$W/$name.load2" 2>/dev/null || die "streamload (second wave) failed against the $name server"
        gwopens2=$(($(tcp ActiveOpens) - act1 - N))
    fi
    echo "before=$before during=$during gwconns=$gwconns gwopens=$gwopens gwopens2=$gwopens2 over=$over syn=$syn" \
         "queues=\"$(cat "$W/$name.queues")\" idle=\"$idle\" lat=\"$lat\" plain_from=$p0 plain_to=$p1 plainopens=$plainopens leased=$leased cpu=$cpu gcpu=$gcpu" >"$W/$name.vars"
}

echo "streams10k: $N streams at once, one event every $PACE ms, $EVENTS text events;" \
     "$("$HTTPD" -v | sed -n 's/^Server version: //p'), MPM event $PROCS x $THREADS," \
     "ThreadStackSize $STACK, ListenBacklog ${STREAMS_BACKLOG:-511}, $(nproc) CPUs, $BACKEND; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
run provider "$PROVIDER_PORT" slow "x-api-key: $KEY"
sleep 2
SLOW="model_id = (SELECT id FROM models WHERE public_id = 'slow')"
ROWS=$(q "SELECT COUNT(*) FROM ledger WHERE $SLOW AND status = 'ok';")
CHARGES=$(q "SELECT COUNT(DISTINCT credits) FROM ledger WHERE $SLOW AND status = 'ok';")
UNSETTLED=$(q "SELECT COUNT(*) FROM ledger WHERE status = 'reserved';")
stop_httpd "$W/run/provider.pid"
start_server proxy "$PROXY_PORT"
run proxy "$PROXY_PORT" "$UPSTREAM" "X-Nothing: 1"

# field NAME KEY [2]: KEY of streamload's line for NAME (its second wave's with 2)
field() { sed -n "s/.*[[:space:]]$2=\([0-9]*\).*/\1/p" "$W/$1.load${3:-}" 2>/dev/null; }
var() { (. "$W/$1.vars" && eval "echo \"\$$2\""); }
printf '\n%-38s %14s %14s\n' "" mod_provider mod_proxy
for f in open connected completed s502 s504 other conn unfinished opened_ms first_ms all_ms; do
    printf '%-38s %14s %14s\n' "$f" "$(field provider $f)" "$(field proxy $f)"
done
for s in provider proxy; do
    eval "${s}_per=\$(( ($(var $s during) - $(var $s before)) / $N ))"
done
row() { printf '%-38s %14s %14s\n' "$1" "$2" "$3"; }
both() { row "$1" "$(var provider "$2")" "$(var proxy "$2")"; }
lat() { row "$1" "$(var provider "$3" | cut -d' ' -f"$2")" "$(var proxy "$3" | cut -d' ' -f"$2")"; }
row "RSS per open stream (KiB)" "$provider_per" "$proxy_per"
row "RSS with all open (MiB)" "$(($(var provider during) / 1024))" "$(($(var proxy during) / 1024))"
both "connections to the gateway" gwconns
both "connects made to the gateway" gwopens
# queue NAME PORT FIELD: the queues figure FIELD (2: deepest, 3: most waiting) of PORT
queue() { var "$1" queues | tr ' ' '\n' | awk -F: -v p="$2" -v f="$3" '$1 == p { print $f }'; }
row "gateway's deepest accept queue" "$(queue provider "$GWPORT" 2)" "$(queue proxy "$GWPORT" 2)"
row "connects waiting on the gateway, most" "$(queue provider "$GWPORT" 3)" "$(queue proxy "$GWPORT" 3)"
row "server's deepest accept queue" "$(queue provider "$PROVIDER_PORT" 2)" "$(queue proxy "$PROXY_PORT" 2)"
row "connects waiting on the server, most" "$(queue provider "$PROVIDER_PORT" 3)" \
    "$(queue proxy "$PROXY_PORT" 3)"
SCOPE="own netns"
[ -n "${STREAMS_IN_NETNS:-}" ] || SCOPE="host, all"
both "listen overflows ($SCOPE)" over
both "SYN retransmissions ($SCOPE)" syn
lat "plain request before, median (ms)" 1 idle
lat "plain request before, p90 (ms)" 2 idle
lat "plain request meanwhile, median (ms)" 1 lat
lat "plain request meanwhile, p90 (ms)" 2 lat
lat "plain request meanwhile, max (ms)" 3 lat
both "plain requests from (ms)" plain_from
both "plain requests to (ms)" plain_to
both "their connects to the gateway" plainopens
row "of them drawn from a lease" "$(var provider leased) of $PLAIN_N" "-"
both "server's CPU meanwhile (% of a CPU)" cpu
both "gateway's CPU meanwhile (% of a CPU)" gcpu
if [ "$WAVES" = 2 ]; then
    for f in completed s502 s504 other conn unfinished; do
        row "second wave: $f" "$(field provider $f 2)" "$(field proxy $f 2)"
    done
    both "second wave: connects to the gateway" gwopens2
fi
for s in provider proxy; do
    [ "$(var $s plain_to)" -lt "$(field $s first_ms)" ] ||
        echo "$PROG: warning: the $s server's plain requests ended after its first stream did" >&2
done
echo
DONE=$(($(field provider completed) + $(field provider completed 2 || true) + 0))
echo "ledger: $ROWS rows 'ok' for the streams' model (completed: $DONE);" \
     "distinct charges among them: $CHARGES; reservations never settled: $UNSETTLED"
SHOWN=0
[ "${STREAMS_SHOW:-0}" != 1 ] || SHOWN=1
if [ "$ROWS" = $((DONE + SHOWN)) ] && [ "$UNSETTLED" = 0 ] && [ "$CHARGES" = 1 ]; then
    echo "ledger check: OK"
else
    echo "ledger check: FAILED"
    exit 1
fi
