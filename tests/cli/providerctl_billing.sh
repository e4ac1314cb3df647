#!/bin/sh
# providerctl_billing.sh: the shell test of providerctl's billing commands:
# plans (add, list, show, set), subscriptions (set with the three --until
# forms, show, cancel), `balance show` / `subscription show` / `key show` with
# the windows' use and when capacity returns, and `usage report` with its
# filters, groupings and table/csv/json shapes. Runs the built cli/providerctl
# (from $PROV_BUILDDIR, wrapped in $PROV_WRAP for the valgrind phase) against a
# fresh SQLite file on a fixed clock (PROVIDERCTL_CLOCK_FILE); ledger rows and
# usage buckets are written with the sqlite3 CLI, and the reports are checked
# against the figures and against the ledger summed by sqlite3 itself. With
# PROV_TEST_PGSQL_PARAMS set to the connection string of an empty PostgreSQL
# database ("host=/tmp/pg port=5432 user=postgres dbname=t"), the same checks
# run there, with psql in place of sqlite3.
# Prints one "ok"/"not ok" line per check; exits 1 if any check failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
name=providerctl_billing
. "$here/db.sh"
# same DESC FILE: stdout is exactly FILE
same() {
    if diff "$2" "$tmp/out" >"$tmp/diff" 2>&1; then
        pass "$1"
    else
        fail "$1: output differs"
        sed 's/^/#   diff: /' "$tmp/diff"
    fi
}

# ---- fixture ----------------------------------------------------------------
run db migrate
exits "db migrate" 0
run user add alice@example.com
run user add bob@example.com
run balance add alice@example.com 10
run model add gpt-x --upstream up/gpt-x
run model add claude-y --upstream up/claude-y
run key create alice@example.com --budget 5
run key create alice@example.com
run key create bob@example.com
[ "$(sql 'SELECT COUNT(*) FROM api_keys')" = 3 ] && pass "fixture: three keys" \
    || fail "fixture: three keys"

# ---- plans ------------------------------------------------------------------
run plan --help
exits "plan --help" 0
says "plan --help lists add" "providerctl plan add NAME --5h CREDITS --7d CREDITS"
run plan add pro --5h 10 --7d 100
exits "plan add" 0
says "plan add says what it added" "plan pro added: 10 credits per 5 hours, 100 credits per 7 days"
run plan add basic --5h 1.5 --7d 20 --json
exits "plan add --json" 0
json "plan add --json" "j.name === 'basic' && j.quota_5h === 1.5 && j.quota_7d === 20 && j.id === 2" '"quota_5h": 1.5'
run plan add pro --5h 1 --7d 2
exits "duplicate plan" 1
complains "duplicate plan is named" "plan 'pro' already exists"
run plan add neg --5h -1 --7d 2
exits "negative quota" 2
complains "negative quota is named" "the 5-hour quota must not be negative"
run plan add zero --5h 1 --7d 0
exits "zero quota" 2
complains "zero quota is refused" "the 7-day quota must be greater than zero"
run plan add odd --5h 1.2.3 --7d 2
exits "malformed quota" 2
complains "malformed quota is named" "'1.2.3' is not a credit amount"
run plan add "two words" --5h 1 --7d 2
exits "bad plan name" 2
complains "bad plan name is named" "'two words' is not a valid plan name"
run plan add 42 --5h 1 --7d 2
exits "numeric plan name" 2
run plan add lonely --5h 1
exits "missing --7d" 2
complains "missing --7d is named" "missing --7d"
run plan list --json
exits "plan list --json" 0
json "plan list is sorted by name" "j.length === 2 && j[0].name === 'basic' && j[1].name === 'pro' && j[1].quota_7d === 100" '"name": "basic"'
run plan list
says "plan list has quota columns" "5-HOUR QUOTA"
run plan show pro --json
json "plan show --json" "j.name === 'pro' && j.quota_5h === 10 && j.created_at === '2030-01-15T12:00:00Z'" '"quota_5h": 10'
run plan show 2
exits "plan show by id" 0
says "plan show by id finds it" "basic"
run plan show nope
exits "unknown plan" 1
complains "unknown plan is named" "unknown plan 'nope'"
run plan set pro --5h 12.5
exits "plan set" 0
says "plan set prints the new quotas" "12.5 credits per 5 hours, 100 credits per 7 days"
run plan show pro --json
json "plan set changed only the 5-hour quota" "j.quota_5h === 12.5 && j.quota_7d === 100" '"quota_5h": 12.5'
run plan set pro
exits "plan set without a change" 2
complains "plan set without a change says so" "nothing to change"
run plan set pro --7d -3
exits "plan set negative" 2
run plan set nope --5h 1
exits "plan set unknown" 1

# ---- subscriptions ----------------------------------------------------------
run subscription show alice@example.com --json
exits "subscription show without a plan" 0
json "no plan: subscription and windows are null" "j.subscription === null && j.windows === null && j.balance === 10" '"subscription": null'
run subscription show alice@example.com
says "no plan in plain text" "none (requests are paid from the balance)"
run subscription set alice@example.com nope
exits "subscribe to an unknown plan" 1
complains "unknown plan named" "unknown plan 'nope'"
run subscription set nobody@example.com pro
exits "subscribe an unknown user" 1
complains "unknown user named" "unknown user 'nobody@example.com'"
run subscription set alice@example.com pro --until 2020-01-01
exits "--until in the past" 2
complains "--until in the past is named" "--until 2020-01-01 is not in the future"
for bad in 2030-13-01 2030-02-30 2030-01-20T25:00Z 2030-01-20T10:00 30-01-01 -5 tomorrow; do
    run subscription set alice@example.com pro --until "$bad"
    exits "bad date '$bad'" 2
done
complains "a bad date is explained" "use YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z"
run subscription set alice@example.com basic --until 2030-02-01 --json
exits "subscription set with a date" 0
json "--until YYYY-MM-DD is UTC midnight" "j.plan === 'basic' && j.until_at === '2030-02-01T00:00:00Z' && j.starts_at === '2030-01-15T12:00:00Z'" '"until_at": "2030-02-01T00:00:00Z"'
run subscription set alice@example.com pro --until 2030-01-20T06:30Z --json
json "--until with hours and minutes" "j.plan === 'pro' && j.until_at === '2030-01-20T06:30:00Z'" '"until_at": "2030-01-20T06:30:00Z"'
run subscription set alice@example.com pro --until 1900000000 --json
json "--until as epoch seconds" "j.until_at === '2030-03-17T17:46:40Z'" '"until_at": "2030-03-17T17:46:40Z"'
[ "$(sql 'SELECT COUNT(*) FROM subscriptions WHERE user_id = 1 AND cancelled_at IS NULL')" = 1 ] \
    && pass "a new subscription ends the previous one" || fail "a new subscription ends the previous one"
run subscription cancel bob@example.com
exits "cancel without a subscription" 1
complains "cancel without a subscription says so" "bob@example.com has no active subscription"
run subscription cancel alice@example.com
exits "subscription cancel" 0
says "subscription cancel names the plan" "subscription of alice@example.com to plan pro cancelled"
run subscription show 1 --json
json "cancelled: no subscription" "j.subscription === null && j.windows === null" '"subscription": null'
run subscription set alice@example.com pro
exits "subscription set open-ended" 0
says "open-ended subscription says so" "open-ended"

# ---- windows: usage buckets as the spend engine keeps them ------------------
# 2.5 credits of plan usage an hour ago, 5 more two days ago; the key 1 spent
# 3 credits two hours ago.
sql "INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests) VALUES
     ('user:m', 1, $((T - 3600)), 2500000, 2500000, 1),
     ('user:h', 1, $((T - 3600)), 2500000, 2500000, 1),
     ('user:h', 1, $((T - 172800)), 5000000, 5000000, 2),
     ('key:h', 1, $((T - 7200)), 3000000, 0, 1);"
run balance show alice@example.com --json
exits "balance show --json" 0
json "5-hour window: used, percent, when it returns" "j.windows['5h'].used === 2.5 && j.windows['5h'].quota === 12.5 && j.windows['5h'].percent === 20 && j.windows['5h'].reset_seconds === 14700 && j.windows['5h'].reset_at === '2030-01-15T16:05:00Z'" '"reset_seconds": 14700'
json "7-day window: used, percent, when it returns" "j.windows['7d'].used === 7.5 && j.windows['7d'].percent === 7.5 && j.windows['7d'].reset_seconds === 435600 && j.windows['7d'].reset_at === '2030-01-20T13:00:00Z'" '"reset_seconds": 435600'
json "balance and plan in balance show" "j.balance === 10 && j.subscription.plan === 'pro' && j.subscription.until_at === null" '"plan": "pro"'
run balance show alice@example.com
says "balance show keeps its first line" "balance of alice@example.com: 10 credits"
says "5-hour window in plain text" "2.5 / 12.5 credits (20%); capacity returns in 4h 5m (2030-01-15 16:05 UTC)"
says "7-day window in plain text" "7.5 / 100 credits (7.5%); capacity returns in 5d 1h (2030-01-20 13:00 UTC)"
run subscription show alice@example.com
says "subscription show prints the plan" "pro (since 2030-01-15 12:00, open-ended)"
says "subscription show prints the windows" "capacity returns in 4h 5m"
run balance show bob@example.com --json
json "no plan, no windows for bob" "j.windows === null && j.held === 0" '"windows": null'

# ---- the ledger -------------------------------------------------------------
# keys: 1, 2 of alice (user 1), 3 of bob; models: 1 gpt-x, 2 claude-y
ledger() {   # at user key model status in out cache reasoning credits [reserved]
    sql "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, input_tokens,
         output_tokens, cache_tokens, reasoning_tokens, reserved, credits, status, created_at)
         VALUES ('r-$1-$3', $2, $3, $4, 'chat', $6, $7, $8, $9, ${11:-0}, ${10}, '$5', $1)"
}
ledger $((T - 90000)) 1 1 1 ok 100 20 5 1 1500000
ledger $((T - 3600)) 1 1 2 ok 200 30 0 2 250000
ledger $((T - 60)) 1 2 1 ok 300 40 7 0 3000001
ledger $((T - 30)) 2 3 2 ok 1000 100 10 10 12000000
ledger $((T - 10)) 1 1 1 failed 0 0 0 0 0
ledger $((T - 5)) 1 1 1 reserved 0 0 0 0 0 500000
ledger $((T - 691200)) 1 2 1 ok 50 5 0 0 100000
[ "$(sql 'SELECT COUNT(*) FROM ledger')" = 7 ] && pass "seven ledger rows" \
    || fail "seven ledger rows"

run usage report --format csv
exits "usage report csv" 0
cat > "$tmp/expect" <<EOF
group,requests,input_tokens,output_tokens,cache_tokens,reasoning_tokens,credits
total,6,1650,195,22,13,16.850001
EOF
same "usage report total in csv (the reservation in flight left out)" "$tmp/expect"
run usage report --by day --format csv
cat > "$tmp/expect" <<EOF
day,requests,input_tokens,output_tokens,cache_tokens,reasoning_tokens,credits
2030-01-07,1,50,5,0,0,0.1
2030-01-14,1,100,20,5,1,1.5
2030-01-15,4,1500,170,17,12,15.250001
total,6,1650,195,22,13,16.850001
EOF
same "usage report by day in csv" "$tmp/expect"

# The same report, summed by the database's own client from the ledger.
fmt='function cr(v) { s = sprintf("%d.%06d", int(v / 1000000), v % 1000000); sub(/0+$/, "", s); sub(/\.$/, "", s); return s }'
sql "SELECT key_id, COUNT(*), SUM(input_tokens), SUM(output_tokens),
    SUM(cache_tokens), SUM(reasoning_tokens), SUM(credits) FROM ledger
    WHERE status <> 'reserved' GROUP BY key_id ORDER BY key_id" \
    | awk -F, "$fmt"' { print $1 "," $2 "," $3 "," $4 "," $5 "," $6 "," cr($7) }' > "$tmp/expect"
run usage report --by key --format csv
sed -e '1d' -e '$d' "$tmp/out" > "$tmp/out.rows"
if diff "$tmp/expect" "$tmp/out.rows" >/dev/null; then
    pass "usage by key equals the ledger summed by $sqlcli"
else
    fail "usage by key equals the ledger summed by $sqlcli"
    sed "s/^/#   $sqlcli: /" "$tmp/expect"
fi

run usage report --by model
exits "usage report table" 0
says "table has the column heads" "MODEL     REQUESTS  INPUT  OUTPUT  CACHE  REASONING  CREDITS"
says "table has the total row" "total     6         1650   195     22     13         16.850001"
says "table has a model row" "claude-y  2         1200   130     10     12         12.25"
run usage report --by model --json
exits "usage report --json" 0
json "json by model" "j.by === 'model' && j.rows.length === 2 && j.rows[0].model === 'claude-y' && j.rows[1].model === 'gpt-x' && j.rows[1].requests === 4 && j.rows[1].credits === 4.600001 && j.total.credits === 16.850001 && j.total.input_tokens === 1650" '"model": "claude-y"'
run usage report --by key --format json
json "json by key" "j.rows.length === 3 && j.rows[0].key_id === 1 && j.rows[0].credits === 1.75 && j.rows[1].credits === 3.100001 && j.rows[2].credits === 12" '"key_id": 3'
run usage report --user bob@example.com --json
json "--user" "j.filter.user_id === 2 && j.rows.length === 0 && j.total.requests === 1 && j.total.credits === 12" '"credits": 12'
run usage report --key 2 --since 2030-01-10 --json
json "--key and --since" "j.filter.key_id === 2 && j.filter.since === '2030-01-10T00:00:00Z' && j.total.requests === 1 && j.total.credits === 3.000001" '"credits": 3.000001'
run usage report --since 2030-01-14 --until 2030-01-15 --json
json "--since and --until (exclusive)" "j.total.requests === 1 && j.total.credits === 1.5" '"credits": 1.5'
run usage report --since 2030-01-15T11:59Z --format csv
says "--since with a time" "total,3,1300,140,17,10,15.000001"
run usage report --since $((T - 60)) --format csv
says "--since as epoch seconds" "total,3,1300,140,17,10,15.000001"
run usage report --model gpt-x --user alice@example.com --json
json "--model" "j.filter.model === 'gpt-x' && j.total.requests === 4 && j.total.credits === 4.600001" '"credits": 4.600001'

run usage report --by week
exits "--by week" 2
complains "--by week is named" "--by must be day, key, model or session"
# rows without an agent session are in no session's row
run usage report --by session
exits "usage report --by session" 0
says "--by session without sessions" "no agent sessions"
run usage report --by session --json
json "--by session json" "j.by === 'session' && j.rows.length === 0 && j.total.requests === 0" '"by": "session"'
run usage report --format xml
exits "--format xml" 2
complains "--format xml is named" "--format must be table, csv or json"
run usage report --json --format csv
exits "--json with --format csv" 2
run usage report --since yesterday
exits "bad --since" 2
complains "bad --since is named" "'yesterday' is not a valid --since time"
run usage report --since 2030-01-15 --until 2030-01-14
exits "--until before --since" 2
complains "--until before --since is named" "must be after --since"
run usage report --key 99
exits "unknown key" 1
complains "unknown key is named" "unknown key 99"
run usage report --model nope
exits "unknown model" 1
complains "unknown model is named" "unknown model 'nope'"
run usage report --user nobody@example.com
exits "unknown user" 1
run usage report --help
exits "usage report --help" 0
says "usage report --help shows the options" "[--by day|key|model|session] [--format table|csv|json]"

# ---- held, key status and per-key usage --------------------------------------
run balance show alice@example.com --json
json "the reservation in flight is held" "j.held === 0.5" '"held": 0.5'
run balance show alice@example.com
says "held in plain text" "0.5 credits (by requests in flight)"
run key show 1 --json
exits "key show --json" 0
json "key week's spend and when it returns" "j.spent_7d === 3 && j.budget_reset_seconds === 601200 && j.budget_reset_at === '2030-01-22T11:00:00Z'" '"budget_reset_seconds": 601200'
json "key usage today and 7 days" "j.usage.today.requests === 2 && j.usage.today.credits === 0.25 && j.usage['7d'].requests === 3 && j.usage['7d'].credits === 1.75" '"credits": 1.75'
run key show 1
says "key show: week's spend" "3 credits of 5; capacity returns in 6d 23h (2030-01-22 11:00 UTC)"
says "key show: today" "0.25 credits, 2 requests (tokens: 200 input, 30 output, 0 cache, 2 reasoning)"
run key show 2 --json
json "no budget: no reset" "j.spent_7d === 0 && j.budget_reset_seconds === null && j.usage['7d'].credits === 3.000001 && j.usage['7d'].requests === 1" '"budget_reset_seconds": null'
run key list --json
json "key list has usage" "j.length === 3 && j[1].usage.today.credits === 3.000001 && j[2].usage['7d'].credits === 12" '"usage"'
run key list
says "key list has usage columns" "TODAY"

echo "1..$n"
if [ "$fails" -ne 0 ]; then
    echo "# $fails of $n checks failed"
    exit 1
fi
exit 0
