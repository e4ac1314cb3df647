#!/bin/sh
# bench/ledger.sh: what the daily rollups and the ledger's retention earn on a
# big ledger (issue 34; docs/internals/billing.md, "Rollups and retention").
# For SQLite and PostgreSQL in turn: a fresh database gets BENCH_LEDGER_ROWS
# synthetic ledger rows (default 10,000,000; made by one SQL statement, a
# recursive CTE or generate_series) spread over BENCH_LEDGER_DAYS days (420)
# up to an hour ago, for BENCH_LEDGER_USERS users (1,000, three keys each;
# a user uses two of six models and one of the three transports; refused,
# failed and cut requests among them). Then it times, each the best of three runs minus the time of a
# trivial providerctl command (the process's start and connection):
#
#   report   providerctl usage report --by day over the last 30 days (all users)
#   cabinet  the same report for one user (what the cabinet's usage page reads)
#   key      a key's 7-day total (the cabinet's key list and providerctl key show)
#
# on raw rows, then rolls the ledger up (providerctl ledger compact with a
# --before older than every row: it rolls up and removes nothing), times the
# same reports on rollups and checks that every report gives the same figures
# as on raw rows; then times the compaction of the rows older than
# BENCH_LEDGER_KEEP days (30; the server's default is 400), and gives the
# database's size before, after the compaction, and after VACUUM (SQLite)
# or VACUUM FULL (PostgreSQL): a compaction frees pages for new rows, and
# only a vacuum gives them back to the file system.
#
# Usage: sh bench/ledger.sh   (as root for PostgreSQL; BENCH_LEDGER_DBS="sqlite"
# or "pgsql" runs one; BENCH_KEEP=1 keeps the work directory)
set -eu
PROG=ledger
. "$(dirname "$0")/lib.sh"

ROWS=${BENCH_LEDGER_ROWS:-10000000}
DAYS=${BENCH_LEDGER_DAYS:-420}
USERS=${BENCH_LEDGER_USERS:-1000}
KEEP=${BENCH_LEDGER_KEEP:-30}
MODEL=bench-model
PG_PIN=""
for f in "$CTL"; do [ -x "$f" ] || die "$f is missing (build first)"; done
command -v sqlite3 >/dev/null 2>&1 || die "sqlite3 is missing"

now=$(date +%s)
start=$((now - DAYS * 86400))
span=$((DAYS * 86400 - 3600))

# The rows: ledger_fill (lib.sh), the same rows as bench/run.sh's
# BENCH_COMPACT_ROWS.
generate() { ledger_fill "$ROWS" "$USERS" "$start" "$span"; }

ms() { echo $(( $(date +%s%N) / 1000000 )); }
# best3 CMD...: the best of three runs, in ms
best3() {
    b=""
    for _ in 1 2 3; do
        t0=$(ms); "$@" >/dev/null; t1=$(ms)
        d=$((t1 - t0)); if [ -z "$b" ] || [ "$d" -lt "$b" ]; then b=$d; fi
    done
    echo "$b"
}
net() { d=$(( $1 - base )); [ "$d" -lt 0 ] && d=0; echo "$d"; }

since=$(( (now - 30 * 86400) / 86400 * 86400 ))
report()  { ctl usage report --by day --since "$since" --json; }
cabinet() { ctl usage report --user 1 --by day --since "$since" --json; }
keysum()  { ctl usage report --key 1 --since $((now - 7 * 86400)) --json; }
size() { ctl ledger status --json | sed -n 's/.*"database_bytes": *\([0-9]*\).*/\1/p'; }

for BACKEND in ${BENCH_LEDGER_DBS:-sqlite pgsql}; do
    W=$(mktemp -d /tmp/mod_provider-ledger.XXXXXX)
    chmod 755 "$W"; mkdir -p "$W/db" "$W/logs"
    PGDATA_DIR=""
    trap stop_services EXIT
    trap 'exit 130' INT TERM HUP PIPE
    make_database bench@example.com Bench ledger-bench
    t0=$(ms); generate; t1=$(ms)
    echo "== $BACKEND: $ROWS ledger rows over $DAYS days, $USERS users (made in $((t1 - t0)) ms)"
    size0=$(size)
    base=$(best3 ctl user list)
    r0=$(net "$(best3 report)"); c0=$(net "$(best3 cabinet)"); k0=$(net "$(best3 keysum)")
    report > "$W/report.raw"; cabinet > "$W/cabinet.raw"; keysum > "$W/key.raw"
    t0=$(ms); ctl ledger compact --before 2000-01-01 >/dev/null; t1=$(ms)
    roll=$((t1 - t0))
    q "ANALYZE" >/dev/null     # the planner's statistics, as autovacuum would have them
    r1=$(net "$(best3 report)"); c1=$(net "$(best3 cabinet)"); k1=$(net "$(best3 keysum)")
    report > "$W/report.rolled"; cabinet > "$W/cabinet.rolled"; keysum > "$W/key.rolled"
    same=yes
    for f in report cabinet key; do cmp -s "$W/$f.raw" "$W/$f.rolled" || same=NO; done
    size1=$(size)
    keep=$(date -u -d "@$((now - KEEP * 86400))" +%Y-%m-%d)
    t0=$(ms); removed=$(ctl ledger compact --before "$keep" --json |
                        sed -n 's/.*"removed": *\([0-9]*\).*/\1/p'); t1=$(ms)
    compact=$((t1 - t0))
    size2=$(size)
    if [ "$BACKEND" = pgsql ]; then q "VACUUM FULL" >/dev/null; else q "VACUUM" >/dev/null; fi
    size3=$(size)
    q "ANALYZE" >/dev/null
    r2=$(net "$(best3 report)"); c2=$(net "$(best3 cabinet)")
    report > "$W/report.kept"
    cmp -s "$W/report.raw" "$W/report.kept" || same=NO
    printf '%-28s %10s %10s %10s\n' "ms (providerctl: $base ms)" raw rolled compacted
    printf '%-28s %10s %10s %10s\n' "report, 30 days by day" "$r0" "$r1" "$r2"
    printf '%-28s %10s %10s %10s\n' "cabinet (a user, 30 days)" "$c0" "$c1" "$c2"
    printf '%-28s %10s %10s %10s\n' "a key's 7 days" "$k0" "$k1" "-"
    echo "same figures raw / rolled / compacted: $same"
    echo "rolling up every closed day: $roll ms"
    echo "compaction (rows before $keep): $removed rows removed in $compact ms"
    echo "database bytes: $size0 raw, $size1 rolled, $size2 compacted, $size3 after vacuum"
    stop_services
    trap - EXIT
done
