#!/bin/sh
# scripts/valgrind.sh: the unit tests and the providerctl tests under
# valgrind (`make check-valgrind`), in a build without sanitizers (the two
# cannot share a process), made in a copy of the tree in a temp dir (what git
# tracks, as it is on disk: the same copy as tests/package/deb.sh's). The
# tree's own build (the sanitizer one) is left alone, so both exist at once
# and scripts/test.sh runs this in the background while the integration
# suites run. (A VPATH build cannot do it: automake's configure refuses a
# build directory whose source tree is configured itself, "source directory
# already configured", and GNU make's VPATH search would find the source
# tree's sanitizer objects as up-to-date targets.)
# -j N: N test programs under valgrind at once (default 2; valgrind runs a
# program on one core). Prints each program's output, one after the other
# (make -O), and the time it took; exit status of make check-valgrind.
set -eu

jobs=2
if [ "${1:-}" = -j ]; then jobs=$2; fi
src=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/prov-valgrind-XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM

(cd "$src" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$work"
cd "$work"
if ! { autoreconf -fi && ./configure --enable-werror && make -j"$jobs" &&
       make -j"$jobs" tests/unit/unit_tests; } >build.log 2>&1; then
  tail -n 40 build.log
  echo "scripts/valgrind.sh: the build without sanitizers failed" >&2
  exit 1
fi
echo "scripts/valgrind.sh: built in $(( $(date +%s) - start )) s"
status=0
make -j"$jobs" -O -k check-valgrind || status=$?
echo "scripts/valgrind.sh: $(( $(date +%s) - start )) s in all, status $status"
exit $status
