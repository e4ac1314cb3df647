#!/bin/sh
# providerctl_oauth.sh: the shell test of the `oauth` group and of the purge
# the server also runs by itself (core/store/prov_purge.h). The rows are
# written with the sqlite3 CLI (or psql) as the authorization server and
# sign-in leave them, around a fixed clock (PROVIDERCTL_CLOCK_FILE): clients
# never used (a day old, and an hour old), one with a live grant, one whose
# grant's tokens all expired, one whose grant was revoked, one with a code
# only; sessions live, expired, revoked long ago and just now; pre-login
# records expired and live. `oauth clients` lists them (--unused, --json),
# `oauth revoke` ends every grant of a client (an unknown one is exit 1, none
# given exit 2), `oauth purge` removes exactly what is over and keeps what is
# live, and a day later what the revocation ended. With PROV_TEST_PGSQL_PARAMS
# set, the same on PostgreSQL. One TAP line per check; exits 1 if any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
name=providerctl_oauth
. "$here/db.sh"
D=86400
count() { sql "SELECT COUNT(*) FROM $1"; }
client() { sql "INSERT INTO oauth_clients (client_id, name, redirect_uris, created_at)
                VALUES ('$1', '$2', 'https://app.example/cb', $3)" >/dev/null; }
grant() { sql "INSERT INTO oauth_grants (id, client_id, user_id, code_hash, scope, resource,
               created_at) VALUES ($1, '$2', 1, 'codehash-g$1', 'account:read',
               'https://svc.example/v1/mcp/account', $3)" >/dev/null; }
token() { sql "INSERT INTO oauth_tokens (token_hash, grant_id, kind, created_at, expires_at)
               VALUES ('$1', $2, '$3', $4, $5)" >/dev/null; }
code() { sql "INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, challenge,
              scope, resource, created_at, expires_at) VALUES ('$1', '$2', 1,
              'https://app.example/cb', 'ch', 'account:read', 'r', $(($3 - 60)), $3)" >/dev/null; }
session() { sql "INSERT INTO sessions (user_id, active_hash, refresh_hash, active_expires,
                 refresh_expires, created_at, revoked_at) VALUES (1, 'a-$1', 'r-$1', $2, $2,
                 $((T - 10 * D)), $3)" >/dev/null; }
prelogin() { sql "INSERT INTO signin_states (state_hash, provider, sealed, created_at,
                  expires_at, client_key) VALUES ('$1', 'idp', 'x', $(($2 - 600)), $2,
                  '192.0.2.1')" >/dev/null; }

# ---- fixture ------------------------------------------------------------------
run db migrate
exits "db migrate" 0
run user add alice@example.com
client c-unused-old "Old and never used" $((T - 2 * D))
client c-unused-new "" $((T - 3600))
client c-live "Live client" $((T - 40 * D))
client c-dead "Dead client" $((T - 40 * D))
client c-revoked "Revoked client" $((T - 3 * D))
client c-code "Code only" $((T - 2 * D))
grant 1 c-live $((T - 10 * D))
token refresh-live 1 refresh $((T - 10 * D)) $((T + 20 * D))
token access-old 1 access $((T - 2 * D - 3600)) $((T - 2 * D))
token access-recent 1 access $((T - 2 * 3600)) $((T - 3600))
grant 2 c-dead $((T - 35 * D))
token refresh-dead 2 refresh $((T - 35 * D)) $((T - 5 * D))
grant 3 c-revoked $((T - 3 * D))
token refresh-rev 3 refresh $((T - 3 * D)) $((T + 27 * D))
sql "UPDATE oauth_grants SET revoked_at = $((T - 2 * D)) WHERE id = 3" >/dev/null
code code-old c-live $((T - 2 * D))
code code-recent c-code $((T - 60))
session live $((T + D)) NULL
session expired $((T - 1)) NULL
session revoked-old $((T + 10 * D)) $((T - 2 * D))
session revoked-new $((T + 10 * D)) $((T - 60))
prelogin state-expired $((T - 1))
prelogin state-live $((T + 300))

# ---- oauth clients --------------------------------------------------------------
run oauth clients
exits "oauth clients" 0
says "the header" "CLIENT_ID"
says "a client with a live grant, last used by its newest token" "c-live"
if grep -E "^c-live +Live client +[0-9-]+ [0-9:]+ +1 +2030-01-15 10:00" "$tmp/out" >/dev/null
then pass "c-live: one live grant, last used 10:00"
else fail "c-live: one live grant, last used 10:00"; cat "$tmp/out" >&2; fi
if grep -E "^c-unused-old .* 0 +never" "$tmp/out" >/dev/null
then pass "a client never used: no grant, never"; else fail "a client never used: no grant, never"; fi
run oauth clients --unused
exits "oauth clients --unused" 0
says "--unused lists the unused" "c-unused-new"
lacks "--unused leaves out the used" "c-live"
run oauth clients --json
exits "oauth clients --json" 0
json "--json: six clients, c-live's live grant" \
     "j.length === 6 && j.find(c => c.client_id === 'c-live').live_grants === 1 && j.find(c => c.client_id === 'c-dead').live_grants === 0 && j.find(c => c.client_id === 'c-unused-old').last_used === null" \
     '"client_id"'

# ---- oauth purge -------------------------------------------------------------------
run oauth purge --json
exits "oauth purge" 0
json "purge counts: 1 record, 2 sessions, 1 code, 3 tokens, 2 grants, 3 clients" \
     "j.signin_states === 1 && j.sessions === 2 && j.codes === 1 && j.tokens === 3 && j.grants === 2 && j.clients === 3" \
     '"clients":3'
[ "$(sql "SELECT client_id FROM oauth_clients ORDER BY client_id" | tr '\n' ' ')" = "c-code c-live c-unused-new " ] \
    && pass "kept: the client with a code, the live one, the new one" \
    || fail "kept: the client with a code, the live one, the new one ($(sql "SELECT client_id FROM oauth_clients" | tr '\n' ' '))"
[ "$(sql "SELECT token_hash FROM oauth_tokens ORDER BY token_hash" | tr '\n' ' ')" = "access-recent refresh-live " ] \
    && pass "kept: the live refresh token and an access token expired an hour ago" \
    || fail "kept tokens: $(sql "SELECT token_hash FROM oauth_tokens" | tr '\n' ' ')"
[ "$(sql "SELECT id FROM oauth_grants")" = "1" ] && pass "kept: the live grant" || fail "kept: the live grant"
[ "$(sql "SELECT code_hash FROM oauth_codes")" = "code-recent" ] && pass "kept: the recent code" \
    || fail "kept: the recent code"
[ "$(sql "SELECT active_hash FROM sessions ORDER BY active_hash" | tr '\n' ' ')" = "a-live a-revoked-new " ] \
    && pass "kept: the live session and the one revoked a minute ago" \
    || fail "kept sessions: $(sql "SELECT active_hash FROM sessions" | tr '\n' ' ')"
[ "$(sql "SELECT state_hash FROM signin_states")" = "state-live" ] && pass "kept: the live pre-login record" \
    || fail "kept: the live pre-login record"
run oauth purge
exits "oauth purge again" 0
says "nothing more to purge" "purged 0 pre-login record(s), 0 session(s), 0 OAuth code(s), 0 token(s), 0 grant(s) and 0 client(s)"

# ---- oauth revoke -------------------------------------------------------------------
run oauth revoke c-live
exits "oauth revoke" 0
says "revoke says how many" "revoked 1 grant(s) of OAuth client c-live"
[ "$(sql "SELECT revoked_at FROM oauth_grants WHERE id = 1")" = "$T" ] && pass "the grant is revoked now" \
    || fail "the grant is revoked now"
run oauth revoke c-live --json
json "revoke again: nothing live" "j.client_id === 'c-live' && j.revoked_grants === 0" '"revoked_grants":0'
run oauth revoke no-such-client
exits "an unknown client" 1
complains "an unknown client is named" "no OAuth client 'no-such-client'"
run oauth revoke
exits "no client given" 2
# a day later: the revoked grant's tokens, the grant, then every client
echo $((T + D + 1)) > "$tmp/clock"
run oauth purge --json
json "a day after the revocation: the rest goes" \
     "j.tokens === 2 && j.grants === 1 && j.clients === 3 && j.codes === 1 && j.signin_states === 1" \
     '"grants":1'
[ "$(count oauth_clients):$(count oauth_grants):$(count oauth_tokens)" = "0:0:0" ] \
    && pass "no OAuth rows left" || fail "no OAuth rows left"
[ "$(count users)" = "1" ] && pass "the user stays" || fail "the user stays"
echo "1..$n"
if [ "$fails" -ne 0 ]; then
    echo "# $fails of $n checks failed"
    exit 1
fi
exit 0
