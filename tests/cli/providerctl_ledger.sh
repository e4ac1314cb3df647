#!/bin/sh
# providerctl_ledger.sh: the shell test of the `ledger` group (core/store/
# prov_rollup.h). Twenty-one days of ledger rows (three a day: ok, refused,
# cut) are written with the sqlite3 CLI (or psql) around a fixed clock
# (PROVIDERCTL_CLOCK_FILE, 2030-01-15 12:00 UTC), with a reservation still
# in flight two days ago. `ledger status` shows the rows, the oldest and no
# rollup yet (--json too); `ledger compact` refuses a date within the last
# eight days and a bad date (exit 2), rolls the ledger up to the
# reservation, removes exactly the rows before --before and keeps the
# reservation, today's rows and the usage reports' figures; the default
# (400 days) removes nothing more; `ledger status` then shows the rollups'
# coverage. With PROV_TEST_PGSQL_PARAMS set, the same on PostgreSQL. One TAP
# line per check; exits 1 if any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
name=providerctl_ledger
. "$here/db.sh"
D=86400
DAY0=$((T - T % D))
row() { sql "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, input_tokens,
             output_tokens, reserved, credits, plan_credits, source, status, created_at)
             VALUES ('$1', 1, 1, 1, 'chat', 100, $2, 500, $3, 0, 'balance', '$4', $5)" >/dev/null; }

# ---- fixture ------------------------------------------------------------------
run db migrate
exits "db migrate" 0
run ledger status --json
json "an empty ledger" "j.rows === 0 && j.oldest === null && j.rolled_first_day === null && j.rolled_last_id === 0" '"rows": 0'
d=-20
while [ "$d" -le 0 ]; do
    at=$((DAY0 + d * D + 3600))
    [ "$d" -eq -2 ] && row "held$d" 0 0 reserved "$at"
    row "ok$d" 20 1000 ok $((at + 1))
    row "refused$d" 0 0 refused $((at + 2))
    row "cut$d" 5 300 cut $((at + 3))
    d=$((d + 1))
done
run ledger status
exits "ledger status" 0
says "the raw rows" "raw rows:        64"
says "the oldest" "oldest row:      2029-12-26 01:00"
says "nothing rolled up yet" "rolled days:     none"
run usage report --by day --json
cp "$tmp/out" "$tmp/report.before"

# ---- refusals -------------------------------------------------------------------
run ledger compact --before 2030-01-08
exits "a date within the last eight days" 2
complains "says why" "within the last 8 days"
run ledger compact --before yesterday
exits "a bad date" 2
[ "$(sql "SELECT COUNT(*) FROM ledger")" = 64 ] && pass "nothing removed by a refusal" \
    || fail "nothing removed by a refusal"
[ "$(sql "SELECT last_id FROM ledger_rollup_state")" = 0 ] && pass "nor rolled up" || fail "nor rolled up"

# ---- compact ----------------------------------------------------------------------
run ledger compact --before 2030-01-05 --json
exits "ledger compact --before 2030-01-05" 0
held=$(sql "SELECT id FROM ledger WHERE request_id = 'held-2'")
json "rolled up to the reservation, ten days of rows removed" \
     "j.removed === 30 && j.rolled_ids === $((held - 1)) && j.before === '2030-01-05T00:00:00Z'" '"removed": 30'
[ "$(sql "SELECT COUNT(*) FROM ledger WHERE created_at < $((DAY0 - 10 * D))")" = 0 ] \
    && pass "no row before 2030-01-05 left" || fail "no row before 2030-01-05 left"
[ "$(sql "SELECT COUNT(*) FROM ledger")" = 34 ] && pass "34 rows kept" || fail "34 rows kept"
[ "$(sql "SELECT status FROM ledger WHERE request_id = 'held-2'")" = reserved ] \
    && pass "the reservation stays" || fail "the reservation stays"
[ "$(sql "SELECT SUM(requests) FROM ledger_rollup")" = $((held - 1)) ] \
    && pass "the rollups count every row rolled up" || fail "the rollups count every row rolled up"
[ "$(sql "SELECT SUM(refused) || ':' || SUM(credits) FROM ledger_rollup")" = "18:23400" ] \
    && pass "refused requests and credits in the rollups" \
    || fail "refused requests and credits in the rollups: $(sql "SELECT SUM(refused), SUM(credits) FROM ledger_rollup")"
run usage report --by day --json
if cmp -s "$tmp/out" "$tmp/report.before"; then pass "the usage report has not moved"
else fail "the usage report has not moved"; diff "$tmp/report.before" "$tmp/out" | sed 's/^/# /'; fi
run ledger compact
exits "ledger compact (400 days)" 0
says "nothing more" "removed 0 raw row(s) created before 2028-12-11T00:00:00Z"
run ledger status --json
json "status: the rollups' coverage" \
     "j.rows === 34 && j.rolled_first_day === '2029-12-26' && j.rolled_last_day === '2030-01-12' && j.rolled_last_id === $((held - 1)) && j.rows_not_rolled === 10 && j.oldest === '2030-01-05T01:00:01Z' && j.database_bytes > 0" \
     '"rows": 34'
run ledger status
says "status: the rolled days" "rolled days:     2029-12-26 to 2030-01-12"
# the reservation settles: the next compaction rolls the rest of the closed days up
sql "UPDATE ledger SET status = 'ok', credits = 70 WHERE request_id = 'held-2'" >/dev/null
run ledger compact --before 2030-01-05 --json
json "the rest rolled up, up to today" "j.removed === 0 && j.rolled_ids === 7" '"rolled_ids": 7'
run usage report --by day --json
json "the settled reservation counts (2030-01-13: 1,300 + 70 micro-credits)" \
     "j.rows.find(r => r.day === '2030-01-13').requests === 4 && j.rows.find(r => r.day === '2030-01-13').credits === 0.00137 && j.total.requests === 64" \
     '"credits": 0.00137,'

run ledger compact --help
says "the help says the rule" "last 8 days"
echo "1..$n"
if [ "$fails" -ne 0 ]; then
    echo "# $fails of $n checks failed"
    exit 1
fi
exit 0
