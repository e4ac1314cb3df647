// tests/integration/cabinet-requests.test.js: GET /v1/requests, the
// cabinet's "Recent requests" (issue 36 item 3), and the key's
// budget_returns_at (item 2), through httpd signed in as a browser would be
// (lib/idp-client.js). The user's own ledger rows one by one, newest first:
// time (UTC), key and its name, model, transport, status and its meaning,
// tokens, credits and the x-request-id the answer carried; filtered by key
// and status, paged by `next`; another user's rows never; bad parameters
// 400 naming the parameter; no session 401. A refusal before the
// reservation (the 429 of a used-up key budget) leaves no ledger row but is
// listed from the refusals table (migration 018; refusals.test.js has the
// rest) with its HTTP status and error code. Keys carry their
// last4 (migration 017). Runs on SQLite, and on
// PostgreSQL with PROVIDER_TEST_PGSQL=1.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, freePort, seedCatalog } from './lib/server.js';
import { startIdentityProviders } from './lib/idp.js';
import { signInUser } from './lib/signin.js';
import { assertOpenAIError, chatBody, eventually } from './lib/helpers.js';

describe('GET /v1/requests', { timeout: 120000 }, () => {
  let stack;
  let kit;
  let alice;
  let bob;

  async function api(who, method, path, body) {
    const h = { origin: stack.baseURL };
    if (body !== undefined) h['content-type'] = 'application/json';
    const r = await (who ? who.jar.fetch(`${stack.baseURL}${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) })
      : fetch(`${stack.baseURL}${path}`, { method, headers: h }));
    const text = await r.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: r.status, headers: r.headers, text, json };
  }

  const signIn = (login) => signInUser(stack, login);

  async function makeKey(who, body) {
    const r = await api(who, 'POST', '/v1/keys', body);
    assert.equal(r.status, 201, r.text);
    stack.secrets.push(r.json.secret);
    return r.json;
  }

  before(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    stack = await startStack({
      port,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}`,
      seed: (s) => {
        seedCatalog(s);
        s.addModel('refusing', 'mock-fault-500', { rates: { input: '1', output: '1' } });
      },
    });
    alice = await signIn('alice');
    bob = await signIn('bob');
    stack.ctl('balance', 'add', String(alice.id), '100', '--reason', 'test');
    stack.ctl('balance', 'add', String(bob.id), '100', '--reason', 'test');
  });

  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  it('needs the session: 401 NOT_SIGNED_IN', async () => {
    assertOpenAIError(await api(null, 'GET', '/v1/requests'), 401, 'NOT_SIGNED_IN');
  });

  let laptop;
  let phone;
  const ids = [];   // x-request-id of alice's answers, oldest first
  it('lists the user\'s requests newest first with what the answers said', async () => {
    laptop = await makeKey(alice, { name: 'laptop' });
    phone = await makeKey(alice, { name: 'phone' });
    const theirs = await makeKey(bob, { name: 'bob-key' });
    // a key is shown as prefix…last 4 (migration 017): the secret's own last four
    assert.equal(laptop.last4, laptop.secret.slice(-4));
    const listedKey = (await api(alice, 'GET', '/v1/keys')).json.data.find((k) => k.id === laptop.id);
    assert.equal(listedKey.last4, laptop.secret.slice(-4));
    assert.ok(laptop.secret.startsWith(listedKey.prefix));
    for (const [k, model] of [[laptop, 'prov-main'], [phone, 'prov-main'], [laptop, 'refusing'], [laptop, 'prov-main']]) {
      const r = await stack.chat(k.secret, chatBody(model));
      ids.push({ id: r.headers.get('x-request-id'), status: r.status, credits: r.headers.get('x-provider-credits'), key: k, model });
    }
    assert.equal((await stack.chat(theirs.secret, chatBody('prov-main'))).status, 200);
    assert.ok(ids.every((x) => x.id), 'every answer has an x-request-id');
    const r = await eventually(async () => {
      const a = await api(alice, 'GET', '/v1/requests');
      assert.equal(a.status, 200, a.text);
      assert.equal(a.json.data.filter((x) => x.status !== 'reserved').length, 4);
      return a;
    });
    assert.equal(r.headers.get('cache-control'), 'no-store');
    assert.deepEqual(r.json.data.map((x) => x.request_id), ids.map((x) => x.id).reverse(), 'newest first, alice\'s only');
    assert.equal(r.json.next, null);
    const last = r.json.data[0];
    assert.equal(last.key_id, laptop.id);
    assert.equal(last.key_name, 'laptop');
    assert.equal(last.model, 'prov-main');
    assert.equal(last.transport, 'chat');
    assert.equal(last.status, 'ok');
    assert.match(last.status_text, /usage report/);
    assert.match(last.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, 'a UTC time');
    assert.ok(Math.abs(Date.parse(last.created_at) - Date.now()) < 120000);
    assert.equal(last.credits, Number(ids[3].credits), 'the credits the answer\'s header said');
    assert.ok(last.input_tokens > 0 && last.output_tokens > 0);
    const refused = r.json.data[1];
    assert.equal(refused.request_id, ids[2].id);
    assert.notEqual(ids[2].status, 200, 'the gateway refused it');
    assert.notEqual(refused.status, 'ok');
    assert.equal(refused.credits, 0, 'no charge');
    const b = await api(bob, 'GET', '/v1/requests');
    assert.equal(b.json.data.length, 1);
    assert.equal(b.json.data[0].key_name, 'bob-key');
  });

  it('filters by key and status, and pages with next', async () => {
    let r = await api(alice, 'GET', `/v1/requests?key=${phone.id}`);
    assert.deepEqual(r.json.data.map((x) => x.request_id), [ids[1].id]);
    const refusedStatus = (await api(alice, 'GET', '/v1/requests')).json.data[1].status;
    r = await api(alice, 'GET', `/v1/requests?status=${refusedStatus}`);
    assert.deepEqual(r.json.data.map((x) => x.request_id), [ids[2].id]);
    r = await api(alice, 'GET', `/v1/requests?key=${laptop.id}&status=ok`);
    assert.deepEqual(r.json.data.map((x) => x.request_id), [ids[3].id, ids[0].id]);
    // pages of two: 4, 3 | 2, 1
    r = await api(alice, 'GET', '/v1/requests?limit=2');
    assert.deepEqual(r.json.data.map((x) => x.request_id), [ids[3].id, ids[2].id]);
    assert.match(r.json.next, /^\d+\.\d+$/);
    r = await api(alice, 'GET', `/v1/requests?limit=2&before=${r.json.next}`);
    assert.deepEqual(r.json.data.map((x) => x.request_id), [ids[1].id, ids[0].id]);
    assert.equal(r.json.next, null);
    // another user's key id matches nothing
    const bobs = (await api(bob, 'GET', '/v1/keys')).json.data[0].id;
    r = await api(alice, 'GET', `/v1/requests?key=${bobs}`);
    assert.deepEqual(r.json.data, []);
  });

  it('refuses bad parameters with 400 INVALID_REQUEST naming them', async () => {
    for (const [q, param] of [['key=abc', 'key'], ['key=0', 'key'], ['status=nope', 'status'], ['limit=0', 'limit'],
      ['limit=201', 'limit'], ['limit=2.5', 'limit'], ['before=-1', 'before'], ['before=x', 'before']]) {
      const e = assertOpenAIError(await api(alice, 'GET', `/v1/requests?${q}`), 400, 'INVALID_REQUEST');
      assert.equal(e.param, param, q);
    }
  });

  it('a refusal before the reservation (a used-up budget\'s 429) is listed with its code; the key says when spend leaves its week', async () => {
    const tablet = await makeKey(alice, { name: 'tablet' });
    assert.equal((await stack.chat(tablet.secret, chatBody('prov-main'))).status, 200);
    const listed = await eventually(async () => {
      const a = await api(alice, 'GET', `/v1/requests?key=${tablet.id}`);
      assert.equal(a.json.data.length, 1);
      assert.notEqual(a.json.data[0].status, 'reserved');
      return a.json.data;
    });
    const before = (await api(alice, 'GET', '/v1/requests')).json.data.length;
    let r = await api(alice, 'PUT', `/v1/keys/${tablet.id}/budget`, { weekly_budget: 0 });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.week_used > 0, 'used up');
    const at = Date.parse(r.json.budget_returns_at);
    const oldest = Date.parse(listed[0].created_at);
    // the budget's week counts in buckets (billing's window): within a bucket of a week after the request
    assert.ok(Math.abs(at - (oldest + 7 * 86400 * 1000)) <= 3600 * 1000, `${r.json.budget_returns_at}: a week after the key's request`);
    assert.ok(at > Date.now(), 'in the future');
    const refused = await stack.chat(tablet.secret, chatBody('prov-main'));
    assertOpenAIError(refused, 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    const rid = refused.headers.get('x-request-id');
    r = await eventually(async () => {
      const a = await api(alice, 'GET', '/v1/requests');
      assert.equal(a.json.data.length, before + 1, 'listed once its child wrote it (within a second or so)');
      return a;
    });
    const row = r.json.data[0];
    assert.equal(row.request_id, rid, 'the newest (rows of one second sort by their request ids)');
    assert.equal(row.status, 'refused');
    assert.equal(row.http_status, 429);
    assert.equal(row.error_code, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    assert.equal(row.key_name, 'tablet');
    assert.equal(row.model, 'prov-main');
    assert.equal(row.credits, 0);
    assert.equal(row.count, 1);
    const none = (await api(alice, 'GET', '/v1/keys')).json.data.find((k) => k.id === phone.id);
    assert.equal(none.weekly_budget, null);
    assert.ok(none.budget_returns_at, 'a key without budget still says when its oldest spend leaves');
  });
});
