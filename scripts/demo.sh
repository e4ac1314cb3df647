#!/bin/sh
# demo.sh: the README's first quick-start command. On a fresh Debian 12, as
# root, it installs the build dependencies, builds the tree, and starts a
# self-contained demo in the background: the mock gateway (tests/mockgw) on a
# loopback port with a generated service token, a fresh SQLite database with
# demo data (a user with a balance, one API key, three priced models), and
# Debian's apache2 running the freshly built mod_provider (no `make install`)
# as www-data on http://127.0.0.1:8080. It prints the key once and curl lines
# to try. Everything lives in one state directory; nothing under /etc changes.
#
#   sh scripts/demo.sh [start]   install, build, start (refuses if running)
#   sh scripts/demo.sh restart   stop, then start afresh (new database and key)
#   sh scripts/demo.sh stop      stop apache2 and the mock gateway
#   sh scripts/demo.sh status    say whether it runs
#
# Environment: PROVIDER_DEMO_DIR (state, default /var/lib/mod_provider-demo),
# PROVIDER_DEMO_PORT (default 8080), PROVIDER_DEMO_SKIP_BUILD=1 (use the tree
# as built, skip apt and make).
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
STATE=${PROVIDER_DEMO_DIR:-/var/lib/mod_provider-demo}
PORT=${PROVIDER_DEMO_PORT:-8080}
HTTPD=/usr/sbin/apache2
MODDIR=/usr/lib/apache2/modules
RUNUSER=www-data

MODULE=$SRC/mod_provider/.libs/mod_provider.so
CTL=$SRC/cli/providerctl
MOCKGW=$SRC/tests/mockgw/mockgw
DB=$STATE/db/provider.db
CONF=$STATE/httpd.conf
HTTPD_PIDFILE=$STATE/run/httpd.pid
MOCKGW_PIDFILE=$STATE/run/mockgw.pid

say() { printf '%s\n' "demo: $*"; }
die() { printf '%s\n' "demo: error: $*" >&2; exit 1; }

# pid_of FILE NAME: prints the pid recorded in FILE when that process is alive
# and its command line mentions NAME (so a recycled pid is never signalled).
pid_of() {
    [ -s "$1" ] || return 1
    _pid=$(cat "$1" 2>/dev/null) || return 1
    case $_pid in ''|*[!0-9]*) return 1 ;; esac
    [ -r "/proc/$_pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$_pid/cmdline" | grep -q -- "$2" || return 1
    printf '%s\n' "$_pid"
}

# stop_pid PID WHAT: TERM, wait up to 15 s, then KILL.
stop_pid() {
    kill -TERM "$1" 2>/dev/null || return 0
    _i=0
    while kill -0 "$1" 2>/dev/null; do
        _i=$((_i + 1))
        if [ "$_i" -ge 150 ]; then
            say "$2 (pid $1) did not stop in 15 s: killing it"
            kill -KILL "$1" 2>/dev/null || true
            break
        fi
        sleep 0.1
    done
}

do_stop() {
    stopped=0
    if hp=$(pid_of "$HTTPD_PIDFILE" "$CONF"); then
        # TERM to the parent stops its children too; wait for all of them.
        stop_pid "$hp" apache2
        stopped=1
    fi
    if mp=$(pid_of "$MOCKGW_PIDFILE" mockgw); then
        stop_pid "$mp" mockgw
        stopped=1
    fi
    rm -f "$HTTPD_PIDFILE" "$MOCKGW_PIDFILE"
    if [ "$stopped" = 1 ]; then say "stopped"; else say "not running"; fi
}

is_running() {
    pid_of "$HTTPD_PIDFILE" "$CONF" >/dev/null || pid_of "$MOCKGW_PIDFILE" mockgw >/dev/null
}

do_status() {
    if hp=$(pid_of "$HTTPD_PIDFILE" "$CONF"); then
        say "apache2 running (pid $hp) on http://127.0.0.1:$(cat "$STATE/port" 2>/dev/null || echo "?")"
    else
        say "apache2 not running"
    fi
    if mp=$(pid_of "$MOCKGW_PIDFILE" mockgw); then
        say "mockgw running (pid $mp) on $(cat "$STATE/gateway" 2>/dev/null || echo "?")"
    else
        say "mockgw not running"
    fi
}

build() {
    cd "$SRC"
    say "installing the Debian packages (scripts/install-deps.sh)"
    sh scripts/install-deps.sh
    # A tree last configured with --enable-sanitizers (scripts/test.sh) has
    # objects that a plain apache2 cannot load: rebuild them when the flags change.
    old_san=$(sed -n 's/^SAN_CFLAGS = //p' Makefile 2>/dev/null || true)
    say "building (autoreconf -fi && ./configure && make -j2)"
    autoreconf -fi
    mkdir -p "$STATE"
    ./configure >"$STATE/configure.log" 2>&1 ||
        { tail -n 30 "$STATE/configure.log" >&2; die "./configure failed (full output: $STATE/configure.log)"; }
    new_san=$(sed -n 's/^SAN_CFLAGS = //p' Makefile)
    if [ "$old_san" != "$new_san" ]; then
        say "build flags changed (sanitizers): make clean"
        make clean >/dev/null
    fi
    make -j2
}

free_port_check() {
    if ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; then
        die "port $1 is already in use on this machine (set PROVIDER_DEMO_PORT)"
    fi
}

# ctl ARGS...: providerctl on the demo database.
ctl() { "$CTL" --db "sqlite3:$DB" "$@"; }

do_start() {
    [ "$(id -u)" = 0 ] || die "run me as root (I install packages and start apache2 as $RUNUSER)"
    if is_running; then
        do_status
        die "the demo is already running: 'sh scripts/demo.sh stop' (or 'restart') first"
    fi

    if [ "${PROVIDER_DEMO_SKIP_BUILD:-0}" != 1 ]; then
        build
    fi
    for f in "$MODULE" "$CTL" "$MOCKGW" "$HTTPD"; do
        [ -x "$f" ] || [ -f "$f" ] || die "$f is missing (did the build succeed?)"
    done
    id "$RUNUSER" >/dev/null 2>&1 || die "user $RUNUSER does not exist (is apache2 installed?)"
    free_port_check "$PORT"

    say "state directory $STATE (fresh)"
    rm -rf "$STATE/db" "$STATE/run" "$STATE/logs" "$STATE/htdocs"
    mkdir -p "$STATE/db" "$STATE/run" "$STATE/logs" "$STATE/htdocs"
    chmod 755 "$STATE"

    # The gateway's service token: only root reads it (apache2 reads it at
    # startup, before it switches to www-data).
    umask 077
    od -An -tx1 -N24 /dev/urandom | tr -d ' \n' >"$STATE/gateway.token"
    umask 022

    # The mock gateway, on a port the kernel picks.
    # (a background job of a script ignores SIGINT; nohup adds SIGHUP, so
    # closing the terminal leaves it running; apache2 daemonizes itself)
    : >"$STATE/logs/mockgw.log"
    nohup "$MOCKGW" --listen 127.0.0.1:0 --token-file "$STATE/gateway.token" \
        >>"$STATE/logs/mockgw.log" 2>&1 </dev/null &
    echo $! >"$MOCKGW_PIDFILE"
    gw=""
    i=0
    while [ -z "$gw" ]; do
        gw=$(sed -n 's/^mockgw listening on //p' "$STATE/logs/mockgw.log" 2>/dev/null || true)
        i=$((i + 1))
        if [ -z "$gw" ]; then
            if [ "$i" -ge 100 ] || ! kill -0 "$(cat "$MOCKGW_PIDFILE")" 2>/dev/null; then
                cat "$STATE/logs/mockgw.log" >&2; do_stop; die "mockgw did not start"
            fi
            sleep 0.1
        fi
    done
    echo "http://$gw" >"$STATE/gateway"
    say "mock gateway on http://$gw"

    # The database and the demo data, made by root, then handed to www-data
    # (SQLite in WAL mode needs the directory writable as well).
    ctl db migrate >/dev/null
    ctl user add demo@example.com --name "Demo User" >/dev/null
    ctl balance add demo@example.com 100 --reason "demo credit" >/dev/null
    ctl model add gpt-4o-mini --upstream gpt-4o-mini --name "GPT-4o mini" >/dev/null
    ctl model price gpt-4o-mini --input 0.15 --output 0.6 --cache 0.075 >/dev/null
    ctl model add gpt-4o --upstream gpt-4o --name "GPT-4o" >/dev/null
    ctl model price gpt-4o --input 2.5 --output 10 --cache 1.25 >/dev/null
    ctl model add claude-sonnet-4 --upstream claude-sonnet-4 --name "Claude Sonnet 4" \
        --family anthropic --messages >/dev/null
    ctl model price claude-sonnet-4 --input 3 --output 15 --cache 0.3 >/dev/null
    keyjson=$(ctl key create demo@example.com --name demo --json)
    key=$(printf '%s\n' "$keyjson" | sed -n 's/.*"secret"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
    case $key in sk-prov-*) ;; *) do_stop; die "could not read the key from: providerctl key create --json" ;; esac
    chown -R "$RUNUSER:$RUNUSER" "$STATE/db"

    cat >"$CONF" <<EOF
# Generated by scripts/demo.sh: the demo server. Do not edit; rerun the script.
ServerRoot "$STATE"
ServerName 127.0.0.1
Listen 127.0.0.1:$PORT
PidFile "$HTTPD_PIDFILE"
DefaultRuntimeDir "$STATE/run"
User $RUNUSER
Group $RUNUSER
DocumentRoot "$STATE/htdocs"

LoadModule mpm_event_module $MODDIR/mod_mpm_event.so
# (without mod_authz_core every request fails: AH00025 "couldn't check user")
LoadModule authz_core_module $MODDIR/mod_authz_core.so
LoadModule dbd_module $MODDIR/mod_dbd.so
LoadModule provider_module $MODULE

# One process with 64 threads: the fastest shape for SQLite (its processes
# never wait for each other's write lock); a stock MPM works too.
StartServers 1
ServerLimit 1
ThreadLimit 64
ThreadsPerChild 64
MaxRequestWorkers 64
MinSpareThreads 1
MaxSpareThreads 64

ErrorLog "$STATE/logs/error.log"
LogLevel warn provider:info
LogFormat "%h %t \"%r\" %>s %b %Dus" demo
CustomLog "$STATE/logs/access.log" demo

ProviderEngine On
ProviderGatewayURL http://$gw
ProviderGatewayTokenFile "$STATE/gateway.token"
ProviderGatewayTimeout 300
ProviderGatewayConnectTimeout 5

DBDriver sqlite3
DBDParams "$DB"
# nothing else: the module sets WAL, synchronous and busy handling itself
EOF

    "$HTTPD" -t -f "$CONF" >"$STATE/logs/configtest.log" 2>&1 ||
        { cat "$STATE/logs/configtest.log" >&2; do_stop; die "apache2 -t failed on $CONF"; }
    "$HTTPD" -f "$CONF" -k start ||
        { tail -n 20 "$STATE/logs/error.log" >&2 2>/dev/null; do_stop; die "apache2 did not start"; }

    base=http://127.0.0.1:$PORT
    code=000
    i=0
    while [ "$code" != 200 ]; do
        i=$((i + 1))
        if [ "$i" -gt 100 ]; then
            tail -n 20 "$STATE/logs/error.log" >&2 2>/dev/null || true
            do_stop
            die "GET $base/v1/models did not answer 200 within 10 s (last: $code)"
        fi
        sleep 0.1
        code=$(curl -s -o /dev/null -w '%{http_code}' "$base/v1/models" 2>/dev/null) || code=000
    done
    echo "$PORT" >"$STATE/port"

    cat <<EOF

mod_provider demo running at $base
  apache2 pid $(cat "$HTTPD_PIDFILE"), config $CONF, logs $STATE/logs/
  mock gateway http://$gw (pid $(cat "$MOCKGW_PIDFILE"))
  database $DB
  user demo@example.com with 100 credits; models gpt-4o-mini, gpt-4o, claude-sonnet-4

Your API key (shown only this once; the database keeps only its hash):

  $key

Try it:

  curl -s $base/v1/models

  curl -s $base/v1/chat/completions \\
    -H "Authorization: Bearer $key" \\
    -H "Content-Type: application/json" \\
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}],"max_tokens":64}'

  curl -s $base/v1/messages \\
    -H "x-api-key: $key" -H "anthropic-version: 2023-06-01" \\
    -d '{"model":"claude-sonnet-4","max_tokens":64,"messages":[{"role":"user","content":"Hello!"}]}'

  curl -s $base/v1/responses \\
    -H "Authorization: Bearer $key" \\
    -d '{"model":"gpt-4o-mini","input":"Hello!"}'

The balance:         $CTL --db sqlite3:$DB user show demo@example.com
The ledger:          sqlite3 $DB 'SELECT request_id, status, credits AS micro_credits FROM ledger'
Stop the demo:       sh $SRC/scripts/demo.sh stop
EOF
}

case ${1:-start} in
    start) do_start ;;
    restart) [ "$(id -u)" = 0 ] || die "run me as root"; do_stop; do_start ;;
    stop) do_stop ;;
    status) do_status ;;
    *) echo "usage: sh scripts/demo.sh [start|restart|stop|status]" >&2; exit 2 ;;
esac
