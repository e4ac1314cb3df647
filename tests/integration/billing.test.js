// tests/integration/billing.test.js: the spend engine's rules seen from
// outside, one request at a time, on the test clock (ProviderClockFile, no
// sleeping): the hold rule (a token a byte of the body plus 1,024 input
// tokens, plus max_tokens, at the model's rates; without max_tokens the
// model's maximum output, ProviderDefaultMaxTokens here, lowered to what the
// budget pays for and told in x-provider-output-cap) pinned to the
// micro-credit by budgets one micro-credit apart; funding (the plan while
// both rolling windows have room for the hold, then the balance; the ledger's
// source); the refusals (402 INSUFFICIENT_CREDITS, 429
// SUBSCRIPTION_QUOTA_EXCEEDED, 429 API_KEY_CREDIT_BUDGET_EXCEEDED naming the
// remedy) and their Retry-After, exact to the bucket (refused one second
// before, accepted at it; not back at midnight); settlement (the real charge
// replaces the hold in the balance and the windows); the hold of a killed
// worker charged its input estimate once the next child replays its journal,
// never twice; usage reports equal to the ledger. Runs on SQLite, and on PostgreSQL with PROVIDER_TEST_PGSQL=1.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './lib/server.js';
import {
  addBillModel, addPlan, subscribe, fullBody, cheapBody, holdOf, bodyBytes, usageLine,
  nextHour, nextMidnight, INPUT_SLACK, OUTPUT_FLOOR, MICRO_PER_TOKEN,
  BILL_RATE, leavesAt, retryAfter, assertCharged, assertRefused, ledgerSums, bucketSum, BILL_MODEL,
  HOLD, FULL_CHARGE, CHEAP_CHARGE, HOUR, MIN5, WINDOW_5H, WINDOW_7D, MICRO, toMicro, microToText,
  inputEstimate, STD_CONTENT,
} from './lib/billing.js';

const HOLD_TIMEOUT = 60;

// Three messages, max_tokens 40.
function threeMessages() {
  return {
    model: BILL_MODEL,
    messages: [{ role: 'user', content: 'a'.repeat(20) }, { role: 'assistant', content: 'b'.repeat(20) },
      { role: 'user', content: `c\n${usageLine(355, 20)}` }],
    max_tokens: 40,
  };
}
const THREE_HOLD = BigInt(bodyBytes(threeMessages()) + INPUT_SLACK + 40) * 800n;
// cheapBody without max_tokens: the model's maximum (4096 here) is held.
function uncapped() {
  const b = cheapBody();
  delete b.max_tokens;
  return b;
}
const DEF_HOLD = holdOf(uncapped(), { cap: 4096 });
const FLOOR_HOLD = holdOf(uncapped(), { cap: OUTPUT_FLOOR });
const SLOW_MODEL = 'bill-slow';   // the gateway answers after 8 s (after the 5 s timeout)

describe('billing: holds, funding, windows, settlement', { timeout: 180000 }, () => {
  let stack;
  const users = {};   // name -> { email, id, key }

  function mkUser(s, name, { balance = null, budget = null } = {}) {
    const email = `${name}@billing.test`;
    const id = s.addUser(email, balance);
    const key = s.createKey(id, { budget });
    users[name] = { email, id, key };
    return users[name];
  }

  before(async () => {
    const t0 = nextHour(Math.floor(Date.now() / 1000));
    stack = await startStack({
      clock: t0,
      overrides: { ProviderHoldTimeout: String(HOLD_TIMEOUT), ProviderDefaultMaxTokens: '4096' },
      seed: (s) => {
        addBillModel(s);
        s.addModel(SLOW_MODEL, 'mock-fault-delay-8000',
          { rates: { input: BILL_RATE, output: BILL_RATE, cache: BILL_RATE, reasoning: BILL_RATE } });
        // hold rule: budgets exactly at the hold and one micro-credit below
        for (const [n, b] of [['exact1', '1'], ['below1', '0.999999'], ['exact3m', microToText(THREE_HOLD)],
          ['below3m', microToText(THREE_HOLD - 1n)], ['exactdef', microToText(DEF_HOLD)],
          ['belowdef', microToText(DEF_HOLD - 1n)], ['floordef', microToText(FLOOR_HOLD)],
          ['underfloor', microToText(FLOOR_HOLD - 1n)]]) {
          mkUser(s, n, { balance: 100, budget: b });
        }
        mkUser(s, 'keyroll', { balance: 100, budget: 2 });
        mkUser(s, 'nofunds', {});
        mkUser(s, 'lowbal', { balance: '0.999999' });
        mkUser(s, 'settle', { balance: 5 });
        mkUser(s, 'stale', { balance: '1.5' });

        const planA = addPlan(s, 'bill-windows', '2', '5');
        const windows = mkUser(s, 'windows', {});
        subscribe(s, windows.email, 'bill-windows', windows.id, planA);

        const planB = addPlan(s, 'bill-both', '1', '1');
        const both = mkUser(s, 'both', {});
        subscribe(s, both.email, 'bill-both', both.id, planB);

        const planC = addPlan(s, 'bill-then-balance', '1', '10');
        const thenbal = mkUser(s, 'thenbal', { balance: 1 });
        subscribe(s, thenbal.email, 'bill-then-balance', thenbal.id, planC);

        const planD = addPlan(s, 'bill-settle', '1.3', '100');
        const psettle = mkUser(s, 'psettle', { balance: 5 });
        subscribe(s, psettle.email, 'bill-settle', psettle.id, planD);
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  /** Moves the clock to the next clean hour boundary (a fresh bucket) and returns it. */
  function freshHour() {
    return stack.setClock(nextHour(stack.clock));
  }

  // Answered before settled: the ledger is read once the row is written.
  async function chat(u, body) {
    return stack.requestSettled(await stack.chat(u.key.secret, body));
  }

  function source(rid) {
    const [r] = stack.sql(`SELECT source, status, CAST(reserved AS TEXT) AS reserved,
      CAST(credits AS TEXT) AS credits FROM ledger WHERE request_id = '${rid}'`);
    assert.ok(r, `ledger row ${rid}`);
    return r;
  }

  describe('the hold rule', () => {
    it('holds a token a byte of the body plus 1,024 input tokens, plus max_tokens: a budget of exactly the hold passes, one micro-credit less is refused', async () => {
      freshHour();
      // the charge (0.3) is below the budget: only the hold can refuse
      assertCharged(await chat(users.exact1, cheapBody()), CHEAP_CHARGE);
      assertRefused(await chat(users.below1, cheapBody()), 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    });

    it('counts every byte of the body: three messages and max_tokens 40', async () => {
      const body = threeMessages();
      assert.equal(holdOf(body), THREE_HOLD);
      assertCharged(await chat(users.exact3m, body), CHEAP_CHARGE);
      assertRefused(await chat(users.below3m, body), 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    });

    it('without max_tokens holds the model\'s maximum output (ProviderDefaultMaxTokens 4096 here) and forwards it as the cap', async () => {
      const res = await chat(users.exactdef, uncapped());
      assertCharged(res, CHEAP_CHARGE);
      assert.equal(res.headers.get('x-provider-output-cap'), '4096');
      assert.equal((await stack.mock.last()).body.max_tokens, 4096);
      const { rid } = assertCharged(res);
      assert.equal(BigInt(source(rid).reserved), DEF_HOLD);
    });

    it('lowers the cap of a request without max_tokens to what the budget pays for, down to 1,024 tokens; below that refuses', async () => {
      // one micro-credit short of the full hold: a token less
      let res = await chat(users.belowdef, uncapped());
      assertCharged(res, CHEAP_CHARGE);
      assert.equal(res.headers.get('x-provider-output-cap'), '4095');
      assert.equal((await stack.mock.last()).body.max_tokens, 4095);
      assert.equal(BigInt(source(res.headers.get('x-request-id')).reserved), DEF_HOLD - 1n);
      // exactly the floor's hold: the floor
      res = await chat(users.floordef, uncapped());
      assertCharged(res, CHEAP_CHARGE);
      assert.equal(res.headers.get('x-provider-output-cap'), String(OUTPUT_FLOOR));
      assert.equal(FLOOR_HOLD, DEF_HOLD - BigInt(4096 - OUTPUT_FLOOR) * MICRO_PER_TOKEN);
      // a micro-credit below: refused, naming what it needs at least
      res = await chat(users.underfloor, uncapped());
      const e = assertRefused(res, 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
      assert.match(e.message, new RegExp(`needs at least ${microToText(FLOOR_HOLD).replace('.', '\\.')}`));
      assert.equal(res.headers.get('x-provider-output-cap'), null);
    });
  });

  describe('refusals without funds', () => {
    it('no plan and no balance: 402 INSUFFICIENT_CREDITS, nothing in the ledger', async () => {
      const e = assertRefused(await chat(users.nofunds, fullBody()), 402, 'INSUFFICIENT_CREDITS');
      // no ProviderTopUpURL here: the remedy is the administrator
      assert.match(e.message, /Ask the service's administrator for more credits\.$/, e.message);
      assertRefused(await chat(users.lowbal, fullBody()), 402, 'INSUFFICIENT_CREDITS');
      assert.equal(ledgerSums(stack, `user_id IN (${users.nofunds.id}, ${users.lowbal.id})`).credits, 0n);
      assert.equal(stack.balance(users.lowbal.id), toMicro('0.999999'));
    });
  });

  describe('the key weekly budget: a rolling 7-day window of 1-hour buckets', () => {
    it('refuses with 429 naming the remedy; Retry-After is exact; capacity returns as usage leaves, not at midnight', async () => {
      const u = users.keyroll;   // budget 2 credits
      const h = freshHour();
      stack.setClock(h + 600);
      assertCharged(await chat(u, fullBody()), FULL_CHARGE);
      stack.setClock(h + HOUR + 60);
      assertCharged(await chat(u, fullBody()), FULL_CHARGE);

      let now = stack.setClock(h + 2 * HOUR);
      let res = await chat(u, fullBody());
      const e = assertRefused(res, 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
      let ra = retryAfter(res);
      // the first request's hour bucket leaves the window at h + 1 h + 7 d
      assert.equal(ra, leavesAt(h + 600, HOUR, WINDOW_7D) - now, 'Retry-After to the bucket');

      const midnight = nextMidnight(now);
      assert.ok(midnight < now + ra - 1);
      stack.setClock(midnight);
      assertRefused(await chat(u, fullBody()), 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');

      stack.setClock(now + ra - 1);
      res = await chat(u, fullBody());
      assertRefused(res, 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
      assert.equal(retryAfter(res), 1);

      now = stack.setClock(now + ra);
      assertCharged(await chat(u, fullBody()), FULL_CHARGE);
      res = await chat(u, fullBody());
      assertRefused(res, 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
      ra = retryAfter(res);
      assert.equal(ra, leavesAt(h + HOUR + 60, HOUR, WINDOW_7D) - now, 'then the second bucket');
      assert.equal(ledgerSums(stack, `key_id = ${u.key.id}`).credits, 3n * FULL_CHARGE);
      assert.equal(stack.balance(u.id), 97n * MICRO);
      // the remedy (issue 3 §2): raise this key's budget, or free plan quota
      assert.match(e.message, /budget/i, `the message names the key's budget: ${e.message}`);
      assert.match(e.message, /rais|increas/i, `the message names the remedy: ${e.message}`);
      assert.match(e.message, /plan/i, `the message names plan quota as the other remedy: ${e.message}`);
      // what the user can do themselves: the cabinet, never the operator's tool
      assert.match(e.message, /in the cabinet \(\/cabinet\)/, e.message);
      assert.doesNotMatch(e.message, /providerctl/, e.message);
    });
  });

  describe('plan windows: 5 hours in 5-minute buckets, 7 days in 1-hour buckets', () => {
    it('funds from the plan while both windows have room, rolls the 5-hour window exactly', async () => {
      const u = users.windows;   // 5h: 2 credits, 7d: 5 credits, no balance
      const h = freshHour();
      stack.setClock(h + 60);
      const r1 = assertCharged(await chat(u, fullBody()), FULL_CHARGE);
      stack.setClock(h + 360);
      const r2 = assertCharged(await chat(u, fullBody()), FULL_CHARGE);
      for (const r of [r1, r2]) assert.equal(source(r.rid).source, 'plan');

      let now = stack.setClock(h + 420);
      let res = await chat(u, fullBody());
      assertRefused(res, 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
      let ra = retryAfter(res);
      assert.equal(ra, leavesAt(h + 60, MIN5, WINDOW_5H) - now, '5h Retry-After to the 5-minute bucket');
      stack.setClock(now + ra - 1);
      assertRefused(await chat(u, fullBody()), 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
      now = stack.setClock(now + ra);
      const r4 = assertCharged(await chat(u, fullBody()), FULL_CHARGE);
      assert.equal(source(r4.rid).source, 'plan');

      // the second request leaves 5 minutes later
      res = await chat(u, fullBody());
      assertRefused(res, 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
      assert.equal(retryAfter(res), leavesAt(h + 360, MIN5, WINDOW_5H) - now);
      stack.setClock(leavesAt(h + 360, MIN5, WINDOW_5H));
      assertCharged(await chat(u, fullBody()), FULL_CHARGE);   // 7d: 4 of 5

      // later the 5-hour window is empty; the 7-day one fills and binds
      stack.setClock(h + 40000);
      assertCharged(await chat(u, fullBody()), FULL_CHARGE);   // 7d: 5 of 5
      now = stack.clock;
      res = await chat(u, fullBody());
      assertRefused(res, 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
      ra = retryAfter(res);
      // the hour bucket h holds the first two requests: it leaves at h + 1 h + 7 d
      assert.equal(ra, leavesAt(h + 60, HOUR, WINDOW_7D) - now, '7d Retry-After to the hour bucket');
      stack.setClock(nextMidnight(now));
      assertRefused(await chat(u, fullBody()), 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
      stack.setClock(now + ra - 1);
      assertRefused(await chat(u, fullBody()), 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
      stack.setClock(now + ra);
      const r8 = assertCharged(await chat(u, fullBody()), FULL_CHARGE);
      assert.equal(source(r8.rid).source, 'plan');

      const sums = ledgerSums(stack, `user_id = ${u.id}`);
      assert.equal(sums.planCredits, 6n * FULL_CHARGE);
      assert.equal(sums.balanceCredits, 0n);
      assert.equal(stack.balance(u.id), 0n, 'plan use never touches the balance');
    });

    it('with both windows full, Retry-After is the later of the two', async () => {
      const u = users.both;   // 5h: 1, 7d: 1
      const h = freshHour();
      stack.setClock(h + 60);
      assertCharged(await chat(u, fullBody()), FULL_CHARGE);
      const now = stack.setClock(h + 120);
      const res = await chat(u, fullBody());
      assertRefused(res, 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
      const ra = retryAfter(res);
      assert.equal(ra, leavesAt(h + 60, HOUR, WINDOW_7D) - now);
      stack.setClock(leavesAt(h + 60, MIN5, WINDOW_5H));   // the 5-hour window is free again
      assertRefused(await chat(u, fullBody()), 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
      stack.setClock(now + ra);
      assertCharged(await chat(u, fullBody()), FULL_CHARGE);
    });

    it('uses the balance once the plan has no room for the hold, then refuses with 429', async () => {
      const u = users.thenbal;   // 5h: 1, 7d: 10, balance 1
      const h = freshHour();
      stack.setClock(h + 60);
      const a = assertCharged(await chat(u, fullBody()), FULL_CHARGE);
      const b = assertCharged(await chat(u, fullBody()), FULL_CHARGE);
      assert.equal(source(a.rid).source, 'plan');
      assert.equal(source(b.rid).source, 'balance');
      assert.equal(stack.balance(u.id), 0n);
      const now = stack.clock;
      const res = await chat(u, fullBody());
      assertRefused(res, 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
      const ra = retryAfter(res);
      assert.equal(ra, leavesAt(h + 60, MIN5, WINDOW_5H) - now);
      stack.setClock(now + ra);
      const c = assertCharged(await chat(u, fullBody()), FULL_CHARGE);
      assert.equal(source(c.rid).source, 'plan');
    });
  });

  describe('settlement', () => {
    it('charges the real cost to the balance and records hold and charge', async () => {
      const u = users.settle;   // balance 5, no plan
      freshHour();
      const r = assertCharged(await chat(u, cheapBody()), CHEAP_CHARGE);
      const row = source(r.rid);
      assert.equal(row.status, 'ok');
      assert.equal(row.source, 'balance');
      assert.equal(BigInt(row.reserved), HOLD);
      assert.equal(BigInt(row.credits), CHEAP_CHARGE);
      assertCharged(await chat(u, fullBody()), FULL_CHARGE);
      const sums = ledgerSums(stack, `user_id = ${u.id}`);
      assert.equal(sums.reserved, 0);
      assert.equal(stack.balance(u.id), 5n * MICRO - sums.balanceCredits);
      assert.equal(sums.balanceCredits, CHEAP_CHARGE + FULL_CHARGE);
    });

    it('puts the real charge, not the hold, in the plan windows', async () => {
      const u = users.psettle;   // 5h: 1.3, 7d: 100, balance 5
      freshHour();
      const a = assertCharged(await chat(u, cheapBody()), CHEAP_CHARGE);   // window 0.3
      const b = assertCharged(await chat(u, cheapBody()), CHEAP_CHARGE);   // 0.3 + hold 1 = 1.3 fits
      const c = assertCharged(await chat(u, fullBody()), FULL_CHARGE);     // 0.6 + 1 > 1.3: balance
      assert.deepEqual([a, b, c].map((x) => source(x.rid).source), ['plan', 'plan', 'balance']);
      assert.equal(stack.balance(u.id), 5n * MICRO - FULL_CHARGE);
      const sums = ledgerSums(stack, `user_id = ${u.id}`);
      assert.equal(sums.planCredits, 2n * CHEAP_CHARGE);
      assert.equal(bucketSum(stack, 'user:m', u.id, 'plan_credits'), 2n * CHEAP_CHARGE, '5-minute buckets');
      assert.equal(bucketSum(stack, 'user:h', u.id, 'plan_credits'), 2n * CHEAP_CHARGE, 'hour buckets');
      assert.equal(bucketSum(stack, 'key:h', u.key.id), sums.credits, 'key buckets');
    });
  });

  describe('stale holds', () => {
    it('charges the hold of a killed worker its input estimate once its journal is replayed (estimated, once), and the sweep leaves it', async () => {
      const u = users.stale;   // balance 1.5
      const h = freshHour();
      // The floor: the request's input estimate at the input rate
      // (docs/internals/broken-streams.md "A killed child").
      const floor = inputEstimate([STD_CONTENT]) * MICRO_PER_TOKEN;
      // A worker dies holding 1 credit: the gateway is slow, and
      // the httpd child is killed while the request's hold is in the ledger.
      let rid = null;
      await stack.expectingCrash(/PROV00051|PROV0038[0-9]|released \d+ hold/, async () => {
        const pending = stack.chat(u.key.secret, fullBody({ model: SLOW_MODEL })).catch((e) => e);
        const until = Date.now() + 3000;
        while (Date.now() < until && !rid) {
          const rows = stack.sql(`SELECT request_id FROM ledger WHERE user_id = ${u.id} AND status = 'reserved'`);
          if (rows.length) rid = rows[0].request_id;
          else await new Promise((r) => setTimeout(r, 20));
        }
        assert.ok(rid, 'the request holds its estimate while the gateway works');
        const [held] = stack.sql(`SELECT owner, CAST(floor_credits AS TEXT) AS floor FROM ledger
          WHERE request_id = '${rid}'`);
        assert.ok(held.owner, 'the hold names the journal of the child that took it');
        assert.equal(BigInt(held.floor), floor, 'and its floor');
        const children = stack.httpdChildren();
        assert.ok(children.length >= 1, 'httpd has a child');
        for (const pid of children) process.kill(pid, 'SIGKILL');
        const res = await pending;
        assert.ok(res instanceof Error || res.status !== 200, 'the killed request got no answer');
        // the parent starts a new child, whose writer replays the dead journal
        await stack.waitServing();
        const end = Date.now() + 15000;
        while (source(rid).status === 'reserved' && Date.now() < end)
          await new Promise((r) => setTimeout(r, 50));
        let row = source(rid);
        assert.equal(row.status, 'estimated', 'the request the child died under is charged');
        assert.equal(BigInt(row.credits), floor, 'its input estimate');
        assert.equal(stack.balance(u.id), toMicro('1.5') - floor, 'the hold came back, the floor went');
        assert.equal(bucketSum(stack, 'key:h', u.key.id), floor);

        stack.setClock(h + HOLD_TIMEOUT + 1);
        const r = assertCharged(await chat(u, fullBody()), FULL_CHARGE);
        row = source(rid);
        assert.equal(row.status, 'estimated', 'the sweep leaves a settled row alone');
        assert.equal(BigInt(row.credits), floor);
        assert.equal(source(r.rid).status, 'ok');
        assert.equal(stack.balance(u.id), toMicro('0.5') - floor);

        stack.setClock(h + 10 * HOLD_TIMEOUT);
        assertRefused(await chat(u, fullBody()), 402, 'INSUFFICIENT_CREDITS');
        assert.equal(stack.balance(u.id), toMicro('0.5') - floor, 'charged once');
        assert.equal(ledgerSums(stack, `user_id = ${u.id}`).credits, FULL_CHARGE + floor);
        assert.equal(bucketSum(stack, 'key:h', u.key.id), FULL_CHARGE + floor, 'the key buckets hold the charges');
      });
    });
  });

  describe('the books', () => {
    it('leaves no hold open and keeps the buckets equal to the ledger', () => {
      assert.deepEqual(stack.sql("SELECT request_id FROM ledger WHERE status = 'reserved'"), []);
      for (const u of Object.values(users)) {
        const sums = ledgerSums(stack, `key_id = ${u.key.id}`);
        assert.equal(bucketSum(stack, 'key:h', u.key.id), sums.credits, `key buckets of ${u.email}`);
        const us = ledgerSums(stack, `user_id = ${u.id}`);
        assert.equal(bucketSum(stack, 'user:h', u.id, 'plan_credits'), us.planCredits, `user:h of ${u.email}`);
        assert.equal(bucketSum(stack, 'user:m', u.id, 'plan_credits'), us.planCredits, `user:m of ${u.email}`);
      }
    });

    it('providerctl usage report --json equals the ledger, in total, per user and per key', () => {
      const sums = (where) => stack.sql(`SELECT COUNT(*) AS requests,
          CAST(COALESCE(SUM(input_tokens), 0) AS TEXT) AS input_tokens,
          CAST(COALESCE(SUM(output_tokens), 0) AS TEXT) AS output_tokens,
          CAST(COALESCE(SUM(cache_tokens), 0) AS TEXT) AS cache_tokens,
          CAST(COALESCE(SUM(reasoning_tokens), 0) AS TEXT) AS reasoning_tokens,
          CAST(COALESCE(SUM(credits), 0) AS TEXT) AS credits
        FROM ledger WHERE status <> 'reserved' AND ${where}`)[0];
      const same = (row, l, what) => {
        assert.equal(Number(row.requests), Number(l.requests), `${what}: requests ${JSON.stringify(row)}`);
        for (const k of ['input_tokens', 'output_tokens', 'cache_tokens', 'reasoning_tokens']) {
          assert.equal(String(row[k]), l[k], `${what}: ${k} ${JSON.stringify(row)}`);
        }
        assert.equal(toMicro(row.credits), BigInt(l.credits), `${what}: credits ${JSON.stringify(row)}`);
      };
      // far past and far future: the ledger's times follow the test clock
      const span = ['--since', '2000-01-01', '--until', String(stack.clock + 86400)];
      const all = stack.ctlJSON('usage', 'report', ...span);
      assert.ok(Number(all.total.requests) > 20, JSON.stringify(all.total));
      same(all.total, sums('1 = 1'), 'total');

      const u = users.psettle;
      same(stack.ctlJSON('usage', 'report', '--user', u.email, ...span).total, sums(`user_id = ${u.id}`), 'user');

      const byKey = stack.ctlJSON('usage', 'report', '--by', 'key', ...span);
      const keys = Object.values(users).map((x) => x.key.id);
      let seen = 0;
      for (const row of byKey.rows) {
        const id = Number(row.group ?? row.key ?? row.key_id);
        if (!keys.includes(id)) continue;
        same(row, sums(`key_id = ${id}`), `key ${id}`);
        seen++;
      }
      assert.ok(seen >= 10, `per-key rows: ${JSON.stringify(byKey.rows)}`);
      same(byKey.total, sums('1 = 1'), 'total by key');
    });
  });
});
