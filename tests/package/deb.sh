#!/bin/sh
# tests/package/deb.sh: the Debian package, as an operator uses it. Builds
# libapache2-mod-provider from a copy of the tree (dpkg-buildpackage -us -uc
# -b; the tree itself and its build are left alone), checks it with lintian
# (no error), installs it on this machine (apt-get install ./...deb), then
# does what the README says: a gateway token, the example site pointed at a
# mock gateway (tests/mockgw, on 127.0.0.1), a user with credit, a key and a
# priced model, the system apache2 started (Debian's /etc/apache2: the
# package's mods enabled, the site), one chat completion with curl; it must be
# served and charged (the ledger, through providerctl usage report). Then it
# restores the machine: apache2 stopped, the site removed, the package purged
# (apt-get purge: /var/lib/mod_provider and /etc/mod_provider go), dbd
# disabled again if it was not enabled before, and checks that it was.
#
# Needs root and a machine where the package is not installed; otherwise it
# FAILS (it never skips). A running system apache2 is stopped for the test
# and started again after. TAP output,
# exit status 0 when every case passed. About two minutes (the build).
set -eu

pkg=libapache2-mod-provider
src=${PROV_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() {  # check DESCRIPTION COMMAND...
  d=$1; shift
  if "$@" >/dev/null 2>&1; then ok "$d"; else not_ok "$d"; fi
}
bail() { not_ok "$1"; echo "Bail out! $1"; exit 1; }

if [ "$(id -u)" != 0 ]; then
  echo "1..1"
  bail "tests/package/deb.sh must run as root (it installs and purges $pkg and starts the system apache2)"
fi
if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed; then
  echo "1..1"
  bail "$pkg is already installed: purge it first (apt-get purge $pkg)"
fi
# A system apache2 that runs (a fresh machine's apt may have started it) is
# stopped for the test and started again afterwards.
apache_before=no
if [ -s /var/run/apache2/apache2.pid ] && kill -0 "$(cat /var/run/apache2/apache2.pid)" 2>/dev/null; then
  apache_before=yes
  apache2ctl stop >/dev/null 2>&1 || true
  i=0
  while [ -s /var/run/apache2/apache2.pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
fi
if [ -e /etc/apache2/sites-available/provider.conf ]; then
  echo "1..1"
  bail "/etc/apache2/sites-available/provider.conf exists already"
fi

work=$(mktemp -d /tmp/prov-deb-XXXXXX)
dbd_before=no
[ -e /etc/apache2/mods-enabled/dbd.load ] && dbd_before=yes
journal_before=no
[ -e /var/run/apache2/provider-journal ] && journal_before=yes
gw_pid=""
export DEBIAN_FRONTEND=noninteractive

restore() {
  if [ -s /var/run/apache2/apache2.pid ]; then
    apache2ctl stop >/dev/null 2>&1 || true
    i=0
    while [ -s /var/run/apache2/apache2.pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  fi
  if [ -n "$gw_pid" ]; then kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; fi
  if [ -e /etc/apache2/sites-enabled/provider.conf ]; then a2dissite -q provider >/dev/null 2>&1 || true; fi
  rm -f /etc/apache2/sites-available/provider.conf
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'installed\|config-files'; then
    apt-get purge -y -qq "$pkg" >"$work/purge.log" 2>&1 || cat "$work/purge.log"
  fi
  if [ "$dbd_before" = no ] && [ -e /etc/apache2/mods-enabled/dbd.load ]; then
    a2dismod -q -f dbd >/dev/null 2>&1 || true
  fi
  if [ "$journal_before" = no ]; then rm -rf /var/run/apache2/provider-journal; fi
  rm -f /var/log/apache2/provider-error.log /var/log/apache2/provider-access.log
  if [ "$apache_before" = yes ]; then apache2ctl start >/dev/null 2>&1 || true; fi
}
trap 'restore; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM

echo "1..20"

# ---- build from a copy of the tree (what git tracks, as it is on disk) -----
mkdir "$work/src"
(cd "$src" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$work/src"
if (cd "$work/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b) \
     >"$work/build.log" 2>&1; then
  ok "dpkg-buildpackage -us -uc -b"
else
  tail -n 40 "$work/build.log"
  bail "dpkg-buildpackage -us -uc -b failed"
fi
deb=$(ls "$work"/${pkg}_*_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || bail "no ${pkg}_<version>_<arch>.deb"
ok "built $(basename "$deb")"
lintian "$deb" >"$work/lintian.log" 2>&1 || true
if grep -q '^E: ' "$work/lintian.log"; then
  cat "$work/lintian.log"; not_ok "lintian: no error"
else
  ok "lintian: no error ($(grep -c '^W: ' "$work/lintian.log" || true) warnings)"
fi

# ---- install -----------------------------------------------------------------
if (cd "$work" && apt-get install -y -qq "./$(basename "$deb")") >"$work/install.log" 2>&1; then
  ok "apt-get install ./$(basename "$deb")"
else
  cat "$work/install.log"; bail "apt-get install failed"
fi
check "/var/lib/mod_provider is owned by www-data" \
  test "$(stat -c %U:%G /var/lib/mod_provider)" = www-data:www-data
check "provider and dbd are enabled (a2enmod)" \
  test -L /etc/apache2/mods-enabled/provider.load -a -L /etc/apache2/mods-enabled/provider.conf \
       -a -e /etc/apache2/mods-enabled/dbd.load
check "the package's MPM sizing is enabled (a2enconf provider-mpm)" \
  test -L /etc/apache2/conf-enabled/provider-mpm.conf -a -f /etc/apache2/conf-available/provider-mpm.conf
check "/etc/mod_provider/providerctl.conf is a conffile" \
  sh -c "dpkg-query -W -f='\${Conffiles}' $pkg | grep -q ' /etc/mod_provider/providerctl.conf '"
check "postinst migrated the SQLite database (providerctl db status)" providerctl db status
check "the database is owned by www-data" \
  test "$(stat -c %U /var/lib/mod_provider/provider.db)" = www-data

# ---- what the README says an operator does ------------------------------------
install -m 600 /dev/null /etc/mod_provider/gateway.token
echo "deb-test-gateway-token" >/etc/mod_provider/gateway.token
"$work/src/tests/mockgw/mockgw" --listen 127.0.0.1:0 --token-file /etc/mod_provider/gateway.token \
  >"$work/mockgw.out" 2>"$work/mockgw.err" &
gw_pid=$!
i=0
while ! grep -q 'listening on' "$work/mockgw.out" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
port=$(sed -n 's/^mockgw listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/mockgw.out")
[ -n "$port" ] || bail "mockgw did not start: $(cat "$work/mockgw.err")"

cp /usr/share/doc/$pkg/examples/example-site.conf /etc/apache2/sites-available/provider.conf
sed -i "s|^\(\s*ProviderGatewayURL\) http://127.0.0.1:4000|\1 http://127.0.0.1:$port|" \
  /etc/apache2/sites-available/provider.conf
a2ensite -q provider >/dev/null
providerctl user add alice@example.com --name Alice >/dev/null
providerctl balance add alice@example.com 50 --reason "first top-up" >/dev/null
key=$(providerctl key create alice@example.com --name laptop --budget 10 --json |
      sed -n 's/.*"secret": *"\(sk-prov-[^"]*\)".*/\1/p')
providerctl model add gpt-4o-mini --upstream gpt-4o-mini --name "GPT-4o mini" >/dev/null
providerctl model price gpt-4o-mini --input 0.15 --output 0.6 --cache 0.075 >/dev/null
check "providerctl made a key" test -n "$key"

if apache2ctl configtest >"$work/configtest.log" 2>&1 && apache2ctl start >>"$work/configtest.log" 2>&1; then
  ok "apache2ctl configtest && apache2ctl start"
else
  cat "$work/configtest.log"; bail "the system apache2 did not start"
fi
i=0
until curl -s -o /dev/null http://127.0.0.1/ || [ $i -ge 50 ]; do sleep 0.1; i=$((i + 1)); done
# provider-mpm.conf in force: one child of 150 worker threads (Debian's stock
# sizing starts two of 25)
children=$(pgrep -P "$(cat /var/run/apache2/apache2.pid)" apache2 | tr '\n' ' ' || true)
set -- $children
threads=0
[ $# = 1 ] && threads=$(ls "/proc/$1/task" | wc -l)
check "apache2 runs one child of 150 worker threads, the package's sizing ($# children, $threads threads)" \
  test $# = 1 -a "$threads" -gt 150

# ---- one chat completion, served and charged --------------------------------
code=$(curl -s -o "$work/answer.json" -D "$work/headers.txt" -w '%{http_code}' \
  http://127.0.0.1/v1/chat/completions -H 'Host: api.example.com' \
  -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}],"max_tokens":64}')
if [ "$code" = 200 ] && grep -q '"chat.completion"' "$work/answer.json"; then
  ok "POST /v1/chat/completions through the system apache2: 200"
else
  echo "# HTTP $code: $(cat "$work/answer.json")"; tail -n 20 /var/log/apache2/provider-error.log || true
  not_ok "POST /v1/chat/completions through the system apache2: 200"
fi
credits=$(sed -n 's/^x-provider-credits: *\([0-9.]*\).*/\1/ip' "$work/headers.txt" | tr -d '\r')
check "the answer says what it cost (x-provider-credits > 0)" \
  awk -v c="${credits:-0}" 'BEGIN { exit !(c > 0) }'
# The ledger row (written by the billing writer, within a moment): one
# request of gpt-4o-mini, for what the answer said; the balance down by as much.
ledger_row() {
  awk -F, -v c="${credits:-0}" '$1 == "gpt-4o-mini" && $2 == 1 && $7 > 0 &&
    ($7 - c) * ($7 - c) < 1e-12 { found = 1 } END { exit !found }' "$work/usage.csv"
}
i=0
while [ $i -lt 50 ]; do
  providerctl usage report --user alice@example.com --by model --format csv >"$work/usage.csv" 2>&1 || true
  ledger_row && break
  sleep 0.1; i=$((i + 1))
done
if ledger_row; then
  ok "the ledger has the request, charged $credits (providerctl usage report)"
else
  cat "$work/usage.csv"; not_ok "the ledger has the request, charged ${credits:-?} (providerctl usage report)"
fi
balance=$(providerctl balance show alice@example.com | sed -n 's/^balance of [^:]*: \([0-9.]*\) credits$/\1/p')
check "the balance went from 50 to 50 - $credits ($balance)" \
  awk -v b="${balance:-50}" -v c="${credits:-0}" 'BEGIN { d = 50 - c - b; exit !(b < 50 && d * d < 1e-12) }'

# ---- remove keeps the data; purge deletes it and says so ---------------------
apache2ctl stop >/dev/null 2>&1 || true
i=0
while [ -s /var/run/apache2/apache2.pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
apt-get remove -y -qq "$pkg" >"$work/remove.log" 2>&1 || true
check "remove keeps /var/lib/mod_provider/provider.db and the conffile" \
  test -f /var/lib/mod_provider/provider.db -a -f /etc/mod_provider/providerctl.conf
apt-get purge -y -qq "$pkg" >"$work/purge.log" 2>&1 || true
check "purge deletes /var/lib/mod_provider and /etc/mod_provider, and says so" \
  sh -c "! test -e /var/lib/mod_provider && ! test -e /etc/mod_provider &&
         grep -q 'purge deletes /var/lib/mod_provider' '$work/purge.log' &&
         grep -q 'purge deletes /etc/mod_provider' '$work/purge.log'"
restore
check "the machine is as before (package gone, provider and its MPM sizing not enabled, site gone)" \
  sh -c "! dpkg-query -W -f='\${Status}' $pkg 2>/dev/null | grep -q 'installed\|config-files' &&
         ! test -e /etc/apache2/mods-enabled/provider.load &&
         ! test -e /etc/apache2/conf-enabled/provider-mpm.conf &&
         ! test -e /etc/apache2/sites-available/provider.conf &&
         { [ $dbd_before = yes ] || ! test -e /etc/apache2/mods-enabled/dbd.load; }"

[ "$failed" -eq 0 ]
