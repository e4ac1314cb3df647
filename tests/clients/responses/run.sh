#!/bin/sh
# tests/clients/responses/run.sh: the Responses transport against real
# clients: the official `openai` SDK (responses.create, plain, streamed and
# with a function tool) and the Codex CLI (`codex exec`, which edits a file
# with apply_patch), both pinned in this folder's package.json and installed
# from its committed package-lock.json (npm ci when node_modules is missing or
# stale). Everything runs inside a loopback-only network namespace
# (unshare -n, then `ip link set lo up`): apache2, the mock gateway and the
# clients, so that nothing can reach beyond this machine. Exit 0 when all
# pass, 1 otherwise; never 77 (a missing prerequisite is a failure).
set -u

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${PROV_SRCDIR:-$(cd "$here/../../.." && pwd)}
builddir=${PROV_BUILDDIR:-$srcdir}
export PROV_SRCDIR="$srcdir" PROV_BUILDDIR="$builddir"

fail() { echo "tests/clients/responses/run.sh: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || fail "node is not installed (sh scripts/install-deps.sh)"
command -v npm >/dev/null 2>&1 || fail "npm is not installed (sh scripts/install-deps.sh)"
command -v unshare >/dev/null 2>&1 || fail "unshare (util-linux) is not installed"
command -v ip >/dev/null 2>&1 || fail "ip (iproute2) is not installed"
for f in mod_provider/.libs/mod_provider.so cli/providerctl tests/mockgw/mockgw; do
  [ -e "$builddir/$f" ] || fail "$builddir/$f is missing: build first (make)"
done

if [ ! -f "$here/node_modules/.package-lock.json" ] \
   || ! cmp -s "$here/node_modules/.prov-lock" "$here/package-lock.json"; then
  npm ci --prefix "$here" --no-audit --no-fund --loglevel=error || fail "npm ci failed"
  cp "$here/package-lock.json" "$here/node_modules/.prov-lock"
fi
[ -x "$here/node_modules/.bin/codex" ] || fail "the codex CLI did not install"

flags=""
if node --help 2>/dev/null | grep -q -- '--test-reporter'; then
  flags="$flags --test-reporter=spec"
fi
if node --help 2>/dev/null | grep -q -- '--test-concurrency'; then
  flags="$flags --test-concurrency=1"
fi
# The namespace needs root (CAP_SYS_ADMIN), as the whole suite does.
unshare -n true 2>/dev/null || fail "unshare -n is not permitted here (run as root)"
exec unshare -n sh -c 'ip link set lo up || exit 1; exec node --test '"$flags"' "$1"/*.test.js' \
  sh "$here"
