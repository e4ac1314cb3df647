// tests/integration/catalog.test.js: the public catalog, GET /v1/models
// (the specification's "Catalog"): its shape (publicId, display_name, pricing
// in credits per 1M tokens as JSON numbers, null where not configured), that
// it lists only enabled catalog models the gateway offers right now, that it
// follows the gateway's list after the cache TTL, that it keeps the last
// known list while the gateway is down, and that a gateway that was never
// reachable gives an honest OpenAI-shaped error instead of an empty list.
// With anthropic-version or x-api-key (the Anthropic SDK, Claude Code) the
// list is Anthropic's: the models open to Messages, paged with limit,
// after_id and before_id, errors in Anthropic's shape; GET /v1/models/{id}
// answers one model in either shape.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, seedCatalog, CATALOG, DEFAULT_UPSTREAMS, freePort, sleep } from './lib/server.js';
import { assertOpenAIError, assertNoSecrets, eventually, unknownKey } from './lib/helpers.js';

const PROVIDER_LOG = /\[provider:(warn|error)\]/;

// Models the default mock gateway offers and that are enabled in the catalog.
const VISIBLE = ['prov-delay', 'prov-fault-500', 'prov-fault-cut', 'prov-fault-malformed',
  'prov-fault-overflow', 'prov-fault-reset', 'prov-main', 'prov-nullrates', 'prov-slow',
  'prov-trickle', 'prov-unpriced'];

function ids(res) {
  return res.json.data.map((m) => m.id).sort();
}

describe('GET /v1/models with the gateway up', { timeout: 120000 }, () => {
  let stack;
  before(async () => {
    stack = await startStack({ seed: seedCatalog });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  it('is public and answers an OpenAI-style list', async () => {
    const res = await stack.models();
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') || '', /^application\/json/);
    assert.ok(res.headers.get('x-request-id'), 'x-request-id');
    assert.equal(res.json.object, 'list');
    assert.ok(Array.isArray(res.json.data), res.text);
    assertNoSecrets(res, stack);
  });

  it('lists exactly the enabled catalog models the gateway offers', async () => {
    const res = await stack.models();
    assert.equal(res.status, 200, res.text);
    // prov-disabled: disabled; prov-unlisted: its upstream is not on the
    // gateway; mock-gateway-only: on the gateway but not in the catalog.
    assert.deepEqual(ids(res), VISIBLE);
    assert.ok(!res.text.includes('mock-gateway-only'), 'a gateway-only model leaked into the catalog');
  });

  it('gives each entry id = publicId, display_name and pricing as numbers', async () => {
    const res = await stack.models();
    for (const m of res.json.data) {
      assert.equal(m.id, m.publicId, JSON.stringify(m));
      assert.equal(m.display_name, CATALOG[m.id].name, JSON.stringify(m));
    }
    const main = res.json.data.find((m) => m.id === 'prov-main');
    assert.deepEqual(main.pricing, { input: 1.234567, output: 2.345678, cache: 0.123457, reasoning: 3.456789 });
    // numbers in the JSON text, not strings
    assert.match(res.text, /"input"\s*:\s*1\.234567\b/);
    assert.match(res.text, /"reasoning"\s*:\s*3\.456789\b/);
  });

  it('gives each entry its maximum output: its own, else ProviderDefaultMaxTokens', async () => {
    let res = await stack.models();
    for (const m of res.json.data) assert.equal(m.max_output_tokens, 32768, JSON.stringify(m));
    stack.ctl('model', 'set', 'prov-nullrates', '--max-output', '64000');
    await eventually(async () => {
      res = await stack.models();
      assert.equal(res.json.data.find((m) => m.id === 'prov-nullrates').max_output_tokens, 64000);
    }, 10000, 200);
    assert.equal(res.json.data.find((m) => m.id === 'prov-main').max_output_tokens, 32768);
    stack.ctl('model', 'set', 'prov-nullrates', '--max-output', 'default');
  });

  it('shows null for rates that are not configured', async () => {
    const res = await stack.models();
    const nul = res.json.data.find((m) => m.id === 'prov-nullrates');
    assert.deepEqual(nul.pricing, { input: 2.5, output: 7.000001, cache: null, reasoning: null });
    const unpriced = res.json.data.find((m) => m.id === 'prov-unpriced');
    assert.ok(unpriced.pricing === null
      || (unpriced.pricing.input === null && unpriced.pricing.output === null
        && unpriced.pricing.cache === null && unpriced.pricing.reasoning === null),
    `unpriced model: ${JSON.stringify(unpriced)}`);
  });

  it('ignores an Authorization header (even a key that does not exist)', async () => {
    const res = await stack.models({ key: unknownKey() });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(ids(res), VISIBLE);
  });

  it('shows a model once it is enabled, hides it once disabled', async () => {
    // ProviderModelsCacheTTL 1: give any cache a few TTLs to catch up
    stack.ctl('model', 'enable', 'prov-disabled');
    await eventually(async () => {
      assert.deepEqual(ids(await stack.models()), [...VISIBLE, 'prov-disabled'].sort());
    });
    stack.ctl('model', 'disable', 'prov-disabled');
    await eventually(async () => {
      assert.deepEqual(ids(await stack.models()), VISIBLE);
    });
  });

  it('follows the gateway list after the cache TTL', async () => {
    await stack.mock.restart(DEFAULT_UPSTREAMS.filter((u) => u !== 'mock-null'));
    await eventually(async () => {
      const res = await stack.models();
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(ids(res), VISIBLE.filter((id) => id !== 'prov-nullrates'));
    });
    await stack.mock.restart(DEFAULT_UPSTREAMS);
    await eventually(async () => {
      assert.deepEqual(ids(await stack.models()), VISIBLE);
    });
  });

  it('keeps the last known list while the gateway is down', async () => {
    const first = await stack.models();
    assert.deepEqual(ids(first), VISIBLE);
    await stack.expectingLog(PROVIDER_LOG, async () => {
      await stack.mock.stop();
      await sleep(2500);  // past the TTL (1 s, whole seconds): the module asks again and fails
      for (let i = 0; i < 3; i++) {
        const res = await stack.models();
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(ids(res), VISIBLE);
        assert.deepEqual(res.json.data.find((m) => m.id === 'prov-main').pricing,
          first.json.data.find((m) => m.id === 'prov-main').pricing);
        assertNoSecrets(res, stack);
      }
      await stack.mock.start(DEFAULT_UPSTREAMS);
      await sleep(2500);
    });
    assert.deepEqual(ids(await stack.models()), VISIBLE);
  });
});

describe('GET /v1/models with the gateway down from the start', { timeout: 60000 }, () => {
  let stack;
  before(async () => {
    const closed = await freePort();
    stack = await startStack({ seed: seedCatalog, mockgw: false,
      gatewayURL: `http://127.0.0.1:${closed}` });
    stack.closedPort = closed;
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  it('answers an honest 502/503 error, not an empty list', async () => {
    await stack.expectingLog(PROVIDER_LOG, async () => {
      const res = await stack.models();
      assert.ok(res.status === 502 || res.status === 503, `status ${res.status}: ${res.text}`);
      const e = assertOpenAIError(res, res.status, res.json?.error?.code);
      assert.match(String(e.code), /^[A-Z][A-Z_]+$/, `a wire code: ${res.text}`);
      assert.ok(!('data' in res.json), `an error carries no list: ${res.text}`);
      assertNoSecrets(res, stack, [`:${stack.closedPort}`]);
    });
  });
});

describe('GET /v1/models in Anthropic\'s shape, and one model by id', { timeout: 120000 }, () => {
  let stack;
  const MESSAGES = ['prov-delay', 'prov-main', 'prov-nullrates', 'prov-trickle'];
  const anth = { 'anthropic-version': '2023-06-01' };
  before(async () => {
    stack = await startStack({ seed: (s) => {
      seedCatalog(s);
      for (const id of MESSAGES) s.ctl('model', 'set', id, '--messages', 'on');
      s.ctl('model', 'set', 'prov-disabled', '--messages', 'on');
    } });
  });
  after(async () => {
    if (stack) await stack.stop();
  });
  const get = (q, headers = anth) => stack.request('GET', `/v1/models${q}`, { headers });

  it('answers the Messages models with type, created_at and the page fields', async () => {
    for (const headers of [anth, { 'x-api-key': unknownKey() }]) {
      const res = await get('', headers);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json.data.map((m) => m.id), MESSAGES);
      assert.equal(res.json.has_more, false);
      assert.equal(res.json.first_id, 'prov-delay');
      assert.equal(res.json.last_id, 'prov-trickle');
      assert.equal(res.json.object, undefined);
      const main = res.json.data.find((m) => m.id === 'prov-main');
      assert.equal(main.type, 'model');
      assert.equal(main.display_name, 'Main Model');
      assert.equal(main.publicId, 'prov-main');
      assert.deepEqual(main.pricing, { input: 1.234567, output: 2.345678, cache: 0.123457, reasoning: 3.456789 });
      assert.match(main.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.ok(Math.abs(Date.parse(main.created_at) - Date.now()) < 3600e3, main.created_at);
      assertNoSecrets(res, stack);
    }
    // a bearer token without anthropic-version stays OpenAI's list
    const openai = await stack.models({ key: unknownKey() });
    assert.equal(openai.json.object, 'list');
    assert.ok(openai.json.data.every((m) => typeof m.created === 'number' && m.created > 0));
  });

  it('pages forwards and backwards', async () => {
    let res = await get('?limit=2');
    assert.deepEqual([res.json.data.map((m) => m.id), res.json.has_more], [['prov-delay', 'prov-main'], true]);
    res = await get(`?limit=2&after_id=${res.json.last_id}`);
    assert.deepEqual([res.json.data.map((m) => m.id), res.json.has_more], [['prov-nullrates', 'prov-trickle'], false]);
    res = await get(`?limit=1&before_id=${res.json.first_id}`);
    assert.deepEqual([res.json.data.map((m) => m.id), res.json.has_more], [['prov-main'], true]);
    res = await get('?after_id=prov-trickle');
    assert.deepEqual([res.json.data, res.json.has_more, res.json.first_id, res.json.last_id], [[], false, null, null]);
  });

  it('refuses bad page arguments in Anthropic\'s error shape', async () => {
    for (const q of ['?limit=0', '?limit=1001', '?limit=x', '?after_id=a&before_id=b']) {
      const res = await get(q);
      assert.equal(res.status, 400, `${q}: ${res.text}`);
      assert.equal(res.json.type, 'error');
      assert.equal(res.json.error.type, 'invalid_request_error');
    }
    const post = await stack.request('POST', '/v1/models', { headers: anth, body: {} });
    assert.equal(post.status, 405);
    assert.equal(post.json.type, 'error');
  });

  it('answers GET /v1/models/{id} in either shape, 404 for what is not offered', async () => {
    let res = await stack.request('GET', '/v1/models/prov-main', { headers: anth });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.type, 'model');
    assert.equal(res.json.id, 'prov-main');
    res = await stack.request('GET', '/v1/models/prov-main');
    assert.equal(res.json.object, 'model');
    assert.equal(res.json.id, 'prov-main');
    // prov-fault-500 is not open to Messages; prov-disabled is disabled
    res = await stack.request('GET', '/v1/models/prov-fault-500');
    assert.equal(res.status, 200, res.text);
    for (const id of ['prov-fault-500', 'prov-disabled', 'prov-unlisted', 'nope']) {
      res = await stack.request('GET', `/v1/models/${id}`, { headers: anth });
      assert.equal(res.status, 404, `${id}: ${res.text}`);
      assert.equal(res.json.error.type, 'not_found_error');
    }
    assertOpenAIError(await stack.request('GET', '/v1/models/prov-disabled'), 404, 'MODEL_NOT_FOUND', { param: 'model' });
  });
});
