// tests/integration/identity-pgsql.test.js: the SQL of core/identity on
// PostgreSQL, whatever the run's mode (it uses the run's cluster, or starts
// its own). The unit suites of sign-in records, sessions and identities are
// written against prov_test_store_any, which gives them a fresh schema of a
// PostgreSQL database when PROV_UNIT_PGSQL names one: this file runs them
// so (tests/unit/unit_tests SUITE), checks that they passed and that they
// really worked in PostgreSQL (their schemas and rows are there), including
// the identity suite's races between four connections (nodes). The OAuth
// server's suite (core/oauth: codes, tokens, rotation, revocation) runs
// here too, and the billing engine's (core/billing's batches, and the
// statements core/store builds for them, several to a round trip), and the
// spend alerts' (core/alert: the scan's statements and the outbox).
// On PostgreSQL whatever the run's mode, so scripts/test.sh's PostgreSQL
// run leaves it out (run.sh):
// backends: sqlite

import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BUILDDIR } from './lib/server.js';
import { sharedCluster } from './lib/pg.js';

const UNIT = path.join(BUILDDIR, 'tests/unit/unit_tests');

/** Runs one CUnit suite against the database; returns its summary counts. */
function runSuite(conninfo, suite) {
  const r = spawnSync(UNIT, [suite], {
    encoding: 'utf8',
    timeout: 120000,
    killSignal: 'SIGKILL',      // spawnSync waits on until the child is gone
    env: { ...process.env, PROV_UNIT_PGSQL: conninfo },
  });
  const out = `${r.stdout || ''}${r.stderr || ''}`;
  assert.equal(r.status, 0, `unit_tests ${suite} on PostgreSQL failed:\n${out}`);
  const m = /^\s+tests\s+\d+\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(out);
  assert.ok(m, `no CUnit summary in:\n${out}`);
  return { ran: Number(m[1]), passed: Number(m[2]), failed: Number(m[3]) };
}

describe('core/identity SQL on PostgreSQL (the unit suites, PROV_UNIT_PGSQL)', { timeout: 300000 }, () => {
  let cluster;
  let db;
  let conninfo;

  before(() => {
    assert.ok(fs.existsSync(UNIT), `${UNIT} is missing: build it (make check builds it)`);
    cluster = sharedCluster();
    db = cluster.createDatabase('unit');
    conninfo = cluster.conninfo(db);
  });

  // billing, billing_lease, billing_progress, lease_clock and store_billing:
  // the billing engine's batches, its leases (and their clock), what a
  // killed child's requests in flight are charged, and the statements they
  // build (several to a round trip) on PostgreSQL.
  for (const [suite, min] of [['signin', 6], ['session', 5], ['identity', 5], ['oauth', 6],
    ['billing', 16], ['billing_lease', 12], ['billing_progress', 2], ['lease_clock', 4], ['store_billing', 4],
    ['alert', 9], ['rollup', 4]]) {
    it(`unit suite ${suite} passes on PostgreSQL`, () => {
      const before = Number(cluster.psql(db, "SELECT COUNT(*) FROM pg_namespace WHERE nspname LIKE 'unit\\_%'").trim());
      const r = runSuite(conninfo, suite);
      assert.equal(r.failed, 0);
      assert.ok(r.ran >= min && r.passed === r.ran, JSON.stringify(r));
      const after = Number(cluster.psql(db, "SELECT COUNT(*) FROM pg_namespace WHERE nspname LIKE 'unit\\_%'").trim());
      assert.ok(after > before, `the suite made its schemas in PostgreSQL (${before} -> ${after})`);
    });
  }

  it('the rows are PostgreSQL\'s: sessions and identities were written there, at schema version 5 or later', () => {
    const schemas = cluster.psql(db, "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'unit\\_%'")
      .split('\n').filter(Boolean);
    let sessions = 0;
    let identities = 0;
    for (const s of schemas) {
      const tables = cluster.psql(db, `SELECT table_name FROM information_schema.tables WHERE table_schema = '${s}'`);
      if (!/\bsessions\b/.test(tables)) continue;
      sessions += Number(cluster.psql(db, `SELECT COUNT(*) FROM ${s}.sessions`).trim());
      identities += Number(cluster.psql(db, `SELECT COUNT(*) FROM ${s}.identities`).trim());
      assert.ok(Number(cluster.psql(db, `SELECT MAX(version) FROM ${s}.schema_version`).trim()) >= 5);
    }
    assert.ok(sessions > 0, 'sessions written');
    assert.ok(identities > 0, 'identities written');
  });
});
