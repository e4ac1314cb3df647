// tests/integration/durable.test.js: what a child killed with SIGKILL leaves
// behind, on SQLite and (PROVIDER_TEST_PGSQL=1) PostgreSQL. Its reservation
// expires on time with no request at all: the next child's billing writer
// looks every second and sweeps by the test clock (ProviderClockFile). And
// the requests it answered from a lease while their rows could not be
// written (the database held by another transaction) are in the ledger all
// the same, charged once, with the balance equal to the top-ups minus the
// ledger: each settlement was journaled before its answer went out, and the
// next child replays the dead child's journal and returns its lease.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startStack, sleep } from './lib/server.js';
import {
  addBillModel, seedUser, fullBody, BILL_RATE, nextHour, ledgerSums, bucketSum, toMicro, FULL_CHARGE,
} from './lib/billing.js';

const HOLD_TIMEOUT = 60;
const SLOW_MODEL = 'bill-slow';   // the gateway answers after 8 s
const CLIENTS = 16;
// What a kill and its aftermath may log: the parent's report, the writer's
// failed batch on a held database (on SQLite, past the busy cap: PROV00405),
// expiries, the journal's replay.
const KILL_LOG = /PROV0005[0-7]|PROV0038[0-9]|PROV00405|released \d+ (hold|lease)/;

/** Polls fn until it returns a truthy value; throws after ms (soft: returns it). */
async function until(what, fn, ms = 30000, { soft = false } = {}) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || (soft && Date.now() >= end)) return v;
    if (Date.now() >= end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * Holds the database in a transaction of another process, so that nothing
 * can be written (SQLite: BEGIN IMMEDIATE; PostgreSQL: the ledger locked
 * against writes). Resolves once the lock is held; release() ends it.
 */
async function holdDatabase(stack) {
  const args = stack.backend === 'pgsql'
    ? ['psql', [...stack.pg.psqlArgs(stack.pgDatabase), '-At']]
    : ['sqlite3', ['-cmd', '.timeout 10000', stack.db]];
  const proc = spawn(args[0], args[1], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d.toString(); });
  proc.stdin.write(stack.backend === 'pgsql'
    ? "BEGIN; LOCK TABLE ledger IN EXCLUSIVE MODE; SELECT 'locked';\n"
    : "BEGIN IMMEDIATE;\nSELECT 'locked';\n");
  await until('the database lock', () => out.includes('locked'), 15000);
  return {
    release: () => new Promise((resolve) => {
      proc.once('exit', resolve);
      proc.stdin.end('COMMIT;\n');
    }),
  };
}

describe('a child killed with SIGKILL', { timeout: 240000 }, () => {
  let stack;
  let t0;
  const u = {};

  before(async () => {
    t0 = nextHour(Math.floor(Date.now() / 1000)) + 60;
    stack = await startStack({
      clock: t0,
      threads: 64,
      overrides: { ProviderHoldTimeout: String(HOLD_TIMEOUT) },
      seed: (s) => {
        addBillModel(s);
        s.addModel(SLOW_MODEL, 'mock-fault-delay-8000',
          { rates: { input: BILL_RATE, output: BILL_RATE, cache: BILL_RATE, reasoning: BILL_RATE } });
        seedUser(s, u, 'durable.test', 'stale', { balance: 2 });
        seedUser(s, u, 'durable.test', 'journal', { balance: 100000 });
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  const leases = (user) => Number(stack.sql(
    `SELECT COUNT(*) AS n FROM billing_leases WHERE user_id = ${user.id}`)[0].n);
  const killChildren = () => {
    const children = stack.httpdChildren();
    assert.ok(children.length >= 1, 'httpd has a child');
    for (const pid of children) process.kill(pid, 'SIGKILL');
  };

  it('expires its reservation on time by the clock, with no request sent', async () => {
    const user = u.stale;
    const row = (rid) => stack.sql(`SELECT status, CAST(credits AS TEXT) AS credits
      FROM ledger WHERE request_id = '${rid}'`)[0];
    await stack.expectingCrash(KILL_LOG, async () => {
      const pending = stack.chat(user.key.secret, fullBody({ model: SLOW_MODEL })).catch((e) => e);
      const rid = await until('the hold', () => {
        const rows = stack.sql(`SELECT request_id FROM ledger
          WHERE user_id = ${user.id} AND status = 'reserved'`);
        return rows.length ? rows[0].request_id : null;
      }, 5000);
      killChildren();
      const res = await pending;
      assert.ok(res instanceof Error || res.status !== 200, 'the killed request got no answer');
      await stack.waitServing();   // GET /v1/models: no billing
      assert.equal(row(rid).status, 'reserved', 'the dead request left its hold');
      assert.equal(stack.balance(user.id), toMicro('1'), 'the hold is off the balance');

      stack.setClock(t0 + HOLD_TIMEOUT + 1);
      await until('the expiry', () => row(rid).status === 'expired');
      assert.equal(BigInt(row(rid).credits), 0n, 'an expired hold is not charged');
      assert.equal(stack.balance(user.id), toMicro('2'), 'the balance is whole again');
      assert.equal(bucketSum(stack, 'key:h', user.key.id), 0n, 'the buckets are clear');
    });
  });

  it('keeps every request it answered from a lease in the ledger, charged once', async () => {
    const user = u.journal;
    const answered = new Set();
    let running = true;
    let held = false;
    let whileHeld = 0;
    const client = async () => {
      while (running) {
        const r = await stack.chat(user.key.secret, fullBody(), { timeout: 20000 })
          .catch((e) => e);
        if (!(r instanceof Error) && r.status === 200) {
          answered.add(r.headers.get('x-request-id'));
          if (held) whileHeld++;
        }
      }
    };
    await stack.expectingCrash(KILL_LOG, async () => {
      const clients = Array.from({ length: CLIENTS }, client);
      await until('a lease', () => leases(user) > 0, 10000);
      const lock = await holdDatabase(stack);
      held = true;
      let released = false;
      try {
        // Answered while nothing can be written: their rows exist only in
        // the child's memory and its journal.
        await until('answers while the database is held', () => whileHeld >= 20, 10000);
        killChildren();
        running = false;
        await Promise.all(clients);
        await lock.release();
        released = true;
      } finally {
        running = false;
        if (!released) await lock.release();
      }
      await stack.waitServing();
      const ids = () => new Set(stack.sql(
        `SELECT request_id FROM ledger WHERE user_id = ${user.id} AND status = 'ok'`)
        .map((r) => r.request_id));
      // (Soft: what is missing is shown by the assertions below.)
      await until('the dead child\'s rows', () => {
        const have = ids();
        return [...answered].every((id) => have.has(id)) && leases(user) === 0;
      }, 20000, { soft: true });
      // Holds of requests in flight at the kill, if any, expire.
      stack.setClock(t0 + 3 * HOLD_TIMEOUT);
      await until('no hold left', () => ledgerSums(stack, `user_id = ${user.id}`).reserved === 0);
    });
    const have = new Set(stack.sql(
      `SELECT request_id FROM ledger WHERE user_id = ${user.id} AND status = 'ok'`)
      .map((r) => r.request_id));
    const missing = [...answered].filter((id) => !have.has(id));
    assert.equal(missing.length, 0, `every answered request has its ledger row (${missing.length} `
      + `of ${answered.size} have none, ${whileHeld} answered while the database was held)`);
    const extra = [...have].filter((id) => !answered.has(id));
    assert.ok(extra.length <= CLIENTS,
      `rows without a received answer (${extra.length}) are at most the requests in flight`);
    assert.ok(whileHeld >= 20, 'requests were answered while their rows could not be written');
    const sums = ledgerSums(stack, `user_id = ${user.id}`);
    assert.equal(sums.credits, BigInt(have.size) * FULL_CHARGE, 'each row charged once');
    assert.equal(stack.balance(user.id), user.balance - sums.credits,
      'the balance is the top-up minus the ledger');
    assert.equal(bucketSum(stack, 'key:h', user.key.id), sums.credits, 'key buckets = ledger');
    assert.equal(bucketSum(stack, 'user:h', user.id), sums.credits, 'user buckets = ledger');
    assert.equal(leases(user), 0, 'no lease is left');
  });
});
