#!/bin/sh
# providerctl_hold.sh: the shell test of providerctl's `hold` group: `hold
# list` (requests' reserved rows and processes' leases, with user, key,
# model, amount, source and age; --user; --json) and `hold release` (one hold
# or lease by id, exactly restoring the balance and the buckets; --stale with
# --older-than, as the server's expiry; the usage errors). The holds are
# written with the sqlite3 CLI as a server would leave them (the ledger row
# or lease, the balance and the usage buckets moved together), on a fixed
# clock (PROVIDERCTL_CLOCK_FILE). Runs the built cli/providerctl (from
# $PROV_BUILDDIR, wrapped in $PROV_WRAP for the valgrind phase); with
# PROV_TEST_PGSQL_PARAMS set to the connection string of an empty PostgreSQL
# database, the same checks run there, with psql in place of sqlite3.
# Prints one "ok"/"not ok" line per check; exits 1 if any check failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
name=providerctl_hold
. "$here/db.sh"
# bucket SCOPE ID START CREDITS: adds credits to a usage bucket
bucket() {
    sql "INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests)
         VALUES ('$1', $2, $3, $4, 0, 0) ON CONFLICT (scope, scope_id, bucket)
         DO UPDATE SET credits = usage_buckets.credits + excluded.credits" >/dev/null
}
# held USER_ID KEY_ID AT AMOUNT: what a hold of AMOUNT taken at AT moved
held() {
    bucket key:h "$2" $(($3 - $3 % 3600)) "$4"
    bucket user:h "$1" $(($3 - $3 % 3600)) "$4"
    bucket user:m "$1" $(($3 - $3 % 300)) "$4"
    sql "UPDATE users SET balance = balance - $4 WHERE id = $1" >/dev/null
}
# books: "balance:sum of key:h buckets" of alice
books() {
    sql "SELECT (SELECT balance FROM users WHERE id = 1) || ':' ||
         (SELECT COALESCE(SUM(credits), 0) FROM usage_buckets WHERE scope = 'key:h' AND scope_id = 1)"
}

# ---- fixture: two holds and a lease of a process that died --------------------
run db migrate
exits "db migrate" 0
run user add alice@example.com
run user add bob@example.com
run balance add alice@example.com 10
run model add gpt-x --upstream up/gpt-x
run key create alice@example.com
sql "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, reserved, source,
     status, created_at) VALUES ('req-old', 1, 1, 1, 'chat', 2000000, 'balance', 'reserved',
     $((T - 7200))), ('req-new', 1, 1, 1, 'chat', 1000000, 'balance', 'reserved', $((T - 60)))" \
    >/dev/null
sql "INSERT INTO billing_leases (id, user_id, key_id, model_id, source, amount, at, owner)
     VALUES ('lease_dead', 1, 1, 1, 'balance', 3000000, $((T - 7200)), 'host-1-dead')" >/dev/null
held 1 1 $((T - 7200)) 2000000
held 1 1 $((T - 60)) 1000000
held 1 1 $((T - 7200)) 3000000
[ "$(books)" = "4000000:6000000" ] && pass "fixture: 6 credits held" \
    || fail "fixture: 6 credits held ($(books))"

# ---- hold list ------------------------------------------------------------------
run hold --help
exits "hold --help" 0
says "hold --help lists release" "providerctl hold release [ID] [--stale] [--older-than SECONDS]"
run hold list
exits "hold list" 0
says "hold list has columns" "AMOUNT"
says "hold list shows a request's hold" "req-old"
says "hold list shows a lease" "lease_dead"
says "hold list shows the age" "2h"
run hold list --json
exits "hold list --json" 0
json "hold list --json: oldest first, all fields" "j.length === 3 && j[2].id === 'req-new' && j.find(h => h.id === 'req-old').amount === 2 && j.find(h => h.id === 'req-old').age_seconds === 7200 && j.find(h => h.id === 'lease_dead').kind === 'lease' && j[0].email === 'alice@example.com' && j[0].model === 'gpt-x' && j[0].source === 'balance' && j[2].since === '2030-01-15T11:59:00Z'" '"lease_dead"'
run hold list --user bob@example.com
exits "hold list --user" 0
says "hold list --user filters" "no holds in flight"
run hold list --user nobody@example.com
exits "hold list --user unknown" 1

# ---- hold release -----------------------------------------------------------------
run hold release
exits "hold release without ID or --stale" 2
complains "it says what to give" "give either a hold's ID or --stale"
run hold release req-old --stale
exits "hold release with both" 2
run hold release req-old --older-than 5
exits "--older-than without --stale" 2
run hold release --stale --older-than soon
exits "--older-than not a number" 2
run hold release req-nope
exits "hold release unknown" 1
complains "unknown hold is named" "no hold or lease 'req-nope' in flight"
run hold release req-old
exits "hold release ID" 0
says "it says what came back" "released hold req-old: 2 credits back to alice@example.com (the balance)"
[ "$(sql "SELECT status || ':' || credits FROM ledger WHERE request_id = 'req-old'")" = "released:0" ] \
    && pass "the row is released, not charged" || fail "the row is released, not charged"
[ "$(books)" = "6000000:4000000" ] && pass "balance and buckets got the hold back" \
    || fail "balance and buckets got the hold back ($(books))"
run hold release req-old
exits "hold release twice" 1
run hold release --stale --older-than 3600
exits "hold release --stale" 0
says "--stale says what it expired" "expired 0 hold(s) and 1 lease(s) older than 1h"
[ "$(sql "SELECT COUNT(*) FROM billing_leases")" = 0 ] && pass "the stale lease is gone" \
    || fail "the stale lease is gone"
[ "$(sql "SELECT status FROM ledger WHERE request_id = 'req-new'")" = reserved ] \
    && pass "a young hold stays" || fail "a young hold stays"
[ "$(books)" = "9000000:1000000" ] && pass "the lease came back" \
    || fail "the lease came back ($(books))"
run hold release --stale --older-than 30 --json
exits "hold release --stale --json" 0
json "--stale --json counts" "j.expired_holds === 1 && j.expired_leases === 0 && j.older_than_seconds === 30" '"expired_holds": 1'
[ "$(sql "SELECT status || ':' || credits FROM ledger WHERE request_id = 'req-new'")" = "expired:0" ] \
    && pass "the hold expired, not charged" || fail "the hold expired, not charged"
[ "$(books)" = "10000000:0" ] && pass "everything is back" || fail "everything is back ($(books))"
run hold list
says "nothing is held any more" "no holds in flight"

echo "1..$n"
if [ "$fails" -ne 0 ]; then
    echo "# $fails of $n checks failed"
    exit 1
fi
exit 0
