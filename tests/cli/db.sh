# tests/cli/db.sh: the set-up that the providerctl shell tests which write
# rows themselves share (providerctl_billing.sh, providerctl_hold.sh,
# providerctl_sessions.sh, providerctl_oauth.sh, providerctl_favorites.sh), sourced after they set $here (their directory)
# and $name (their name, for messages): the built providerctl ($PCTL, from
# $PROV_BUILDDIR; $PROV_WRAP, a command to run it under), a scratch directory
# $tmp removed at exit, the database (a new SQLite file $db, or, with
# PROV_TEST_PGSQL_PARAMS set to the connection string of an empty PostgreSQL
# database, that database: $PG), no machine configuration, "now" fixed at
# $T = 2030-01-15 12:00:00 UTC for every command (PROVIDERCTL_CLOCK_FILE),
# the TAP helpers of tap.sh, and `sql SQL`, which runs SQL and prints its
# rows as CSV without a header (with sqlite3, or psql).

B=${PROV_BUILDDIR:-$(cd "$here/../.." && pwd)}
PCTL="$B/cli/providerctl"
PROV_WRAP=${PROV_WRAP:-}
if [ ! -x "$PCTL" ]; then
    echo "$name.sh: $PCTL is not built" >&2
    exit 1
fi
PG=${PROV_TEST_PGSQL_PARAMS:-}
sqlcli=sqlite3
[ -n "$PG" ] && sqlcli=psql
if ! command -v $sqlcli >/dev/null 2>&1; then
    echo "$name.sh: needs the $sqlcli command line tool" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
db="$tmp/provider.db"
PROVIDER_DB="sqlite3:$db"
[ -n "$PG" ] && PROVIDER_DB="pgsql:$PG"
PROVIDERCTL_CONF="$tmp/empty.conf"
: > "$PROVIDERCTL_CONF"
T=1894708800
echo "$T" > "$tmp/clock"
PROVIDERCTL_CLOCK_FILE="$tmp/clock"
export PROVIDER_DB PROVIDERCTL_CONF PROVIDERCTL_CLOCK_FILE
. "$here/tap.sh"

sql() {
    if [ -n "$PG" ]; then
        psql "$PG" -q -X -v ON_ERROR_STOP=1 -At -F, -c "$1"
    else
        sqlite3 -csv "$db" "$1"
    fi
}
