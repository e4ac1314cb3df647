#!/bin/sh
# tests/fuzz/run.sh: runs the libFuzzer harnesses that tests/fuzz/build.sh
# made, each with its seed corpus (tests/fuzz/corpus/<target>, read only:
# new inputs go to a scratch directory) and its dictionary, two at a time,
# and prints one TAP line per harness with its executions and executions per
# second. A crash, a leak, a broken invariant or an input slower than 10 s
# is a failure: its input is kept and its report printed. Exit status 0
# when every harness ran clean.
#
#   tests/fuzz/run.sh [-t SECONDS | -n RUNS] [-j JOBS] [-o BINDIR] [TARGET...]
#
# -t: seconds per harness (default 10, the smoke run of scripts/test.sh);
# -n: executions per harness instead (tests/fuzz/README.md's 1,000,000);
# -j: harnesses at a time (default 2); -o: where the programs are (default
# tests/fuzz/bin); TARGET: e.g. sse money (default: every fuzz_* program).
# Findings are kept in BINDIR/findings/<target>-crash-<sha1> (and similar).
set -u

here=$(cd "$(dirname "$0")" && pwd)
secs=10
runs=
jobs=2
bin=$here/bin
while getopts t:n:j:o: opt; do
  case $opt in
    t) secs=$OPTARG ;;
    n) runs=$OPTARG ;;
    j) jobs=$OPTARG ;;
    o) bin=$OPTARG ;;
    *) echo "usage: $0 [-t SECONDS | -n RUNS] [-j JOBS] [-o BINDIR] [TARGET...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then
  set -- $(cd "$bin" 2>/dev/null && ls fuzz_* 2>/dev/null | sed 's/^fuzz_//')
fi
if [ $# -eq 0 ]; then
  echo "tests/fuzz/run.sh: no harness in $bin (make fuzz builds them)" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/prov-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$bin/findings"
if [ -n "$runs" ]; then limit="-runs=$runs"; else limit="-max_total_time=$secs"; fi

# One harness: its output in $work/<target>.out, its verdict in .rc.
run_one() {
  t=$1
  dict=$here/json.dict
  case $t in gateway_http) dict=$here/http.dict ;; money|journal) dict= ;; esac
  mkdir -p "$work/$t"
  "$bin/fuzz_$t" $limit -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$bin/findings/$t-" ${dict:+-dict="$dict"} \
    "$work/$t" "$here/corpus/$t" >"$work/$t.out" 2>&1
  echo $? >"$work/$t.rc"
}

# Two (or -j) at a time.
running=0
for t in "$@"; do
  if [ ! -x "$bin/fuzz_$t" ]; then
    echo "tests/fuzz/run.sh: $bin/fuzz_$t is missing" >&2
    echo 1 >"$work/$t.rc"
    continue
  fi
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait
    running=0
  fi
done
wait

echo "1..$#"
n=0
failed=0
for t in "$@"; do
  n=$((n + 1))
  rc=$(cat "$work/$t.rc" 2>/dev/null || echo 1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.out" 2>/dev/null | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$t.out" 2>/dev/null | tail -n 1)
  if [ "$rc" = 0 ]; then
    echo "ok $n - fuzz_$t: ${execs:-?} executions, ${rate:-?}/s"
  else
    failed=$((failed + 1))
    echo "not ok $n - fuzz_$t: exit $rc after ${execs:-?} executions"
    grep -E 'ERROR|invariant broken|runtime error|Assertion|SUMMARY|Test unit written| in [a-z_]+ /[^ ]*/(core|tests/fuzz)/[a-z_]+\.c:' \
      "$work/$t.out" 2>/dev/null | head -n 20 | sed 's/^/# /'
  fi
done
[ "$failed" -eq 0 ]
