#!/bin/sh
# tests/integration/run.sh: the automake test driver entry for the
# integration suite: runs every tests/integration/*.test.js with node's
# built-in test runner, one file at a time (each file starts its own apache2,
# mock gateway and database). Exit 0 when all pass, 1 otherwise; it never
# skips (exit 77): a missing prerequisite is a failure.
set -u

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${PROV_SRCDIR:-$(cd "$here/../.." && pwd)}
builddir=${PROV_BUILDDIR:-$srcdir}
export PROV_SRCDIR="$srcdir" PROV_BUILDDIR="$builddir"

fail() { echo "tests/integration/run.sh: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || fail "node is not installed (sh scripts/install-deps.sh)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || fail "node $major is too old: 18 or newer is needed"
command -v sqlite3 >/dev/null 2>&1 || fail "the sqlite3 CLI is not installed"
httpd=${PROV_HTTPD:-/usr/sbin/apache2}
[ -x "$httpd" ] || fail "apache2 not found at $httpd"
for f in mod_provider/.libs/mod_provider.so cli/providerctl tests/mockgw/mockgw; do
  [ -e "$builddir/$f" ] || fail "$builddir/$f is missing: build first (make)"
done

# Options this node knows (18 lacks --test-concurrency; files then run one at
# a time only if we run them one by one).
flags=""
if node --help 2>/dev/null | grep -q -- '--test-reporter'; then
  flags="$flags --test-reporter=spec"
fi
if node --help 2>/dev/null | grep -q -- '--test-concurrency'; then
  exec node --test $flags --test-concurrency=1 "$here"/*.test.js
fi
status=0
for f in "$here"/*.test.js; do
  node --test $flags "$f" || status=1
done
exit $status
