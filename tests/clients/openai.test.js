// tests/clients/openai.test.js: client compatibility with the official
// `openai` npm SDK (pinned in tests/package.json): against the integration
// harness's real apache2 + mod_provider + mock gateway it lists the catalog,
// creates a chat completion (and reads the service's credit figures through
// the SDK), and sees the service's refusals as the SDK's own error classes
// (a bad key is an AuthenticationError with status 401 and our wire code).
// The model's own upstream conditions keep the codes the SDK acts on: a
// context overflow is error.code context_length_exceeded, the gateway's 429
// is a RateLimitError that the SDK retries after its Retry-After (and only
// the answered request is charged), an overload is server_is_overloaded.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startStack, seedCatalog, CATALOG, DEFAULT_UPSTREAMS } from '../integration/lib/server.js';
import { expectedCharge, kinds, toMicro, unknownKey } from '../integration/lib/helpers.js';
import { OPENAI_FAULTS, seedFaults, ledgerRows, timedFetch } from './lib/upstream.js';

describe('the official OpenAI SDK', { timeout: 120000 }, () => {
  let stack;
  let user;
  let client;

  before(async () => {
    stack = await startStack({
      models: [...DEFAULT_UPSTREAMS, ...Object.values(OPENAI_FAULTS)],
      seed: (s) => {
        seedCatalog(s);
        seedFaults(s, OPENAI_FAULTS);
        user = { id: s.addUser('sdk@example.test', 100) };
        user.key = s.createKey('sdk@example.test');
        s.addUser('sdk-broke@example.test');
        user.brokeKey = s.createKey('sdk-broke@example.test');
      },
    });
    // maxRetries 0: the SDK retries 429 and 5xx; we want the first answer.
    client = new OpenAI({ apiKey: user.key.secret, baseURL: `${stack.baseURL}/v1`, maxRetries: 0 });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  it('lists the catalog with models.list()', async () => {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.ok(ids.includes('prov-main'), ids.join(','));
    assert.ok(ids.includes('prov-nullrates'), ids.join(','));
    assert.ok(!ids.includes('prov-disabled'), ids.join(','));
    assert.ok(!ids.includes('prov-unlisted'), ids.join(','));
    const one = await client.models.retrieve('prov-main');
    assert.deepEqual([one.id, one.object, one.owned_by], ['prov-main', 'model', 'provider']);
    assert.ok(one.created > 1e9, String(one.created));
    await assert.rejects(client.models.retrieve('prov-disabled'), OpenAI.NotFoundError);
  });

  it('creates a chat completion and exposes the charge', async () => {
    const before = stack.balance(user.id);
    const { data, response } = await client.chat.completions.create({
      model: 'prov-main',
      messages: [{ role: 'user', content: 'hello world' }],
      max_tokens: 7,
    }).withResponse();
    assert.equal(data.model, 'prov-main');
    assert.equal(data.choices[0].message.role, 'assistant');
    assert.equal(data.choices[0].message.content, 'mock reply to: hello world');
    assert.equal(data.usage.prompt_tokens, 12);
    assert.equal(data.usage.completion_tokens, 7);
    const expected = expectedCharge(CATALOG['prov-main'].rates, kinds({ prompt: 12, completion: 7 }));
    assert.equal(toMicro(response.headers.get('x-provider-credits')), expected);
    assert.equal(toMicro(data.usage.credits), expected);
    assert.ok(response.headers.get('x-request-id'));
    assert.equal(stack.balance(user.id), before - expected);
  });

  it('surfaces a bad key as AuthenticationError (401)', async () => {
    const bad = new OpenAI({ apiKey: unknownKey(), baseURL: `${stack.baseURL}/v1`, maxRetries: 0 });
    await assert.rejects(
      bad.chat.completions.create({ model: 'prov-main', messages: [{ role: 'user', content: 'hi' }] }),
      (err) => {
        assert.ok(err instanceof OpenAI.AuthenticationError, `${err?.constructor?.name}: ${err}`);
        assert.equal(err.status, 401);
        assert.equal(err.code, 'INVALID_API_KEY');
        assert.equal(typeof err.message, 'string');
        return true;
      },
    );
  });

  it('surfaces an unknown model as NotFoundError (404)', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }),
      (err) => {
        assert.ok(err instanceof OpenAI.NotFoundError, `${err?.constructor?.name}: ${err}`);
        assert.equal(err.code, 'MODEL_NOT_FOUND');
        return true;
      },
    );
  });

  it('surfaces streaming as BadRequestError (400)', async () => {
    await assert.rejects(
      client.chat.completions.create({
        model: 'prov-main', messages: [{ role: 'user', content: 'hi' }], stream: true,
      }),
      (err) => {
        assert.ok(err instanceof OpenAI.BadRequestError, `${err?.constructor?.name}: ${err}`);
        assert.equal(err.status, 400);
        assert.equal(err.code, 'INVALID_REQUEST');
        return true;
      },
    );
  });

  it('surfaces a zero balance as an APIError with status 402', async () => {
    const broke = new OpenAI({ apiKey: user.brokeKey.secret, baseURL: `${stack.baseURL}/v1`, maxRetries: 0 });
    await assert.rejects(
      broke.chat.completions.create({ model: 'prov-main', messages: [{ role: 'user', content: 'hi' }] }),
      (err) => {
        assert.ok(err instanceof OpenAI.APIError, `${err?.constructor?.name}: ${err}`);
        assert.equal(err.status, 402);
        assert.equal(err.code, 'INSUFFICIENT_CREDITS');
        return true;
      },
    );
  });

  it('sees a context overflow as error.code context_length_exceeded, uncharged', async () => {
    const rows = ledgerRows(stack, user.id).length;
    const before = stack.balance(user.id);
    await assert.rejects(
      client.chat.completions.create({ model: 'prov-ctx', messages: [{ role: 'user', content: 'hi' }] }),
      (err) => {
        assert.ok(err instanceof OpenAI.BadRequestError, `${err?.constructor?.name}: ${err}`);
        assert.equal(err.status, 400);
        assert.equal(err.code, 'context_length_exceeded');
        assert.equal(err.type, 'invalid_request_error');
        assert.match(err.message, /prompt is too long: 250000 tokens > 200000 maximum/);
        return true;
      },
    );
    await stack.billingSettled();
    assert.equal(stack.balance(user.id), before);
    const added = ledgerRows(stack, user.id, rows);
    assert.ok(added.length > 0 && added.every((r) => r.credits === '0' && r.status === 'refused'),
      JSON.stringify(added));
  });

  it("retries the gateway's 429 after its Retry-After, then is charged once", async () => {
    const times = [];
    const retrying = new OpenAI({ apiKey: user.key.secret, baseURL: `${stack.baseURL}/v1`,
      maxRetries: 2, fetch: timedFetch(times) });
    const rows = ledgerRows(stack, user.id).length;
    const before = stack.balance(user.id);
    const { data, response } = await retrying.chat.completions.create({
      model: 'prov-429-once', messages: [{ role: 'user', content: 'throttled once' }], max_tokens: 4,
    }).withResponse();
    assert.equal(data.choices[0].message.content, 'mock reply to: throttled once');
    assert.equal(times.length, 2, 'one 429, then the answer');
    const waited = times[1] - times[0];
    assert.ok(waited >= 1900 && waited < 5000, `the SDK waited ${waited} ms (Retry-After: 2)`);
    const charged = toMicro(response.headers.get('x-provider-credits'));
    assert.ok(charged > 0n);
    assert.equal(stack.balance(user.id), before - charged, 'only the answered request is charged');
    const added = ledgerRows(stack, user.id, rows);
    assert.equal(added.length, 2, JSON.stringify(added));
    assert.deepEqual(added.map((r) => r.credits), ['0', String(charged)]);
    assert.equal(added[1].status, 'ok');
    assert.equal(added[0].status, 'refused');
  });

  it("sees the gateway's 429 as a RateLimitError with rate_limit_exceeded and Retry-After", async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'prov-429', messages: [{ role: 'user', content: 'hi' }] }),
      (err) => {
        assert.ok(err instanceof OpenAI.RateLimitError, `${err?.constructor?.name}: ${err}`);
        assert.equal(err.status, 429);
        assert.equal(err.code, 'rate_limit_exceeded');
        assert.equal(err.type, 'rate_limit_error');
        assert.equal(err.headers.get('retry-after'), '2');
        assert.match(err.message, /try again in 2s/);
        return true;
      },
    );
  });

  it('sees an overload as error.code server_is_overloaded (503)', async () => {
    const before = stack.balance(user.id);
    await assert.rejects(
      client.chat.completions.create({ model: 'prov-overloaded', messages: [{ role: 'user', content: 'hi' }] }),
      (err) => {
        assert.ok(err instanceof OpenAI.InternalServerError, `${err?.constructor?.name}: ${err}`);
        assert.equal(err.status, 503);
        assert.equal(err.code, 'server_is_overloaded');
        assert.equal(err.type, 'server_error');
        return true;
      },
    );
    await stack.billingSettled();
    assert.equal(stack.balance(user.id), before);
  });
});
