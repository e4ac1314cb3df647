#!/bin/sh
# scripts/check-core-includes.sh [-l] [CORE_DIR [HTTPD_INCLUDEDIR]]: the two rules
# of core/'s layering that a compiler cannot see, checked on the sources
# (every `make` runs it: all-local in Makefile.am).
#
# 1. No file under core/ includes an httpd header. Compiling core without
#    httpd's include path catches that only where httpd's headers have a
#    directory of their own; where httpd and APR share one (a /usr/include
#    install, a prefix build) the slip compiles. So every #include line is
#    read: a header named like httpd's (httpd.h, http_*.h, ap_*.h, util_*.h,
#    mod_*.h, mpm*.h, os.h, unixd.h, scoreboard.h, ...) or present in
#    HTTPD_INCLUDEDIR (APR's apr*.h and apu*.h excepted) fails, whatever
#    directory the include names; so does a quoted include of a header that
#    is not in core/ (a way round the list through mod_provider/).
# 2. No include cycle between the folders of core/. A file including a
#    header that lives in another folder makes an edge from its folder to
#    that one; a cycle fails, printed as its path with the files that make
#    each edge. -l prints every edge (folder -> folder: file:header ...).
#    With CORE_CYCLES=warn a cycle is only reported.
#
# Exit 0 when both hold, 1 otherwise, 2 on a usage error.
set -eu

list=0
if [ "${1:-}" = -l ]; then list=1; shift; fi
core=${1:-$(dirname "$0")/../core}
httpd_inc=${2:-}
[ -d "$core" ] || { echo "check-core-includes: no directory $core" >&2; exit 2; }

# Every header that a folder of core/ owns, as "folder header".
owners=$(cd "$core" && for h in */*.h; do
  [ -f "$h" ] && echo "${h%%/*} ${h##*/}"; done)
# httpd's own header names, read from its include directory when that is
# httpd's (it holds httpd.h) and not the system's (no stdio.h): APR's may
# share it, and are left out.
httpd_names=""
if [ -n "$httpd_inc" ] && [ -f "$httpd_inc/httpd.h" ] && [ ! -f "$httpd_inc/stdio.h" ]; then
  httpd_names=$(cd "$httpd_inc" && ls -- *.h | grep -v -e '^ap[ru][_.-]' -e '^expat' || true)
fi

# "folder file header" for every #include in core/*/*.[ch].
includes=$(cd "$core" && for f in */*.c */*.h; do
  [ -f "$f" ] || continue
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*\([<"][^>"]*[>"]\).*/\1/p' "$f" |
    while read -r inc; do echo "${f%%/*} $f $inc"; done
done)

# (the lists go to awk through the environment: a newline in -v is not portable)
export owners httpd_names
printf '%s\n' "$includes" | awk -v mode="${CORE_CYCLES:-fail}" -v list="$list" '
BEGIN {
  n = split(ENVIRON["owners"], o, "\n")
  for (i = 1; i <= n; i++) { split(o[i], w, " "); owner[w[2]] = w[1] }
  n = split(ENVIRON["httpd_names"], h, "\n")
  for (i = 1; i <= n; i++) if (h[i] != "") httpd_h[h[i]] = 1
  bad = 0
}
function is_httpd(b) {
  if (b in httpd_h) return 1
  return b ~ /^(httpd|os|unixd|scoreboard|heartbeat|cache_common|apache_noprobes)\.h$/ ||
         b ~ /^(http_|ap_|util_|mod_|mpm|apreq)[A-Za-z0-9_]*\.h$/
}
NF == 3 {
  room = $1; file = $2; inc = $3
  quoted = (substr(inc, 1, 1) == "\"")
  name = substr(inc, 2, length(inc) - 2)
  base = name; sub(/.*\//, "", base)
  if (is_httpd(base)) {
    printf "check-core-includes: core/%s includes %s, an httpd header: core never includes httpd\n", file, inc
    bad = 1; next
  }
  if (!quoted) next
  if (!(base in owner)) {
    printf "check-core-includes: core/%s includes %s, which is not a header of core/\n", file, inc
    bad = 1; next
  }
  to = owner[base]
  if (to == room) next
  key = room SUBSEP to
  if (!(key in why)) { edge[room] = edge[room] " " to; why[key] = "" }
  why[key] = why[key] " " file ":" base
  rooms[room] = 1; rooms[to] = 1
}
# Depth-first search from every folder; a folder met again on the current
# path closes a cycle.
function visit(r,    i, m, nx, k) {
  state[r] = 1; path[++depth] = r
  m = split(edge[r], nx, " ")
  for (i = 1; i <= m; i++) {
    if (state[nx[i]] == 1) { report(nx[i]); continue }
    if (state[nx[i]] == 0) visit(nx[i])
  }
  depth--; state[r] = 2
}
function report(to,    i, s, line) {
  for (i = depth; i >= 1 && path[i] != to; i--) ;
  s = ""
  for (; i <= depth; i++) {
    line = path[i] " -> " (i < depth ? path[i + 1] : to)
    s = s "\n    " line "  (" substr(why[path[i], (i < depth ? path[i + 1] : to)], 2) ")"
  }
  printf "check-core-includes: %s: include cycle between core/ folders:%s\n", \
    (mode == "warn" ? "warning" : "error"), s
  if (mode != "warn") bad = 1
}
END {
  if (list) {
    for (k in why) { split(k, p, SUBSEP); print p[1] " -> " p[2] ":" why[k] | "sort" }
    close("sort")
  }
  for (r in rooms) state[r] = 0
  for (r in rooms) if (state[r] == 0) { depth = 0; visit(r) }
  exit bad
}'
