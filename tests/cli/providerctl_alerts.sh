#!/bin/sh
# providerctl_alerts.sh: the shell test of `alerts purge` (core/alert/
# prov_alert_outbox.c, docs/internals/alerts.md "Retention"). Spend alerts
# are written with the sqlite3 CLI (or psql) around a fixed clock
# (PROVIDERCTL_CLOCK_FILE, 2030-01-15 12:00 UTC): delivered ones 30 and 10
# days old, one created 30 days ago but delivered yesterday, one 30 days
# old still pending, and today's. `alerts purge` refuses a date within the
# last eight days and a bad date (exit 2) and removes nothing then; with
# --before 2030-01-01 it removes exactly the delivered alerts created and
# sent before it (--json too), keeps the pending one, the one delivered
# late and the recent ones; `alerts list` agrees; the default (400 days)
# removes nothing more. With PROV_TEST_PGSQL_PARAMS set, the same on
# PostgreSQL. One TAP line per check; exits 1 if any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
name=providerctl_alerts
. "$here/db.sh"
D=86400
# alert ID KIND CREATED SENT(NULL: pending)
alert() { sql "INSERT INTO alerts (id, subject, kind, window_start, user_id, body, created_at,
               attempts, next_at, sent_at) VALUES ('$1', 'user:1', '$2', $3, 1, '{}', $3, 1,
               $3, $4)" >/dev/null; }

run db migrate
exits "db migrate" 0
run user add a@alerts.test
exits "user add" 0
alert old1 user_blocked $((T - 30 * D)) $((T - 30 * D + 5))
alert old2 balance_below $((T - 29 * D)) $((T - 29 * D + 1))
alert late user_blocked $((T - 28 * D)) $((T - D))
alert pending user_blocked $((T - 27 * D)) NULL
alert ten budget_80 $((T - 10 * D)) $((T - 10 * D + 1))
alert today budget_100 $((T - 60)) $((T - 59))

run alerts purge --before 2030-01-08
exits "a date within the last eight days" 2
complains "says why" "within the last 8 days"
run alerts purge --before yesterday
exits "a bad date" 2
[ "$(sql "SELECT COUNT(*) FROM alerts")" = 6 ] && pass "nothing removed by a refusal" \
    || fail "nothing removed by a refusal"

run alerts purge --before 2030-01-01 --json
exits "alerts purge --before 2030-01-01" 0
json "two delivered alerts removed" "j.removed === 2 && j.before === '2030-01-01T00:00:00Z'" '"removed": 2'
left=$(sql "SELECT id FROM alerts ORDER BY id" | paste -sd ' ' -)
[ "$left" = "late pending ten today" ] && pass "the pending, late, recent alerts stay" \
    || fail "the pending, late, recent alerts stay: $left"
run alerts list --json
json "alerts list agrees" "j.length === 4 && j.filter(a => a.state === 'pending').length === 1" '"pending"'
run alerts purge
exits "alerts purge (400 days)" 0
says "nothing more" "removed 0 delivered alert(s) created and sent before 2028-12-11T00:00:00Z"
[ "$(sql "SELECT COUNT(*) FROM alerts")" = 4 ] && pass "four alerts kept" || fail "four alerts kept"
run alerts purge --help
says "the help says the rule" "never removed"
echo "1..$n"
if [ "$fails" -ne 0 ]; then
    echo "# $fails of $n checks failed"
    exit 1
fi
exit 0
