#!/bin/sh
# scripts/check-calls.sh OBJECT...: no call circle, checked on the built
# objects (every `make` runs it after the build: all-local in Makefile.am,
# with the objects of libprovider, the module and providerctl). Two rules:
#
# 1. Inside each folder (core/base, core/transport, ..., mod_provider, cli),
#    no file calls a file that calls it back, directly or round a longer
#    loop: the files of a folder form layers, each calling only down.
# 2. Between the folders of core/, the same (the include check,
#    scripts/check-core-includes.sh, sees the headers; this sees the calls).
#
# scripts/calls.sh does the work (a call is an undefined symbol of one
# object that another defines). In the glue, httpd's module record
# (provider_module, in mod_provider.c) is not a call: it names every hook,
# and every glue file reads its configuration through it.
#
# A circle fails with the pairs that make it (caller -> callee: symbols);
# `sh scripts/calls.sh FOLDER/.libs/*.o` lists them all. Exit 0 when both
# hold, 1 otherwise, 2 on a usage error.
set -u

here=$(cd "$(dirname "$0")" && pwd)
[ $# -gt 0 ] || { echo "usage: sh scripts/check-calls.sh OBJECT..." >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-calls-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# "folder object" for each object (a .o under .libs/ counts as the folder above).
for o in "$@"; do echo "$o"; done |
  awk '{ d = $0; if (d !~ /\//) d = "./" d
         sub(/\/[^\/]*$/, "", d); sub(/\/\.libs$/, "", d); print d, $0 }' > "$tmp/by"
folders=$(awk '{ print $1 }' "$tmp/by" | sort -u)

status=0
for d in $folders; do
  objs=$(awk -v d="$d" '$1 == d { print $2 }' "$tmp/by")
  # (word splitting on purpose: object names hold no blank)
  # shellcheck disable=SC2086
  if ! sh "$here/calls.sh" -q --except provider_module $objs 2> "$tmp/err"; then
    echo "check-calls: a call circle between the files of $d/" >&2
    cat "$tmp/err" >&2
    status=1
  fi
done

core=$(awk '$1 ~ /(^|\/)core\/[^\/]+$/ { print $2 }' "$tmp/by")
# shellcheck disable=SC2086
if [ -n "$core" ] &&
   ! sh "$here/calls.sh" -q --folders $core 2> "$tmp/err"; then
  echo "check-calls: a call circle between the folders of core/" >&2
  cat "$tmp/err" >&2
  status=1
fi
exit $status
