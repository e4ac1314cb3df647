#!/bin/sh
# scripts/test.sh: the whole test run (the README's test command, and CI's):
# installs the Debian packages, builds with warnings as errors and with
# AddressSanitizer/UBSan, and runs `make check` (the CUnit unit tests, the
# integration suite against a real apache2, the client compatibility suite),
# a smoke run of the libFuzzer harnesses (tests/fuzz, built with clang) and
# the Debian package test (tests/package/deb.sh: root only).
# With PROVIDER_TEST_PGSQL=1 (CI sets it: .ci/run) the integration suite then
# runs a second time on PostgreSQL (a throwaway cluster, see
# tests/integration/lib/pg.js); the first `make check` is always on SQLite.
# Prints the logs of whatever failed and a closing "N passed, N failed" line
# counted over the individual test cases of every run; exits non-zero on any
# failure.
set -eu

cd "$(dirname "$0")/.."
root=$(pwd)

if [ "$(id -u)" = 0 ]; then
  sh scripts/install-deps.sh
else
  echo "scripts/test.sh: not root: skipping scripts/install-deps.sh (packages must be installed)" >&2
fi

# A clean tree: objects of an earlier build (say the demo's, without
# sanitizers) are not rebuilt when only the flags change.
if [ -f Makefile ]; then make distclean >/dev/null 2>&1 || true; fi
autoreconf -fi
./configure --enable-werror --enable-sanitizers
make -j2

pgsql=${PROVIDER_TEST_PGSQL:-}

# Prints, first, what failed (node's "failing tests" summary, CUnit's and
# TAP's failure lines: a reader of only the first lines of CI's output sees
# the cause), then test-suite.log and the full log of each failed suite
# among $@.
print_failures() {
  for l in "$@"; do
    if [ -f "$l" ] && grep -q ':test-result: \(FAIL\|ERROR\|XPASS\)' "${l%.log}.trs" 2>/dev/null; then
      echo "==================== what failed in $l ===================="
      { sed -n '/failing tests:/,$p' "$l"; grep -E '^not ok |Test: .*\.\.\.FAILED|^ +[0-9]+\. .*:[0-9]+ +- ' "$l"; \
        grep -E 'unexpected server problems|^ +error log: |^ +apache2 |^ +mockgw ' "$l"; } | head -n 120
    fi
  done
  echo "==================== test-suite.log ===================="
  cat test-suite.log 2>/dev/null || true
  for l in "$@"; do
    if [ -f "$l" ] && grep -q ':test-result: \(FAIL\|ERROR\|XPASS\)' "${l%.log}.trs" 2>/dev/null; then
      echo "==================== $l ===================="
      cat "$l"
    fi
  done
}

# Keeps a copy of a suite's automake log and result (the next run reuses the name).
keep_log() {  # keep_log FROM TO (both *.log)
  rm -f "$2" "${2%.log}.trs"
  if [ -f "$1" ]; then cp "$1" "$2"; fi
  if [ -f "${1%.log}.trs" ]; then cp "${1%.log}.trs" "${2%.log}.trs"; fi
}

status=0
env -u PROVIDER_TEST_PGSQL make -j1 check || status=$?
keep_log tests/integration/run.log tests/integration/run-sqlite.log
logs="tests/unit/unit_tests.log tests/cli/providerctl.log tests/cli/providerctl_billing.log tests/cli/providerctl_hold.log tests/cli/providerctl_sessions.log tests/cli/providerctl_favorites.log tests/cli/providerctl_audit.log tests/cli/providerctl_man.log tests/integration/run-sqlite.log tests/clients/run.log"
if [ "$status" -ne 0 ]; then
  print_failures $logs
fi

# The fuzzing harnesses (tests/fuzz): built with clang, ASan and UBSan, each
# run for a short smoke time, two at a time (about a minute); a crash, a leak
# or a broken invariant fails the run. Each harness is one test case.
echo "==================== fuzz smoke ===================="
fuzz_status=0
if make fuzz >tests/fuzz/build.log 2>&1; then
  sh tests/fuzz/run.sh -t 10 -j 2 -o "$root/tests/fuzz/bin" >tests/fuzz/smoke.log 2>&1 || fuzz_status=$?
  cat tests/fuzz/smoke.log
else
  fuzz_status=$?
  tail -n 30 tests/fuzz/build.log
fi
logs="$logs tests/fuzz/smoke.log"
if [ "$fuzz_status" -ne 0 ]; then
  status=$fuzz_status
fi

# The Debian package as an operator installs it (tests/package/deb.sh:
# builds it, installs it, serves and charges one chat completion through the
# system apache2, purges it; about two minutes). Root only: as another user
# it fails, it does not skip.
echo "==================== Debian package ===================="
deb_status=0
PROV_SRCDIR="$root" sh tests/package/deb.sh >tests/package/deb.log 2>&1 || deb_status=$?
cat tests/package/deb.log
logs="$logs tests/package/deb.log"
if [ "$deb_status" -ne 0 ]; then
  status=$deb_status
fi

# The integration suite again, on PostgreSQL.
if [ "$pgsql" = 1 ]; then
  echo "==================== integration suite on PostgreSQL ===================="
  pg_status=0
  PROVIDER_TEST_PGSQL=1 make -j1 check TESTS=tests/integration/run.sh || pg_status=$?
  keep_log tests/integration/run.log tests/integration/run-pgsql.log
  logs="$logs tests/integration/run-pgsql.log"
  if [ "$pg_status" -ne 0 ]; then
    print_failures tests/integration/run-pgsql.log
    status=$pg_status
  fi
fi

# Count test cases of every run: node's runner ("# pass N" / "ℹ pass N"),
# CUnit's run summary, TAP lines.
passed=0
failed=0
for l in $logs; do
  [ -f "$l" ] || continue
  case "$l" in
    *unit_tests.log)
      # CUnit:  "tests   42   42   41    1        0"  (Type Total Ran Passed Failed Inactive)
      set -- $(awk '$1 == "tests" && NF >= 5 { print $4, $5 }' "$l" | tail -n 1) 0 0
      passed=$((passed + $1)); failed=$((failed + $2)) ;;
    *providerctl*.log|*fuzz/smoke.log|*package/deb.log)
      # TAP: "ok N - ..." / "not ok N - ..."
      p=$(grep -c '^ok ' "$l" || true); f=$(grep -c '^not ok ' "$l" || true)
      passed=$((passed + p)); failed=$((failed + f)) ;;
    *)
      p=$(sed -n -E 's/^(#|ℹ) pass ([0-9]+)$/\2/p' "$l" | awk '{ s += $1 } END { print s + 0 }')
      f=$(sed -n -E 's/^(#|ℹ) fail ([0-9]+)$/\2/p' "$l" | awk '{ s += $1 } END { print s + 0 }')
      passed=$((passed + p)); failed=$((failed + f)) ;;
  esac
done
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  failed=1   # a suite failed without a countable test case (build, crash, setup)
fi
echo "scripts/test.sh: $passed passed, $failed failed"

# The same unit and providerctl tests under valgrind, in a build without
# sanitizers (the two cannot share a process).
if [ "$status" -eq 0 ]; then
  echo "==================== valgrind ===================="
  make distclean >/dev/null 2>&1 || true
  ./configure --enable-werror >/dev/null
  make -j2 >/dev/null
  make check-valgrind || status=$?
fi
if [ "$status" -ne 0 ]; then
  echo "scripts/test.sh: FAILED" >&2
fi
cd "$root"
exit "$status"
