#!/bin/sh
# Installs, from Debian 12's packages, everything that builds, runs, tests and
# benchmarks mod_provider (chromium: the browser tests, driven by npm
# playwright-core; zsh: the setup guides' scripts run in bash and zsh;
# dpkg-dev, debhelper, lintian, git: tests/package/deb.sh builds and checks
# the Debian package from a copy of the tree; apache2-dev has dh_apache2;
# prometheus: tests/integration/prometheus.test.js scrapes the metrics).
# Idempotent; needs root. Used by the README quick start.
set -eu
export DEBIAN_FRONTEND=noninteractive
PKGS="build-essential autoconf automake libtool pkg-config
 apache2 apache2-dev libapr1-dev libaprutil1-dev
 libaprutil1-dbd-sqlite3 libaprutil1-dbd-pgsql sqlite3 libsqlite3-dev
 libjson-c-dev libcurl4-openssl-dev libssl-dev libcunit1-dev libcjose-dev libjansson-dev
 curl wrk postgresql valgrind strace iproute2 util-linux chromium zsh
 clang libclang-rt-14-dev
 dpkg-dev debhelper lintian git python3 prometheus"
# Node.js may already come from elsewhere (with its own npm): only add Debian's if absent.
command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing
fi
