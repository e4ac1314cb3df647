#!/bin/sh
# scripts/calls.sh: who calls whom between object files, from the symbol
# tables alone: for each object, every undefined symbol that another of the
# given objects defines is a call (or a use of its data, such as a table of
# functions) from the first to the second. Prints "caller -> callee:
# symbols", one line per pair, then checks the pairs for a cycle with
# tsort(1). Exit 0 when there is none, 1 when there is one (the pairs that
# make it are printed, then tsort's names of the loop), 2 on a usage error.
#
#   sh scripts/calls.sh core/billing/.libs/*.o          # between billing's files
#   sh scripts/calls.sh --folders core/*/.libs/*.o      # between core's folders
#   sh scripts/calls.sh -q core/transport/*.lo          # quiet: the cycle only
#
# --except SYMBOL (repeatable): a use of SYMBOL is not counted (httpd's
# module record, which names every hook and which every glue file reads its
# configuration through).
# With --folders an object counts as the folder above its .libs/ (core/billing),
# and calls inside one folder are left out. Names drop libtool's
# "<library>_la-" prefix. An OBJECT may be a libtool object (.lo): the object
# it names (PIC or not) is read. Build first (make): the objects are the
# truth. Every `make` runs scripts/check-calls.sh, which calls this for each
# folder of core/ and for core's folders (Makefile.am, all-local).
set -u

by_folder=0
quiet=0
except=" "
while [ $# -gt 0 ]; do
  case $1 in
    --folders) by_folder=1; shift ;;
    -q) quiet=1; shift ;;
    --except) [ $# -gt 1 ] || { echo "calls.sh: --except needs a symbol" >&2; exit 2; }
              except="$except$2 "; shift 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: sh scripts/calls.sh [-q] [--folders] [--except SYMBOL]... OBJECT..." >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/calls-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# The objects themselves (a .lo names its PIC object, or else its non-PIC
# one, relative to its own folder), one a line, and "object name" pairs.
for o in "$@"; do
  case $o in
    *.lo)
      d=$(dirname "$o")
      f=$(sed -n "s/^pic_object='\(.*\)'$/\1/p" "$o")
      [ -n "$f" ] && [ "$f" != none ] ||
        f=$(sed -n "s/^non_pic_object='\(.*\)'$/\1/p" "$o")
      [ -n "$f" ] && [ "$f" != none ] || { echo "calls.sh: no object in $o" >&2; exit 2; }
      o=$d/$f ;;
  esac
  [ -f "$o" ] || { echo "calls.sh: no object $o" >&2; exit 2; }
  echo "$o"
done > "$tmp/objs" || exit 2
awk -v byf=$by_folder '{
    o = $0; n = o
    if (byf) {
      sub(/\/[^\/]*$/, "", n); sub(/\/\.libs$/, "", n)
    } else {
      sub(/^.*\//, "", n); sub(/\.o$/, "", n); sub(/^.*_la-/, "", n)
    }
    print o, n
  }' "$tmp/objs" > "$tmp/names"

# One nm for all the objects (-A: each line starts with "object:").
xargs nm -A -g --defined-only < "$tmp/objs" > "$tmp/nm_defs" || exit 2
xargs nm -A -u < "$tmp/objs" > "$tmp/nm_uses" || exit 2
table() {
  awk 'NR == FNR { name[$1] = $2; next }
       { i = index($0, ":"); o = substr($0, 1, i - 1); rest = substr($0, i + 1)
         k = split(rest, f, " "); if ((o in name) && k >= 2) print f[k], name[o] }' \
    "$tmp/names" "$1" | sort
}
table "$tmp/nm_defs" > "$tmp/defs"
table "$tmp/nm_uses" | awk -v ex="$except" 'index(ex, " " $1 " ") == 0' > "$tmp/uses"

join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 { print $2, $3, $1 }' | sort -u > "$tmp/calls"
awk '{ k = $1 " -> " $2; if (!(k in s)) { o[++n] = k; s[k] = "" } s[k] = s[k] " " $3 }
     END { for (i = 1; i <= n; i++) print o[i] ":" s[o[i]] }' "$tmp/calls" > "$tmp/list"
[ $quiet = 1 ] || cat "$tmp/list"

awk '{ print $1, $2 }' "$tmp/calls" | sort -u > "$tmp/pairs"
if tsort "$tmp/pairs" > /dev/null 2> "$tmp/loop"; then
  [ $quiet = 1 ] || echo "no cycle ($(wc -l < "$tmp/pairs") caller-callee pairs)"
  exit 0
fi
# The pairs between the files tsort names in a loop.
sed -n 's/^tsort: //p' "$tmp/loop" | grep -v 'input contains a loop' | sort -u > "$tmp/inloop"
echo "a cycle:" >&2
awk 'NR == FNR { in_loop[$1] = 1; next }
     { split($0, h, ":"); split(h[1], ab, " -> ") }
     (ab[1] in in_loop) && (ab[2] in in_loop) { print "  " $0 }' "$tmp/inloop" "$tmp/list" >&2
cat "$tmp/loop" >&2
exit 1
