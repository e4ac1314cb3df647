// tests/integration/cabinet-api.test.js: the cabinet's JSON API (issue 14,
// /work contract CONTRACT14: README "Cabinet API") through httpd, signed in
// through the kit's OpenID Provider (lib/idp.js) as a browser would be
// (lib/idp-client.js's cookie jar). Every endpoint wants the session (401
// NOT_SIGNED_IN) and answers Cache-Control: no-store; an expired active
// cookie is renewed from the refresh cookie; a state-changing request from
// another site is 403 CROSS_SITE_REQUEST and changes nothing. Keys: made
// with their secret shown once (no other answer ever carries it), another
// user's key id and an unknown one are 404 KEY_NOT_FOUND alike, bad bodies
// are 400 naming the field; a reissue refuses the old secret on the very
// next /v1/chat/completions through the mock gateway and the new one works,
// a delete likewise, a budget set here decides the next request (429
// API_KEY_CREDIT_BUDGET_EXCEEDED). Usage equals `providerctl usage report`;
// the account's plan windows are those a 429 SUBSCRIPTION_QUOTA_EXCEEDED
// quotes; favorites are idempotent and rendered as GET /v1/models renders
// them. Runs on SQLite, and on PostgreSQL with PROVIDER_TEST_PGSQL=1.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, freePort, seedCatalog } from './lib/server.js';
import { startIdentityProviders } from './lib/idp.js';
import { CookieJar } from './lib/idp-client.js';
import { signInUser } from './lib/signin.js';
import { assertOpenAIError, chatBody, eventually } from './lib/helpers.js';
import {
  addBillModel, addPlan, subscribe, fullBody, FULL_CHARGE, BILL_RATE, microToText,
} from './lib/billing.js';

const ACTIVE = '__Host-provider-session';
const SLASH_MODEL = 'vendor/slash-model';
const SLOWISH = 'cabinet-slowish';   // answers after 300 ms: concurrent requests overlap, the child leases


const TOP_UP = 'https://example.test/top-up?from=cabinet&x=1';
describe('the cabinet API', { timeout: 180000 }, () => {
  let stack;
  let kit;
  let alice;      // { jar, id }
  let bob;
  const answers = [];      // every answer of the API: { what, text, headers, allowed }
  const created = [];      // every secret the API handed out

  /** One API call as the signed-in browser: Origin of this site unless origin is given (null: none). */
  async function api(jar, method, path, { body, origin, headers = {}, allowed = null } = {}) {
    const h = { ...headers };
    const o = origin === undefined ? stack.baseURL : origin;
    if (o) h.origin = o;
    let payload;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] = 'application/json';
    }
    const r = jar ? await jar.fetch(`${stack.baseURL}${path}`, { method, headers: h, body: payload })
      : await fetch(`${stack.baseURL}${path}`, { method, headers: h, body: payload });
    const text = await r.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    const res = { status: r.status, headers: r.headers, text, json };
    answers.push({ what: `${method} ${path}`, text, headers: [...r.headers].map(([k, v]) => `${k}: ${v}`).join('\n'), allowed });
    assert.equal(r.headers.get('cache-control'), 'no-store', `${method} ${path}: Cache-Control`);
    return res;
  }

  /** Makes a key through the API; returns the 201 answer's JSON (with secret). */
  async function makeKey(who, body) {
    const res = await api(who.jar, 'POST', '/v1/keys', { body });
    assert.equal(res.status, 201, res.text);
    created.push(res.json.secret);
    stack.secrets.push(res.json.secret);
    answers[answers.length - 1].allowed = res.json.secret;
    return res.json;
  }

  const signIn = (login) => signInUser(stack, login);

  before(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    stack = await startStack({
      port,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}\n`
        + `ProviderCreditValue 0.01 USD\nProviderTopUpURL ${TOP_UP}\n`,
      seed: (s) => {
        seedCatalog(s);
        addBillModel(s);
        s.addModel(SLASH_MODEL, 'mock-main', { name: 'Slash', rates: { input: '1', output: '1' } });
        s.addModel(SLOWISH, 'mock-fault-delay-300', { rates: { input: BILL_RATE, output: BILL_RATE } });
      },
    });
    alice = await signIn('alice');
    bob = await signIn('bob');
    assert.notEqual(alice.id, bob.id);
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

  const ENDPOINTS = [
    ['GET', '/v1/account'], ['GET', '/v1/keys'], ['POST', '/v1/keys', { name: 'x' }],
    ['POST', '/v1/keys/1/reissue'], ['DELETE', '/v1/keys/1'],
    ['PUT', '/v1/keys/1/budget', { weekly_budget: 1 }], ['GET', '/v1/usage'],
    ['GET', '/v1/models/favorites'], ['PUT', '/v1/models/prov-main/favorite'],
    ['DELETE', '/v1/models/prov-main/favorite'],
  ];

  it('answers 401 NOT_SIGNED_IN on every endpoint without a session, or with a dead one', async () => {
    const dead = new CookieJar();
    dead.store(`${stack.baseURL}/`, { headers: { getSetCookie: () => [`${ACTIVE}=${'A'.repeat(43)}; Path=/; Secure; HttpOnly`] } });
    for (const [method, path, body] of ENDPOINTS) {
      for (const jar of [null, dead]) {
        const res = await api(jar, method, path, { body });
        assertOpenAIError(res, 401, 'NOT_SIGNED_IN');
      }
    }
    assert.equal(Number(stack.sql('SELECT COUNT(*) AS n FROM api_keys')[0].n), 0, 'no key made');
  });

  it('refuses POST, PUT and DELETE from another site (403) and changes nothing', async () => {
    const k = await makeKey(alice, { name: 'site-check' });
    const writes = [
      ['POST', '/v1/keys', { name: 'x' }], ['POST', `/v1/keys/${k.id}/reissue`],
      ['DELETE', `/v1/keys/${k.id}`], ['PUT', `/v1/keys/${k.id}/budget`, { weekly_budget: 1 }],
      ['PUT', '/v1/models/prov-main/favorite'], ['DELETE', '/v1/models/prov-main/favorite'],
    ];
    for (const [method, path, body] of writes) {
      for (const h of [{ origin: null }, { origin: 'http://localhost:1' },
        { origin: null, headers: { referer: 'http://evil.example/cabinet/' } }]) {
        const res = await api(alice.jar, method, path, { body, ...h });
        assertOpenAIError(res, 403, 'CROSS_SITE_REQUEST');
      }
    }
    const listed = await api(alice.jar, 'GET', '/v1/keys');
    assert.equal(listed.status, 200, listed.text);
    assert.ok(listed.json, listed.text);
    const keys = listed.json.data;
    assert.deepEqual(keys.map((x) => [x.id, x.reissued_at, x.weekly_budget]), [[k.id, null, null]]);
    const favs = await api(alice.jar, 'GET', '/v1/models/favorites');
    assert.equal(favs.status, 200, favs.text);
    assert.equal(favs.json.data.length, 0);
    // a Referer of this site will do when there is no Origin
    const ok = await api(alice.jar, 'PUT', `/v1/keys/${k.id}/budget`, {
      origin: null, headers: { referer: `${stack.baseURL}/cabinet/` }, body: { weekly_budget: null } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await api(alice.jar, 'DELETE', `/v1/keys/${k.id}`)).status, 204);
  });

  it('renews an expired active session from the refresh cookie transparently', async () => {
    const jar = new CookieJar();
    jar.cookies = alice.jar.cookies.filter((c) => c.name !== ACTIVE).map((c) => ({ ...c }));
    const r = await jar.fetch(`${stack.baseURL}/v1/account`);
    assert.equal(r.status, 200);
    assert.ok(r.headers.getSetCookie().some((l) => l.startsWith(`${ACTIVE}=`) && /Max-Age=300/.test(l)));
    assert.equal((await r.json()).id, String(alice.id));
  });

  it('makes a key: 201 with its secret once, usable at once; no later answer has the secret', async () => {
    const k = await makeKey(alice, { name: 'laptop', weekly_budget: 25 });
    assert.match(k.secret, /^sk-prov-[A-Za-z0-9_-]{43}$/);
    assert.match(k.id, /^\d+$/);
    assert.equal(k.name, 'laptop');
    assert.equal(k.weekly_budget, 25);
    assert.equal(k.week_used, 0);
    assert.ok(k.secret.startsWith(k.prefix) && k.prefix.length < 16, k.prefix);
    assert.match(k.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(k.reissued_at, null);
    assert.deepEqual(k.today, { requests: 0, input_tokens: 0, output_tokens: 0, cache_tokens: 0, reasoning_tokens: 0, credits: 0 });
    assert.equal(k.daily.length, 7);
    assert.equal(k.daily[6].date, new Date().toISOString().slice(0, 10));
    const chat = await stack.chat(k.secret, fullBody());
    assert.equal(chat.status, 200, chat.text);
    const list = await api(alice.jar, 'GET', '/v1/keys');
    const mine = list.json.data.find((x) => x.id === k.id);
    assert.ok(mine && !('secret' in mine));
    assert.equal(mine.today.requests, 1);
    assert.equal(mine.last_7_days.requests, 1);
    assert.equal(mine.today.credits, Number(microToText(FULL_CHARGE)));
    assert.equal(mine.week_used, Number(microToText(FULL_CHARGE)));
    assert.equal(mine.daily[6].requests, 1);
    assert.equal(mine.daily[6].tokens, 1250);
    assert.equal((await api(bob.jar, 'GET', '/v1/keys')).json.data.length, 0, 'bob sees none of it');
    // a key without a budget
    const k2 = await makeKey(alice, { name: 'ünïcødé ' + 'é'.repeat(90) });
    assert.equal(k2.weekly_budget, null);
  });

  it('answers 404 KEY_NOT_FOUND for another user\'s key id exactly as for an unknown one', async () => {
    const theirs = await makeKey(bob, { name: 'bob-key', weekly_budget: 3 });
    const unknown = String(Number(theirs.id) + 1000);
    for (const id of [theirs.id, unknown, '0', 'abc', '99999999999999999999', '-1']) {
      for (const [method, path, body] of [['POST', `/v1/keys/${id}/reissue`], ['DELETE', `/v1/keys/${id}`],
        ['PUT', `/v1/keys/${id}/budget`, { weekly_budget: 1 }]]) {
        const res = await api(alice.jar, method, path, { body });
        const e = assertOpenAIError(res, 404, 'KEY_NOT_FOUND');
        assert.equal(e.message, 'No such key.');
      }
    }
    const still = (await api(bob.jar, 'GET', '/v1/keys')).json.data[0];
    assert.equal(still.weekly_budget, 3);
    assert.equal(still.reissued_at, null);
    assert.equal((await stack.chat(theirs.secret, fullBody())).status, 402, 'bob\'s key still works (no balance)');
    assert.equal((await api(null, 'GET', '/v1/keys/x/y')).status, 404);
    assertOpenAIError(await api(alice.jar, 'GET', `/v1/keys/${theirs.id}`), 405, 'METHOD_NOT_ALLOWED');
  });

  it('refuses bad bodies with 400 INVALID_REQUEST naming the field, and makes nothing', async () => {
    const before = Number(stack.sql('SELECT COUNT(*) AS n FROM api_keys')[0].n);
    const cases = [
      [{}, 'name', /name is required/],
      [{ name: null }, 'name', /name is required/],
      [{ name: 7 }, 'name', /name must be a string/],
      [{ name: ['a'] }, 'name', /name must be a string/],
      [{ name: '' }, 'name', /must not be empty/],
      [{ name: 'x'.repeat(101) }, 'name', /at most 100 characters/],
      [{ name: 'é'.repeat(101) }, 'name', /at most 100 characters/],
      [{ name: 'a\nb' }, 'name', /control characters/],
      [{ name: 'a\u0000b' }, 'name', /control characters/],
      [{ name: 'ok', weekly_budget: -1 }, 'weekly_budget', /must not be negative/],
      [{ name: 'ok', weekly_budget: '5' }, 'weekly_budget', /must be a number/],
      [{ name: 'ok', weekly_budget: true }, 'weekly_budget', /must be a number/],
      [{ name: 'ok', weekly_budget: 1.0000001 }, 'weekly_budget', /at most 6 decimals/],
      [{ name: 'ok', weekly_budget: 1e30 }, 'weekly_budget', null],
      [{ name: 'ok', colour: 'blue' }, 'colour', /Unknown field "colour"/],
    ];
    for (const [body, param, msg] of cases) {
      const res = await api(alice.jar, 'POST', '/v1/keys', { body });
      const e = assertOpenAIError(res, 400, 'INVALID_REQUEST', { param });
      if (msg) assert.match(e.message, msg, JSON.stringify(body));
    }
    for (const raw of ['', 'not json', '[1]', '{"name":"a",}', '"x"']) {
      assertOpenAIError(await api(alice.jar, 'POST', '/v1/keys', { body: raw }), 400, 'INVALID_REQUEST', { param: null });
    }
    assertOpenAIError(await api(alice.jar, 'POST', '/v1/keys', { body: { name: 'x'.repeat(20000) } }), 413, 'REQUEST_TOO_LARGE');
    const k = (await api(alice.jar, 'GET', '/v1/keys')).json.data[0];
    for (const [body, re] of [[{}, /weekly_budget is required/], [{ weekly_budget: -0.5 }, /negative/],
      [{ weekly_budget: 'none' }, /must be a number/], [{ weekly_budget: 1, name: 'x' }, /Unknown field/]]) {
      const e = assertOpenAIError(await api(alice.jar, 'PUT', `/v1/keys/${k.id}/budget`, { body }), 400, 'INVALID_REQUEST');
      assert.match(e.message, re);
      assert.ok(e.param === 'weekly_budget' || e.param === 'name', e.param);
    }
    assert.equal(Number(stack.sql('SELECT COUNT(*) AS n FROM api_keys')[0].n), before);
  });

  it('reissues: a new secret for the same key, the old one refused at once on /v1/chat/completions', async () => {
    const k = await makeKey(alice, { name: 'reissue-me', weekly_budget: 10 });
    // the old secret is warm in the child's lookup cache and has a lease or a row
    // (each one settled: a non-streamed answer leaves before its row is
    // committed, and a lease-drawn request's row is written by the billing
    // writer a moment later)
    for (let i = 0; i < 3; i++) {
      assert.equal((await stack.requestSettled(await stack.chat(k.secret, fullBody()))).status, 200);
    }
    const res = await api(alice.jar, 'POST', `/v1/keys/${k.id}/reissue`);
    assert.equal(res.status, 200, res.text);
    const n = res.json;
    created.push(n.secret);
    stack.secrets.push(n.secret);
    answers[answers.length - 1].allowed = n.secret;
    assert.match(n.secret, /^sk-prov-[A-Za-z0-9_-]{43}$/);
    assert.notEqual(n.secret, k.secret);
    assert.equal(n.id, k.id);
    assert.equal(n.name, 'reissue-me');
    assert.equal(n.weekly_budget, 10);
    assert.match(n.reissued_at, /Z$/);
    assert.equal(n.created_at, k.created_at);
    assert.equal(n.today.requests, 3, 'the history stays with the key');
    assert.notEqual(n.prefix, k.prefix);
    const old = await stack.chat(k.secret, fullBody());
    assertOpenAIError(old, 401, 'INVALID_API_KEY');
    const fresh = await stack.chat(n.secret, fullBody());
    assert.equal(fresh.status, 200, fresh.text);
    assertOpenAIError(await stack.chat(k.secret, fullBody()), 401, 'INVALID_API_KEY');
    assert.equal(Number(stack.ctlJSON('key', 'show', k.id).id), Number(k.id));
  });

  /**
   * Keeps `lanes` requests with secret in flight (so that the child leases
   * the key) while change() runs; returns the answers of requests sent after
   * change() had its answer.
   */
  async function underLoad(secret, change, lanes = 12) {
    const leased = () => Number(stack.sql(`SELECT COUNT(*) AS n FROM billing_leases WHERE user_id = ${alice.id}`)[0].n) > 0;
    let changed = false;
    let stop = false;
    const after = [];
    const lane = async () => {
      while (!stop) {
        const sentAfter = changed;
        const r = await stack.chat(secret, fullBody({ model: SLOWISH, metadata: { mock_usage: { prompt: 1, completion: 1 } } }));
        if (sentAfter) after.push(r);
      }
    };
    const running = Array.from({ length: lanes }, lane);
    await eventually(() => assert.ok(leased(), 'the child leases the key'), 10000, 50);
    await change();
    changed = true;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    stop = true;
    await Promise.all(running);
    return after;
  }

  it('a reissue and a delete refuse the old secret at once under concurrent load (leases, lookup cache)', async () => {
    const k = await makeKey(alice, { name: 'busy' });
    let fresh;
    const afterReissue = await underLoad(k.secret, async () => {
      const res = await api(alice.jar, 'POST', `/v1/keys/${k.id}/reissue`);
      assert.equal(res.status, 200);
      fresh = res.json.secret;
      created.push(fresh);
      stack.secrets.push(fresh);
      answers[answers.length - 1].allowed = fresh;
    });
    assert.ok(afterReissue.length > 0);
    assert.deepEqual([...new Set(afterReissue.map((r) => r.status))], [401]);
    const afterDelete = await underLoad(fresh, async () => {
      assert.equal((await api(alice.jar, 'DELETE', `/v1/keys/${k.id}`)).status, 204);
    });
    assert.ok(afterDelete.length > 0);
    assert.deepEqual([...new Set(afterDelete.map((r) => r.status))], [401]);
    await stack.billingSettled();
  });

  it('deletes: 204, the secret refused at once, the key gone from the list; again 404', async () => {
    const k = await makeKey(alice, { name: 'delete-me' });
    for (let i = 0; i < 2; i++) assert.equal((await stack.chat(k.secret, fullBody())).status, 200);
    const res = await api(alice.jar, 'DELETE', `/v1/keys/${k.id}`);
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    assertOpenAIError(await stack.chat(k.secret, fullBody()), 401, 'INVALID_API_KEY');
    assert.ok(!(await api(alice.jar, 'GET', '/v1/keys')).json.data.some((x) => x.id === k.id));
    assertOpenAIError(await api(alice.jar, 'DELETE', `/v1/keys/${k.id}`), 404, 'KEY_NOT_FOUND');
    assertOpenAIError(await api(alice.jar, 'POST', `/v1/keys/${k.id}/reissue`), 404, 'KEY_NOT_FOUND');
  });

  it('a budget set here decides the next inference request', async () => {
    const k = await makeKey(alice, { name: 'budgeted' });
    assert.equal((await stack.chat(k.secret, fullBody())).status, 200);   // 1 credit used this week
    let res = await api(alice.jar, 'PUT', `/v1/keys/${k.id}/budget`, { body: { weekly_budget: 1.5 } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.weekly_budget, 1.5);
    assert.equal(res.json.week_used, 1);
    assert.ok(!('secret' in res.json));
    const refused = await stack.chat(k.secret, fullBody());   // 1 + 1 > 1.5
    assertOpenAIError(refused, 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    res = await api(alice.jar, 'PUT', `/v1/keys/${k.id}/budget`, { body: { weekly_budget: 2 } });
    assert.equal(res.status, 200);
    assert.equal((await stack.chat(k.secret, fullBody())).status, 200);
    assertOpenAIError(await stack.chat(k.secret, fullBody()), 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    res = await api(alice.jar, 'PUT', `/v1/keys/${k.id}/budget`, { body: { weekly_budget: null } });
    assert.equal(res.json.weekly_budget, null);
    assert.equal((await stack.chat(k.secret, fullBody())).status, 200);
    assert.equal(stack.ctlJSON('key', 'show', k.id).weekly_budget ?? null, null);
  });

  it('usage by day, key and model equals providerctl usage report', async () => {
    const k = await makeKey(alice, { name: 'usage-key' });
    assert.equal((await stack.chat(k.secret, chatBody('prov-main'))).status, 200);
    await stack.billingSettled();
    const byModel = await api(alice.jar, 'GET', '/v1/usage?by=model&days=30');
    assert.equal(byModel.status, 200, byModel.text);
    assert.equal(byModel.json.days, 30);
    assert.equal(byModel.json.by, 'model');
    const report = stack.ctlJSON('usage', 'report', '--user', String(alice.id), '--by', 'model');
    const rows = report.rows.map((r) => ({ group: String(r.model), requests: Number(r.requests),
      input_tokens: Number(r.input_tokens), output_tokens: Number(r.output_tokens),
      cache_tokens: Number(r.cache_tokens), reasoning_tokens: Number(r.reasoning_tokens), credits: Number(r.credits) }));
    assert.deepEqual(byModel.json.data, rows);
    assert.ok(byModel.json.data.some((r) => r.group === 'prov-main' && r.requests === 1));
    const byKey = await api(alice.jar, 'GET', '/v1/usage?by=key');
    const mine = byKey.json.data.find((r) => r.group === k.id);
    assert.equal(mine.name, 'usage-key');
    assert.equal(mine.requests, 1);
    const keyReport = stack.ctlJSON('usage', 'report', '--key', k.id);
    assert.equal(mine.credits, Number(keyReport.total.credits));
    const byDay = await api(alice.jar, 'GET', '/v1/usage');
    assert.equal(byDay.json.by, 'day');
    assert.equal(byDay.json.days, 7);
    assert.deepEqual(byDay.json.data.map((r) => r.group), [new Date().toISOString().slice(0, 10)]);
    assert.equal(byDay.json.data[0].requests, Number(stack.ctlJSON('usage', 'report', '--user', String(alice.id)).total.requests));
    assert.equal((await api(bob.jar, 'GET', '/v1/usage?by=key')).json.data.every((r) => r.group !== k.id), true);
    for (const [q, param] of [['days=0', 'days'], ['days=31', 'days'], ['days=x', 'days'], ['days=', 'days'],
      ['by=week', 'by'], ['by=', 'by']]) {
      assertOpenAIError(await api(alice.jar, 'GET', `/v1/usage?${q}`), 400, 'INVALID_REQUEST', { param });
    }
  });

  it('favorites: idempotent PUT and DELETE, listed exactly as GET /v1/models lists them', async () => {
    for (let i = 0; i < 2; i++) {
      for (const id of ['prov-main', SLASH_MODEL, 'prov-unlisted']) {
        const r = await api(alice.jar, 'PUT', `/v1/models/${id}/favorite`);
        assert.equal(r.status, 204, r.text);
        assert.equal(r.text, '');
      }
    }
    const catalog = (await stack.models()).json.data;
    const fav = await api(alice.jar, 'GET', '/v1/models/favorites');
    assert.equal(fav.status, 200);
    assert.equal(fav.json.object, 'list');
    // prov-unlisted is a favorite, but the gateway does not offer it now: not listed, as in /v1/models
    assert.deepEqual(fav.json.data, catalog.filter((m) => ['prov-main', SLASH_MODEL].includes(m.publicId)));
    assert.equal((await api(bob.jar, 'GET', '/v1/models/favorites')).json.data.length, 0);
    for (const id of ['no-such-model', 'prov-disabled', 'bad%20id']) {
      assertOpenAIError(await api(alice.jar, 'PUT', `/v1/models/${id}/favorite`), 404, 'MODEL_NOT_FOUND');
    }
    assertOpenAIError(await api(alice.jar, 'DELETE', '/v1/models/no-such-model/favorite'), 404, 'MODEL_NOT_FOUND');
    for (let i = 0; i < 2; i++) assert.equal((await api(alice.jar, 'DELETE', `/v1/models/${SLASH_MODEL}/favorite`)).status, 204);
    assert.deepEqual((await api(alice.jar, 'GET', '/v1/models/favorites')).json.data.map((m) => m.publicId), ['prov-main']);
    assert.equal(Number(stack.sql(`SELECT COUNT(*) AS n FROM favorites WHERE user_id = ${alice.id}`)[0].n), 2);
    assertOpenAIError(await api(alice.jar, 'POST', '/v1/models/prov-main/favorite'), 405, 'METHOD_NOT_ALLOWED');
    // the model itself, not a favorite: GET answers it, nothing else does
    const one = await fetch(`${stack.baseURL}/v1/models/prov-main`);
    assert.equal(one.status, 200);
    assert.equal((await one.json()).id, 'prov-main');
    assertOpenAIError(await api(alice.jar, 'PUT', '/v1/models/prov-main'), 405, 'METHOD_NOT_ALLOWED');
  });

  it('the account: balance, held, available, no plan, what a credit is worth', async () => {
    const res = await api(alice.jar, 'GET', '/v1/account');
    assert.equal(res.status, 200);
    const a = res.json;
    assert.equal(a.id, String(alice.id));
    assert.equal(a.email, kit.ops[0].users.get('alice').email);
    const balance = stack.balance(alice.id);
    assert.equal(a.balance, Number(microToText(balance)));
    assert.equal(a.held, 0);
    assert.equal(a.available, a.balance);
    assert.equal(a.plan, null);
    assert.deepEqual(a.credit, { value: '0.01', currency: 'USD' });
    assert.equal(a.top_up_url, TOP_UP);
    // and the documentation says the same
    const page = await (await fetch(`${stack.baseURL}/docs/credits`)).text();
    assert.match(page, /One credit is worth 0\.01 USD\./);
    const html = TOP_UP.replace(/&/g, '&amp;');
    assert.ok(page.includes(`<a href="${html}">${html}</a>`), 'the top-up link, escaped');
  });

  it('the account\'s plan windows are what a plan\'s 429 says', async () => {
    const plan = addPlan(stack, 'cabinet-plan', '2', '10');
    subscribe(stack, String(bob.id), 'cabinet-plan', bob.id, plan);
    const k = await makeKey(bob, { name: 'plan-key' });
    let refused;
    for (let i = 0; i < 4 && !refused; i++) {
      const r = await stack.chat(k.secret, fullBody());
      if (r.status !== 200) refused = r;
    }
    const e = assertOpenAIError(refused, 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
    assert.ok(e.message.endsWith(` Get more credits at ${TOP_UP}`), e.message);
    const m = e.message.match(/used up: ([\d.]+) of ([\d.]+) credits in the last 5 hours, ([\d.]+) of ([\d.]+) in the last 7 days/);
    assert.ok(m, e.message);
    const acct = (await api(bob.jar, 'GET', '/v1/account')).json;
    assert.equal(acct.plan.name, 'cabinet-plan');
    const [w5, w7] = acct.plan.windows;
    assert.equal(w5.window, '5h');
    assert.equal(w7.window, '7d');
    assert.deepEqual([w5.used, w5.quota, w7.used, w7.quota], m.slice(1, 5).map(Number));
    assert.equal(w5.remaining, 0);
    assert.equal(w7.remaining, w7.quota - w7.used);
    assert.equal(Date.parse(w5.returns_at) / 1000, e.resets_at, 'capacity returns when the 429 says');
    assert.ok(Date.parse(w5.full_at) >= Date.parse(w5.returns_at));
    assert.ok(Date.parse(w7.returns_at) > Date.now());
    assert.equal(acct.balance, 0);
  });

  it('no answer other than the one that made or reissued it ever carried a secret', async () => {
    assert.ok(created.length >= 7);
    const calls = answers.length;
    assert.ok(calls > 100, `${calls} answers`);
    for (const who of [alice, bob]) {
      for (const path of ['/v1/account', '/v1/keys', '/v1/usage?by=key', '/v1/models/favorites']) await api(who.jar, 'GET', path);
    }
    for (const a of answers) {
      for (const s of created) {
        if (a.allowed === s) continue;
        assert.ok(!a.text.includes(s) && !a.headers.includes(s), `${a.what} carries a secret`);
        assert.ok(!a.text.includes(s.slice(8)), `${a.what} carries a secret's random part`);
      }
    }
    await eventually(() => assert.equal(stack.logProblems().length, 0));
  });
});
