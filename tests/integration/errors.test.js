// tests/integration/errors.test.js: the refusals of POST /v1/chat/completions
// in the specification's order (docs/internals/transports.md: key 401, blocked 403, request
// 413/400/404, key budget 429, balance 402), each with the OpenAI error shape
// and the service's wire code, the order itself (an earlier check wins even
// when a later one would also refuse), and that a refusal charges nothing,
// never reaches the gateway and reveals no secret.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, seedCatalog, CATALOG } from './lib/server.js';
import {
  assertOpenAIError, assertNoSecrets, chatBody, expectedCharge, kinds, microToText, toMicro,
  unknownKey,
} from './lib/helpers.js';

describe('POST /v1/chat/completions: refusals', { timeout: 120000 }, () => {
  let stack;
  const u = {};   // name -> { id, key }

  function user(s, name, credits, keyOpts = {}) {
    const email = `${name}@example.test`;
    const id = s.addUser(email, credits);
    u[name] = { id, key: s.createKey(email, keyOpts) };
  }

  before(async () => {
    stack = await startStack({
      seed: (s) => {
        seedCatalog(s);
        // prov-main with room for the largest output cap there is
        s.addModel('prov-big', CATALOG['prov-main'].upstream, { rates: CATALOG['prov-main'].rates });
        s.ctl('model', 'set', 'prov-big', '--max-output', '1000000');
        user(s, 'rich', 1000);
        user(s, 'modest', 2);                        // less than the largest output cap costs
        user(s, 'blocked', null, { budget: 0 });     // blocked, budget exhausted, no balance
        user(s, 'budget', 1000, { budget: 0 });      // budget exhausted
        user(s, 'budgetbroke', null, { budget: 0 }); // budget exhausted and no balance
        user(s, 'broke', null);                      // no balance
        user(s, 'spender', 1000, { budget: 1 });     // spends, then its budget is lowered
        user(s, 'gone', 1000);                       // its key gets deleted
        user(s, 'capped', 1000);                     // served once, its cap lowered
        s.ctl('user', 'block', 'blocked@example.test');
        s.ctl('key', 'delete', String(u.gone.key.id));
      },
    });
    for (const n of Object.keys(u)) u[n].balance0 = stack.balance(u[n].id);
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  const ok = chatBody('prov-main');

  // POSTs the gateway has seen: a refusal never reaches it.
  let gwSeq = 0;
  async function gatewayCalled() {
    gwSeq = (await stack.mock.last()).seq;
  }

  async function refused(res, status, code, opts) {
    const e = assertOpenAIError(res, status, code, opts);
    assertNoSecrets(res, stack);
    assert.equal(res.headers.get('x-provider-credits') ?? '0', '0', 'a refusal shows no charge');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff', 'every JSON answer: nosniff');
    assert.equal((await stack.mock.last()).seq, gwSeq, `the gateway was called for a ${status}`);
    return e;
  }

  describe('401 INVALID_API_KEY', () => {
    it('without a key', async () => {
      await refused(await stack.chat(null, ok), 401, 'INVALID_API_KEY');
    });

    it('with a malformed Authorization header', async () => {
      for (const authorization of ['Bearer', 'Bearer ', 'Bearer not-a-key', 'Bearer sk-prov-short',
        `Basic ${Buffer.from('user:pass').toString('base64')}`, u.rich.key.secret]) {
        const res = await stack.chat(null, ok, { headers: { authorization } });
        await refused(res, 401, 'INVALID_API_KEY');
      }
    });

    it('with an unknown key', async () => {
      await refused(await stack.chat(unknownKey(), ok), 401, 'INVALID_API_KEY');
    });

    it('with an unknown key even when the body is garbage, huge or names no model', async () => {
      const key = unknownKey();
      await refused(await stack.chat(key, '{{{ not json'), 401, 'INVALID_API_KEY');
      await refused(await stack.chat(key, { model: 'no-such-model', messages: [] }), 401, 'INVALID_API_KEY');
      await refused(await stack.chat(key, { ...ok, stream: true, tools: [] }), 401, 'INVALID_API_KEY');
      await refused(await stack.chat(key, 'x'.repeat(70000)), 401, 'INVALID_API_KEY');
    });

    it('with a deleted key', async () => {
      await refused(await stack.chat(u.gone.key.secret, ok), 401, 'INVALID_API_KEY');
    });
  });

  describe('403 USER_BLOCKED', () => {
    it('even with the key budget exhausted and no balance', async () => {
      await refused(await stack.chat(u.blocked.key.secret, ok), 403, 'USER_BLOCKED');
    });

    it('before the request is read (garbage body, unknown model)', async () => {
      await refused(await stack.chat(u.blocked.key.secret, '{{{'), 403, 'USER_BLOCKED');
      await refused(await stack.chat(u.blocked.key.secret, chatBody('no-such-model')), 403, 'USER_BLOCKED');
    });
  });

  describe('429 API_KEY_CREDIT_BUDGET_EXCEEDED', () => {
    it('when the key budget is exhausted', async () => {
      await refused(await stack.chat(u.budget.key.secret, ok), 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    });

    it('before the balance check (zero balance too)', async () => {
      await refused(await stack.chat(u.budgetbroke.key.secret, ok), 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    });

    it('once the spending of the last 7 days reaches the budget', async () => {
      const usage = { prompt: 100, completion: 10 };
      const charge = expectedCharge(CATALOG['prov-main'].rates, kinds(usage));
      const first = await stack.chat(u.spender.key.secret, { ...ok, metadata: { mock_usage: usage } });
      assert.equal(first.status, 200, first.text);
      await gatewayCalled();
      assert.equal(toMicro(first.headers.get('x-provider-credits')), charge);
      // the budget becomes exactly what was spent: nothing is left for the next request
      stack.ctl('key', 'budget', String(u.spender.key.id), microToText(charge));
      const second = await stack.chat(u.spender.key.secret, { ...ok, metadata: { mock_usage: usage } });
      await refused(second, 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
      assert.equal(stack.balance(u.spender.id), u.spender.balance0 - charge, 'charged once only');
      stack.ctl('key', 'budget', String(u.spender.key.id), 'none');
      const third = await stack.chat(u.spender.key.secret, { ...ok, metadata: { mock_usage: usage } });
      assert.equal(third.status, 200, `without a budget the key works again: ${third.text}`);
      await gatewayCalled();
      u.spender.balance0 -= 2n * charge;
    });

    it('after the request is validated (malformed JSON is still 400)', async () => {
      await refused(await stack.chat(u.budget.key.secret, '{"model":'), 400, 'INVALID_REQUEST');
      await refused(await stack.chat(u.budget.key.secret, chatBody('no-such-model')), 404, 'MODEL_NOT_FOUND');
    });
  });

  describe('402 INSUFFICIENT_CREDITS', () => {
    it('with a zero balance', async () => {
      await refused(await stack.chat(u.broke.key.secret, ok), 402, 'INSUFFICIENT_CREDITS');
    });
  });

  describe('404 MODEL_NOT_FOUND', () => {
    it('for an unknown model, even with a zero balance', async () => {
      await refused(await stack.chat(u.rich.key.secret, chatBody('no-such-model')), 404, 'MODEL_NOT_FOUND');
      await refused(await stack.chat(u.broke.key.secret, chatBody('no-such-model')), 404, 'MODEL_NOT_FOUND');
    });

    it('for a disabled model', async () => {
      await refused(await stack.chat(u.rich.key.secret, chatBody('prov-disabled')), 404, 'MODEL_NOT_FOUND');
    });

    it('for an upstream id used as the model name', async () => {
      await refused(await stack.chat(u.rich.key.secret, chatBody('mock-main')), 404, 'MODEL_NOT_FOUND');
    });
  });

  describe('400 INVALID_REQUEST', () => {
    it('for stream: true (no streaming on this transport)', async () => {
      const e = await refused(await stack.chat(u.rich.key.secret, { ...ok, stream: true }), 400, 'INVALID_REQUEST');
      assert.match(e.message, /stream/i);
    });

    for (const [field, value] of [
      ['tools', [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }]],
      ['functions', [{ name: 'f', parameters: { type: 'object' } }]],
      ['tool_choice', 'auto'],
    ]) {
      it(`for ${field} (no tools on this transport)`, async () => {
        const res = await stack.chat(u.rich.key.secret, { ...ok, [field]: value });
        await refused(res, 400, 'INVALID_REQUEST');
      });
    }

    it('for malformed JSON, a non-object and an empty body', async () => {
      for (const body of ['{"model": "prov-main", "messages": [', 'null', '[1,2]', '"text"', '']) {
        await refused(await stack.chat(u.rich.key.secret, body), 400, 'INVALID_REQUEST');
      }
    });

    it('naming the missing or malformed field in param', async () => {
      const k = u.rich.key.secret;
      await refused(await stack.chat(k, { messages: ok.messages }), 400, 'INVALID_REQUEST', { param: 'model' });
      await refused(await stack.chat(k, { model: 42, messages: ok.messages }), 400, 'INVALID_REQUEST', { param: 'model' });
      await refused(await stack.chat(k, { model: 'prov-main' }), 400, 'INVALID_REQUEST', { param: 'messages' });
      await refused(await stack.chat(k, { model: 'prov-main', messages: 'hi' }), 400, 'INVALID_REQUEST', { param: 'messages' });
    });

    it('for fields of the wrong type (max_tokens, temperature, a message)', async () => {
      const k = u.rich.key.secret;
      let e = await refused(await stack.chat(k, { ...ok, max_tokens: 'lots' }), 400, 'INVALID_REQUEST');
      assert.equal(e.param, 'max_tokens');
      e = await refused(await stack.chat(k, { ...ok, max_tokens: -5 }), 400, 'INVALID_REQUEST');
      assert.equal(e.param, 'max_tokens');
      e = await refused(await stack.chat(k, { ...ok, temperature: 'hot' }), 400, 'INVALID_REQUEST');
      assert.equal(e.param, 'temperature');
      e = await refused(await stack.chat(k, { model: 'prov-main', messages: [42] }), 400, 'INVALID_REQUEST');
      assert.match(String(e.param), /^messages/);
    });
  });

  describe('the worst-case reservation', () => {
    it('402 when max_tokens could cost more than the balance, before calling the gateway', async () => {
      // 10^6 output tokens (the largest cap) at the reasoning rate, 3.456789 credits per 1M
      // (above the output rate: the worst case): ~3.46 credits > 2
      const res = await stack.chat(u.modest.key.secret, { ...chatBody('prov-big'), max_tokens: 1000000 });
      const e = await refused(res, 402, 'INSUFFICIENT_CREDITS');
      assert.match(e.message, /may cost up to 3\.45/);
    });

    it('a max_tokens above the model\'s maximum output is lowered to it (and said so), not refused', async () => {
      const res = await stack.chat(u.capped.key.secret, { ...ok, max_tokens: 1000000 });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get('x-provider-output-cap'), '32768');
      assert.equal((await stack.mock.last()).body.max_tokens, 32768);
      await gatewayCalled();
    });
  });

  describe('413 REQUEST_TOO_LARGE', () => {
    const big = () => ({
      model: 'prov-main', messages: [{ role: 'user', content: 'y'.repeat(70000) }],
    });

    it('for a body over ProviderMaxBodySize', async () => {
      await refused(await stack.chat(u.rich.key.secret, big()), 413, 'REQUEST_TOO_LARGE');
    });

    it('for a chunked body over ProviderMaxBodySize', async () => {
      const bytes = Buffer.from(JSON.stringify(big()));
      const stream = new ReadableStream({
        start(c) {
          for (let i = 0; i < bytes.length; i += 8192) c.enqueue(bytes.subarray(i, i + 8192));
          c.close();
        },
      });
      await refused(await stack.chat(u.rich.key.secret, stream), 413, 'REQUEST_TOO_LARGE');
    });

    it('but accepts a body just under it', async () => {
      const body = { model: 'prov-main', messages: [{ role: 'user', content: '' }], max_tokens: 1 };
      body.messages[0].content = 'z'.repeat(65536 - JSON.stringify(body).length - 10);
      const res = await stack.chat(u.rich.key.secret, body);
      assert.equal(res.status, 200, res.text);
      await gatewayCalled();
      u.rich.balance0 -= toMicro(res.headers.get('x-provider-credits'));
    });
  });

  describe('a model without input/output rates', () => {
    it('is refused with 503 MODEL_NOT_PRICED, not served for free', async () => {
      await refused(await stack.chat(u.rich.key.secret, chatBody('prov-unpriced')), 503, 'MODEL_NOT_PRICED');
    });
  });

  describe('methods and paths', () => {
    it('405 METHOD_NOT_ALLOWED with an Allow header for GET /v1/chat/completions', async () => {
      const res = await stack.request('GET', '/v1/chat/completions', { key: u.rich.key.secret });
      await refused(res, 405, 'METHOD_NOT_ALLOWED');
      assert.match(res.headers.get('allow') || '', /\bPOST\b/, 'a 405 names the allowed methods');
    });

    it('405 METHOD_NOT_ALLOWED with an Allow header for POST /v1/models', async () => {
      const res = await stack.request('POST', '/v1/models', { body: {} });
      await refused(res, 405, 'METHOD_NOT_ALLOWED');
      assert.match(res.headers.get('allow') || '', /\bGET\b/, 'a 405 names the allowed methods');
    });

    it('404 NOT_FOUND in the OpenAI shape for an unknown /v1 path', async () => {
      const res = await stack.request('POST', '/v1/no-such-endpoint', { key: u.rich.key.secret, body: ok });
      await refused(res, 404, 'NOT_FOUND');
    });
  });

  it('charges nothing for any refusal', async () => {
    for (const [name, x] of Object.entries(u)) {
      if (name === 'capped') continue;   // served
      assert.equal(stack.balance(x.id), x.balance0, `balance of ${name}`);
    }
    const rows = stack.sql(`SELECT user_id, status, CAST(credits AS TEXT) AS credits FROM ledger
      WHERE user_id NOT IN (${u.spender.id}, ${u.rich.id}, ${u.capped.id})`);
    for (const r of rows) assert.equal(r.credits, '0', JSON.stringify(r));
    const open = stack.sql("SELECT request_id FROM ledger WHERE status = 'reserved'");
    assert.deepEqual(open, [], 'no reservation left open');
  });
});
