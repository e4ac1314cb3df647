#!/bin/sh
# scripts/test.sh: the whole test run (the README's test command, and CI's):
# installs the Debian packages, builds with warnings as errors and with
# AddressSanitizer/UBSan, and runs `make check` (the CUnit unit tests, the
# integration suite against a real apache2, the client compatibility suite),
# a smoke run of the libFuzzer harnesses (tests/fuzz, built with clang) and
# the Debian package test (tests/package/deb.sh: root only), and the unit
# and providerctl tests under valgrind (scripts/valgrind.sh).
# With PROVIDER_TEST_PGSQL=1 (CI sets it: .ci/run) the integration suite
# also runs on PostgreSQL (a throwaway cluster, see
# tests/integration/lib/pg.js), beside the SQLite run, which always runs.
# Prints the logs of whatever failed and a closing "N passed, N failed" line
# counted over the individual test cases of every run; exits non-zero on any
# failure. Each phase prints when it starts and how long it took.
# The integration suites mostly wait on their servers (a quarter of a core,
# measured): the Debian package test and the valgrind run (each builds a
# copy of the tree) run beside the whole run, in the background from the
# start, at nice 19 so that the tests keep the CPU they need. Their logs are
# printed when they end.
set -eu

cd "$(dirname "$0")/.."
root=$(pwd)
run_start=$(date +%s)
phase_name=""
phase_t=$run_start
# phase NAME: the current phase ends (its time is printed) and NAME starts
# ("" only ends the current one).
phase() {
  now=$(date +%s)
  if [ -n "$phase_name" ]; then
    echo "scripts/test.sh: phase $phase_name: $((now - phase_t)) s"
  fi
  phase_name=$1
  phase_t=$now
  if [ -n "$1" ]; then
    echo "scripts/test.sh: phase $1: starts at $(date -u +%H:%M:%S) UTC, $((now - run_start)) s into the run"
  fi
}
# idle CMD...: CMD at the lowest CPU priority (its children too; not
# SCHED_IDLE, which can starve them for seconds: deb.sh waits 5 s at most).
idle() {
  nice -n 19 "$@"
}
# bg NAME LOG CMD...: CMD in the background at the lowest priority, its output in
# LOG, "STATUS SECONDS" in LOG.rc when it ends.
bg() {
  bg_name=$1 bg_log=$2; shift 2
  rm -f "$bg_log" "$bg_log.rc"
  echo "scripts/test.sh: background $bg_name: starts at $(date -u +%H:%M:%S) UTC, $(( $(date +%s) - run_start )) s into the run"
  ( t=$(date +%s); rc=0; idle "$@" >"$bg_log" 2>&1 </dev/null || rc=$?
    echo "$rc $(( $(date +%s) - t ))" >"$bg_log.rc" ) &
}
# bg_wait NAME LOG PID: waits for a background job, prints its log and time;
# returns its status.
bg_wait() {
  wait "$3" || true
  echo "==================== $1 ===================="
  cat "$2" 2>/dev/null || true
  set -- "$1" "$2" $(cat "$2.rc" 2>/dev/null || echo "1 0")
  echo "scripts/test.sh: background $1: $4 s (ended $(( $(date +%s) - run_start )) s into the run), status $3"
  return "$3"
}

if [ "$(id -u)" = 0 ]; then
  sh scripts/install-deps.sh
else
  echo "scripts/test.sh: not root: skipping scripts/install-deps.sh (packages must be installed)" >&2
fi

# The Debian package as an operator installs it (tests/package/deb.sh:
# builds it from a copy of the tree, installs it, serves and charges one chat
# completion through the system apache2, purges it). Root only: as another
# user it fails, it does not skip. The same unit and providerctl tests under
# valgrind, in a copy of the tree built without sanitizers (the two cannot
# share a process). Both in the background, from the start.
bg "Debian package" tests/package/deb.log env PROV_SRCDIR="$root" sh tests/package/deb.sh
deb_pid=$!
bg valgrind tests/valgrind.log sh scripts/valgrind.sh -j 2
vg_pid=$!
# However the run ends (a failed build exits here and now), it waits for
# them: the package test restores the machine when it ends.
trap 'wait' EXIT
phase build

# A clean tree: objects of an earlier build (say the demo's, without
# sanitizers) are not rebuilt when only the flags change.
if [ -f Makefile ]; then make distclean >/dev/null 2>&1 || true; fi
autoreconf -fi
./configure --enable-werror --enable-sanitizers
make -j2

pgsql=${PROVIDER_TEST_PGSQL:-}

# Prints, first, what failed (node's "failing tests" summary, CUnit's and
# TAP's failure lines: a reader of only the first lines of CI's output sees
# the cause), then SUITE_LOG (make check's test-suite.log) and the full log
# of each failed suite among LOG...
print_failures() {  # print_failures SUITE_LOG LOG...
  suite_log=$1; shift
  for l in "$@"; do
    if [ -f "$l" ] && grep -q ':test-result: \(FAIL\|ERROR\|XPASS\)' "${l%.log}.trs" 2>/dev/null; then
      echo "==================== what failed in $l ===================="
      { sed -n '/failing tests:/,$p' "$l"; grep -E '^not ok |Test: .*\.\.\.FAILED|^ +[0-9]+\. .*:[0-9]+ +- ' "$l"; \
        grep -E 'unexpected server problems|^ +error log: |^ +apache2 |^ +mockgw ' "$l"; } | head -n 120
    fi
  done
  echo "==================== $suite_log ===================="
  cat "$suite_log" 2>/dev/null || true
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
# make check's programs and its check-local (log tags), once, and the npm
# packages of tests/ (npm ci, as run.sh would), before two suites that use
# them run at once.
phase "make check's programs, npm ci"
if ! make -j2 check TESTS= >tests/check-programs.log 2>&1; then
  tail -n 40 tests/check-programs.log
  status=1
fi
if [ ! -f tests/node_modules/.package-lock.json ] \
   || ! cmp -s tests/node_modules/.prov-lock tests/package-lock.json; then
  if npm ci --prefix tests --no-audit --no-fund --loglevel=error; then
    cp tests/package-lock.json tests/node_modules/.prov-lock
  else
    echo "scripts/test.sh: npm ci failed" >&2
    status=1
  fi
fi

# make check's suites but the integration suite (the unit tests, providerctl's,
# the clients), then the fuzz smoke, in the foreground, one make check at a
# time (two at once in one tree lost logs once; the clients' terminal tests
# and the integration suite's timing tests want the CPU to themselves, the
# nice 19 jobs aside).
side_tests=
for t in $(make -s print-tests | tail -n 1); do
  [ "$t" = tests/integration/run.sh ] || side_tests="$side_tests $t"
done
side_tests=${side_tests# }
phase "make check ($side_tests)"
side_status=0
env -u PROVIDER_TEST_PGSQL make -j1 check TESTS="$side_tests" \
  TEST_SUITE_LOG=tests/side-suite.log || side_status=$?
# The fuzzing harnesses (tests/fuzz): built with clang, ASan and UBSan, each
# run for a short smoke time, two at a time (about a minute); a crash, a leak
# or a broken invariant fails the run. Each harness is one test case.
echo "==================== fuzz smoke ===================="
phase "fuzz smoke (its build too)"
if make fuzz >tests/fuzz/build.log 2>&1; then
  sh tests/fuzz/run.sh -t 10 -j 2 -o "$root/tests/fuzz/bin" >tests/fuzz/smoke.log 2>&1 || side_status=$?
  cat tests/fuzz/smoke.log
else
  side_status=1
  tail -n 30 tests/fuzz/build.log
  echo "not ok 1 - make fuzz" >tests/fuzz/smoke.log
fi
# The integration suite on SQLite and, with PROVIDER_TEST_PGSQL=1, on
# PostgreSQL at the same time: each mostly waits on its servers (a quarter
# of a core, measured), and each file runs in a network namespace of its
# own, so their ports never meet. Two make checks, apart: the PostgreSQL run
# is tests/integration/run-pgsql.sh (its own log, result and suite log).
pg_pid=
if [ "$pgsql" = 1 ]; then
  phase "integration suites on SQLite and PostgreSQL, at once"
  ( rc=0
    make -j1 check TESTS=tests/integration/run-pgsql.sh \
      TEST_SUITE_LOG=tests/integration/pgsql-suite.log >tests/integration/pgsql-make.log 2>&1 || rc=$?
    echo "$rc" >tests/integration/pgsql-make.rc ) &
  pg_pid=$!
else
  phase "integration suite on SQLite"
fi
sqlite_status=0
env -u PROVIDER_TEST_PGSQL make -j1 check TESTS=tests/integration/run.sh || sqlite_status=$?
keep_log tests/integration/run.log tests/integration/run-sqlite.log
if [ "$sqlite_status" -ne 0 ]; then
  print_failures test-suite.log tests/integration/run-sqlite.log
  status=$sqlite_status
fi
if [ -n "$pg_pid" ]; then
  wait "$pg_pid" || true
  echo "==================== integration suite on PostgreSQL ===================="
  cat tests/integration/pgsql-make.log
  pg_status=$(cat tests/integration/pgsql-make.rc 2>/dev/null || echo 1)
  if [ "$pg_status" -ne 0 ]; then
    print_failures tests/integration/pgsql-suite.log tests/integration/run-pgsql.log
    status=$pg_status
  fi
fi

phase ""

# The background jobs. make check's logs: the suite's name with .log.
logs=tests/integration/run-sqlite.log
if [ "$pgsql" = 1 ]; then logs="$logs tests/integration/run-pgsql.log"; fi
side_logs=
for t in $side_tests; do
  side_logs="$side_logs ${t%.sh}.log"
done
if [ "$side_status" -ne 0 ]; then
  print_failures tests/side-suite.log $side_logs
  status=$side_status
fi
logs="$logs $side_logs tests/fuzz/smoke.log"
deb_status=0
bg_wait "Debian package" tests/package/deb.log "$deb_pid" || deb_status=$?
logs="$logs tests/package/deb.log"
if [ "$deb_status" -ne 0 ]; then
  status=$deb_status
fi
vg_status=0
bg_wait valgrind tests/valgrind.log "$vg_pid" || vg_status=$?
logs="$logs tests/valgrind.log"
if [ "$vg_status" -ne 0 ]; then
  status=$vg_status
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
    *valgrind.log)
      # CUnit's run summary and the providerctl scripts' TAP lines, under valgrind
      set -- $(awk '$1 == "tests" && NF >= 5 { print $4, $5 }' "$l" | tail -n 1) 0 0
      p=$(grep -c '^ok ' "$l" || true); f=$(grep -c '^not ok ' "$l" || true)
      passed=$((passed + $1 + p)); failed=$((failed + $2 + f)) ;;
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
echo "scripts/test.sh: $passed passed, $failed failed ($(( $(date +%s) - run_start )) s)"
if [ "$status" -ne 0 ]; then
  echo "scripts/test.sh: FAILED" >&2
fi
cd "$root"
exit "$status"
