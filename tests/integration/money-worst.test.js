// tests/integration/money-worst.test.js: the hold is the true worst case
// (issue 29, rows 1-5), against a model gateway that bills as much as a real
// one may: mockgw's `greedy` writes to the largest output cap it is sent (30,000
// tokens when uncapped), `n` choices each to the cap, `bytetok` counts a token
// a byte, `reasoning-R` reports reasoning tokens inside the cap. Every request
// reaches the gateway with an output cap its hold covers (x-provider-output-cap
// when the service chose it), and no limit (a key's weekly budget, a plan's
// 5-hour window, the balance) ends above what it allows, one request after
// another or 64 at once; no hold is left open. Runs on SQLite, and on
// PostgreSQL with PROVIDER_TEST_PGSQL=1.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './lib/server.js';
import {
  addPlan, subscribe, nextHour, ledgerSums, bucketSum, INPUT_SLACK, OUTPUT_FLOOR, MICRO,
  toMicro, microToText, bodyBytes,
} from './lib/billing.js';

/** The data of an SSE body's events, parsed. */
function sseEvents(text) {
  return text.split('\n\n').filter((b) => b.trim()).map((b) => ({
    data: JSON.parse(b.split('\n').filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6)).join('\n')),
  }));
}

// Rates in credits per 1M tokens: a micro-credit a token in, ten out.
const PLAIN = { input: '1', output: '10' };
// Reasoning at ten times output, cache at twice input.
const DEAR = { input: '1', output: '10', cache: '2', reasoning: '100' };
const MAX_OUT = 2000;   // the greedy models' maximum output

const chatBody = (model, extra = {}) => ({
  model, messages: [{ role: 'user', content: 'write as much as you may' }], ...extra,
});
const respBody = (model, extra = {}) => ({ model, input: 'write as much as you may', ...extra });
// Row 5's hold: input at the cache rate (2), 100 output tokens at the reasoning rate (100).
const DEAR_HOLD = BigInt(bodyBytes(chatBody('greedy-dear', { max_tokens: 100 })) + INPUT_SLACK) * 2n
  + 100n * 100n;

describe('money: the hold is the worst case, whatever the gateway bills', { timeout: 240000 }, () => {
  let stack;
  const u = {};

  function mkUser(s, name, { balance = null, budget = null, plan = null } = {}) {
    const email = `${name}@worst.test`;
    const id = s.addUser(email, balance);
    const key = s.createKey(id, { budget });
    if (plan) subscribe(s, email, plan.name, id, plan.id);
    u[name] = { email, id, key };
  }

  before(async () => {
    stack = await startStack({
      clock: nextHour(Math.floor(Date.now() / 1000)),
      threads: 64,
      overrides: { ProviderMaxBodySize: String(1024 * 1024) },
      seed: (s) => {
        for (const [id, upstream, rates] of [
          ['greedy', 'mock-fault-greedy', PLAIN],
          ['greedy-dear', 'mock-fault-greedy-fault-reasoning-90', DEAR],
          ['bytes', 'mock-fault-bytetok', PLAIN],
        ]) {
          s.addModel(id, upstream, { rates });
          s.ctl('model', 'set', id, '--max-output', String(MAX_OUT));
        }
        for (const t of ['chat', 'resp', 'stream']) {
          mkUser(s, `budget-${t}`, { balance: 100, budget: '0.035' });
          mkUser(s, `balance-${t}`, { balance: '0.035' });
        }
        const plan = { name: 'worst-5h', id: addPlan(s, 'worst-5h', '0.035', '100') };
        mkUser(s, 'plan-chat', { plan });
        mkUser(s, 'choices', { balance: 1 });
        mkUser(s, 'bigprompt', { balance: '0.3' });
        mkUser(s, 'reasoning', { balance: 1, budget: microToText(DEAR_HOLD) });
        mkUser(s, 'burst', { balance: 100, budget: '0.2' });
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  /** One request of the kind t ('chat', 'resp', 'stream'): {status, cap, rid, credits, completion}. */
  async function ask(key, t, model, extra = {}) {
    if (t === 'chat') {
      const res = await stack.requestSettled(await stack.chat(key, chatBody(model, extra)));
      return {
        status: res.status, res, cap: res.headers.get('x-provider-output-cap'),
        rid: res.headers.get('x-request-id'),
        completion: res.json && res.json.usage ? res.json.usage.completion_tokens : null,
      };
    }
    const res = await stack.requestSettled(await stack.request('POST', '/v1/responses', {
      key, body: respBody(model, { ...extra, stream: t === 'stream' }),
    }));
    let completion = null;
    if (res.status === 200 && t === 'stream') {
      const done = sseEvents(res.text).find((e) => e.data.type === 'response.completed');
      assert.ok(done, `the stream completed: ${res.text.slice(-400)}`);
      completion = done.data.response.usage.output_tokens;
    } else if (res.status === 200) {
      completion = res.json.usage.output_tokens;
    }
    return { status: res.status, res, cap: res.headers.get('x-provider-output-cap'),
      rid: res.headers.get('x-request-id'), completion };
  }

  /** Uncapped requests until one is refused: what they were charged, in all. */
  async function untilRefused(user, t, refusal) {
    const caps = [];
    for (let i = 0; i < 10; i++) {
      const a = await ask(user.key.secret, t, 'greedy');
      if (a.status !== 200) {
        assert.equal(a.status, refusal[0], `refused: ${a.res.text}`);
        assert.equal(a.res.json.error.code, refusal[1]);
        break;
      }
      assert.ok(a.cap, 'the service chose the cap, and says so');
      const cap = Number(a.cap);
      assert.ok(cap >= OUTPUT_FLOOR && cap <= MAX_OUT, `cap ${cap}`);
      // the greedy gateway wrote to the cap it was sent, and no further
      assert.equal(a.completion, cap, 'the gateway was sent the cap the hold covers');
      const row = stack.ledger(a.rid);
      assert.ok(BigInt(row.credits) <= BigInt(row.reserved), `charge ${row.credits} within its hold ${row.reserved}`);
      assert.equal(Number(row.output_tokens), cap, 'every output token charged');
      caps.push(cap);
    }
    assert.ok(caps.length >= 2, `served before the refusal: ${caps}`);
    assert.equal(caps[0], MAX_OUT, 'the first one at the model maximum');
    assert.ok(caps.some((c) => c < MAX_OUT), `one lowered to what was left: ${caps}`);
    const sums = ledgerSums(stack, `user_id = ${user.id}`);
    assert.equal(sums.reserved, 0, 'no hold left');
    return sums.credits;
  }

  for (const t of ['chat', 'resp', 'stream']) {
    it(`row 1 (${t}): uncapped requests against a 0.035-credit weekly budget never pass it`, async () => {
      const spent = await untilRefused(u[`budget-${t}`], t, [429, 'API_KEY_CREDIT_BUDGET_EXCEEDED']);
      assert.ok(spent <= toMicro('0.035'), `spent ${microToText(spent)}`);
      assert.ok(spent > toMicro('0.03'), `the budget was used, ${microToText(spent)}`);
    });

    it(`row 1 (${t}): uncapped requests against a 0.035-credit balance never make it negative`, async () => {
      const user = u[`balance-${t}`];
      await untilRefused(user, t, [402, 'INSUFFICIENT_CREDITS']);
      const left = stack.balance(user.id);
      assert.ok(left >= 0n && left < toMicro('0.005'), `balance ${microToText(left)}`);
    });
  }

  it('row 1 (plan): uncapped requests against a 0.035-credit 5-hour window never pass it', async () => {
    const user = u['plan-chat'];
    const spent = await untilRefused(user, 'chat', [429, 'SUBSCRIPTION_QUOTA_EXCEEDED']);
    assert.ok(spent <= toMicro('0.035'), `spent ${microToText(spent)}`);
    assert.ok(bucketSum(stack, 'user:m', user.id, 'plan_credits') <= toMicro('0.035'));
  });

  it('row 2: n choices are held and charged for every choice', async () => {
    const body = chatBody('greedy', { n: 4, max_tokens: 1000 });
    const a = await ask(u.choices.key.secret, 'chat', 'greedy', { n: 4, max_tokens: 1000 });
    assert.equal(a.status, 200, a.res.text);
    assert.equal(a.res.json.choices.length, 4);
    assert.equal(a.completion, 4000);
    assert.equal(a.cap, null, 'the client\'s own cap was kept');
    const row = stack.ledger(a.rid);
    assert.equal(Number(row.output_tokens), 4000, 'all four choices charged');
    // held: the body a token a byte plus the slack, and 4 x 1000 output tokens
    assert.equal(BigInt(row.reserved), BigInt(bodyBytes(body) + INPUT_SLACK) + 4000n * 10n);
    assert.ok(BigInt(row.credits) <= BigInt(row.reserved));
    const last = await stack.mock.last();
    assert.equal(last.body.n, 4);
    assert.equal(last.body.max_tokens, 1000);
  });

  it('row 3: two output caps at once are refused before the gateway', async () => {
    const before = (await stack.mock.last()).seq;
    const res = await stack.chat(u.choices.key.secret,
      chatBody('greedy', { max_completion_tokens: 1, max_tokens: 1000 }));
    assert.equal(res.status, 400, res.text);
    assert.equal(res.json.error.code, 'INVALID_REQUEST');
    assert.match(res.json.error.message, /max_tokens/);
    assert.match(res.json.error.message, /max_completion_tokens/);
    assert.equal((await stack.mock.last()).seq, before, 'nothing reached the gateway');
  });

  it('row 4: a 270 KB prompt counted a token a byte never takes the balance below zero', async () => {
    const user = u.bigprompt;   // 0.3 credits; the gateway counts a token a byte
    const prompt = 'x'.repeat(270 * 1024);
    let res = await stack.requestSettled(await stack.chat(user.key.secret,
      chatBody('bytes', { messages: [{ role: 'user', content: prompt }], max_tokens: 10 })));
    assert.equal(res.status, 200, res.text);
    const row = stack.ledger(res.headers.get('x-request-id'));
    assert.ok(Number(row.input_tokens) > 270 * 1024, `input ${row.input_tokens}`);
    assert.ok(BigInt(row.credits) <= BigInt(row.reserved), 'within the hold');
    // the second one no longer fits: refused, not overdrawn
    res = await stack.chat(user.key.secret,
      chatBody('bytes', { messages: [{ role: 'user', content: prompt }], max_tokens: 10 }));
    assert.equal(res.status, 402, res.text);
    assert.ok(stack.balance(user.id) >= 0n, `balance ${microToText(stack.balance(user.id))}`);
  });

  it('row 5: reasoning priced at ten times output is held at the reasoning rate', async () => {
    const user = u.reasoning;   // a budget of exactly one hold at the dear rates
    const hold = DEAR_HOLD;
    const a = await ask(user.key.secret, 'chat', 'greedy-dear', { max_tokens: 100 });
    assert.equal(a.status, 200, a.res.text);
    const row = stack.ledger(a.rid);
    assert.equal(BigInt(row.reserved), hold);
    assert.equal(Number(row.reasoning_tokens), 90);
    assert.ok(BigInt(row.credits) > 9000n && BigInt(row.credits) <= hold, `charged ${row.credits}`);
    const again = await ask(user.key.secret, 'chat', 'greedy-dear', { max_tokens: 100 });
    assert.equal(again.status, 429, again.res.text);
    assert.ok(ledgerSums(stack, `user_id = ${user.id}`).credits <= DEAR_HOLD);
  });

  it('64 uncapped requests at once against a 0.2-credit budget: no overspend, no hold left', async () => {
    const user = u.burst;
    const results = await Promise.all(Array.from({ length: 64 },
      () => stack.chat(user.key.secret, chatBody('greedy'))));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    assert.ok(ok.length >= 5, `some were served: ${ok.length}`);
    for (const r of refused) {
      assert.equal(r.status, 429, r.text);
      assert.equal(r.json.error.code, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    }
    for (const r of ok) {
      assert.equal(r.json.usage.completion_tokens, Number(r.headers.get('x-provider-output-cap')));
    }
    await stack.billingSettled();
    const sums = ledgerSums(stack, `user_id = ${user.id}`);
    assert.equal(sums.reserved, 0, 'no hold left');
    assert.equal(sums.n, ok.length, 'a row for every answer, none for a refusal');
    assert.ok(sums.credits <= toMicro('0.2'), `spent ${microToText(sums.credits)}`);
    assert.equal(bucketSum(stack, 'key:h', user.key.id), sums.credits, 'the key\'s week is the ledger');
    assert.ok(MICRO > 0n);
  });
});
