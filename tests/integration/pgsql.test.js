// tests/integration/pgsql.test.js: PostgreSQL itself, whatever the run's
// mode (it starts its own throwaway cluster, so the SQLite run covers it
// too): the harness's cluster lifecycle (initdb + pg_ctl on a loopback port,
// a socket in a temp dir, no postgres process left after stop), a stack that
// really runs on it (providerctl migrates the PostgreSQL database, httpd's
// DBDriver pgsql writes the ledger there), and the issue's "two httpd
// instances sharing one PostgreSQL database keep one exact budget": two
// apache2 servers on one database and one mock gateway, 64 requests split
// across both at a key, a balance and a plan window that fit exactly 10
// holds: 10 succeed in total, the rest get their limit's code, nothing stays
// reserved.
// On its own cluster whatever the run's mode, so scripts/test.sh's
// PostgreSQL run leaves it out (run.sh):
// backends: sqlite

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startStack } from './lib/server.js';
import { PgCluster, postgresPids } from './lib/pg.js';
import {
  addBillModel, addPlan, subscribe, fullBody, nextHour, assertCharged, assertRefused, ledgerSums,
  bucketSum, FULL_CHARGE, MICRO,
} from './lib/billing.js';

const N = 64;
const FITS = 10;

describe('PostgreSQL: a throwaway cluster, two httpd on one database', { timeout: 240000 }, () => {
  let cluster;
  let a;   // first httpd (owns the database and the mock gateway)
  let b;   // second httpd, peer of a
  const u = {};

  before(async () => {
    cluster = PgCluster.start();
    a = await startStack({
      backend: 'pgsql',
      pgCluster: cluster,
      clock: nextHour(Math.floor(Date.now() / 1000)) + 600,
      threads: N,
      seed: (s) => {
        addBillModel(s);
        const mk = (name, { balance = null, budget = null } = {}) => {
          const email = `${name}@pg.test`;
          const id = s.addUser(email, balance);
          u[name] = { email, id, key: s.createKey(id, { budget }) };
          return u[name];
        };
        mk('one', { balance: 100 });
        mk('budget', { balance: 1000, budget: FITS });
        mk('balance', { balance: FITS });
        const plan = mk('plan');
        subscribe(s, plan.email, 'pg-5h', plan.id, addPlan(s, 'pg-5h', String(FITS), '1000'));
      },
    });
    b = await startStack({ peer: a, threads: N });
  });
  after(async () => {
    const errors = [];
    for (const s of [b, a]) {
      if (s) await s.stop().catch((e) => errors.push(e));
    }
    if (cluster) cluster.stop();
    if (errors.length) throw errors[0];
  });

  it('runs on a local cluster: a loopback port and a socket in a temp dir', () => {
    assert.ok(postgresPids(cluster.dataDir).length >= 1, 'the postmaster runs');
    assert.ok(fs.existsSync(`${cluster.host}/.s.PGSQL.${cluster.port}`), 'the unix socket');
    assert.match(fs.readFileSync(a.conf, 'utf8'), /^DBDriver pgsql$/m);
    assert.match(fs.readFileSync(b.conf, 'utf8'), new RegExp(`dbname=${a.pgDatabase}"`));
    assert.ok(!fs.existsSync(a.db), 'no SQLite file');
  });

  it('providerctl migrated the PostgreSQL database and httpd writes its ledger there', async () => {
    const tables = a.sql(`SELECT table_name FROM information_schema.tables
      WHERE table_schema = 'public' ORDER BY table_name`).map((r) => r.table_name);
    for (const t of ['users', 'api_keys', 'models', 'ledger', 'usage_buckets', 'plans', 'subscriptions']) {
      assert.ok(tables.includes(t), `table ${t} in ${tables.join(',')}`);
    }
    for (const s of [a, b]) {
      const { rid } = assertCharged(await s.chat(u.one.key.secret, fullBody()), FULL_CHARGE);
      const row = s.ledger(rid);
      assert.equal(row.status, 'ok');
      assert.equal(BigInt(row.credits), FULL_CHARGE);
    }
    assert.equal(a.balance(u.one.id), 98n * MICRO);
  });

  async function split(user) {
    const results = await Promise.all(Array.from({ length: N },
      (_, i) => (i % 2 ? b : a).chat(user.key.secret, fullBody())));
    const ok = results.filter((r) => r.status === 200);
    for (const r of ok) assertCharged(r, FULL_CHARGE);
    const perServer = [0, 1].map((k) => results.filter((r, i) => i % 2 === k && r.status === 200).length);
    // eslint-disable-next-line no-console
    console.log(`# ${user.email}: ${ok.length} ok (${perServer.join(' + ')}), ${N - ok.length} refused`);
    return { ok, refused: results.filter((r) => r.status !== 200) };
  }

  function books(user, { plan = 0n, balance = 0n }) {
    const s = ledgerSums(a, `user_id = ${user.id}`);
    assert.equal(s.reserved, 0, 'no hold left');
    assert.equal(s.charged, FITS);
    assert.equal(s.credits, BigInt(FITS) * FULL_CHARGE);
    assert.equal(s.planCredits, plan);
    assert.equal(s.balanceCredits, balance);
    assert.equal(bucketSum(a, 'key:h', user.key.id), s.credits, 'key buckets = ledger');
  }

  it('keeps one exact key budget across both servers', async () => {
    const { ok, refused } = await split(u.budget);
    for (const r of refused) assertRefused(r, 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    assert.equal(ok.length, FITS);
    books(u.budget, { balance: BigInt(FITS) * FULL_CHARGE });
    assert.equal(a.balance(u.budget.id), 1000n * MICRO - BigInt(FITS) * FULL_CHARGE);
  });

  it('keeps one exact balance across both servers', async () => {
    const { ok, refused } = await split(u.balance);
    for (const r of refused) assertRefused(r, 402, 'INSUFFICIENT_CREDITS');
    assert.equal(ok.length, FITS);
    books(u.balance, { balance: BigInt(FITS) * FULL_CHARGE });
    assert.equal(a.balance(u.balance.id), 0n);
  });

  it('keeps one exact plan window across both servers', async () => {
    const { ok, refused } = await split(u.plan);
    for (const r of refused) assertRefused(r, 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
    assert.equal(ok.length, FITS);
    books(u.plan, { plan: BigInt(FITS) * FULL_CHARGE });
  });

  it('stops the cluster without leaving a postgres process', async () => {
    for (const s of [b, a]) await s.stop();
    b = null;
    a = null;
    const data = cluster.dataDir;
    const problems = cluster.stop();
    assert.deepEqual(problems, []);
    assert.deepEqual(postgresPids(data), [], 'no postgres process names the data dir');
    assert.ok(!fs.existsSync(data), 'the cluster dir is gone');
    cluster = null;
  });
});
