#!/bin/sh
# scripts/calls.sh: who calls whom between object files, from the symbol
# tables alone: for each object, every undefined symbol that another of the
# given objects defines is a call (or a use of its data) from the first to
# the second. Prints "caller -> callee: symbols", one line per pair, then
# checks the pairs for a cycle with tsort(1). Exit 0 when there is none, 1
# when there is one (tsort names the files of the loop), 2 on a usage error.
#
#   sh scripts/calls.sh core/billing/.libs/*.o          # between billing's files
#   sh scripts/calls.sh --folders core/*/.libs/*.o      # between core's folders
#
# With --folders an object counts as the folder above its .libs/ (core/billing),
# and calls inside one folder are left out. Names drop libtool's
# "<library>_la-" prefix. Build first (make): the objects are the truth.
set -u

by_folder=0
if [ "${1:-}" = --folders ]; then
  by_folder=1
  shift
fi
[ $# -gt 0 ] || { echo "usage: sh scripts/calls.sh [--folders] OBJECT..." >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/calls-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

name() {
  if [ $by_folder = 1 ]; then
    d=$(dirname "$1")
    [ "$(basename "$d")" = .libs ] && d=$(dirname "$d")
    echo "$d"
  else
    b=$(basename "$1" .o)
    echo "${b#*_la-}"
  fi
}

for o in "$@"; do
  n=$(name "$o")
  nm -g --defined-only "$o" | awk -v f="$n" 'NF == 3 { print $3, f }'
done | sort > "$tmp/defs"
for o in "$@"; do
  n=$(name "$o")
  nm -u "$o" | awk -v f="$n" '{ print $NF, f }'
done | sort > "$tmp/uses"

join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 { print $2, $3, $1 }' | sort -u > "$tmp/calls"
awk '{ k = $1 " -> " $2; if (!(k in s)) { o[++n] = k; s[k] = "" } s[k] = s[k] " " $3 }
     END { for (i = 1; i <= n; i++) print o[i] ":" s[o[i]] }' "$tmp/calls"

awk '{ print $1, $2 }' "$tmp/calls" | sort -u > "$tmp/pairs"
if tsort "$tmp/pairs" > /dev/null 2> "$tmp/loop"; then
  echo "no cycle ($(wc -l < "$tmp/pairs") caller-callee pairs)"
  exit 0
fi
echo "a cycle:" >&2
cat "$tmp/loop" >&2
exit 1
