#!/bin/sh
# tests/integration/run-pgsql.sh: the integration suite on PostgreSQL
# (run.sh with PROVIDER_TEST_PGSQL=1), as a test of its own, so that
# scripts/test.sh can run it through make check beside the SQLite run: its
# log and result are run-pgsql.log and run-pgsql.trs, apart from run.sh's.
PROVIDER_TEST_PGSQL=1 exec sh "$(dirname "$0")/run.sh" "$@"
