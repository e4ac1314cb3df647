#!/bin/sh
# providerctl_man.sh: checks the manual page cli/providerctl.1 against
# providerctl's own help, so that neither can drift: every group and verb of
# `providerctl --help` and `providerctl GROUP --help` has its synopsis, word
# for word, in the page (and the page has no verb the program lacks); every
# option of `providerctl GROUP VERB --help` is in that verb's entry; the
# global options are in OPTIONS; the page formats without a warning; and
# `make install-man` puts it where `man providerctl` finds it. One TAP line
# per check; exits 1 if any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
S=${PROV_SRCDIR:-$(cd "$here/../.." && pwd)}
B=${PROV_BUILDDIR:-$S}
PCTL="$B/cli/providerctl"
PAGE="$S/cli/providerctl.1"
PROV_WRAP=${PROV_WRAP:-}
[ -x "$PCTL" ] || { echo "providerctl_man.sh: $PCTL is not built" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/providerctl-man.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
. "$here/tap.sh"

# The page's source as plain lines: roff's escaped minus and backslash undone.
sed -e 's/\\-/-/g' -e 's/\\e/\\/g' "$PAGE" > "$tmp/page"

run --help
exits "providerctl --help" 0
groups=$(awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }' \
    "$tmp/out" | sort -u)
[ -n "$groups" ] && pass "the groups are listed: $(echo $groups)" || fail "no groups in --help"

# Global options: each long and short option of --help's "Global options".
for opt in $(awk '/^Global options/ { on = 1; next } on && /^$/ { on = 0 }
        on && /^  -/ { o = $1; sub(/,$/, "", o); print o; if ($1 ~ /,$/) print $2 }' \
        "$tmp/out"); do
    if awk -v o="$opt" '/^\.SH OPTIONS/ { on = 1; next } /^\.SH/ { on = 0 }
            on && /^\.B/ { for (i = 2; i <= NF; i++) { w = $i; gsub(/[",]/, "", w); if (w == o) f = 1 } }
            END { exit !f }' "$tmp/page"; then
        pass "global option $opt is in OPTIONS"
    else
        fail "global option $opt is not in the page's OPTIONS"
    fi
done

: > "$tmp/synopses"
for g in $groups; do
    run "$g" --help
    exits "providerctl $g --help" 0
    grep '^  providerctl ' "$tmp/out" | sed 's/^  //' >> "$tmp/synopses"
done
count=$(wc -l < "$tmp/synopses")
[ "$count" -ge 30 ] && pass "$count verbs in the groups' help" || fail "only $count verbs found"

# The entry of a verb: the lines after its ".B SYNOPSIS" up to the next entry.
entry() {
    awk -v s=".B $1" '$0 == s { on = 1; next }
        on && (/^\.SS/ || /^\.SH/ || /^\.B providerctl /) { exit }
        on { print }' "$tmp/page"
}

while IFS= read -r syn; do
    if grep -qxF ".B $syn" "$tmp/page"; then
        pass "the page has: $syn"
    else
        fail "the page lacks the synopsis: $syn"
        continue
    fi
    # The verb's words: the lower-case words after "providerctl".
    words=$(echo "$syn" | awk '{ for (i = 2; i <= NF && $i ~ /^[a-z]+$/; i++) printf "%s ", $i }')
    # shellcheck disable=SC2086
    run $words--help
    entry "$syn" > "$tmp/entry"
    for opt in $(awk '/^Options:/ { on = 1; next } on && /^  --/ { print $1 }' "$tmp/out"); do
        if grep -qE "^\.BI? $opt( |$)" "$tmp/entry"; then
            pass "$words: $opt is in its entry"
        else
            fail "$words: the page's entry lacks $opt"
        fi
    done
done < "$tmp/synopses"

# No verb in the page that the program does not have.
grep '^\.B providerctl ' "$tmp/page" | sed 's/^\.B //' | while IFS= read -r line; do
    if grep -qxF "$line" "$tmp/synopses"; then :; else echo "$line"; fi
done > "$tmp/stale"
if [ -s "$tmp/stale" ]; then
    fail "the page has verbs providerctl lacks: $(cat "$tmp/stale")"
else
    pass "every verb of the page is providerctl's"
fi

# It formats cleanly, and `man providerctl` finds it once installed.
if command -v groff >/dev/null 2>&1; then
    if LC_ALL=C.UTF-8 groff -man -ww -z "$PAGE" > "$tmp/groff" 2>&1 && [ ! -s "$tmp/groff" ]; then
        pass "groff formats the page without a warning"
    else
        cp "$tmp/groff" "$tmp/err"; fail "groff warns about the page"
    fi
fi
if [ -f "$B/Makefile" ] && command -v man >/dev/null 2>&1; then
    make -s -C "$B" install-man DESTDIR="$tmp/inst" > "$tmp/out" 2> "$tmp/err"
    rc=$?
    exits "make install-man" 0
    installed=$(find "$tmp/inst" -name providerctl.1 | head -n 1)
    if [ -n "$installed" ] && [ "$(basename "$(dirname "$installed")")" = man1 ]; then
        pass "installed as ${installed#"$tmp/inst"}"
        MANPATH= MANWIDTH=80 man -M "$(dirname "$(dirname "$installed")")" providerctl \
            > "$tmp/out" 2> "$tmp/err"
        rc=$?
        exits "man providerctl" 0
        says "man providerctl shows the page" "PROVIDERCTL(1)"
    else
        fail "make install-man did not install man1/providerctl.1"
    fi
fi

echo "1..$n"
[ "$fails" -eq 0 ]
