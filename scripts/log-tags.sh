#!/bin/sh
# scripts/log-tags.sh [-n] [SRCDIR]: the log-tag registry, checked by
# `make check` (check-local in Makefile.am).
#
# Every log line starts with a stable tag, "PROVhhhnn: " (CONVENTIONS.md), so
# that an operator can grep for it and a test can allow it by name. A tag
# names one message: the check fails when a tag is written at two code sites
# (a string literal "PROVnnnnn in a .c or .h under mod_provider/, core/ or
# cli/; tags cited in comments and docs do not count). A message logged from
# two places is logged by one function both call, or gets two tags.
#
# The registry is the code itself: the first three digits are a range, kept
# for one subject (core/README, "Log tags", lists them), and a new tag takes
# the next free number of its range, the one this script prints (the highest
# used + 1; a retired number is not given out again). -n prints only that.
#
# Exit 0 when every tag has one site, 1 otherwise, 2 on a usage error.
set -eu

next_only=0
if [ "${1:-}" = -n ]; then next_only=1; shift; fi
src=${1:-$(dirname "$0")/..}
[ -d "$src/core" ] || { echo "log-tags: no directory $src/core" >&2; exit 2; }

# Duplicates known and waiting for their renumbering (e.g. in a file another
# change is rewriting): reported, not failed. A tag here that is no longer a
# duplicate fails, so that the list is emptied as they land. Empty now.
pending=""

# Every site, as "TAG file:line", one per occurrence.
sites=$(cd "$src" && find mod_provider core cli -name '*.[ch]' -type f | LC_ALL=C sort \
  | xargs grep -noE '"PROV[0-9]{5}' \
  | awk -F: '{ sub(/^"/, "", $3); print $3, $1 ":" $2 }')

next=$(printf '%s\n' "$sites" | awk 'NF { r = substr($1, 5, 3); n = substr($1, 5) + 0;
    if (!(r in hi) || n > hi[r]) hi[r] = n }
  END { for (r in hi) printf "%s PROV%05d\n", r, hi[r] + 1 }' | LC_ALL=C sort \
  | awk '{ printf "%s%s", sep, $2; sep = " " } END { print "" }')

if [ "$next_only" = 1 ]; then
  printf '%s\n' "$next" | tr ' ' '\n'
  exit 0
fi

dups=$(printf '%s\n' "$sites" | awk 'NF { n[$1]++; at[$1] = at[$1] " " $2 }
  END { for (t in n) if (n[t] > 1) print t ":" at[t] }' | LC_ALL=C sort)

status=0
for t in $pending; do
  if ! printf '%s\n' "$dups" | grep -q "^$t:"; then
    echo "log-tags: $t is listed as pending in $0 but has one site now: remove it" >&2
    status=1
  fi
done
if [ -n "$dups" ]; then
  printf '%s\n' "$dups" | while IFS= read -r line; do
    t=${line%%:*}
    case " $pending " in
      *" $t "*) echo "log-tags: pending (another change renumbers it): $line" ;;
      *) echo "log-tags: a tag at two code sites: $line" >&2 ;;
    esac
  done
  for t in $(printf '%s\n' "$dups" | sed 's/:.*//'); do
    case " $pending " in *" $t "*) ;; *) status=1 ;; esac
  done
fi
echo "log-tags: next free tag of each range: $next"
[ "$status" = 0 ] || echo "log-tags: give each message its own tag (the next free one of its range)" >&2
exit "$status"
