#!/bin/sh
# tests/integration/run.sh: the automake test driver entry for the
# integration suite: makes sure the pinned npm packages of tests/package.json
# are installed (npm ci from the committed lock file when tests/node_modules
# is missing or stale: the identity providers of lib/idp.js need
# oidc-provider and jose), then runs every tests/integration/*.test.js with
# node's built-in test runner, one file at a time (each file starts its own
# apache2, mock gateway and database), then the files of
# tests/integration/browser/, all inside network namespaces whose only
# interface is loopback (unshare -n; ip link set lo up: needs root), where
# the clients and Debian's chromium (lib/browser.js) reach nothing but the
# test's own servers. Exit
# 0 when all pass, 1 otherwise; it never skips (exit 77): a missing
# prerequisite is a failure.
#
# PROVIDER_TEST_PGSQL=1: the same files on PostgreSQL. One throwaway cluster
# (lib/pg.js: initdb + pg_ctl on a free loopback port, socket in a temp dir)
# serves the whole run, each stack gets a fresh database in it, and the
# cluster is stopped (and checked gone) when the run ends, however it ends.
# A file whose header has the line "// backends: sqlite" is left out of this
# run (it says so): it does not depend on the run's database, and
# scripts/test.sh's SQLite run, which always runs beside it, runs it
# (tests/integration/README.md lists these files and why).
set -u

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${PROV_SRCDIR:-$(cd "$here/../.." && pwd)}
builddir=${PROV_BUILDDIR:-$srcdir}
export PROV_SRCDIR="$srcdir" PROV_BUILDDIR="$builddir"

fail() { echo "tests/integration/run.sh: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || fail "node is not installed (sh scripts/install-deps.sh)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || fail "node $major is too old: 20 or newer is needed (playwright-core)"
command -v npm >/dev/null 2>&1 || fail "npm is not installed (sh scripts/install-deps.sh)"
command -v sqlite3 >/dev/null 2>&1 || fail "the sqlite3 CLI is not installed"
httpd=${PROV_HTTPD:-/usr/sbin/apache2}
[ -x "$httpd" ] || fail "apache2 not found at $httpd"
chromium=${PROV_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || fail "chromium not found at $chromium (Debian's chromium package: sh scripts/install-deps.sh)"
command -v unshare >/dev/null 2>&1 || fail "unshare (util-linux) is not installed"
command -v strace >/dev/null 2>&1 || fail "strace is not installed (stream-pace.test.js counts httpd's writes with it: sh scripts/install-deps.sh)"
command -v prometheus >/dev/null 2>&1 || fail "prometheus is not installed (prometheus.test.js scrapes the metrics with it: sh scripts/install-deps.sh)"
command -v ip >/dev/null 2>&1 || fail "ip (iproute2) is not installed"
unshare -n true 2>/dev/null || fail "cannot create a network namespace for the browser tests (unshare -n needs root)"
for f in mod_provider/.libs/mod_provider.so cli/providerctl tests/mockgw/mockgw; do
  [ -e "$builddir/$f" ] || fail "$builddir/$f is missing: build first (make)"
done

# npm ci when the installed tree does not match the lock file (the same
# check as tests/clients/run.sh, which shares tests/node_modules).
tests="$srcdir/tests"
if [ ! -f "$tests/node_modules/.package-lock.json" ] \
   || ! cmp -s "$tests/node_modules/.prov-lock" "$tests/package-lock.json"; then
  npm ci --prefix "$tests" --no-audit --no-fund --loglevel=error || fail "npm ci failed"
  cp "$tests/package-lock.json" "$tests/node_modules/.prov-lock"
fi

pgdir=""
if [ "${PROVIDER_TEST_PGSQL:-}" = 1 ]; then
  command -v psql >/dev/null 2>&1 || fail "psql is not installed (Debian's postgresql package)"
  pgbin=${PROV_PG_BIN:-/usr/lib/postgresql/15/bin}
  [ -x "$pgbin/initdb" ] || fail "$pgbin/initdb not found (Debian's postgresql package)"
  pgdir=$(mktemp -d "${TMPDIR:-/tmp}/prov-pg-run-XXXXXX") || fail "mktemp failed"
  stop_pg() {
    if [ -n "$pgdir" ]; then
      d=$pgdir; pgdir=""
      node "$here/lib/pg.js" stop "$d" || {
        echo "tests/integration/run.sh: stopping PostgreSQL failed (see above)" >&2
        return 1
      }
    fi
    return 0
  }
  trap 'stop_pg' EXIT
  trap 'stop_pg; exit 130' INT
  trap 'stop_pg; exit 143' TERM
  vars=$(node "$here/lib/pg.js" start "$pgdir") || fail "could not start a PostgreSQL cluster"
  eval "$vars"
  export PROV_PG_HOST PROV_PG_PORT
  echo "tests/integration/run.sh: PostgreSQL mode: cluster on port $PROV_PG_PORT, socket in $PROV_PG_HOST"
fi

# Options this node knows (18 lacks --test-concurrency; files then run one at
# a time only if we run them one by one).
flags=""
if node --help 2>/dev/null | grep -q -- '--test-reporter'; then
  flags="$flags --test-reporter=spec"
fi
status=0
# sqlite_only FILE: true when FILE is left out of this run (above).
sqlite_only() {
  [ "${PROVIDER_TEST_PGSQL:-}" = 1 ] && head -n 40 "$1" | grep -qx '// backends: sqlite' || return 1
  echo "tests/integration/run.sh: ${1#"$here"/}: on SQLite only (// backends: sqlite)"
}
# Every file runs in a network namespace whose only interface is loopback
# (PostgreSQL's socket is a file: reachable from there too): the service,
# its gateway, the identity providers, the MCP and OAuth clients and the
# browser reach nothing but the test's own servers.
# A test that hangs fails by name after PROV_TEST_TIMEOUT ms (node's
# --test-timeout, 5 minutes; the slowest test takes under 20 s), and a node
# process still running after PROV_TEST_RUN_LIMIT s is killed (timeout(1)),
# so that a hang fails this run with its log instead of outlasting CI.
case "${PROV_TEST_TIMEOUT:-300000}" in
  ''|*[!0-9]*) fail "PROV_TEST_TIMEOUT must be a number of milliseconds" ;;
esac
if node --help 2>/dev/null | grep -q -- '--test-timeout'; then
  flags="$flags --test-timeout=${PROV_TEST_TIMEOUT:-300000}"
fi
isolated() {
  limit=${PROV_TEST_RUN_LIMIT:-1200}
  timeout -k 30 "$limit" \
    unshare -n sh -c 'ip link set lo up && exec node --test "$@"' sh "$@"
  rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "tests/integration/run.sh: not finished after $limit s, killed (a hang: the last test named above)" >&2
    # The stacks' apache2 and mock gateways run in process groups of their
    # own (lib/server.js): gone with the run, as its after() hooks would do.
    pkill -KILL -f "apache2 .*/prov-it-[^ ]*/httpd.conf" 2>/dev/null
    pkill -KILL -f "^$builddir/tests/mockgw/mockgw " 2>/dev/null
  fi
  return $rc
}
set --
for f in "$here"/*.test.js; do
  sqlite_only "$f" || set -- "$@" "$f"
done
if node --help 2>/dev/null | grep -q -- '--test-concurrency'; then
  isolated $flags --test-concurrency=1 "$@" || status=1
else
  for f in "$@"; do
    isolated $flags "$f" || status=1
  done
fi
# The browser tests, one file at a time, each in a namespace of its own.
for f in "$here"/browser/*.test.js; do
  [ -f "$f" ] || continue
  sqlite_only "$f" && continue
  isolated $flags "$f" || status=1
done
if [ -n "$pgdir" ]; then
  stop_pg || status=1
fi
exit $status
