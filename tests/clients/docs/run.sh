#!/bin/sh
# tests/clients/docs/run.sh: the /docs pages followed as a reader would, run
# by tests/clients/run.sh: the setup guides' scripts and the launchers they
# make with the real Claude Code and Codex (guides.test.js), and the pages'
# curl, TypeScript and Python examples (examples.test.js). The clients and
# the Anthropic SDK come from the messages/ and responses/ suites' npm
# installs (made here when missing), the openai SDK from tests/. Inside a
# loopback-only network namespace (unshare -n; lo up), as those suites run
# their agents. Exit 0 when all pass, 1 otherwise; never 77.
set -u

here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "tests/clients/docs/run.sh: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || fail "node is not installed"
command -v npm >/dev/null 2>&1 || fail "npm is not installed"
command -v unshare >/dev/null 2>&1 || fail "unshare (util-linux) is not installed"
command -v zsh >/dev/null 2>&1 || fail "zsh is not installed (sh scripts/install-deps.sh)"
for sub in messages responses; do
  d="$here/../$sub"
  if [ ! -f "$d/node_modules/.package-lock.json" ] \
     || ! cmp -s "$d/node_modules/.prov-lock" "$d/package-lock.json"; then
    npm ci --prefix "$d" --no-audit --no-fund --loglevel=error || fail "npm ci in $sub failed"
    cp "$d/package-lock.json" "$d/node_modules/.prov-lock"
  fi
done

flags=""
if node --help 2>/dev/null | grep -q -- '--test-reporter'; then
  flags="--test-reporter=spec"
fi
unshare -n true 2>/dev/null || fail "cannot create a network namespace (unshare -n needs root)"
if node --help 2>/dev/null | grep -q -- '--test-concurrency'; then
  flags="$flags --test-concurrency=1"
fi
exec unshare -n sh -c 'ip link set lo up || exit 1; exec node --test '"$flags"' "$1"/*.test.js' \
  sh "$here"
