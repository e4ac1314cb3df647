#!/bin/sh
# providerctl_audit.sh: the shell test of the audit trail's providerctl side
# (core/store/prov_audit.h, cli/providerctl_audit_log.c) and of `db backup`.
# Every providerctl change writes one row (actor admin: the OS user running
# it), a failed change none; `audit list` filters by user, time, action
# (exact or a prefix) and limit, prints JSON; rows never hold the secrets the
# commands handled (key secrets, an identity provider's subject); rows are
# append-only (an UPDATE is refused); a change that commits a transaction
# writes its row in it; the purge of old rows. `db backup` copies the
# database, refuses to overwrite, and on PostgreSQL says to use pg_dump.
# With PROV_TEST_PGSQL_PARAMS set, the same on PostgreSQL. One TAP line per
# check; exits 1 if any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
name=providerctl_audit
. "$here/db.sh"
me=$(id -un)
count() { sql "SELECT COUNT(*) FROM audit $1"; }

run db migrate
exits "db migrate" 0
run user add alice@example.com --name Alice
exits "user add" 0
run user add bob@example.com
run key create alice@example.com --name laptop --budget 5
exits "key create" 0
secret1=$(grep -o 'sk-prov-[A-Za-z0-9_-]*' "$tmp/out" | head -1)
[ -n "$secret1" ] && pass "key create printed a secret" || fail "key create printed a secret"
run key reissue 1
secret2=$(grep -o 'sk-prov-[A-Za-z0-9_-]*' "$tmp/out" | head -1)
run key budget 1 7
run balance add alice@example.com 12.5 --reason invoice-42
run user link 1 google subject-9f8e7d6c5b
exits "user link" 0
run user block bob@example.com
run plan add pro --5h 1 --7d 2
run subscription set 1 pro
run model add m1 --upstream up-1
run model price m1 --input 2
run key delete 1
run key delete 999
exits "an unknown key" 1

run audit list --json
exits "audit list --json" 0
json "one row per change, newest first, actor the OS user" \
     "j.length === 13 && j[0].action === 'key.delete' && j[12].action === 'user.add'
      && j.every(r => r.actor_kind === 'admin' && r.actor_id === '$me')" '"key.delete"'
json "key.create names the user and the options" \
     "j.some(r => r.action === 'key.create' && r.user_id === 1 && r.target_kind === 'user'
      && r.target_id === '1' && r.detail.name === 'laptop' && r.detail.budget === '5')" \
     '"laptop"'
json "a key's row is its user's" \
     "j.some(r => r.action === 'key.reissue' && r.target_id === '1' && r.user_id === 1)" \
     '"key.reissue"'
json "balance.add keeps the amount and the reason" \
     "j.some(r => r.action === 'balance.add' && r.detail.amount === '12.5'
      && r.detail.reason === 'invoice-42')" '"invoice-42"'
json "identity.link names the provider only" \
     "j.some(r => r.action === 'identity.link' && r.detail.provider === 'google'
      && Object.keys(r.detail).length === 1)" '"google"'
json "user.block is bob's" "j.some(r => r.action === 'user.block' && r.user_id === 2)" \
     '"user.block"'
[ "$(count "WHERE action = 'key.delete'")" = 1 ] && pass "a failed change writes no row" \
    || fail "a failed change writes no row"
for s in "$secret1" "$secret2" subject-9f8e7d6c5b; do
    [ "$(count "WHERE detail LIKE '%$s%' OR target_id LIKE '%$s%' OR actor_id LIKE '%$s%'")" = 0 ] \
        && pass "no row holds ${s%??????????????????????}..." \
        || fail "a row holds a secret"
done

run audit list --user alice@example.com --action key.
says "--user and an action prefix: the table" "key.create"
run audit list --user alice@example.com --action key. --json
json "--user and an action prefix (JSON)" \
     "j.length === 4 && j.every(r => r.action.startsWith('key.') && r.user_id === 1)" '"key.'
run audit list --action user.block --json
json "an exact action" "j.length === 1 && j[0].user_id === 2" '"user.block"'
run audit list --limit 2 --json
json "--limit" "j.length === 2" '"id"'
run audit list --since 2030-01-16 --json
json "--since after every row" "j.length === 0" '[]'
run audit list --limit 0
exits "--limit 0" 2
run audit list --user nobody@example.com
exits "an unknown --user" 1
run audit list
says "the table" "admin:$me"

# append-only; the purge of rows past their retention
sql "UPDATE audit SET action = 'x' WHERE id = 1" >/dev/null 2>&1 \
    && fail "an UPDATE is refused" || pass "an UPDATE is refused"
[ "$(count "WHERE action = 'x'")" = 0 ] && pass "the row is unchanged" || fail "the row is unchanged"

# db backup
if [ -z "$PG" ]; then
    run db backup "$tmp/copy.db"
    exits "db backup" 0
    [ "$(sqlite3 "$tmp/copy.db" 'SELECT COUNT(*) FROM audit')" = 13 ] \
        && pass "the copy has the rows" || fail "the copy has the rows"
    PROVIDER_DB="sqlite3:$tmp/copy.db" run user show alice@example.com
    exits "the copy opens with providerctl" 0
    run db backup "$tmp/copy.db"
    exits "an existing file" 1
    complains "an existing file is never overwritten" "never overwrites"
else
    run db backup "$tmp/copy.db"
    exits "db backup on PostgreSQL" 1
    complains "db backup on PostgreSQL says pg_dump" "pg_dump"
    [ ! -e "$tmp/copy.db" ] && pass "no file written" || fail "no file written"
fi
echo "1..$n"
if [ "$fails" -ne 0 ]; then
    echo "# $fails of $n checks failed"
    exit 1
fi
exit 0
