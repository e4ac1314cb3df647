#!/bin/sh
# tests/clients/run.sh: the automake test driver entry for the client
# compatibility suite: makes sure the pinned SDKs of tests/package.json are
# installed (npm ci from the committed lock file when tests/node_modules is
# missing or stale), then runs tests/clients/*.test.js with node's test runner
# against the integration harness's servers, and then each client family's
# own suite (tests/clients/*/run.sh: the coding agents and their SDKs, with
# their own package.json). Exit 0 when all pass, 1 otherwise; never 77 (a
# missing prerequisite is a failure).
set -u

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${PROV_SRCDIR:-$(cd "$here/../.." && pwd)}
builddir=${PROV_BUILDDIR:-$srcdir}
export PROV_SRCDIR="$srcdir" PROV_BUILDDIR="$builddir"
tests="$srcdir/tests"

fail() { echo "tests/clients/run.sh: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || fail "node is not installed (sh scripts/install-deps.sh)"
command -v npm >/dev/null 2>&1 || fail "npm is not installed (sh scripts/install-deps.sh)"
for f in mod_provider/.libs/mod_provider.so cli/providerctl tests/mockgw/mockgw; do
  [ -e "$builddir/$f" ] || fail "$builddir/$f is missing: build first (make)"
done

# npm ci when the installed tree does not match the lock file.
if [ ! -f "$tests/node_modules/.package-lock.json" ] \
   || ! cmp -s "$tests/node_modules/.prov-lock" "$tests/package-lock.json"; then
  npm ci --prefix "$tests" --no-audit --no-fund --loglevel=error || fail "npm ci failed"
  cp "$tests/package-lock.json" "$tests/node_modules/.prov-lock"
fi

flags=""
if node --help 2>/dev/null | grep -q -- '--test-reporter'; then
  flags="$flags --test-reporter=spec"
fi
# A hung test fails by name, and a hung run is killed (as in
# tests/integration/run.sh: PROV_TEST_TIMEOUT ms, PROV_TEST_RUN_LIMIT s).
if node --help 2>/dev/null | grep -q -- '--test-timeout'; then
  flags="$flags --test-timeout=${PROV_TEST_TIMEOUT:-300000}"
fi
limited() {
  timeout -k 30 "${PROV_TEST_RUN_LIMIT:-1200}" "$@"
}
status=0
if node --help 2>/dev/null | grep -q -- '--test-concurrency'; then
  limited node --test $flags --test-concurrency=1 "$here"/*.test.js || status=1
else
  for f in "$here"/*.test.js; do
    limited node --test $flags "$f" || status=1
  done
fi
for sub in "$here"/*/run.sh; do
  [ -f "$sub" ] || continue
  echo "== $sub"
  sh "$sub" || status=1
done
exit $status
