// tests/integration/refusals.test.js: the refusals of a known key before
// its reservation in GET /v1/requests (issue 36 item 3; migration 018,
// mod_provider_refusal.c): each kind (402, 429 of the budget, the plan, the rate and
// the in-flight limit, 404 of an unknown model, 403 of the model list and
// the address list, 401 of an expired key, 400 of a bad body) is listed
// with its x-request-id, HTTP status and error code, and no charge; an
// unknown key's refusal is recorded nowhere; the status and key filters and
// the pages over both tables; a flood of 2,000 refusals in a few seconds
// writes a bounded number of rows that count every one of them and charges
// nothing. Beside them: a duplicate key name is refused (409 KEY_NAME_TAKEN,
// and by providerctl), and a key's week_used while a lease is open is what
// its requests were charged or hold, not the lease's undrawn rest. Runs on
// SQLite, and on PostgreSQL with PROVIDER_TEST_PGSQL=1.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, freePort, seedCatalog } from './lib/server.js';
import { startIdentityProviders } from './lib/idp.js';
import { CookieJar, signInAtProvider } from './lib/idp-client.js';
import { assertOpenAIError, chatBody, eventually, unknownKey } from './lib/helpers.js';
import { addBillModel, fullBody, bucketSum, BILL_RATE } from './lib/billing.js';

const FLOOD = 2000;
const SLOW = 'refusal-slow';    // answers after 1.5 s: in flight while others come

describe('refusals before the reservation in GET /v1/requests', { timeout: 180000 }, () => {
  let stack;
  let kit;
  let alice;   // with credits: the key controls' refusals
  let bob;     // no credits: 402

  async function api(who, method, path, body) {
    const h = { origin: stack.baseURL };
    if (body !== undefined) h['content-type'] = 'application/json';
    const r = await who.jar.fetch(`${stack.baseURL}${path}`,
      { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: r.status, headers: r.headers, text, json };
  }

  async function signIn(login) {
    const jar = new CookieJar();
    const flow = await signInAtProvider(`${stack.baseURL}/v1/auth/idp1/login`, { jar, login });
    await (await jar.fetch(flow.callback)).arrayBuffer();
    const who = await (await jar.fetch(`${stack.baseURL}/v1/auth/session`)).json();
    return { jar, id: who.userId };
  }

  const ctlKey = (user, name, ...set) => {
    const k = stack.createKey(user.id, { name });
    if (set.length) stack.ctl('key', 'set', String(k.id), ...set);
    return k;
  };

  before(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    stack = await startStack({
      port,
      threads: 48,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}`,
      seed: (s) => {
        seedCatalog(s);
        addBillModel(s);
        const rates = { input: BILL_RATE, output: BILL_RATE, cache: BILL_RATE, reasoning: BILL_RATE };
        s.addModel(SLOW, 'mock-fault-delay-1500', { rates });
      },
    });
    alice = await signIn('alice');
    bob = await signIn('bob');
    stack.ctl('balance', 'add', String(alice.id), '100000', '--reason', 'test');
  });

  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  const seen = [];   // { id, status, code, key } of every refusal made, oldest first

  async function refused(res, status, code, key, model) {
    assertOpenAIError(res, status, code);
    const id = res.headers.get('x-request-id');
    assert.ok(id, 'the refusal has an x-request-id');
    seen.push({ id, status, code, key, model });
    return id;
  }

  it('lists each kind of refusal of a known key with its request id and code, and charges nothing', async () => {
    const plain = ctlKey(alice, 'plain');
    const budget = ctlKey(alice, 'spent', '--rpm', '1000');
    stack.ctl('key', 'budget', String(budget.id), '0');
    const listed = ctlKey(alice, 'listed', '--models', 'prov-main');
    const fenced = ctlKey(alice, 'fenced', '--addresses', '10.0.0.0/8');
    const old = ctlKey(alice, 'old', '--expires', '2020-01-01T00:00:00Z');
    const rated = ctlKey(alice, 'rated', '--rpm', '1');
    const single = ctlKey(alice, 'single', '--max-in-flight', '1');
    const poor = ctlKey(bob, 'poor');
    const balanceBefore = stack.balance(alice.id);

    await refused(await stack.chat(poor.secret, chatBody('prov-main')), 402, 'INSUFFICIENT_CREDITS', poor, 'prov-main');
    await refused(await stack.chat(budget.secret, chatBody('prov-main')), 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED', budget, 'prov-main');
    await refused(await stack.chat(plain.secret, chatBody('no-such-model')), 404, 'MODEL_NOT_FOUND', plain, 'no-such-model');
    await refused(await stack.chat(listed.secret, chatBody('bill-flat')), 403, 'MODEL_NOT_ALLOWED', listed, 'bill-flat');
    await refused(await stack.chat(fenced.secret, chatBody('prov-main')), 403, 'ADDRESS_NOT_ALLOWED', fenced, null);
    await refused(await stack.chat(old.secret, chatBody('prov-main')), 401, 'API_KEY_EXPIRED', old, null);
    await refused(await stack.chat(plain.secret, '{"model": "prov-main", '), 400, 'INVALID_REQUEST', plain, null);
    assert.equal((await stack.chat(rated.secret, chatBody('prov-main'))).status, 200);
    await refused(await stack.chat(rated.secret, chatBody('prov-main')), 429, 'API_KEY_RATE_LIMITED', rated, null);
    const long = stack.chat(single.secret, fullBody({ model: SLOW }));
    await new Promise((r) => setTimeout(r, 300));
    await refused(await stack.chat(single.secret, chatBody('prov-main')), 429, 'API_KEY_IN_FLIGHT_LIMIT', single, null);
    assert.equal((await long).status, 200);
    // an unknown key has no owner: recorded nowhere
    const stranger = await stack.chat(unknownKey(), chatBody('prov-main'));
    assertOpenAIError(stranger, 401, 'INVALID_API_KEY');

    const mine = seen.filter((x) => x.key !== poor);
    const rows = await eventually(async () => {
      const a = await api(alice, 'GET', '/v1/requests?status=refused');
      assert.equal(a.status, 200, a.text);
      assert.equal(a.json.data.length, mine.length, JSON.stringify(a.json.data));
      return a.json.data;
    });
    assert.deepEqual(rows.map((x) => x.request_id), mine.map((x) => x.id).reverse(), 'newest first');
    for (const x of mine) {
      const row = rows.find((r) => r.request_id === x.id);
      assert.equal(row.status, 'refused');
      assert.equal(row.http_status, x.status, x.code);
      assert.equal(row.error_code, x.code);
      assert.equal(row.key_id, String(x.key.id));
      assert.equal(row.credits, 0);
      assert.equal(row.input_tokens + row.output_tokens, 0);
      assert.equal(row.count, 1);
      assert.match(row.status_text, new RegExp(x.code));
      if (x.model) assert.equal(row.model, x.model, 'the model as sent');
    }
    const b = await eventually(async () => {
      const a = await api(bob, 'GET', '/v1/requests');
      assert.equal(a.json.data.length, 1);
      return a.json.data[0];
    });
    assert.equal(b.request_id, seen[0].id);
    assert.equal(b.error_code, 'INSUFFICIENT_CREDITS');
    assert.equal(b.http_status, 402);
    assert.equal(stack.sql(`SELECT COUNT(*) AS n FROM refusals
      WHERE request_id = '${stranger.headers.get('x-request-id')}'`)[0].n, 0);
    // charged: only the two requests that went through
    const ledger = stack.sql(`SELECT COUNT(*) AS n FROM ledger WHERE user_id = ${alice.id}`)[0].n;
    assert.equal(Number(ledger), 2);
    assert.ok(stack.balance(alice.id) < balanceBefore);
    assert.equal(stack.balance(bob.id), 0n);
    // a plan's window used up (no balance beside it): 429 SUBSCRIPTION_QUOTA_EXCEEDED
    stack.ctl('plan', 'add', 'tiny', '--5h', '0.000001', '--7d', '0.000001');
    const carol = { id: stack.addUser('carol@refusals.test') };
    stack.ctl('subscription', 'set', 'carol@refusals.test', 'tiny');
    const planned = ctlKey(carol, 'planned');
    const q = await stack.chat(planned.secret, chatBody('prov-main'));
    assertOpenAIError(q, 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
    await eventually(() => assert.deepEqual(stack.sql(`SELECT user_id, http_status, code FROM refusals
      WHERE request_id = '${q.headers.get('x-request-id')}'`).map((r) => [Number(r.user_id), Number(r.http_status), r.code]),
    [[Number(carol.id), 429, 'SUBSCRIPTION_QUOTA_EXCEEDED']]));
  });

  it('filters by HTTP status, error code, status and key, and pages over both tables', async () => {
    let r = await api(alice, 'GET', '/v1/requests?status=429');
    assert.deepEqual(r.json.data.map((x) => x.error_code).sort(),
      ['API_KEY_CREDIT_BUDGET_EXCEEDED', 'API_KEY_IN_FLIGHT_LIMIT', 'API_KEY_RATE_LIMITED']);
    r = await api(alice, 'GET', '/v1/requests?status=403');
    assert.deepEqual(r.json.data.map((x) => x.error_code).sort(), ['ADDRESS_NOT_ALLOWED', 'MODEL_NOT_ALLOWED']);
    r = await api(alice, 'GET', '/v1/requests?status=MODEL_NOT_FOUND');
    assert.deepEqual(r.json.data.map((x) => x.model), ['no-such-model']);
    r = await api(alice, 'GET', '/v1/requests?status=ok');
    assert.equal(r.json.data.length, 2, 'the ledger\'s rows only');
    assert.ok(r.json.data.every((x) => x.http_status === null && x.error_code === null));
    const rated = seen.find((x) => x.code === 'API_KEY_RATE_LIMITED').key;
    r = await api(alice, 'GET', `/v1/requests?key=${rated.id}`);
    assert.deepEqual(r.json.data.map((x) => x.status), ['refused', 'ok'], 'the key\'s refusal, then its ledger row');
    r = await api(alice, 'GET', `/v1/requests?key=${rated.id}&status=429`);
    assert.equal(r.json.data.length, 1);
    for (const [q, param] of [['status=200', 'status'], ['status=NOPE', 'status'], ['before=1.x', 'before']]) {
      const e = assertOpenAIError(await api(alice, 'GET', `/v1/requests?${q}`), 400, 'INVALID_REQUEST');
      assert.equal(e.param, param, q);
    }
    // pages of 3 give the whole list, in the same order
    const all = (await api(alice, 'GET', '/v1/requests')).json.data.map((x) => x.request_id);
    assert.ok(all.length >= 10);
    const paged = [];
    let next = '';
    for (let i = 0; i < 10; i++) {
      r = await api(alice, 'GET', `/v1/requests?limit=3${next ? `&before=${next}` : ''}`);
      assert.equal(r.status, 200, r.text);
      paged.push(...r.json.data.map((x) => x.request_id));
      if (!r.json.next) break;
      assert.match(r.json.next, /^\d+\.\d+$/);
      next = r.json.next;
    }
    assert.deepEqual(paged, all);
  });

  it(`folds a flood of ${FLOOD} refusals into a bounded number of rows that count them all, and charges nothing`, async () => {
    const flood = ctlKey(alice, 'flood', '--models', 'prov-main');
    const balance = stack.balance(alice.id);
    const t0 = Date.now();
    let sent = 0;
    const worker = async () => {
      while (sent < FLOOD) {
        sent++;
        const res = await fetch(`${stack.baseURL}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${flood.secret}`, 'content-type': 'application/json' },
          body: JSON.stringify(chatBody('bill-flat')),
        });
        await res.arrayBuffer();
        assert.equal(res.status, 403);
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    const seconds = Math.ceil((Date.now() - t0) / 1000);
    const children = Math.max(1, stack.httpdChildren().length);
    const rows = await eventually(() => {
      const [s] = stack.sql(`SELECT COUNT(*) AS n, CAST(COALESCE(SUM(count), 0) AS TEXT) AS c
        FROM refusals WHERE key_id = ${flood.id}`);
      assert.equal(Number(s.c), FLOOD, 'every refusal counted in a row');
      return Number(s.n);
    });
    // one row per key, code and second in each child (and a second either side)
    assert.ok(rows <= (seconds + 2) * children, `${rows} rows for ${FLOOD} refusals in ${seconds} s`);
    assert.ok(rows < 50, `${rows} rows`);
    const listed = (await api(alice, 'GET', `/v1/requests?key=${flood.id}`)).json.data;
    assert.equal(listed.length, rows);
    assert.equal(listed.reduce((n, x) => n + x.count, 0), FLOOD);
    assert.ok(listed.every((x) => x.error_code === 'MODEL_NOT_ALLOWED' && x.credits === 0));
    assert.equal(Number(stack.sql(`SELECT COUNT(*) AS n FROM ledger WHERE key_id = ${flood.id}`)[0].n), 0);
    assert.equal(stack.balance(alice.id), balance, 'nothing charged');
  });

  it('refuses a second live key of the same name: 409 KEY_NAME_TAKEN, and providerctl too', async () => {
    let r = await api(alice, 'POST', '/v1/keys', { name: 'twin' });
    assert.equal(r.status, 201, r.text);
    stack.secrets.push(r.json.secret);
    const first = r.json.id;
    const before = (await api(alice, 'GET', '/v1/keys')).json.data.length;
    const e = assertOpenAIError(await api(alice, 'POST', '/v1/keys', { name: 'twin' }), 409, 'KEY_NAME_TAKEN');
    assert.match(e.message, /already have a key with this name/);
    assert.equal((await api(alice, 'GET', '/v1/keys')).json.data.length, before, 'nothing made');
    // another user may use it; a deleted key's name is free again
    r = await api(bob, 'POST', '/v1/keys', { name: 'twin' });
    assert.equal(r.status, 201, r.text);
    stack.secrets.push(r.json.secret);
    assert.throws(() => stack.ctl('key', 'create', String(alice.id), '--name', 'twin'),
      (err) => /already has a key named 'twin'/.test(String(err.stderr || err.message)));
    assert.equal((await api(alice, 'DELETE', `/v1/keys/${first}`)).status, 204);
    r = await api(alice, 'POST', '/v1/keys', { name: 'twin' });
    assert.equal(r.status, 201, r.text);
    stack.secrets.push(r.json.secret);
  });

  it("shows a key's week_used as what its requests were charged or hold, not a lease's undrawn rest", async () => {
    const k = ctlKey(alice, 'leased');
    const long = stack.chat(k.secret, fullBody({ model: SLOW }));
    // requests beside the long one take a lease and keep it while it runs
    for (let i = 0; i < 3; i++) {
      assert.equal((await stack.chat(k.secret, fullBody())).status, 200);
    }
    const leased = () => Number(stack.sql(`SELECT COUNT(*) AS n FROM billing_leases WHERE key_id = ${k.id}`)[0].n);
    // (one per child that served them: the stack may have several)
    assert.ok(leased() >= 1, 'a lease of the key is open');
    await eventually(async () => {
      const [l] = stack.sql(`SELECT CAST(COALESCE(SUM(CASE WHEN status = 'reserved' THEN reserved ELSE credits END), 0)
        AS TEXT) AS s FROM ledger WHERE key_id = ${k.id}`);
      const used = (await api(alice, 'GET', '/v1/keys')).json.data.find((x) => x.id === String(k.id)).week_used;
      const shown = stack.ctlJSON('key', 'show', String(k.id)).spent_7d;
      assert.ok(leased() >= 1, 'the lease is still open');
      const held = bucketSum(stack, 'key:h', k.id);
      assert.ok(held > BigInt(l.s), 'the buckets hold the lease besides');
      assert.equal(Math.round(used * 1e6), Number(l.s), 'the cabinet: charged + open holds');
      assert.equal(Math.round(shown * 1e6), Number(l.s), 'providerctl key show');
    }, 1200, 50);
    assert.equal((await long).status, 200);
  });
});

describe('the purge removes refusals past their retention', { timeout: 60000 }, () => {
  let stack;
  before(async () => {
    stack = await startStack({ overrides: { ProviderPurgeInterval: '1', ProviderLedgerRetention: '10' } });
  });
  after(async () => { if (stack) await stack.stop(); });

  it('keeps 30 days, or ProviderLedgerRetention when shorter (10 days here)', async () => {
    const now = Math.floor(Date.now() / 1000);
    const row = (age, rid) => `(${now - age * 86400}, 1, 1, 'chat', NULL, 402, 'INSUFFICIENT_CREDITS', '${rid}', 1)`;
    stack.exec(`INSERT INTO refusals (created_at, user_id, key_id, transport, model, http_status, code,
      request_id, count) VALUES ${row(40, 'req_old')}, ${row(11, 'req_past')}, ${row(9, 'req_young')}`);
    await eventually(() => {
      const left = stack.sql('SELECT request_id FROM refusals ORDER BY id').map((r) => r.request_id);
      assert.deepEqual(left, ['req_young']);
    }, 10000);
  });
});
