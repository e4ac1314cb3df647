#!/bin/sh
# demo.sh: the README's first quick-start command. On a fresh Debian 12, as
# root, it installs the build dependencies, builds the tree, and starts a
# self-contained demo in the background: the mock gateway (tests/mockgw) on a
# loopback port with a generated service token, a fresh SQLite database with
# demo data (a user with a balance, one API key, three priced models), and
# Debian's apache2 running the freshly built mod_provider (no `make install`)
# as www-data on http://127.0.0.1:8080, and a demo OpenID Provider
# (scripts/demo-idp.mjs: the test kit's oidc-provider, npm packages from
# tests/package-lock.json) on another loopback port, through which the demo
# user signs in to the cabinet at /cabinet/ (plain http on loopback:
# ProviderCookieSecure Off). It prints the key once, curl lines to try and
# the demo user's sign-in name and password (new at each start). Everything
# lives in one state directory; nothing under /etc changes.
#
#   sh scripts/demo.sh [start]   install, build, start (refuses if running)
#   sh scripts/demo.sh restart   stop, then start afresh (new database and key)
#   sh scripts/demo.sh stop      stop apache2, the mock gateway and the demo provider
#   sh scripts/demo.sh status    say whether it runs
#
# Environment: PROVIDER_DEMO_DIR (state, default /var/lib/mod_provider-demo),
# PROVIDER_DEMO_PORT (default 8080), PROVIDER_DEMO_SKIP_BUILD=1 (use the tree
# as built: skip apt, make and npm ci).
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
STATE=${PROVIDER_DEMO_DIR:-/var/lib/mod_provider-demo}
# How to run this script again for the same demo (its state folder included).
if [ -n "${PROVIDER_DEMO_DIR:-}" ]; then
    AGAIN="PROVIDER_DEMO_DIR='$STATE' sh $SRC/scripts/demo.sh"
else
    AGAIN="sh $SRC/scripts/demo.sh"
fi
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
IDP=$SRC/scripts/demo-idp.mjs
IDP_PIDFILE=$STATE/run/idp.pid
IDP_NAME=demo

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
    if ip=$(pid_of "$IDP_PIDFILE" demo-idp.mjs); then
        stop_pid "$ip" demo-idp
        stopped=1
    fi
    rm -f "$HTTPD_PIDFILE" "$MOCKGW_PIDFILE" "$IDP_PIDFILE"
    if [ "$stopped" = 1 ]; then say "stopped"; else say "not running"; fi
}

is_running() {
    pid_of "$HTTPD_PIDFILE" "$CONF" >/dev/null || pid_of "$MOCKGW_PIDFILE" mockgw >/dev/null \
        || pid_of "$IDP_PIDFILE" demo-idp.mjs >/dev/null
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
    if ip=$(pid_of "$IDP_PIDFILE" demo-idp.mjs); then
        say "demo identity provider running (pid $ip) on $(cat "$STATE/idp/issuer" 2>/dev/null || echo "?")"
    else
        say "demo identity provider not running"
    fi
}

# The npm packages of tests/package-lock.json (the demo provider's
# oidc-provider), with npm ci when the installed tree does not match the
# lock file (the same check as tests/integration/run.sh).
npm_deps() {
    command -v node >/dev/null 2>&1 || die "node is not installed (sh scripts/install-deps.sh)"
    t=$SRC/tests
    if [ ! -f "$t/node_modules/.package-lock.json" ] \
       || ! cmp -s "$t/node_modules/.prov-lock" "$t/package-lock.json"; then
        say "installing the npm packages (npm ci in tests/)"
        # (npm's cache in the state directory: nothing outside it and the tree changes)
        npm_config_cache="$STATE/npm-cache" npm ci --prefix "$t" --no-audit --no-fund \
            --loglevel=error || die "npm ci failed"
        cp "$t/package-lock.json" "$t/node_modules/.prov-lock"
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
    npm_deps
}

free_port_check() {
    if ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; then
        die "port $1 is already in use on this machine (set PROVIDER_DEMO_PORT)"
    fi
}

# listening LOG PREFIX PIDFILE WHAT: waits (up to 20 s) for the line
# "PREFIX<address>" in LOG and prints the address; stops the demo when the
# process dies first.
listening() {
    _addr=""
    _i=0
    while [ -z "$_addr" ]; do
        _addr=$(sed -n "s/^$2//p" "$1" 2>/dev/null || true)
        _i=$((_i + 1))
        if [ -z "$_addr" ]; then
            if [ "$_i" -ge 200 ] || ! kill -0 "$(cat "$3")" 2>/dev/null; then
                cat "$1" >&2; do_stop >&2; die "$4 did not start"
            fi
            sleep 0.1
        fi
    done
    printf '%s\n' "$_addr"
}

# ctl ARGS...: providerctl on the demo database.
ctl() { "$CTL" --db "sqlite3:$DB" "$@"; }

do_start() {
    [ "$(id -u)" = 0 ] || die "run me as root (I install packages and start apache2 as $RUNUSER)"
    if is_running; then
        do_status
        die "the demo is already running: run $AGAIN stop (or restart) first"
    fi

    if [ "${PROVIDER_DEMO_SKIP_BUILD:-0}" != 1 ]; then
        build
    fi
    for f in "$MODULE" "$CTL" "$MOCKGW" "$HTTPD"; do
        [ -x "$f" ] || [ -f "$f" ] || die "$f is missing (did the build succeed?)"
    done
    [ -f "$SRC/tests/node_modules/oidc-provider/package.json" ] ||
        die "the npm packages are missing (npm ci --prefix tests)"
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
    gw=$(listening "$STATE/logs/mockgw.log" "mockgw listening on " "$MOCKGW_PIDFILE" mockgw)
    echo "http://$gw" >"$STATE/gateway"
    say "mock gateway on http://$gw"

    # The demo OpenID Provider, on a port the kernel picks, addressed as
    # localhost (another site than the service on 127.0.0.1, as a real
    # provider is). Its user's password is new at each start; it reaches the
    # provider through the environment, never a command line.
    base=http://127.0.0.1:$PORT
    idp_password=$(od -An -tx1 -N6 /dev/urandom | tr -d ' \n')
    rm -rf "$STATE/idp"
    : >"$STATE/logs/idp.log"
    DEMO_IDP_PASSWORD=$idp_password nohup node "$IDP" "$STATE/idp" "$base" "$IDP_NAME" demo \
        demo@example.com demo-user >>"$STATE/logs/idp.log" 2>&1 </dev/null &
    echo $! >"$IDP_PIDFILE"
    issuer=$(listening "$STATE/logs/idp.log" "demo-idp listening on " "$IDP_PIDFILE" "the demo identity provider")
    echo "$issuer" >"$STATE/idp/issuer"
    say "demo identity provider on $issuer"

    # The database and the demo data, made by root, then handed to www-data
    # (SQLite in WAL mode needs the directory writable as well).
    ctl db migrate >/dev/null
    ctl user add demo@example.com --name "Demo User" >/dev/null
    # the demo provider's user is this user (its subject linked ahead)
    ctl user link demo@example.com "$IDP_NAME" demo-user >/dev/null
    ctl balance add demo@example.com 100 --reason "demo credit" >/dev/null
    ctl model add gpt-4o-mini --upstream gpt-4o-mini --name "GPT-4o mini" >/dev/null
    ctl model price gpt-4o-mini --input 0.15 --output 0.6 --cache 0.075 >/dev/null
    ctl model add gpt-4o --upstream gpt-4o --name "GPT-4o" >/dev/null
    ctl model price gpt-4o --input 2.5 --output 10 --cache 1.25 >/dev/null
    ctl model add claude-sonnet-4 --upstream claude-sonnet-4 --name "Claude Sonnet 4" \
        --family anthropic --messages >/dev/null
    ctl model price claude-sonnet-4 --input 3 --output 15 --cache 0.3 >/dev/null
    # each model's maximum output (the cap a request is given at most)
    ctl model set gpt-4o-mini --max-output 16384 >/dev/null
    ctl model set gpt-4o --max-output 16384 >/dev/null
    ctl model set claude-sonnet-4 --max-output 64000 >/dev/null
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
# the pages of the source tree (make install puts them under datadir)
ProviderDocsRoot "$SRC/docs/site"

DBDriver sqlite3
DBDParams "$DB"
# nothing else: the module sets WAL, synchronous and busy handling itself

# Sign-in to the cabinet through the demo OpenID Provider. Plain http on
# loopback only: cookies without Secure (a real site uses https:// and the
# default ProviderCookieSecure On).
ProviderPublicURL $base
ProviderCookieSecure Off
$(cat "$STATE/idp/directive.conf")
# The cabinet's page, script and styles: the tree's web/ (make install puts
# them in the module's data directory, the directive's default).
ProviderWebRoot "$SRC/web"
ProviderCreditValue 0.01 USD
ProviderTopUpURL mailto:billing@example.com
EOF

    "$HTTPD" -t -f "$CONF" >"$STATE/logs/configtest.log" 2>&1 ||
        { cat "$STATE/logs/configtest.log" >&2; do_stop; die "apache2 -t failed on $CONF"; }
    "$HTTPD" -f "$CONF" -k start ||
        { tail -n 20 "$STATE/logs/error.log" >&2 2>/dev/null; do_stop; die "apache2 did not start"; }

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
  demo identity provider $issuer (pid $(cat "$IDP_PIDFILE"))
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

Sign in to the cabinet: open $base/cabinet/ in a browser on this machine,
press "Sign in with Demo Identity Provider" and sign in there as

  username: demo
  password: $idp_password

The documentation:   $base/docs (setup guides: $base/docs/claude-code, $base/docs/codex;
                     the OpenAPI description: $base/v1/docs)
The balance:         $CTL --db sqlite3:$DB user show demo@example.com
The ledger:          sqlite3 $DB 'SELECT request_id, status, credits AS micro_credits FROM ledger'
Stop the demo:       $AGAIN stop
EOF
}

case ${1:-start} in
    start) do_start ;;
    restart) [ "$(id -u)" = 0 ] || die "run me as root"; do_stop; do_start ;;
    stop) do_stop ;;
    status) do_status ;;
    *) echo "usage: sh scripts/demo.sh [start|restart|stop|status]" >&2; exit 2 ;;
esac
