// tests/integration/chat.test.js: successful POST /v1/chat/completions and
// its money (README "Pricing"): the charge is exactly the rate card's amount
// for the tokens the gateway reported (per kind, rounded up; NULL cache and
// reasoning rates fall back to input and output), shown in x-provider-credits
// and usage.credits, written to the ledger and taken from the balance that
// all keys of a user share; the answer names the public model id; the
// gateway gets the upstream id and the service token, never the client's key;
// the legacy `message` field works; a key's reissue and deletion take effect
// at once (through providerctl).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, seedCatalog, CATALOG } from './lib/server.js';
import {
  assertOpenAIError, assertNoSecrets, expectedCharge, kinds, rawUsageCredits, toMicro,
} from './lib/helpers.js';

describe('POST /v1/chat/completions: charging', { timeout: 120000 }, () => {
  let stack;
  let alice;   // { id, key, key2 }
  let bob;
  const modelId = {};

  before(async () => {
    stack = await startStack({
      seed: (s) => {
        seedCatalog(s);
        alice = { id: s.addUser('alice@example.test', 1000) };
        alice.key = s.createKey('alice@example.test', { name: 'first' });
        alice.key2 = s.createKey(alice.id, { name: 'second' });
        bob = { id: s.addUser('bob@example.test', 50) };
        bob.key = s.createKey('bob@example.test');
      },
    });
    for (const r of stack.sql('SELECT id, public_id FROM models')) modelId[r.public_id] = r.id;
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  /**
   * Sends a chat request and checks everything a charged answer must show.
   * Returns {res, charge}.
   */
  async function charged(user, key, body, expected) {
    const before = stack.balance(user.id);
    const res = await stack.chat(key.secret, body);
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') || '', /^application\/json/);
    const rid = res.headers.get('x-request-id');
    assert.ok(rid, 'x-request-id');

    const header = res.headers.get('x-provider-credits');
    assert.ok(header !== null, 'x-provider-credits header');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff', 'a JSON answer: nosniff');
    assert.match(header, /^\d+(\.\d+)?$/, `x-provider-credits is a decimal: ${header}`);
    assert.equal(toMicro(header), expected, `x-provider-credits ${header}`);
    assert.equal(typeof res.json.usage.credits, 'number', 'usage.credits is a JSON number');
    assert.equal(toMicro(rawUsageCredits(res.text)), expected, `usage.credits in ${res.text}`);

    assert.equal(res.json.model, body.model, 'the answer names the public model id');
    assert.equal(res.json.object, 'chat.completion');
    assert.equal(stack.balance(user.id), before - expected, 'balance decreased by the charge');

    const row = stack.ledger(rid);
    assert.ok(row, `a ledger row for request ${rid}`);
    assert.equal(row.user_id, user.id);
    assert.equal(row.key_id, key.id);
    assert.equal(row.model_id, modelId[body.model]);
    assert.match(row.transport, /chat/);
    assert.equal(BigInt(row.credits), expected, 'ledger credits');
    assert.equal(row.status, 'ok');
    assertNoSecrets(res, stack);
    return { res, row };
  }

  it('charges forced usage with cache and reasoning exactly (per-kind round-up)', async () => {
    const usage = { prompt: 1000, completion: 500, cached: 200, reasoning: 100 };
    const t = kinds(usage);
    const expected = expectedCharge(CATALOG['prov-main'].rates, t);
    // ceil per kind: 988 + 25 + 939 + 346; a single round-up of the sum would give 2296
    assert.equal(expected, 2298n);
    const body = {
      model: 'prov-main',
      messages: [{ role: 'user', content: 'charge me' }],
      max_tokens: 600,
      metadata: { mock_usage: usage },
    };
    const { res, row } = await charged(alice, alice.key, body, expected);
    assert.equal(res.json.choices[0].message.content, 'mock reply to: charge me');
    assert.equal(res.json.usage.prompt_tokens, 1000);
    assert.equal(res.json.usage.completion_tokens, 500);
    assert.equal(row.input_tokens, 800);
    assert.equal(row.cache_tokens, 200);
    assert.equal(row.output_tokens, 400);
    assert.equal(row.reasoning_tokens, 100);
  });

  it('forwards the upstream id with the service token, never the client key', async () => {
    await stack.chat(alice.key.secret, {
      model: 'prov-main', messages: [{ role: 'user', content: 'who am i' }], max_tokens: 5,
    });
    const last = await stack.mock.last();
    assert.equal(last.method, 'POST');
    assert.equal(last.path, '/v1/chat/completions');
    assert.equal(last.body.model, 'mock-main', 'the gateway gets the upstream id');
    assert.equal(last.headers.authorization, `Bearer ${stack.token}`);
    assert.deepEqual(last.body.messages, [{ role: 'user', content: 'who am i' }]);
    assert.equal(last.body.max_tokens, 5);
    const seen = JSON.stringify(last);
    for (const k of [alice.key.secret, alice.key2.secret]) {
      assert.ok(!seen.includes(k), 'the client key reached the gateway');
      assert.ok(!seen.includes(k.slice(8, 24)), 'part of the client key reached the gateway');
    }
  });

  it("does not pass the client's own headers on to the gateway", async () => {
    // gateway-steering headers (here mockgw's) must not reach it from outside
    const expected = expectedCharge(CATALOG['prov-main'].rates, kinds({ prompt: 12, completion: 4 }));
    const res = await stack.chat(alice.key.secret, {
      model: 'prov-main', messages: [{ role: 'user', content: 'hello world' }], max_tokens: 4,
    }, { headers: { 'x-mock-usage': 'prompt=1,completion=1', 'x-mock-fault': '500', cookie: 'c=1' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(toMicro(res.headers.get('x-provider-credits')), expected);
    const last = await stack.mock.last();
    for (const h of ['x-mock-usage', 'x-mock-fault', 'cookie']) {
      assert.ok(!(h in last.headers), `${h} reached the gateway`);
    }
  });

  it('charges the deterministic usage of the gateway (max_tokens caps the output)', async () => {
    // mockgw: prompt = 10 + bytes/4 = 12 for "hello world", completion = min(20, max_tokens)
    const expected = expectedCharge(CATALOG['prov-main'].rates, kinds({ prompt: 12, completion: 7 }));
    assert.equal(expected, 15n + 17n);
    const { res, row } = await charged(alice, alice.key, {
      model: 'prov-main', messages: [{ role: 'user', content: 'hello world' }], max_tokens: 7,
    }, expected);
    assert.equal(res.json.usage.prompt_tokens, 12);
    assert.equal(res.json.usage.completion_tokens, 7);
    assert.deepEqual([row.input_tokens, row.output_tokens, row.cache_tokens, row.reasoning_tokens],
      [12, 7, 0, 0]);
  });

  it('charges cache at the input rate and reasoning at the output rate when those are NULL', async () => {
    const usage = { prompt: 1000, completion: 300, cached: 400, reasoning: 120 };
    const expected = expectedCharge(CATALOG['prov-nullrates'].rates, kinds(usage));
    assert.equal(expected, 1500n + 1000n + 1261n + 841n);
    await charged(alice, alice.key, {
      model: 'prov-nullrates', messages: [{ role: 'user', content: 'x' }], max_tokens: 400,
      metadata: { mock_usage: usage },
    }, expected);
  });

  it('charges a second key of the same user from the same balance', async () => {
    const usage = { prompt: 100, completion: 10 };
    const expected = expectedCharge(CATALOG['prov-main'].rates, kinds(usage));
    const bobBefore = stack.balance(bob.id);
    await charged(alice, alice.key2, {
      model: 'prov-main', messages: [{ role: 'user', content: 'k2' }], max_tokens: 10, metadata: { mock_usage: usage },
    }, expected);
    assert.equal(stack.balance(bob.id), bobBefore, "another user's balance is untouched");
  });

  it("charges another user's key to that user only", async () => {
    const usage = { prompt: 50, completion: 5 };
    const expected = expectedCharge(CATALOG['prov-main'].rates, kinds(usage));
    const aliceBefore = stack.balance(alice.id);
    await charged(bob, bob.key, {
      model: 'prov-main', messages: [{ role: 'user', content: 'bob' }], max_tokens: 5, metadata: { mock_usage: usage },
    }, expected);
    assert.equal(stack.balance(alice.id), aliceBefore);
  });

  it('accepts the legacy `message` field as a string, normalised into messages', async () => {
    // "hi": prompt = 10 + 2/4 = 10, completion = 20 (no max_tokens)
    const expected = expectedCharge(CATALOG['prov-main'].rates, kinds({ prompt: 10, completion: 20 }));
    const { res } = await charged(alice, alice.key, { model: 'prov-main', message: 'hi' }, expected);
    assert.equal(res.json.choices[0].message.content, 'mock reply to: hi');
    const last = await stack.mock.last();
    assert.ok(Array.isArray(last.body.messages), JSON.stringify(last.body));
    assert.equal(last.body.messages.length, 1);
    assert.equal(last.body.messages[0].role, 'user');
    assert.equal(last.body.messages[0].content, 'hi');
    assert.ok(!('message' in last.body), 'the legacy field is not forwarded');
  });

  it('accepts the legacy `message` field as a message object', async () => {
    // "hi there": prompt = 10 + 8/4 = 12, completion = 3
    const expected = expectedCharge(CATALOG['prov-main'].rates, kinds({ prompt: 12, completion: 3 }));
    const { res } = await charged(alice, alice.key, {
      model: 'prov-main', message: { role: 'user', content: 'hi there' }, max_tokens: 3,
    }, expected);
    assert.equal(res.json.choices[0].message.content, 'mock reply to: hi there');
    const last = await stack.mock.last();
    assert.deepEqual(last.body.messages, [{ role: 'user', content: 'hi there' }]);
  });

  it('gives every answer its own x-request-id', async () => {
    const seen = new Set();
    for (let i = 0; i < 3; i++) {
      const res = await stack.chat(alice.key.secret, {
        model: 'prov-main', messages: [{ role: 'user', content: `n${i}` }], max_tokens: 1,
      });
      assert.equal(res.status, 200, res.text);
      seen.add(res.headers.get('x-request-id'));
    }
    const res = await stack.chat(null, { model: 'prov-main', messages: [] });
    seen.add(res.headers.get('x-request-id'));
    assert.equal(seen.size, 4);
    assert.ok(!seen.has(null));
  });

  it('keeps the ledger and the balance in agreement', async () => {
    for (const u of [alice, bob]) {
      const [{ spent }] = stack.sql(`SELECT CAST(COALESCE(SUM(credits), 0) AS TEXT) AS spent
        FROM ledger WHERE user_id = ${u.id}`);
      const [{ paid }] = stack.sql(`SELECT CAST(COALESCE(SUM(amount), 0) AS TEXT) AS paid
        FROM balance_events WHERE user_id = ${u.id}`);
      assert.equal(stack.balance(u.id), BigInt(paid) - BigInt(spent), `user ${u.id}`);
    }
    const [{ open }] = stack.sql("SELECT COUNT(*) AS open FROM ledger WHERE status = 'reserved'");
    assert.equal(open, 0, 'no reservation left open');
  });
});

describe('API key lifecycle through providerctl', { timeout: 60000 }, () => {
  let stack;
  let key;
  before(async () => {
    stack = await startStack({
      seed: (s) => {
        seedCatalog(s);
        s.addUser('carol@example.test', 100);
        key = s.createKey('carol@example.test', { name: 'ci' });
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  const body = { model: 'prov-main', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 };

  it('a reissued key replaces the old secret at once', async () => {
    assert.equal((await stack.chat(key.secret, body)).status, 200);
    const out = stack.ctlJSON('key', 'reissue', String(key.id));
    assert.equal(typeof out.secret, 'string', JSON.stringify(out));
    assert.notEqual(out.secret, key.secret);
    assert.match(out.secret, /^sk-prov-/);
    stack.secrets.push(out.secret);
    const old = await stack.chat(key.secret, body);
    assertOpenAIError(old, 401, 'INVALID_API_KEY');
    assertNoSecrets(old, stack);
    const fresh = await stack.chat(out.secret, body);
    assert.equal(fresh.status, 200, fresh.text);
    key = { id: key.id, secret: out.secret };
  });

  it('a deleted key is refused at once', async () => {
    stack.ctl('key', 'delete', String(key.id));
    const res = await stack.chat(key.secret, body);
    assertOpenAIError(res, 401, 'INVALID_API_KEY');
    assertNoSecrets(res, stack);
  });
});
