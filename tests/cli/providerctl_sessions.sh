#!/bin/sh
# providerctl_sessions.sh: the shell test of what providerctl shows and does
# about a user's ways into the cabinet: `user show` lists the identities
# (provider, when linked; never the subject) and the live sessions (when
# made, active or idle, when the refresh term ends; never a token hash), in
# plain and --json output; `user sessions revoke USER` ends every live
# session of the user and no one else's; `user link USER PROVIDER SUBJECT`
# adds an identity (never another user's), `user unlink USER PROVIDER`
# removes one, never the last; `user block` revokes them too, at once. The
# identities and sessions rows are written with the sqlite3 CLI as sign-in
# would leave them, on a fixed clock (PROVIDERCTL_CLOCK_FILE). Runs the
# built cli/providerctl (from $PROV_BUILDDIR, wrapped in $PROV_WRAP for the valgrind phase); with
# PROV_TEST_PGSQL_PARAMS set to the connection string of an empty PostgreSQL
# database, the same checks run there, with psql in place of sqlite3.
# Prints one "ok"/"not ok" line per check; exits 1 if any check failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
name=providerctl_sessions
. "$here/db.sh"
# session USER TAG CREATED ACTIVE_EXPIRES REFRESH_EXPIRES: a row as sign-in
# leaves it (the hashes are distinctive, to be looked for in the output)
session() {
    sql "INSERT INTO sessions (user_id, active_hash, refresh_hash, active_expires,
         refresh_expires, created_at) VALUES ($1, 'activehash-$2', 'refreshhash-$2', $4, $5, $3)" \
        >/dev/null
}
live() { sql "SELECT COUNT(*) FROM sessions WHERE user_id = $1 AND revoked_at IS NULL AND refresh_expires > $T"; }

# ---- fixture ------------------------------------------------------------------
run db migrate
exits "db migrate" 0
run user add alice@example.com --name Alice
run user add bob@example.com
run user add carol@example.com
sql "INSERT INTO identities (user_id, provider, subject, created_at) VALUES
     (1, 'idp2', 'subject-alice-two', $((T - 86400))),
     (1, 'idp1', 'subject-alice-one', $((T - 10 * 86400))),
     (2, 'idp1', 'subject-bob-one', $((T - 3600)))" >/dev/null
# alice: active (made 11:00, active until 12:04), idle (active ended 11:05;
# refresh until 2030-01-16 11:00), revoked, past its 30 days
session 1 act $((T - 3600)) $((T + 240)) $((T + 29 * 86400))
session 1 idle $((T - 3600)) $((T - 3300)) $((T + 82800))
session 1 rev $((T - 600)) $((T + 240)) $((T + 86400))
sql "UPDATE sessions SET revoked_at = $((T - 60)) WHERE active_hash = 'activehash-rev'" >/dev/null
session 1 old $((T - 31 * 86400)) $((T - 31 * 86400 + 300)) $((T - 86400))
# bob: one active session
session 2 bob $((T - 120)) $((T + 180)) $((T + 30 * 86400))
[ "$(live 1):$(live 2)" = "2:1" ] && pass "fixture: alice has 2 live sessions, bob 1" \
    || fail "fixture: alice has 2 live sessions, bob 1 ($(live 1):$(live 2))"

# ---- user show ------------------------------------------------------------------
run user show alice@example.com
exits "user show" 0
says "the identities are counted" "identities:      2"
says "the oldest identity first, with when it was linked" "  idp1           linked 2030-01-05 12:00"
says "the other identity" "  idp2           linked 2030-01-14 12:00"
says "the live sessions are counted" "sessions:        2 live"
says "an active session: made, active until, expires" "created 2030-01-15 11:00, active until 2030-01-15 12:04, expires 2030-02-13 12:00"
says "an idle session: since when" "created 2030-01-15 11:00, idle since 2030-01-15 11:05, expires 2030-01-16 11:00"
lacks "no revoked session" "2030-01-15 11:50"
lacks "no session past its 30 days" "2029-12-15"
lacks "never a subject" "subject-alice"
lacks "never a token hash" "hash-"
run user show carol@example.com
exits "user show without identities or sessions" 0
says "no identities" "identities:      none"
says "no sessions" "sessions:        none"
run user show 1 --json
exits "user show --json" 0
json "user show --json: the user's fields are kept" "j.id === 1 && j.email === 'alice@example.com' && j.name === 'Alice' && j.blocked === false && j.keys === 0" '"email": "alice@example.com"'
json "user show --json: identities, oldest first, provider and created_at only" "j.identities.length === 2 && j.identities[0].provider === 'idp1' && j.identities[0].created_at === '2030-01-05T12:00:00Z' && j.identities[1].provider === 'idp2' && Object.keys(j.identities[0]).sort().join() === 'created_at,provider'" '"provider": "idp1"'
json "user show --json: live sessions with their times" "j.sessions.length === 2 && j.sessions.every(s => typeof s.id === 'number') && j.sessions[0].active === true && j.sessions[0].created_at === '2030-01-15T11:00:00Z' && j.sessions[0].active_until === '2030-01-15T12:04:00Z' && j.sessions[0].expires_at === '2030-02-13T12:00:00Z' && j.sessions[1].active === false && j.sessions[1].active_until === '2030-01-15T11:05:00Z'" '"active_until"'
lacks "--json: never a subject" "subject-"
lacks "--json: never a token hash" "hash-"
run user show 3 --json
json "user show --json without any: empty lists" "Array.isArray(j.identities) && j.identities.length === 0 && j.sessions.length === 0" '"sessions": []'

# ---- user sessions revoke ---------------------------------------------------------
run user sessions --help
exits "user sessions --help" 0
says "the help shows the synopsis" "usage: providerctl user sessions revoke USER"
run user --help
says "user --help lists it" "providerctl user sessions revoke USER"
run user sessions
exits "user sessions without an action" 2
run user sessions revoke
exits "user sessions revoke without USER" 2
complains "the missing USER is named" "missing USER"
run user sessions list alice@example.com
exits "an unknown action" 2
complains "the unknown action is named" "unknown action 'list'"
run user sessions revoke nobody@example.com
exits "an unknown user" 1
complains "the unknown user is named" "unknown user 'nobody@example.com'"
run user sessions revoke alice@example.com
exits "user sessions revoke" 0
says "it says how many" "user 1 (alice@example.com): 2 cabinet session(s) revoked"
[ "$(live 1)" = 0 ] && pass "alice has no live session left" || fail "alice has no live session left ($(live 1))"
[ "$(sql "SELECT COUNT(*) FROM sessions WHERE user_id = 1 AND revoked_at = $T")" = 2 ] \
    && pass "both revoked now, the earlier revocation kept" || fail "both revoked now, the earlier revocation kept"
[ "$(live 2)" = 1 ] && pass "bob's session is untouched" || fail "bob's session is untouched ($(live 2))"
run user show alice@example.com
says "user show lists none" "sessions:        none"
run user sessions revoke 1 --json
exits "user sessions revoke again --json" 0
json "--json: nothing left to revoke" "j.user_id === 1 && j.email === 'alice@example.com' && j.sessions_revoked === 0" '"sessions_revoked": 0'

# ---- user unlink ---------------------------------------------------------------------
run user unlink --help
exits "user unlink --help" 0
says "the help shows the synopsis" "usage: providerctl user unlink USER PROVIDER"
run user unlink alice@example.com
exits "user unlink without PROVIDER" 2
run user unlink alice@example.com idp9
exits "an identity the user does not have" 1
complains "it says which" "has no identity at 'idp9'"
run user unlink alice@example.com idp2
exits "user unlink" 0
says "it says what went" "user 1 (alice@example.com): the identity at idp2 unlinked"
[ "$(sql "SELECT COUNT(*) FROM identities WHERE user_id = 1")" = 1 ] \
    && pass "alice has one identity left" || fail "alice has one identity left"
run user unlink 1 idp1 --json
exits "the last identity" 1
complains "the last one is kept" "is the last way user 1 (alice@example.com) can sign in"
[ "$(sql "SELECT provider FROM identities WHERE user_id = 1")" = idp1 ] \
    && pass "the last identity stays" || fail "the last identity stays"
[ "$(sql "SELECT COUNT(*) FROM identities WHERE user_id = 2")" = 1 ] \
    && pass "bob's identity is untouched" || fail "bob's identity is untouched"
run user link --help
says "user link --help shows the synopsis" "usage: providerctl user link USER PROVIDER SUBJECT"
run user link alice@example.com idp3
exits "user link without SUBJECT" 2
run user link alice@example.com idp1 subject-bob-one
exits "another user's identity" 1
complains "it is refused" "belongs to another user"
run user link alice@example.com idp3 subject-alice-three
exits "user link" 0
says "it says what it did" "user 1 (alice@example.com): linked an identity at idp3"
lacks "the subject is not printed" "subject-"
run user link 1 idp3 subject-alice-three --json
exits "user link again" 0
json "--json: linking again is a no-op" "j.user_id === 1 && j.linked === 'idp3' && j.added === false" '"added": false'
[ "$(sql "SELECT created_at FROM identities WHERE subject = 'subject-alice-three'")" = "$T" ] \
    && pass "linked now, once" || fail "linked now, once"
run user unlink alice@example.com idp3 --json
exits "user unlink --json" 0
json "--json: the user and the provider" "j.user_id === 1 && j.email === 'alice@example.com' && j.unlinked === 'idp3'" '"unlinked": "idp3"'
lacks "never a subject" "subject-"

# ---- user block revokes ------------------------------------------------------------
run user block --help
says "user block --help says a blocked user cannot sign in" "a blocked user cannot sign in"
session 2 bob2 "$T" $((T + 300)) $((T + 30 * 86400))
run user block bob@example.com
exits "user block" 0
says "user block says the sessions went" "user 2 (bob@example.com) blocked: their keys are refused, they cannot sign in, and 2 cabinet session(s) were revoked"
[ "$(live 2)" = 0 ] && pass "bob has no live session left" || fail "bob has no live session left ($(live 2))"
[ "$(sql "SELECT blocked FROM users WHERE id = 2")" = 1 ] && pass "bob is blocked" || fail "bob is blocked"
run user show 2 --json
json "a blocked user shows no session" "j.blocked === true && j.sessions.length === 0 && j.identities.length === 1" '"blocked": true'
run user unblock bob@example.com --json
exits "user unblock" 0
json "unblock keeps the JSON of a user" "j.id === 2 && j.blocked === false && j.sessions_revoked === undefined" '"blocked": false'
run user block carol@example.com --json
json "user block --json counts the revoked sessions" "j.id === 3 && j.blocked === true && j.sessions_revoked === 0" '"sessions_revoked": 0'

echo "1..$n"
if [ "$fails" -ne 0 ]; then
    echo "# $fails of $n checks failed"
    exit 1
fi
exit 0
