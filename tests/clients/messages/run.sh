#!/bin/sh
# tests/clients/messages/run.sh: the /v1/messages client suite, run by
# tests/clients/run.sh: installs the pinned clients of this directory's
# package.json (npm ci from the committed lock file when node_modules is
# missing or stale: the Anthropic SDK 0.x and 1.x and Claude Code, whose native
# binary comes as an optional npm package), runs the SDK tests against the
# integration harness, then runs Claude Code's tests (headless turns, its
# sessions' costs, and its TUI's model picker in a pseudo-terminal) inside a loopback-only
# network namespace (unshare -n; lo up), so that the agent cannot reach
# anything outside the machine: claude-code.test.js, and agent-sessions.test.js
# (Claude Code and Codex on one key; Codex from ../responses, installed here
# as that folder's run.sh does when it is missing or stale). Exit 0 when all
# pass, 1 otherwise; never 77.
set -u

here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "tests/clients/messages/run.sh: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || fail "node is not installed"
command -v npm >/dev/null 2>&1 || fail "npm is not installed"
command -v unshare >/dev/null 2>&1 || fail "unshare (util-linux) is not installed"
command -v ip >/dev/null 2>&1 || fail "ip (iproute2) is not installed"

for d in "$here" "$here/../responses"; do
  if [ ! -f "$d/node_modules/.package-lock.json" ] \
     || ! cmp -s "$d/node_modules/.prov-lock" "$d/package-lock.json"; then
    npm ci --prefix "$d" --no-audit --no-fund --loglevel=error || fail "npm ci failed in $d"
    cp "$d/package-lock.json" "$d/node_modules/.prov-lock"
  fi
done

flags=""
if node --help 2>/dev/null | grep -q -- '--test-reporter'; then
  flags="--test-reporter=spec"
fi
status=0
(cd "$here" && node --test $flags sdk.test.js) || status=1

# Claude Code: the whole stack (mockgw, apache2, the agent) inside a network
# namespace of its own with only loopback up.
unshare -n true 2>/dev/null || fail "cannot create a network namespace (unshare -n needs root)"
(cd "$here" && unshare -n sh -c "ip link set lo up && CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
  node --test $flags claude-code.test.js agent-sessions.test.js picker.test.js") || status=1
exit $status
