// tests/integration/leases.test.js: billing leases, on SQLite and
// (PROVIDER_TEST_PGSQL=1) PostgreSQL. When requests of one key arrive
// together, the process holds one lease for them and writes their ledger
// rows in groups: waves of concurrent requests funded by the balance and by
// a plan are each charged exactly once, the balance, the plan windows and
// the buckets equal the ledger, and when the burst is over no lease and no
// hold is left. A child killed while its lease is out loses nothing that
// was answered: the next child replays its journal and returns its lease at
// once, and the requests it died under cost their input estimate at most. Requests
// beside the key's long one of another model stop within 100 ms of the
// key's deletion, or of its budget lowered to 0, relying on the lease's
// check instead of a read each.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startStack } from './lib/server.js';
import {
  addBillModel, addPlan, seedUser, fullBody, nextHour, assertCharged, ledgerSums, bucketSum,
  BILL_RATE, FULL_CHARGE, inputEstimate, STD_CONTENT, MICRO_PER_TOKEN,
} from './lib/billing.js';

const WAVE = 48;
const HOLD_TIMEOUT = 60;
const SLOWISH = 'lease-slowish';   // answers after 300 ms: a wave overlaps for sure
const SLOW = 'lease-slow';         // answers after 4 s: still in flight when the child dies

describe('billing leases: requests of one key at once', { timeout: 240000 }, () => {
  let stack;
  let t0;
  const u = {};

  const mkUser = (s, name, opts) => seedUser(s, u, 'lease.test', name, opts);

  before(async () => {
    t0 = nextHour(Math.floor(Date.now() / 1000)) + 60;
    stack = await startStack({
      clock: t0,
      threads: 64,
      overrides: { ProviderHoldTimeout: String(HOLD_TIMEOUT) },
      // How each request's hold was taken, as an operator's access log shows it.
      directives: 'LogFormat "%{provider-request-id}n %{provider-hold}n" hold\n'
        + 'CustomLog logs/hold.log hold',
      seed: (s) => {
        addBillModel(s);
        const rates = { input: BILL_RATE, output: BILL_RATE, cache: BILL_RATE, reasoning: BILL_RATE };
        s.addModel(SLOWISH, 'mock-fault-delay-300', { rates });
        s.addModel(SLOW, 'mock-fault-delay-4000', { rates });
        mkUser(s, 'load', { balance: 100000, budget: 90000 });
        const plan = { name: 'lease-plan', id: addPlan(s, 'lease-plan', '50000', '50000') };
        mkUser(s, 'plan', { plan });
        mkUser(s, 'killed', { balance: 100000 });
        mkUser(s, 'beside', { balance: 100000 });
        mkUser(s, 'besidegone', { balance: 100000 });
        mkUser(s, 'budgetcut', { balance: 100000, budget: 90000 });
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  const leases = (user) => Number(stack.sql(
    `SELECT COUNT(*) AS n FROM billing_leases WHERE user_id = ${user.id}`)[0].n);

  // The access log's provider-hold note of each request id (lease or
  // database); a line is written once its request is over.
  const holds = () => new Map(fs.readFileSync(path.join(stack.dir, 'logs', 'hold.log'), 'utf8')
    .split('\n').filter(Boolean).map((l) => l.split(' ')));

  async function wave(user, model) {
    const results = await Promise.all(Array.from({ length: WAVE },
      () => stack.chat(user.key.secret, fullBody({ model }))));
    for (const r of results) assertCharged(r, FULL_CHARGE);
    return results.map((r) => r.headers.get('x-request-id'));
  }

  // Rows are written by the child's billing writer once the answers are
  // out, and the lease is returned once the key has had nothing in flight
  // for 100 ms (stack.billingSettled waits for that, 5 s at most).
  async function burstOver(user) {
    await stack.billingSettled();
    assert.equal(leases(user), 0, 'no lease is left once the burst is over');
  }

  function checkBooks(user, n, { plan = false } = {}) {
    const sums = ledgerSums(stack, `user_id = ${user.id}`);
    const total = BigInt(n) * FULL_CHARGE;
    assert.equal(sums.reserved, 0, 'no hold is left');
    assert.equal(sums.charged, n, 'one ledger row per answered request');
    assert.equal(sums.credits, total, 'each charged exactly once');
    assert.equal(sums.planCredits, plan ? total : 0n, 'plan-funded credits');
    assert.equal(stack.balance(user.id), user.balance - (plan ? 0n : total),
      'the balance fell by exactly the charges');
    assert.equal(bucketSum(stack, 'key:h', user.key.id), total, 'key buckets = ledger');
    assert.equal(bucketSum(stack, 'user:h', user.id), total, 'user:h = ledger');
    assert.equal(bucketSum(stack, 'user:m', user.id, 'plan_credits'), plan ? total : 0n,
      '5-minute plan buckets = ledger');
    assert.equal(leases(user), 0, 'no lease is left once the burst is over');
  }

  it(`charges waves of ${WAVE} concurrent requests from the balance exactly, through a lease`, async () => {
    // While a wave of slow-ish requests is in flight, the process holds a
    // lease for the key (seen in the database).
    let seen = 0;
    let running = true;
    const watcher = (async () => {
      while (running) {
        seen = Math.max(seen, leases(u.load));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const ids = await wave(u.load, SLOWISH);
    running = false;
    await watcher;
    assert.ok(seen > 0, 'a lease was held while the wave was in flight');
    for (let i = 0; i < 3; i++) ids.push(...await wave(u.load, 'bill-flat'));
    assert.equal(new Set(ids).size, 4 * WAVE, 'every answer has its own request id');
    await burstOver(u.load);
    const rows = stack.sql(`SELECT request_id, status FROM ledger WHERE user_id = ${u.load.id}`);
    assert.deepEqual(new Set(rows.map((r) => r.request_id)), new Set(ids),
      'the ledger holds exactly the answered requests');
    assert.ok(rows.every((r) => r.status === 'ok'));
    checkBooks(u.load, 4 * WAVE);
  });

  it('does the same for a plan: the windows hold exactly the charges', async () => {
    await wave(u.plan, SLOWISH);
    await wave(u.plan, 'bill-flat');
    await burstOver(u.plan);
    checkBooks(u.plan, 2 * WAVE, { plan: true });
  });

  it("keeps a lease for a key's requests to a second model while a long one of the first runs", async () => {
    // An agent's small requests beside its stream: one after another, each
    // 250 ms after the last answer (more than keep_idle, 100 ms), while a
    // request of another model of the key is in flight. The first is
    // granted a lease and the lease is kept between them; once the key has
    // nothing in flight it is returned, and the books are exact.
    const user = u.beside;
    const flat = stack.sql(`SELECT id FROM models WHERE public_id = 'bill-flat'`)[0].id;
    const sideLeases = () => Number(stack.sql(`SELECT COUNT(*) AS n FROM billing_leases
      WHERE user_id = ${user.id} AND model_id = ${flat}`)[0].n);
    const long = stack.chat(user.key.secret, fullBody({ model: SLOW }));
    const end = Date.now() + 3000;
    while (Date.now() < end && !stack.sql(`SELECT request_id FROM ledger
      WHERE user_id = ${user.id} AND status = 'reserved'`).length) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const small = [];
    for (let i = 0; i < 4; i++) {
      const r = await stack.chat(user.key.secret, fullBody());
      assertCharged(r, FULL_CHARGE);
      small.push(r.headers.get('x-request-id'));
      await new Promise((r) => setTimeout(r, 250));
      assert.equal(sideLeases(), 1, `a lease of the second model is held after request ${i + 1}`);
    }
    const longAnswer = await long;
    assertCharged(longAnswer, FULL_CHARGE);
    await burstOver(user);
    checkBooks(user, 5);
    // The access log says the same: the long request, the key's first, was
    // reserved in the database, and so was the first small one, whose
    // reservation took the lease; the next three drew from it.
    const ids = [longAnswer.headers.get('x-request-id'), ...small];
    let h = holds();
    for (const until = Date.now() + 2000; Date.now() < until && !ids.every((id) => h.has(id));) {
      await new Promise((r) => setTimeout(r, 20));
      h = holds();
    }
    assert.equal(h.get(longAnswer.headers.get('x-request-id')), 'database');
    assert.deepEqual(small.map((id) => h.get(id)), ['database', 'lease', 'lease', 'lease']);
  });

  it("stops a deleted key's requests beside its long one within the lease's check", async () => {
    // Small requests 30 ms apart beside a long request of another model
    // draw on their lease without reading the key each time: the lease's
    // check, made at least every 50 ms while they come, stands for that
    // read. Once the key is deleted they are refused within 100 ms (here:
    // every one sent 400 ms after providerctl returned); the refused leave
    // no row, the long one (admitted before) is answered and charged, and
    // the books are exact.
    const user = u.besidegone;
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const long = stack.chat(user.key.secret, fullBody({ model: SLOW }));
    for (const end = Date.now() + 3000; Date.now() < end && !stack.sql(`SELECT request_id
      FROM ledger WHERE user_id = ${user.id} AND status = 'reserved'`).length;) await sleep(20);
    let charged = 1;
    for (let i = 0; i < 10; i++) {
      assertCharged(await stack.chat(user.key.secret, fullBody()), FULL_CHARGE);
      charged++;
      await sleep(30);
    }
    stack.ctl('key', 'delete', String(user.key.id));
    const deleted = Date.now();
    const late = [];
    while (Date.now() - deleted < 700) {
      const sent = Date.now() - deleted;
      const r = await stack.chat(user.key.secret, fullBody());
      if (r.status === 200) {
        assertCharged(r, FULL_CHARGE);
        charged++;
      }
      else {
        assert.equal(r.status, 401, `refused as a deleted key (${r.text})`);
      }
      if (sent >= 400) late.push(r.status);
      await sleep(30);
    }
    assert.ok(late.length >= 3, `requests sent 400 ms after the deletion: ${late.length}`);
    assert.deepEqual(late, late.map(() => 401), 'all refused');
    assertCharged(await long, FULL_CHARGE);
    await burstOver(user);
    checkBooks(user, charged);
  });

  it("stops a key's draws on its lease within the lease's check once its budget is lowered to 0", async () => {
    // As a deleted key: requests 30 ms apart beside a long one draw on the
    // key's lease; its owner lowers the budget to 0 (what the cabinet's
    // budget field does); every request sent 400 ms later is refused as
    // over the budget, none is charged, and the books are exact.
    const user = u.budgetcut;
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const long = stack.chat(user.key.secret, fullBody({ model: SLOW }));
    for (const end = Date.now() + 3000; Date.now() < end && !stack.sql(`SELECT request_id
      FROM ledger WHERE user_id = ${user.id} AND status = 'reserved'`).length;) await sleep(20);
    let charged = 1;
    const ids = [];
    for (let i = 0; i < 10; i++) {
      const r = await stack.chat(user.key.secret, fullBody());
      assertCharged(r, FULL_CHARGE);
      ids.push(r.headers.get('x-request-id'));
      charged++;
      await sleep(30);
    }
    stack.ctl('key', 'budget', String(user.key.id), '0');
    const cut = Date.now();
    const late = [];
    while (Date.now() - cut < 700) {
      const sent = Date.now() - cut;
      const r = await stack.chat(user.key.secret, fullBody());
      if (r.status === 200) {
        assertCharged(r, FULL_CHARGE);
        charged++;
      }
      else {
        assert.equal(r.status, 429, r.text);
        assert.equal(r.json.error.code, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
      }
      if (sent >= 400) late.push(r.status);
      await sleep(30);
    }
    assert.ok(late.length >= 3, `requests sent 400 ms after the change: ${late.length}`);
    assert.deepEqual(late, late.map(() => 429), 'all refused');
    assertCharged(await long, FULL_CHARGE);
    await burstOver(user);
    const drawn = holds();
    assert.ok(ids.some((id) => drawn.get(id) === 'lease'), 'requests before the change drew on a lease');
    checkBooks(user, charged);
  });

  it('returns the lease of a killed child at once, by replaying its journal; the requests it died under are charged their input estimate at most', async () => {
    const user = u.killed;
    const floor = inputEstimate([STD_CONTENT]) * MICRO_PER_TOKEN;
    await stack.expectingCrash(/PROV0005[16]|PROV0038[46]|released \d+ (hold|lease)/, async () => {
      const pending = Array.from({ length: 16 },
        () => stack.chat(user.key.secret, fullBody({ model: SLOW })).catch((e) => e));
      const until = Date.now() + 3000;
      while (Date.now() < until && !leases(user)) await new Promise((r) => setTimeout(r, 20));
      assert.equal(leases(user), 1, 'the requests in flight draw from a lease');
      for (const pid of stack.httpdChildren()) process.kill(pid, 'SIGKILL');
      const answers = await Promise.all(pending);
      assert.ok(answers.every((a) => a instanceof Error || a.status !== 200),
        'no request of the killed child was answered');
      await stack.waitServing();
      // The next child replays the dead child's journal, which names the
      // lease: it comes back now, not after ProviderHoldTimeout.
      const back = Date.now() + 10000;
      while (Date.now() < back && leases(user)) await new Promise((r) => setTimeout(r, 20));
      assert.equal(leases(user), 0, 'the dead child\'s lease was returned');
      // In the same batch its holds (the requests before the lease, and
      // drawn ones whose holds were written) were charged their floor, the
      // input estimate; drawn ones without a row cost nothing.
      let sums = ledgerSums(stack, `user_id = ${user.id}`);
      assert.equal(sums.reserved, 0, 'no hold of the dead child is left');
      const floors = stack.sql(`SELECT CAST(credits AS TEXT) AS credits FROM ledger
        WHERE user_id = ${user.id} AND status = 'estimated'`).map((r) => BigInt(r.credits));
      assert.ok(floors.length >= 1 && floors.length <= 16, `floors charged: ${floors.length}`);
      assert.ok(floors.every((c) => c === floor), 'each its input estimate');
      const floorSum = BigInt(floors.length) * floor;
      assert.equal(stack.balance(user.id), user.balance - floorSum,
        'all the dead child held came back but the floors');

      stack.setClock(t0 + 30);
      assertCharged(await stack.chat(user.key.secret, fullBody()), FULL_CHARGE);
      stack.setClock(t0 + HOLD_TIMEOUT + 31);
      assertCharged(await stack.chat(user.key.secret, fullBody()), FULL_CHARGE);
      await burstOver(user);
      sums = ledgerSums(stack, `user_id = ${user.id}`);
      assert.equal(sums.reserved, 0, 'no hold is left');
      assert.equal(sums.charged, 2 + floors.length, 'the two answered requests and the floors');
      assert.equal(sums.credits, 2n * FULL_CHARGE + floorSum);
      assert.equal(stack.balance(user.id), user.balance - 2n * FULL_CHARGE - floorSum,
        'everything else the dead child held came back, once');
      assert.equal(bucketSum(stack, 'key:h', user.key.id), 2n * FULL_CHARGE + floorSum,
        'key buckets = ledger');

      stack.setClock(t0 + 10 * HOLD_TIMEOUT);
      assertCharged(await stack.chat(user.key.secret, fullBody()), FULL_CHARGE);
      assert.equal(stack.balance(user.id), user.balance - 3n * FULL_CHARGE - floorSum,
        'never returned twice');
    });
  });
});
