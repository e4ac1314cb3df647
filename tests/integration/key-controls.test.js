// tests/integration/key-controls.test.js: an API key's own controls (issue
// 35, item 3), on SQLite and (PROVIDER_TEST_PGSQL=1) PostgreSQL, on two
// httpd children behind mod_remoteip (X-Forwarded-For from the test, the
// trusted proxy), the clock standing still (ProviderClockFile). Set by the
// key's owner with PATCH /v1/keys/{id} (each bad value a 400 naming the
// field, another user's key 404) and by `providerctl key set`; shown in
// GET /v1/keys and `providerctl key show`. Each control refuses in every
// transport's own shape (chat and Responses: OpenAI's; Messages:
// Anthropic's): an expired key 401 API_KEY_EXPIRED once the clock passes
// its expiry; a model outside its list 403 MODEL_NOT_ALLOWED (param model);
// a client address outside its CIDRs (IPv4 and IPv6) 403
// ADDRESS_NOT_ALLOWED; the rpm+1st request of a minute (counted across the
// transports and both children) 429 API_KEY_RATE_LIMITED with Retry-After,
// and again allowed a minute later; 64 requests at once on a slow model
// with max_in_flight 4: exactly 4 go through, 60 get 429
// API_KEY_IN_FLIGHT_LIMIT with Retry-After and are charged nothing. The
// in-flight count comes back after a plain answer, a stream, a stream the
// client breaks, and a refusal after it was taken (unknown model, gateway
// error).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, freePort, seedCatalog, HTTPD_MODULES } from './lib/server.js';
import { startIdentityProviders } from './lib/idp.js';
import { signInUser } from './lib/signin.js';
import { assertOpenAIError, chatBody, eventually } from './lib/helpers.js';
import {
  seedMessagesCatalog, messages, messagesBody, messagesStream, assertAnthropicError,
} from './lib/messages.js';

const N = 64;
const IN_FLIGHT = 4;
const SLOW = 'kc-slow';            // answers after 4 s: the burst's first 4 are still in flight

describe('key controls: expiry, models, addresses, rpm, max_in_flight', { timeout: 240000 }, () => {
  let stack;
  let kit;
  let alice;
  let bob;
  let now;
  let keyNo = 0;
  let addr = 0;
  const remoteip = [
    `LoadModule remoteip_module ${HTTPD_MODULES}/mod_remoteip.so`,
    'RemoteIPHeader X-Forwarded-For',
    'RemoteIPInternalProxy 127.0.0.1',
  ].join('\n');
  /** A client address of its own for each request (TEST-NET-3). */
  const fresh = () => `203.0.113.${(++addr % 250) + 1}`;

  async function api(jar, method, path, body) {
    const h = { origin: stack.baseURL };
    let payload;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] = 'application/json';
    }
    const r = await jar.fetch(`${stack.baseURL}${path}`, { method, headers: h, body: payload });
    const text = await r.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: r.status, headers: r.headers, text, json };
  }

  const signIn = (login) => signInUser(stack, login);

  /** A fresh key of alice's through the API (never used: nothing cached). */
  async function newKey() {
    const res = await api(alice.jar, 'POST', '/v1/keys', { name: `kc-${++keyNo}` });
    assert.equal(res.status, 201, res.text);
    stack.secrets.push(res.json.secret);
    return res.json;
  }

  async function patch(key, body, who = alice) {
    return api(who.jar, 'PATCH', `/v1/keys/${key.id}`, body);
  }

  /** A key with these controls set through PATCH; checks the answer shows them. */
  async function keyWith(controls) {
    const k = await newKey();
    const res = await patch(k, controls);
    assert.equal(res.status, 200, res.text);
    for (const [f, v] of Object.entries(controls)) {
      if (f !== 'addresses') assert.deepEqual(res.json[f], v, f);
    }
    return k;
  }

  const from = (ip) => ({ headers: { 'x-forwarded-for': ip || fresh() } });
  const chat = (k, model = 'prov-main', ip, extra = {}) =>
    stack.chat(k.secret, chatBody(model, extra), from(ip));
  const resp = (k, model = 'prov-main', ip) => stack.request('POST', '/v1/responses',
    { key: k.secret, body: { model, input: 'hello' }, ...from(ip) });
  const msg = (k, model = 'claude-main', ip) =>
    messages(stack, k.secret, messagesBody(model), from(ip));

  /** The refusal in all three transports' shapes. */
  async function refusedEverywhere(k, status, code, types, { ip, param, models = {} } = {}) {
    const c = await chat(k, models.chat, ip);
    assertOpenAIError(c, status, code, param === undefined ? {} : { param });
    assert.equal(c.json.error.type, types.openai);
    const r = await resp(k, models.responses, ip);
    assertOpenAIError(r, status, code, param === undefined ? {} : { param });
    assert.equal(r.json.error.type, types.openai);
    const m = await msg(k, models.messages, ip);
    assertAnthropicError(m, status, types.anthropic, code);
    return [c, r, m];
  }

  before(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    now = Math.floor(Date.now() / 1000);
    stack = await startStack({
      port, clock: now, children: 2, threads: N / 2 + 4,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}\n${remoteip}\n`,
      seed: (s) => {
        seedCatalog(s);
        seedMessagesCatalog(s);
        s.addModel(SLOW, 'mock-fault-delay-4000', { rates: { input: '1', output: '1' } });
      },
    });
    alice = await signIn('alice');
    bob = await signIn('bob');
    stack.ctl('balance', 'add', String(alice.id), '10000', '--reason', 'test');
  });

  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      for (const j of [alice, bob]) if (j) for (const c of j.jar.cookies) if (c.value) stack.secrets.push(c.value);
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  it('PATCH /v1/keys/{id}: sets, shows in GET /v1/keys, clears with null; bad values are 400 naming the field', async () => {
    const k = await newKey();
    const fresh0 = (await api(alice.jar, 'GET', '/v1/keys')).json.data.find((x) => x.id === k.id);
    for (const f of ['expires_at', 'models', 'addresses', 'rpm', 'max_in_flight']) {
      assert.equal(fresh0[f], null, `${f} unset on a new key`);
    }
    const set = await patch(k, {
      expires_at: '2099-01-31T12:00:00+02:00', models: ['prov-main', 'claude-main'],
      addresses: ['10.1.2.3/8', '2001:DB8::/32'], rpm: 30, max_in_flight: 2,
    });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.json.expires_at, '2099-01-31T10:00:00Z');
    assert.deepEqual(set.json.models, ['prov-main', 'claude-main']);
    assert.deepEqual(set.json.addresses, ['10.0.0.0/8', '2001:db8::/32']);
    assert.equal(set.json.rpm, 30);
    assert.equal(set.json.max_in_flight, 2);
    const listed = (await api(alice.jar, 'GET', '/v1/keys')).json.data.find((x) => x.id === k.id);
    assert.deepEqual(listed.addresses, ['10.0.0.0/8', '2001:db8::/32']);
    assert.equal(listed.rpm, 30);
    // only the fields sent change
    const some = await patch(k, { rpm: null });
    assert.equal(some.json.rpm, null);
    assert.equal(some.json.max_in_flight, 2);
    const shown = stack.ctlJSON('key', 'show', String(k.id));
    assert.deepEqual(shown.models, ['prov-main', 'claude-main']);
    assert.equal(shown.max_in_flight, 2);
    assert.equal(shown.rpm, null);
    const cleared = await patch(k, { expires_at: null, models: null, addresses: null, max_in_flight: null });
    for (const f of ['expires_at', 'models', 'addresses', 'rpm', 'max_in_flight']) assert.equal(cleared.json[f], null, f);

    for (const [body, param] of [
      [{ colour: 'red' }, 'colour'],
      [{ expires_at: 'next week' }, 'expires_at'],
      [{ expires_at: 4102444800 }, 'expires_at'],
      [{ models: 'prov-main' }, 'models'],
      [{ models: [] }, 'models'],
      [{ models: ['no-such-model'] }, 'models'],
      [{ models: ['bad id!'] }, 'models'],
      [{ addresses: ['10.0.0.0/33'] }, 'addresses'],
      [{ addresses: ['example.com'] }, 'addresses'],
      [{ rpm: 0 }, 'rpm'],
      [{ rpm: 2.5 }, 'rpm'],
      [{ max_in_flight: '3' }, 'max_in_flight'],
      [{ max_in_flight: 100000 }, 'max_in_flight'],
    ]) {
      const res = await patch(k, body);
      assertOpenAIError(res, 400, 'INVALID_REQUEST', { param });
    }
    assertOpenAIError(await patch(k, {}), 400, 'INVALID_REQUEST');
    assertOpenAIError(await patch(k, '{"rpm":'), 400, 'INVALID_REQUEST');
    // another user's key is an unknown key
    assertOpenAIError(await patch(k, { rpm: 5 }, bob), 404, 'KEY_NOT_FOUND');
    assert.equal((await api(alice.jar, 'GET', '/v1/keys')).json.data.find((x) => x.id === k.id).rpm, null);
  });

  it('an expired key: 401 API_KEY_EXPIRED on chat, Responses and Messages once the clock passes it', async () => {
    const k = await keyWith({ expires_at: new Date((now + 3600) * 1000).toISOString().replace('.000', '') });
    assert.equal((await chat(k)).status, 200);
    assert.equal((await msg(k)).status, 200);
    stack.setClock(now + 3600);
    try {
      await refusedEverywhere(k, 401, 'API_KEY_EXPIRED',
        { openai: 'authentication_error', anthropic: 'authentication_error' });
      // a key without an expiry is not affected
      const other = await newKey();
      assert.equal((await chat(other)).status, 200);
      // its owner moves the expiry: the key works again (this child forgot it)
      assert.equal((await patch(k, { expires_at: null })).status, 200);
      await eventually(async () => assert.equal((await chat(k)).status, 200));
    } finally {
      stack.setClock(now);
    }
  });

  it('models: another model is 403 MODEL_NOT_ALLOWED (param model), before the catalog says anything', async () => {
    const k = await keyWith({ models: ['prov-main', 'claude-main'] });
    assert.equal((await chat(k)).status, 200);
    assert.equal((await resp(k)).status, 200);
    assert.equal((await msg(k)).status, 200);
    await refusedEverywhere(k, 403, 'MODEL_NOT_ALLOWED',
      { openai: 'permission_error', anthropic: 'permission_error' },
      { param: 'model', models: { chat: 'prov-delay', responses: 'prov-delay', messages: 'claude-nocache' } });
    // a model the catalog lacks says no more than a real one
    assertOpenAIError(await chat(k, 'no-such-model'), 403, 'MODEL_NOT_ALLOWED', { param: 'model' });
  });

  it('addresses: a client outside the CIDRs (as mod_remoteip sets it) is 403 ADDRESS_NOT_ALLOWED', async () => {
    const k = await keyWith({ addresses: ['198.51.100.0/24', '2001:db8::/32'] });
    assert.equal((await chat(k, 'prov-main', '198.51.100.7')).status, 200);
    assert.equal((await resp(k, 'prov-main', '198.51.100.250')).status, 200);
    assert.equal((await msg(k, 'claude-main', '2001:db8::5')).status, 200);
    await refusedEverywhere(k, 403, 'ADDRESS_NOT_ALLOWED',
      { openai: 'permission_error', anthropic: 'permission_error' }, { ip: '198.51.101.7' });
    assertOpenAIError(await chat(k, 'prov-main', '2001:db9::1'), 403, 'ADDRESS_NOT_ALLOWED');
    // the proxy's own address is not the client's
    assertOpenAIError(await stack.chat(k.secret, chatBody('prov-main')), 403, 'ADDRESS_NOT_ALLOWED');
  });

  it('rpm: the rpm+1st request of a minute is 429 API_KEY_RATE_LIMITED with Retry-After, counted across transports and children; a minute later it goes through', async () => {
    const k = await keyWith({ rpm: 6 });
    const before = stack.sql(`SELECT COUNT(*) AS n FROM ledger WHERE key_id = ${k.id}`)[0].n;
    const ok = await Promise.all([chat(k), chat(k), resp(k), resp(k), msg(k), msg(k)]);
    for (const r of ok) assert.equal(r.status, 200, r.text);
    const [c, r, m] = await refusedEverywhere(k, 429, 'API_KEY_RATE_LIMITED',
      { openai: 'rate_limit_error', anthropic: 'rate_limit_error' });
    for (const x of [c, r, m]) {
      const wait = Number(x.headers.get('retry-after'));
      assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `Retry-After ${wait}`);
    }
    assert.equal(stack.sql(`SELECT COUNT(*) AS n FROM ledger WHERE key_id = ${k.id}`)[0].n, before + 6,
      'a refused request has no ledger row');
    stack.setClock(now + 60);
    try {
      assert.equal((await chat(k)).status, 200, 'the window moved on');
    } finally {
      stack.setClock(now);
    }
  });

  it(`max_in_flight ${IN_FLIGHT}: of ${N} requests at once on a slow model exactly ${IN_FLIGHT} go through, the others get 429 API_KEY_IN_FLIGHT_LIMIT and are charged nothing`, async () => {
    const k = await keyWith({ max_in_flight: IN_FLIGHT });
    const balance0 = stack.balance(alice.id);
    const results = await Promise.all(Array.from({ length: N }, () => chat(k, SLOW)));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    for (const r of refused) {
      assertOpenAIError(r, 429, 'API_KEY_IN_FLIGHT_LIMIT');
      assert.equal(r.headers.get('retry-after'), '1');
    }
    assert.equal(ok.length, IN_FLIGHT, `${ok.length} went through`);
    await stack.billingSettled();
    const rows = stack.sql(`SELECT status, CAST(credits AS TEXT) AS c FROM ledger WHERE key_id = ${k.id}`);
    assert.equal(rows.length, IN_FLIGHT, 'one ledger row per request let through, none for a refusal');
    const charged = rows.reduce((s, x) => s + BigInt(x.c), 0n);
    assert.ok(charged > 0n);
    assert.equal(stack.balance(alice.id), balance0 - charged, 'the balance fell by the charges of those let through only');
    // every count came back
    await eventually(async () => assert.equal((await chat(k)).status, 200));
  });

  it('the in-flight count comes back after a stream, a broken stream and a refusal taken after it', async () => {
    const k = await keyWith({ max_in_flight: 1 });
    // a stream in flight holds the count
    const streaming = messagesStream(stack, k.secret, messagesBody('claude-trickle'), from());
    await new Promise((r) => setTimeout(r, 300));
    const busy = await msg(k);
    assertAnthropicError(busy, 429, 'rate_limit_error', 'API_KEY_IN_FLIGHT_LIMIT');
    assert.equal(busy.headers.get('retry-after'), '1');
    assert.equal((await streaming).status, 200);
    await eventually(async () => assert.equal((await msg(k)).status, 200));
    // a stream the client breaks
    const broken = await messagesStream(stack, k.secret, messagesBody('claude-trickle'), { ...from(), abortAfter: 2 });
    assert.equal(broken.status, 200);
    await eventually(async () => assert.equal((await chat(k)).status, 200), 10000);
    // refusals after the count was taken: an unknown model, a gateway error
    assertOpenAIError(await chat(k, 'no-such-model'), 404, 'MODEL_NOT_FOUND');
    assert.equal((await chat(k)).status, 200);
    assert.equal((await chat(k, 'prov-fault-500')).status, 502);
    assert.equal((await chat(k)).status, 200);
    assert.equal((await resp(k)).status, 200);
  });

  it('providerctl key set: sets and clears each control; key show prints them; bad values exit 2', async () => {
    const k = await newKey();
    const out = stack.ctlJSON('key', 'set', String(k.id), '--expires', '2099-01-31', '--models',
      'prov-main,claude-main', '--addresses', '192.0.2.0/24,::1', '--rpm', '100', '--max-in-flight', '3');
    assert.equal(out.expires_at, '2099-01-31T00:00:00Z');
    assert.deepEqual(out.models, ['prov-main', 'claude-main']);
    assert.deepEqual(out.addresses, ['192.0.2.0/24', '::1/128']);
    assert.equal(out.rpm, 100);
    assert.equal(out.max_in_flight, 3);
    const text = stack.ctl('key', 'show', String(k.id));
    assert.match(text, /models:\s+prov-main,claude-main/);
    assert.match(text, /addresses:\s+192\.0\.2\.0\/24,::1\/128/);
    assert.match(text, /rpm:\s+100 requests a minute/);
    assert.match(text, /max in flight:\s+3/);
    // the owner sees what the administrator set
    const listed = (await api(alice.jar, 'GET', '/v1/keys')).json.data.find((x) => x.id === k.id);
    assert.equal(listed.max_in_flight, 3);
    // and it is enforced: an address outside the list
    assertOpenAIError(await chat(k, 'prov-main', '198.51.100.1'), 403, 'ADDRESS_NOT_ALLOWED');
    const cleared = stack.ctlJSON('key', 'set', String(k.id), '--expires', 'none', '--models', 'all',
      '--addresses', 'any', '--rpm', 'none', '--max-in-flight', 'none');
    for (const f of ['expires_at', 'models', 'addresses', 'rpm', 'max_in_flight']) assert.equal(cleared[f], null, f);
    for (const bad of [['--rpm', '0'], ['--max-in-flight', 'x'], ['--addresses', '300.1.1.1'],
      ['--expires', 'soon'], ['--models', 'bad id']]) {
      assert.throws(() => stack.ctl('key', 'set', String(k.id), ...bad), /exited 2/, bad.join(' '));
    }
    assert.throws(() => stack.ctl('key', 'set', String(k.id), '--models', 'no-such-model'), /exited 1/);
    assert.throws(() => stack.ctl('key', 'set', '999999', '--rpm', '5'), /exited 1/);
    assert.throws(() => stack.ctl('key', 'set', String(k.id)), /exited 2/);
  });
});
