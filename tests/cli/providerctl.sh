#!/bin/sh
# providerctl.sh: the shell test of providerctl. Runs the built cli/providerctl
# (from $PROV_BUILDDIR, default the repository root) against a fresh SQLite
# file and checks exit codes (0 ok, 1 failure, 2 usage), plain and --json
# output (parsed with node when it is installed), the help texts, the error
# messages, where the database comes from (--db, PROVIDER_DB, the config
# file), and that a key's secret is printed exactly once: by `key create` or
# `key reissue`, never by any other command and never stored in the file.
# Prints one "ok"/"not ok" line per check; exits 1 if any check failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
B=${PROV_BUILDDIR:-$(cd "$here/../.." && pwd)}
PCTL="$B/cli/providerctl"
# A command to run providerctl under (check-valgrind sets valgrind here).
PROV_WRAP=${PROV_WRAP:-}
if [ ! -x "$PCTL" ]; then
    echo "providerctl.sh: $PCTL is not built" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/providerctl-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
db="$tmp/provider.db"
PROVIDER_DB="sqlite3:$db"
export PROVIDER_DB
# Never pick up the machine's own configuration.
PROVIDERCTL_CONF="$tmp/empty.conf"
: > "$PROVIDERCTL_CONF"
export PROVIDERCTL_CONF
. "$here/tap.sh"

# ---- help and usage --------------------------------------------------------
run --help
exits "--help" 0
says "--help shows the synopsis" "usage: providerctl [--db DRIVER:PARAMS] GROUP VERB"
says "--help lists the commands" "key budget KEY CREDITS|none"
run -h
exits "-h" 0
run user --help
exits "user --help" 0
says "user --help lists its commands" "providerctl user add EMAIL [--name NAME]"
run key create --help
exits "key create --help" 0
says "key create --help shows its options" "usage: providerctl key create USER [--name NAME] [--budget CREDITS]"
run help model price
exits "help model price" 0
says "help model price shows its options" "--reasoning R"
run
exits "no arguments" 2
complains "no arguments prints the usage" "usage: providerctl"
run frob list
exits "unknown group" 2
complains "unknown group is named" "unknown command group 'frob'"
run user frob
exits "unknown command" 2
complains "unknown command is named" "unknown command 'user frob'"
run user
exits "group without a verb" 2
run user list --bogus
exits "unknown option" 2
complains "unknown option is named" "unknown option '--bogus'"
run user show
exits "missing argument" 2
complains "missing argument is named" "missing USER"
run user show a@example.com b@example.com
exits "extra argument" 2

# ---- where the database comes from -----------------------------------------
PROVIDER_DB=
run user list
PROVIDER_DB="sqlite3:$db"
exits "no database anywhere" 2
complains "no database says how to give one" "use --db DRIVER:PARAMS"
run --db nonsense user list
exits "malformed --db" 2
run user list
exits "missing database file" 1
complains "missing file points at db migrate" "db migrate"
[ ! -e "$db" ] && pass "a read command did not create the database file" \
    || fail "a read command created the database file"

# ---- db ---------------------------------------------------------------------
run db migrate
exits "db migrate" 0
says "db migrate says what it applied" "applied"
run db migrate
exits "db migrate again" 0
says "db migrate is idempotent" "up to date"
run db status --json
exits "db status --json" 0
json "db status reports the expected version" "j.version === j.expected && j.up_to_date === true" '"up_to_date": true'
run db status
says "db status in plain text" "up to date"

# ---- users --------------------------------------------------------------------
run user add Alice@Example.com --name Alice
exits "user add" 0
says "user add names the user" "alice@example.com"
run user add alice@example.com
exits "duplicate user" 1
complains "duplicate user is named" "user 'alice@example.com' already exists"
run user add not-an-email
exits "malformed email" 2
complains "malformed email is named" "'not-an-email' is not a valid email address"
run user show nobody@example.com
exits "unknown user" 1
complains "unknown user is named" "providerctl: unknown user 'nobody@example.com'"
run user show 1 --json
exits "user show by id" 0
json "user show --json" "j.id === 1 && j.email === 'alice@example.com' && j.name === 'Alice' && j.blocked === false" '"email": "alice@example.com"'
run user add bob@example.com
run user list --json
json "user list --json" "Array.isArray(j) && j.length === 2 && j[1].email === 'bob@example.com'" '"bob@example.com"'
run user block bob@example.com
exits "user block" 0
run user show bob@example.com --json
json "blocked user shows blocked" "j.blocked === true" '"blocked": true'
run user unblock 2
run user show 2 --json
json "unblocked user shows unblocked" "j.blocked === false" '"blocked": false'

# ---- balance -------------------------------------------------------------------
run balance add alice@example.com 12.5 --reason "invoice 1"
exits "balance add" 0
says "balance add prints the new balance" "12.5"
run balance add alice@example.com -2.25
exits "negative correction" 0
says "negative correction applies" "10.25"
run balance add alice@example.com 0
exits "zero amount" 2
complains "zero amount is refused" "amount must not be zero"
run balance add alice@example.com 12.x
exits "malformed amount" 2
complains "malformed amount is named" "'12.x' is not a credit amount (use a decimal like 12.5)"
run balance add alice@example.com 1.0000001
exits "too many decimals" 2
run balance add nobody@example.com 5
exits "balance of an unknown user" 1
complains "balance of an unknown user is named" "unknown user 'nobody@example.com'"
run balance show alice@example.com --json
exits "balance show --json" 0
json "balance in credits" "j.balance === 10.25" '"balance": 10.25'
lacks "no micro-credits in the output" "10250000"
run balance show 1
says "balance show in plain text" "10.25 credits"

# ---- keys -------------------------------------------------------------------
run key create alice@example.com --name laptop --budget 20
exits "key create" 0
secret1=$(grep '^sk-prov-' "$tmp/out" | head -n 1)
[ -n "$secret1" ] && pass "key create prints the secret" || fail "key create prints the secret"
[ "$(grep -c '^sk-prov-' "$tmp/out")" = 1 ] && pass "the secret is printed once" \
    || fail "the secret is printed once"
says "key create warns it is shown once" "will not be shown again"
run key create alice@example.com --budget -5
exits "negative budget" 2
complains "negative budget is refused" "must not be negative"
run key create alice@example.com --budget 1.2.3
exits "malformed budget" 2
complains "malformed budget is named" "'1.2.3' is not a credit amount"
run key create nobody@example.com
exits "key for an unknown user" 1
complains "key for an unknown user is named" "unknown user 'nobody@example.com'"
run key create 2 --json
exits "key create --json" 0
json "key create --json has id and secret" "j.id === 2 && /^sk-prov-/.test(j.secret) && j.weekly_budget === null" '"secret": "sk-prov-'
secret2=$(sed -n 's/.*"secret": *"\(sk-prov-[^"]*\)".*/\1/p' "$tmp/out")
[ -n "$secret2" ] && [ "$secret2" != "$secret1" ] && pass "second key has its own secret" \
    || fail "second key has its own secret"

for cmd in "key list" "key list --json" "key list --all" "key show 1" "key show 1 --json" \
           "user show 1" "user list --json" "key budget 1 25"; do
    # shellcheck disable=SC2086
    run $cmd
    if [ "$rc" = 0 ] && ! grep -qF -- "$secret1" "$tmp/out" "$tmp/err" \
       && ! grep -qF -- "$secret2" "$tmp/out" "$tmp/err"; then
        pass "'$cmd' shows no secret"
    else
        fail "'$cmd' shows no secret"
    fi
done
if grep -aqF -- "$secret1" "$db"* || grep -aqF -- "$secret2" "$db"*; then
    fail "no secret is stored in the database file"
else
    pass "no secret is stored in the database file"
fi

prefix1=$(printf '%s' "$secret1" | cut -c1-12)
run key list --json
json "key list --json" "j.length === 2 && j[0].prefix === '$prefix1' && j[0].weekly_budget === 25 && j[0].name === 'laptop'" "\"prefix\": \"$prefix1\""
run key list --user bob@example.com --json
json "key list --user" "j.length === 1 && j[0].email === 'bob@example.com'" '"email": "bob@example.com"'
run key list
says "key list shows the display prefix" "$prefix1"

run key reissue 1
exits "key reissue" 0
secret3=$(grep '^sk-prov-' "$tmp/out" | head -n 1)
[ -n "$secret3" ] && [ "$secret3" != "$secret1" ] && pass "reissue prints a new secret" \
    || fail "reissue prints a new secret"
lacks "reissue does not print the old secret" "$secret1"
says "reissue warns it is shown once" "will not be shown again"
run key reissue 1 --json
json "key reissue --json" "j.id === 1 && /^sk-prov-/.test(j.secret) && j.reissued_at !== null" '"secret": "sk-prov-'

run key budget 1 none
exits "clear a budget" 0
run key show 1 --json
json "cleared budget is null" "j.weekly_budget === null" '"weekly_budget": null'
run key budget 1 7.5 --json
exits "set a budget" 0
json "budget in credits" "j.weekly_budget === 7.5" '"weekly_budget": 7.5'
run key budget 1 -1
exits "negative budget on budget" 2
run key budget one 5
exits "malformed key id" 2
complains "malformed key id is named" "'one' is not a key id"
run key budget 99 5
exits "unknown key" 1
complains "unknown key is named" "unknown key 99"

run key delete 2
exits "key delete" 0
run key delete 2
exits "key delete twice" 1
complains "deleted key is named" "key 2 is deleted"
run key list --json
json "deleted keys are not listed" "j.length === 1 && j[0].id === 1" '"id": 1'
run key list --all --json
json "key list --all shows deleted keys" "j.length === 2 && j[1].deleted_at !== null" '"deleted_at": "'

# ---- models --------------------------------------------------------------------
run model add gpt-4o --upstream openai/gpt-4o --name "GPT-4o"
exits "model add" 0

# ---- a key's controls (key set; the model above is in the catalog) ------------
run key set 1 --expires 2099-01-31T12:00:00+02:00 --models gpt-4o --addresses 10.1.2.3/8,2001:DB8::/32 \
    --rpm 60 --max-in-flight 2 --json
exits "key set" 0
json "key set shows the controls" "j.id === 1 && j.expires_at === '2099-01-31T10:00:00Z' &&
    j.models.join() === 'gpt-4o' && j.addresses.join() === '10.0.0.0/8,2001:db8::/32' &&
    j.rpm === 60 && j.max_in_flight === 2" '"max_in_flight": 2'
run key set 1 --rpm none
exits "key set one control" 0
says "key set prints the controls" "max in flight:"
run key show 1
says "key show: expiry" "2099-01-31"
says "key show: models" "gpt-4o"
says "key show: addresses" "10.0.0.0/8,2001:db8::/32"
says "key show: rpm cleared, the rest kept" "no limit"
run key show 1 --json
json "key show --json has the controls" "j.rpm === null && j.max_in_flight === 2 &&
    j.models.length === 1" '"max_in_flight": 2'
run key set 1 --rpm 0
exits "rpm 0" 2
complains "rpm 0 is named" "--rpm"
run key set 1 --addresses 10.0.0.0/33
exits "a bad CIDR" 2
complains "a bad CIDR is named" "'10.0.0.0/33' is not an IPv4 or IPv6 address"
run key set 1 --expires soon
exits "a bad expiry" 2
run key set 1 --models no-such-model
exits "an unknown model" 1
complains "an unknown model is named" "no model 'no-such-model'"
run key set 1
exits "key set without an option" 2
run key set 99 --rpm 5
exits "key set of an unknown key" 1
run key set 1 --expires none --models all --addresses any --max-in-flight none --json
json "key set clears every control" "j.expires_at === null && j.models === null &&
    j.addresses === null && j.rpm === null && j.max_in_flight === null" '"models": null'
run model add gpt-4o --upstream other
exits "duplicate model" 1
complains "duplicate model is named" "providerctl: model 'gpt-4o' already exists"
run model add "bad id" --upstream x
exits "malformed model id" 2
complains "malformed model id is named" "'bad id' is not a valid model id"
run model add newmodel
exits "model add without --upstream" 2
complains "missing --upstream is named" "missing --upstream"
run model price gpt-4o --input 2.5 --output 10 --cache 1.25
exits "model price" 0
run model show gpt-4o --json
json "model show --json" "j.publicId === 'gpt-4o' && j.display_name === 'GPT-4o' && j.pricing.input === 2.5 && j.pricing.output === 10 && j.pricing.cache === 1.25 && j.pricing.reasoning === null" '"input": 2.5'
run model price gpt-4o --cache none
exits "clear a rate" 0
run model show gpt-4o --json
json "cleared rate is null" "j.pricing.cache === null && j.pricing.input === 2.5" '"cache": null'
run model price gpt-4o --input abc
exits "malformed rate" 2
complains "malformed rate is named" "'abc' is not a credit amount"
run model price gpt-4o --output -3
exits "negative rate" 2
run model price gpt-4o
exits "price without a rate" 2
run model price nope --input 1
exits "price of an unknown model" 1
complains "unknown model is named" "unknown model 'nope'"
run model add sonnet --upstream anthropic/claude-sonnet --family anthropic --messages
exits "model add with --messages" 0
run model disable sonnet
exits "model disable" 0
run model list --json
json "model list shows all" "j.length === 2 && j[1].publicId === 'sonnet' && j[1].enabled === false && j[1].messages_enabled === true" '"publicId": "sonnet"'
run model list --enabled --json
json "model list --enabled" "j.length === 1 && j[0].publicId === 'gpt-4o'" '"publicId": "gpt-4o"'
run model list
says "model list has an enabled column" "ENABLED"
run model set sonnet --messages off --name "Claude Sonnet"
exits "model set" 0
run model show sonnet --json
json "model set applied" "j.messages_enabled === false && j.display_name === 'Claude Sonnet' && j.family === 'anthropic'" '"messages_enabled": false'
run model set sonnet --messages maybe
exits "bad on/off" 2
run model set sonnet
exits "model set without a change" 2
run model enable sonnet
run model show sonnet --json
json "model enable" "j.enabled === true" '"enabled": true'
json "a model's max output is the server's default until set" "j.max_output_tokens === null" '"max_output_tokens": null'
run model set sonnet --max-output 64000
exits "model set --max-output" 0
run model show sonnet --json
json "max output set" "j.max_output_tokens === 64000 && j.display_name === 'Claude Sonnet'" '"max_output_tokens": 64000'
run model show sonnet
says "model show prints the max output" "64000"
run model list
says "model list has a max output column" "MAX OUTPUT"
run model set sonnet --max-output 0
exits "max output 0" 2
complains "a bad max output is named" "--max-output takes a number of tokens from 1 to 1000000"
run model set sonnet --max-output 1000001
exits "max output above the largest cap" 2
run model set sonnet --max-output default
exits "max output back to the default" 0
run model show sonnet --json
json "max output default" "j.max_output_tokens === null" '"max_output_tokens": null'
run model show sonnet
says "model show says default" "default"

# ---- global options anywhere, and the config file ---------------------------
PROVIDER_DB=
run user list --json --db "sqlite3:$db"
exits "--db after the verb" 0
json "--db after the verb reads the database" "j.length === 2" '"bob@example.com"'
printf '# providerctl test\ndb = sqlite3:%s\n' "$db" > "$tmp/providerctl.conf"
PROVIDERCTL_CONF="$tmp/providerctl.conf"
run user show 1
exits "database from the config file" 0
says "database from the config file is read" "alice@example.com"
PROVIDERCTL_CONF="$tmp/missing.conf"
run user list
exits "unreadable config file" 2
PROVIDERCTL_CONF="$tmp/empty.conf"
PROVIDER_DB="sqlite3:$db"

echo "1..$n"
if [ "$fails" -ne 0 ]; then
    echo "# $fails of $n checks failed"
    exit 1
fi
exit 0
