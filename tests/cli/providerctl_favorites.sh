#!/bin/sh
# providerctl_favorites.sh: the shell test of a user's favorite models from
# the administrator's side, the same rows the cabinet's star changes (GET
# /v1/models/favorites, PUT and DELETE /v1/models/{publicId}/favorite):
# `user favorites USER` lists them (disabled models too, with the flag) in
# plain and --json output; `user favorite add|remove USER MODEL` is
# idempotent as the cabinet is, refuses an unknown model (and adding a
# disabled one) with exit 1 and a bad action with exit 2, and touches no
# one else's favorites. Runs the built cli/providerctl (from
# $PROV_BUILDDIR, wrapped in $PROV_WRAP for the valgrind phase); with
# PROV_TEST_PGSQL_PARAMS set to the connection string of an empty PostgreSQL
# database, the same checks run there. Prints one "ok"/"not ok" line per
# check; exits 1 if any check failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
name=providerctl_favorites
. "$here/db.sh"
favs() { sql "SELECT COUNT(*) FROM favorites WHERE user_id = $1"; }

# ---- fixture ------------------------------------------------------------------
run db migrate
exits "db migrate" 0
run user add alice@example.com
run user add bob@example.com
run model add alpha --upstream up-alpha --name "Alpha Model"
run model add vendor/beta --upstream up-beta
run model add gamma --upstream up-gamma
run model disable gamma
exits "fixture: three models, one disabled" 0

# ---- help ----------------------------------------------------------------------
run user --help
says "user --help lists favorites" "providerctl user favorites USER"
says "user --help lists favorite" "providerctl user favorite add|remove USER MODEL"
run user favorite --help
exits "user favorite --help" 0
says "the help says it is idempotent" "idempotent"

# ---- add, list, remove -----------------------------------------------------------
run user favorites alice@example.com
exits "no favorites yet" 0
says "an empty list says so" "no favorites"
run user favorite add alice@example.com alpha
exits "user favorite add" 0
says "add says what it did" "alpha is among the favorites"
run user favorite add alice@example.com alpha
exits "adding it again" 0
[ "$(favs 1)" = 1 ] && pass "adding twice leaves one row" || fail "adding twice leaves one row ($(favs 1))"
run user favorite add 1 vendor/beta --json
exits "user favorite add --json (a public id with a slash, USER by id)" 0
json "add --json says the user, the model and the state" "j.user_id === 1 && j.model === 'vendor/beta' && j.favorite === true" '"favorite": true'
run user favorite add alice@example.com gamma
exits "adding a disabled model" 1
complains "a disabled model is refused" "unknown or disabled model 'gamma'"
run user favorite add alice@example.com nope
exits "adding an unknown model" 1
run user favorite remove alice@example.com nope
exits "removing an unknown model" 1
complains "an unknown model is named" "unknown model 'nope'"
run user favorite frob alice@example.com alpha
exits "an unknown action" 2
complains "the unknown action is named" "unknown action 'frob'"
run user favorite add nobody@example.com alpha
exits "an unknown user" 1
run user favorites alice@example.com
exits "user favorites" 0
says "the list shows the display name" "Alpha Model"
says "the list shows the slash id" "vendor/beta"
# a favorite whose model is disabled later stays, shown as disabled
run model disable alpha
run user favorites alice@example.com --json
json "the JSON lists both, disabled ones with their flag, by public id" "j.length === 2 && j[0].publicId === 'alpha' && j[0].enabled === false && j[1].publicId === 'vendor/beta' && j[1].enabled === true" '"publicId": "vendor/beta"'
run user favorites bob@example.com --json
json "bob has none" "Array.isArray(j) && j.length === 0" '[]'
run user favorite remove alice@example.com alpha
exits "removing a disabled model's favorite" 0
run user favorite remove alice@example.com alpha --json
exits "removing it again" 0
json "remove --json says it is not a favorite" "j.favorite === false && j.model === 'alpha'" '"favorite": false'
[ "$(favs 1)" = 1 ] && pass "one favorite left" || fail "one favorite left ($(favs 1))"

echo "1..$n"
if [ "$fails" -ne 0 ]; then
    echo "# $fails of $n checks failed"
    exit 1
fi
exit 0
