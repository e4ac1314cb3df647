# bench/lib.sh: the setup that bench/run.sh and bench/crash.sh share, sourced
# by both after they set PROG (the prefix of their messages: bench, crash):
# the paths of the built tree and of apache2, the checks before a run (root,
# the build, wrk and sqlite3, no sanitizers), a free loopback port, the mock
# gateway, the database (SQLite, or a throwaway PostgreSQL cluster with
# BENCH_DB=pgsql) seeded with a user, a big balance, the priced model and a
# key, synthetic ledger rows (ledger_fill), the head of an apache2 config,
# the pair of servers compared (mod_provider and mod_proxy on the same
# gateway), waiting for a first 200, and stopping what was started. The
# functions read and set the scripts' variables (W, the work directory;
# BACKEND, MODEL, KEY, GW, DB, DBSPEC, PGDATA_DIR, PGPORT, MOCKGW_PID) as
# the scripts' own code did before it moved here.
#
# CPUs (taskset): BENCH_CPUS runs the script and everything it starts (both
# servers, mockgw, wrk) on those CPUs only; BENCH_PG_CPUS runs PostgreSQL on
# those. BENCH_CPUS=0 BENCH_PG_CPUS=1 gives the database a CPU of its own,
# as a database host of its own would, on a 2-core machine.

SRC=$(cd "$(dirname "$0")/.." && pwd)
HTTPD=/usr/sbin/apache2
MODDIR=/usr/lib/apache2/modules
MODULE=${BENCH_MODULE:-$SRC/mod_provider/.libs/mod_provider.so}   # another build's, to compare
CTL=$SRC/cli/providerctl
MOCKGW=$SRC/tests/mockgw/mockgw
RUNUSER=www-data
PGBIN=/usr/lib/postgresql/15/bin
MOCKGW_PID=""

die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

# preflight [FILE...]: root, the built tree (and the FILEs), wrk, sqlite3, and
# a build without sanitizers; dies saying what is missing.
preflight() {
    [ "$(id -u)" = 0 ] || die "run me as root (apache2 starts as root and runs as $RUNUSER)"
    for f in "$MODULE" "$CTL" "$MOCKGW" "$HTTPD" "$@"; do
        [ -f "$f" ] || die "$f is missing (build first: autoreconf -fi && ./configure && make -j2)"
    done
    command -v wrk >/dev/null 2>&1 || die "wrk is missing (sh scripts/install-deps.sh)"
    command -v sqlite3 >/dev/null 2>&1 || die "sqlite3 is missing (sh scripts/install-deps.sh)"
    if grep -q '^SAN_CFLAGS = -f' "$SRC/Makefile" 2>/dev/null; then
        die "the tree is built with sanitizers: reconfigure without --enable-sanitizers and rebuild"
    fi
    if [ -n "${BENCH_CPUS:-}" ]; then
        taskset -cp "$BENCH_CPUS" $$ >/dev/null || die "BENCH_CPUS=$BENCH_CPUS: not CPUs of this machine"
    fi
    PG_PIN=""
    if [ -n "${BENCH_PG_CPUS:-}" ]; then
        taskset -c "$BENCH_PG_CPUS" true || die "BENCH_PG_CPUS=$BENCH_PG_CPUS: not CPUs of this machine"
        PG_PIN="taskset -c $BENCH_PG_CPUS"
    fi
}

# cpus_line: which CPUs the run used, for a table's header.
cpus_line() {
    if [ -n "${BENCH_CPUS:-}${BENCH_PG_CPUS:-}" ]; then
        echo "CPUs: servers, mockgw and wrk on ${BENCH_CPUS:-any}; PostgreSQL on ${BENCH_PG_CPUS:-any}"
    fi
}

# stop_httpd PIDFILE: stops the server of PIDFILE (if it has one) and waits
# up to 30 s for it to go.
stop_httpd() {
    if [ -n "$1" ] && [ -s "$1" ]; then
        pid=$(cat "$1")
        kill -TERM "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    fi
}

# stop_services: the end of both scripts' cleanup: PostgreSQL and the mock
# gateway stopped, then $W removed (kept with BENCH_KEEP=1).
stop_services() {
    if [ -n "${PGDATA_DIR:-}" ] && [ -f "$PGDATA_DIR/postmaster.pid" ]; then
        su postgres -s /bin/sh -c "$PGBIN/pg_ctl -D '$PGDATA_DIR' -m fast -w stop" >/dev/null 2>&1 || true
    fi
    if [ -n "$MOCKGW_PID" ]; then
        kill -TERM "$MOCKGW_PID" 2>/dev/null || true
        wait "$MOCKGW_PID" 2>/dev/null || true
    fi
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        echo "$PROG: kept $W" >&2
    else
        rm -rf "$W"
    fi
}

# pair_workdir NAME: a fresh work directory W (/tmp/mod_provider-NAME.XXXXXX)
# for a script that compares the pair (start_pair), and the traps that stop
# both servers and the services however the script ends.
pair_workdir() {
    W=$(mktemp -d "/tmp/mod_provider-$1.XXXXXX")
    chmod 755 "$W"
    mkdir -p "$W/db" "$W/run" "$W/logs" "$W/htdocs"
    trap stop_pair EXIT
    trap 'exit 130' INT TERM HUP PIPE
}

stop_pair() {
    for conf in "$W/provider.conf" "$W/proxy.conf"; do
        stop_httpd "$(sed -n 's/^PidFile "\(.*\)"$/\1/p' "$conf" 2>/dev/null || true)"
    done
    stop_services
}

# free_port: a loopback TCP port nobody listens on.
free_port() {
    p=$(( 20000 + $(od -An -tu2 -N2 /dev/urandom | tr -d ' ') % 20000 ))
    while ss -Hltn "sport = :$p" | grep -q .; do p=$((p + 1)); done
    echo "$p"
}

# start_mockgw: the mock gateway on a free port with a fresh service token
# ($W/gateway.token) and the options in MOCKGW_ARGS; sets GW (its
# host:port) and MOCKGW_PID.
start_mockgw() {
    umask 077
    od -An -tx1 -N24 /dev/urandom | tr -d ' \n' >"$W/gateway.token"
    umask 022
    : >"$W/logs/mockgw.log"
    # shellcheck disable=SC2086
    "$MOCKGW" --listen 127.0.0.1:0 --token-file "$W/gateway.token" ${MOCKGW_ARGS:-} \
        >>"$W/logs/mockgw.log" 2>&1 </dev/null &
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
}

ctl() { "$CTL" --db "$DBSPEC" "$@"; }
# q SQL: one query against the benchmark database, plain output.
q() {
    if [ "$BACKEND" = pgsql ]; then
        psql -h "$W/pg" -p "$PGPORT" -U postgres -d bench -At -c "$1"
    else
        sqlite3 -cmd '.timeout 5000' "$DB" "$1"
    fi
}

# make_database EMAIL NAME LABEL: the database ($W/db/provider.db, or a
# PostgreSQL cluster in $W/pg), migrated, with the user EMAIL (NAME) given a
# big balance (reason LABEL; BENCH_BALANCE credits instead, e.g. 10: an
# account of modest means), the priced model $MODEL and a key named LABEL;
# sets DB, DBSPEC (and PGDATA_DIR, PGPORT) and KEY (its secret).
make_database() {
    DB=$W/db/provider.db
    DBSPEC="sqlite3:$DB"
    if [ "$BACKEND" = pgsql ]; then
        PGDATA_DIR=$W/pg/data
        PGPORT=$(free_port)
        mkdir -p "$W/pg" && chown postgres "$W/pg"
        su postgres -s /bin/sh -c "$PGBIN/initdb -D '$PGDATA_DIR' --auth=trust -U postgres --no-sync" \
            >"$W/logs/initdb.log" 2>&1 || { cat "$W/logs/initdb.log" >&2; die "initdb failed"; }
        $PG_PIN su postgres -s /bin/sh -c "$PGBIN/pg_ctl -D '$PGDATA_DIR' -w -l '$W/pg/log' -o \"-p $PGPORT -k $W/pg -c listen_addresses='' -c fsync=off ${BENCH_PG_OPTS:-}\" start" \
            >/dev/null 2>&1 || { cat "$W/pg/log" >&2; die "PostgreSQL did not start"; }
        psql -h "$W/pg" -p "$PGPORT" -U postgres -qc 'CREATE DATABASE bench' || die "cannot create the database"
        DBSPEC="pgsql:host=$W/pg port=$PGPORT user=postgres dbname=bench"
    fi
    ctl db migrate >/dev/null
    ctl user add "$1" --name "$2" >/dev/null
    ctl balance add "$1" "${BENCH_BALANCE:-1000000000}" --reason "$3" >/dev/null
    ctl model add "$MODEL" --upstream "$MODEL" --name "$MODEL" >/dev/null
    ctl model price "$MODEL" --input 0.15 --output 0.6 --cache 0.075 >/dev/null
    KEY=$(ctl key create "$1" --name "$3" --json |
          sed -n 's/.*"secret"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
    case $KEY in sk-prov-*) ;; *) die "could not read the key from providerctl key create --json" ;; esac
}

# Synthetic ledger rows (bench/ledger.sh's big ledger, bench/run.sh's
# BENCH_COMPACT_ROWS): LEDGER_COLS, and ledger_select N USERS START SPAN, the
# SELECT of row i (1..N) as SQL expressions of i: user i % USERS + 1 with
# three keys each, two of six models and one of the three transports; one
# request in 50 refused, one in 97 failed, one in 13 cut by its client, one
# in 4 funded by a plan; created from START over SPAN seconds.
LEDGER_COLS="request_id, user_id, key_id, model_id, transport, input_tokens, output_tokens, cache_tokens, reasoning_tokens, reserved, credits, plan_credits, source, status, created_at, settled_at"
ledger_select() {
    cat <<SQL
SELECT 'bench-' || i, i % $2 + 1, (i % $2) * 3 + (i / $2) % 3 + 1,
  (i % $2) % 5 + (i / $2) % 2 + 1,
  CASE (i % $2) % 3 WHEN 0 THEN 'chat' WHEN 1 THEN 'messages' ELSE 'responses' END,
  100 + i % 900, CASE WHEN i % 50 = 0 THEN 0 ELSE 50 + i % 400 END, i % 5 * 20, i % 11 * 3,
  5000, CASE WHEN i % 50 = 0 THEN 0 ELSE 100 + i % 1000 END,
  CASE WHEN i % 4 = 0 AND i % 50 <> 0 THEN 100 + i % 1000 ELSE 0 END,
  CASE WHEN i % 4 = 0 THEN 'plan' ELSE 'balance' END,
  CASE WHEN i % 50 = 0 THEN 'refused' WHEN i % 97 = 0 THEN 'failed'
       WHEN i % 13 = 0 THEN 'client_cut' ELSE 'ok' END,
  $3 + (i * $4) / $1, $3 + (i * $4) / $1 + 2
SQL
}

# ledger_fill N USERS START SPAN: inserts those N rows into the benchmark
# database in one statement (a recursive CTE on SQLite, generate_series on
# PostgreSQL), then ANALYZE.
ledger_fill() {
    if [ "$BACKEND" = pgsql ]; then
        q "INSERT INTO ledger ($LEDGER_COLS) $(ledger_select "$@" | sed 's/(i \* /(i::bigint * /g') FROM generate_series(1, $1) AS g(i)" >/dev/null
    else
        q "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) INSERT INTO ledger ($LEDGER_COLS) $(ledger_select "$@") FROM n" >/dev/null
    fi
    q "ANALYZE" >/dev/null
}

# ---- compaction under load (bench/run.sh's BENCH_COMPACT_ROWS) ----------
# compact_fill: the gate (the first ledger row, created in ten years: the
# rollup stops at a row of a day not closed, and the removal at the rollup),
# then $COMPACT synthetic rows of BENCH_COMPACT_USERS users created 39 to 9
# days ago; sets OLD_MAX (the last old row's id), OLD_START (their number)
# and GATE_AT (the time compact_open gives the gate).
compact_fill() {
    _day=$(( $(date +%s) / 86400 * 86400 ))
    GATE_AT=$((_day - 39 * 86400))
    _future=$((_day + 3650 * 86400))
    q "INSERT INTO ledger ($LEDGER_COLS) VALUES ('bench-gate', 1, 1, 1, 'chat', 0, 0, 0, 0, 0, 0, 0, 'balance', 'ok', $_future, $_future)" >/dev/null
    [ "$(q "SELECT MIN(id) FROM ledger")" = "$(q "SELECT id FROM ledger WHERE request_id = 'bench-gate'")" ] ||
        die "the ledger has rows before the compaction's gate"
    _t0=$(date +%s)
    [ "$COMPACT" = 0 ] || ledger_fill "$COMPACT" "${BENCH_COMPACT_USERS:-1000}" "$GATE_AT" $((30 * 86400))
    OLD_MAX=$(q "SELECT MAX(id) FROM ledger")
    OLD_START=$(q "SELECT COUNT(*) FROM ledger WHERE id <= $OLD_MAX")
    echo "bench: $COMPACT old ledger rows and the gate made in $(( $(date +%s) - _t0 )) s" >&2
}

# compact_open: moves the gate into the past; the purge thread (a round a
# second) rolls up and removes from then on.
compact_open() {
    q "UPDATE ledger SET created_at = $GATE_AT, settled_at = $GATE_AT WHERE request_id = 'bench-gate'" >/dev/null
}

# old_rows: the old rows (and the gate) still in the ledger, and the
# rollup's last id: "COUNT LAST_ID".
old_rows() {
    echo "$(q "SELECT COUNT(*) FROM ledger WHERE id <= $OLD_MAX") $(q "SELECT last_id FROM ledger_rollup_state")"
}

# compact_report: what the purge rolled up and removed during each measured
# mod_provider run of ROUNDS (old_rows in $W/old.R.before and .after) and in
# all; exits 1 when old rows were there and the purge did nothing while
# mod_provider was measured.
compact_report() {
    set -- $(old_rows)
    _left=$1; _removed=0; _rolled=0; _per=""; _r=1
    while [ "$_r" -le "$ROUNDS" ]; do
        set -- $(cat "$W/old.$_r.before") $(cat "$W/old.$_r.after")
        _removed=$((_removed + $1 - $3)); _rolled=$((_rolled + $4 - $2))
        _per="$_per $(($1 - $3))/$(($4 - $2))"; _r=$((_r + 1))
    done
    echo "compaction: $OLD_START old ledger rows (past ProviderLedgerRetention 8: $COMPACT synthetic and the gate) at the start"
    echo "compaction: while mod_provider was measured, removed $_removed and rolled up $_rolled ids (removed/rolled by round:$_per)"
    echo "compaction: in all, removed $((OLD_START - _left)) (left: $_left), rolled up to ledger id $(q "SELECT last_id FROM ledger_rollup_state")"
    if [ "$COMPACT" -gt 0 ] && [ "$_removed" = 0 ] && [ "$_rolled" = 0 ]; then
        echo "compaction check: FAILED (the purge neither rolled up nor removed while mod_provider was measured)"
        exit 1
    fi
    set -- $(cat "$W/old.$ROUNDS.after")
    if [ "$COMPACT" -gt 0 ] && [ "$1" = 0 ]; then
        echo "compaction: note: no old row was left when the last measured run ended, so it was partly without compaction (more rows: about 10,000 go a second)"
    fi
}

# mpm_fixed PROCESSES THREADS: MPM event lines for exactly PROCESSES children
# of THREADS threads each.
mpm_fixed() {
    cat <<EOF
StartServers $1
ServerLimit $1
ThreadLimit $2
ThreadsPerChild $2
MaxRequestWorkers $(($1 * $2))
MinSpareThreads 1
MaxSpareThreads $(($1 * $2))
MaxConnectionsPerChild 0
EOF
}

# server_conf NAME PORT [LOG]: the head of an apache2 config (MPM event with
# the lines of the script's mpm_conf, keep-alive, the error log $W/logs/LOG,
# by default NAME-error.log); the script adds the modules and directives of
# the server under test.
server_conf() {
    cat <<EOF
ServerRoot "$W"
ServerName 127.0.0.1
Listen 127.0.0.1:$2
PidFile "$W/run/$1.pid"
DefaultRuntimeDir "$W/run"
Mutex file:$W/run default
User $RUNUSER
Group $RUNUSER
DocumentRoot "$W/htdocs"
LoadModule mpm_event_module $MODDIR/mod_mpm_event.so
# (without mod_authz_core every request fails: AH00025 "couldn't check user")
LoadModule authz_core_module $MODDIR/mod_authz_core.so
$(mpm_conf)
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 30
ErrorLog "$W/logs/${3:-$1-error.log}"
LogLevel warn
# no access log on either server: it would measure the disk, not the module
EOF
}

# answers_200 PORT: posts a chat completion with $KEY every 0.1 s until one is
# answered 200 (which also warms the caches); 1 after 100 tries, with the
# last status in $code and the last answer in $W/last-answer.
answers_200() {
    i=0
    while :; do
        code=$(curl -s -o "$W/last-answer" -w '%{http_code}' "http://127.0.0.1:$1/v1/chat/completions" \
               -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" \
               -d "{\"model\":\"$MODEL\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":16}" \
               2>/dev/null) || code=000
        [ "$code" = 200 ] && return 0
        i=$((i + 1))
        [ "$i" -lt 100 ] || return 1
        sleep 0.1
    done
}

# wait_ok PORT: until a chat completion answers 200 (also warms the caches);
# dies with the last answer and the servers' logs otherwise.
wait_ok() {
    answers_200 "$1" && return 0
    cat "$W/last-answer" >&2 2>/dev/null || true
    tail -n 20 "$W"/logs/*-error.log >&2 || true
    die "127.0.0.1:$1 did not answer 200 to a chat completion (last: $code)"
}

# start_pair: the two servers under test on free ports (PROVIDER_PORT,
# PROXY_PORT), both with the MPM lines of the script's mpm_conf: mod_provider
# with the database of make_database (BACKEND, DBDSET, DBDMAX, BENCH_DBDMAX)
# and the gateway GW, mod_proxy relaying /v1/ to GW with the service token
# added; PAIR_EXTRA (lines) goes into both configs, PROVIDER_EXTRA into
# mod_provider's only. Returns once each has
# answered a chat completion 200.
start_pair() {
    TOKEN=$(cat "$W/gateway.token")
    PROVIDER_PORT=$(free_port)
    PROXY_PORT=$(free_port)
    [ "$PROXY_PORT" != "$PROVIDER_PORT" ] || PROXY_PORT=$((PROVIDER_PORT + 1))

    {
        server_conf provider "$PROVIDER_PORT"
        cat <<EOF
LoadModule dbd_module $MODDIR/mod_dbd.so
LoadModule provider_module $MODULE
ProviderEngine On
ProviderGatewayURL http://$GW
# info: each child's SQLite lock waits when it stops (PROV00408)
LogLevel warn provider:info
ProviderGatewayTokenFile "$W/gateway.token"
${PAIR_EXTRA:-}
${PROVIDER_EXTRA:-}
EOF
        if [ "$DBDSET" = defaults ]; then
            if [ "$BACKEND" = pgsql ]; then
                echo "DBDriver pgsql"
                echo "DBDParams \"host=$W/pg port=$PGPORT user=postgres dbname=bench\""
            else
                echo "DBDriver sqlite3"
                echo "DBDParams \"$DB\""
            fi
            if [ -n "${BENCH_DBDMAX:-}" ]; then
                # mod_dbd refuses a pool whose DBDKeep (default 2) is above DBDMax
                [ "$DBDMAX" -ge 2 ] || echo "DBDKeep $DBDMAX"
                echo "DBDMax $DBDMAX"
            fi
        elif [ "$BACKEND" = pgsql ]; then
            cat <<EOF
DBDriver pgsql
DBDParams "host=$W/pg port=$PGPORT user=postgres dbname=bench"
DBDMin 1
DBDKeep $DBDMAX
DBDMax $DBDMAX
EOF
        else
            # as example-site.conf: the module sets WAL, synchronous and busy handling
            echo "DBDriver sqlite3"
            echo "DBDParams \"$DB\""
            if [ -n "${BENCH_DBDMAX:-}" ]; then
                [ "$DBDMAX" -ge 2 ] || echo "DBDKeep $DBDMAX"
                echo "DBDMax $DBDMAX"
            fi
        fi
    } >"$W/provider.conf"

    {
        server_conf proxy "$PROXY_PORT"
        cat <<EOF
LoadModule proxy_module $MODDIR/mod_proxy.so
LoadModule proxy_http_module $MODDIR/mod_proxy_http.so
LoadModule headers_module $MODDIR/mod_headers.so
RequestHeader set Authorization "Bearer $TOKEN"
ProxyPass /v1/ http://$GW/v1/
${PAIR_EXTRA:-}
EOF
    } >"$W/proxy.conf"
    chmod 600 "$W/proxy.conf"

    for s in provider proxy; do
        "$HTTPD" -t -f "$W/$s.conf" >"$W/logs/$s-configtest.log" 2>&1 ||
            { cat "$W/logs/$s-configtest.log" >&2; die "apache2 -t failed for the $s server"; }
        "$HTTPD" -f "$W/$s.conf" -k start || die "the $s server did not start"
    done

    wait_ok "$PROVIDER_PORT"
    wait_ok "$PROXY_PORT"
}
