// tests/integration/audit.test.js: the audit trail through httpd (issue 34
// item 2; docs/internals/audit.md). Signed in through the kit's OpenID
// Provider as a browser would be, alice makes, reissues, budgets and
// deletes keys in the cabinet API: each change is one audit row (actor
// user, target the key, the client address), a refused change (another
// user's key) none. Sign-ins and refused sign-ins (a forged state, a
// blocked user) are rows with the client address. GET
// /v1/account/activity gives a user their own security rows only, newest
// first, a page at a time (next_before), 401 without a session and 400 on a
// bad limit; providerctl's own changes show there as the administrator's.
// No audit row holds a key secret, a cookie, a token or the provider's
// subject. Behind mod_remoteip a refused sign-in's address is the client's
// (X-Forwarded-For from a trusted proxy), and the periodic purge
// (ProviderPurgeInterval 1) removes rows older than 400 days and keeps the
// younger. Runs on SQLite, and on PostgreSQL with PROVIDER_TEST_PGSQL=1.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, freePort, seedCatalog, sleep, HTTPD_MODULES } from './lib/server.js';
import { startIdentityProviders } from './lib/idp.js';
import { CookieJar } from './lib/idp-client.js';
import { signInUser } from './lib/signin.js';
import { assertOpenAIError } from './lib/helpers.js';

describe('the audit trail', { timeout: 180000 }, () => {
  let stack;
  let kit;
  let alice;
  let bob;
  const secrets = [];

  async function api(jar, method, path, body) {
    const headers = { origin: stack.baseURL };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const r = await jar.fetch(`${stack.baseURL}${path}`,
      { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: r.status, headers: r.headers, text, json };
  }

  const signIn = (login, opts) => signInUser(stack, login, opts);

  const rows = (where) => stack.sql(`SELECT id, actor_kind, actor_id, action, target_kind, target_id,
    user_id, address, detail FROM audit ${where} ORDER BY id`);

  before(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    stack = await startStack({
      port,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}`,
      seed: (s) => seedCatalog(s),
    });
    alice = await signIn('alice');
    bob = await signIn('bob');
    assert.equal(alice.status, 302);
    assert.notEqual(alice.id, bob.id);
  });

  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      for (const j of [alice, bob]) if (j) for (const c of j.jar.cookies) if (c.value) stack.secrets.push(c.value);
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  it('writes a row per sign-in with the client address, never the subject', () => {
    const r = rows(`WHERE action = 'signin' AND user_id = ${alice.id}`);
    assert.equal(r.length, 1, JSON.stringify(r));
    assert.equal(r[0].actor_kind, 'user');
    assert.equal(r[0].actor_id, String(alice.id));
    assert.equal(r[0].target_kind, 'identity_provider');
    assert.equal(r[0].target_id, 'idp1');
    assert.equal(r[0].address, '127.0.0.1');
  });

  it('writes a row per cabinet key change; a refused change writes none', async () => {
    const made = await api(alice.jar, 'POST', '/v1/keys', { name: 'laptop', weekly_budget: 3 });
    assert.equal(made.status, 201, made.text);
    secrets.push(made.json.secret);
    stack.secrets.push(made.json.secret);
    const re = await api(alice.jar, 'POST', `/v1/keys/${made.json.id}/reissue`);
    assert.equal(re.status, 200, re.text);
    secrets.push(re.json.secret);
    stack.secrets.push(re.json.secret);
    assert.equal((await api(alice.jar, 'PUT', `/v1/keys/${made.json.id}/budget`, { weekly_budget: 4.5 })).status, 200);
    assertOpenAIError(await api(bob.jar, 'DELETE', `/v1/keys/${made.json.id}`), 404, 'KEY_NOT_FOUND');
    assert.equal((await api(alice.jar, 'DELETE', `/v1/keys/${made.json.id}`)).status, 204);
    const r = rows(`WHERE target_kind = 'key' AND target_id = '${made.json.id}'`);
    assert.deepEqual(r.map((x) => x.action), ['key.create', 'key.reissue', 'key.budget', 'key.delete']);
    for (const x of r) {
      assert.equal(x.actor_kind, 'user');
      assert.equal(x.user_id, alice.id);
      assert.equal(x.address, '127.0.0.1');
    }
    assert.deepEqual(JSON.parse(r[0].detail), { name: 'laptop', budget: '3' });
    assert.deepEqual(JSON.parse(r[2].detail), { budget: '4.5' });
    assert.equal(rows(`WHERE user_id = ${bob.id} AND action LIKE 'key.%'`).length, 0);
  });

  it('writes a row per refused sign-in: a forged state, a blocked user', async () => {
    const before = rows(`WHERE action = 'signin.refused'`).length;
    const r = await fetch(`${stack.baseURL}/v1/auth/idp1/callback?state=forged-state-123&code=x`);
    await r.arrayBuffer();
    assert.equal(r.status, 400);
    const bobEmail = kit.byName('idp1').users.get('bob').email;
    stack.ctl('user', 'block', bobEmail);
    try {
      const b = await signIn('bob', { status: null });
      assert.equal(b.status, 403);
    } finally {
      stack.ctl('user', 'unblock', bobEmail);
    }
    bob = await signIn('bob');    // blocking ended his sessions
    assert.equal(bob.status, 302);
    const refused = rows(`WHERE action = 'signin.refused'`).slice(before);
    assert.equal(refused.length, 2, JSON.stringify(refused));
    assert.ok(refused.every((x) => x.address === '127.0.0.1' && x.target_id === 'idp1'));
    assert.equal(JSON.parse(refused[1].detail).reason, 'blocked');
    const admin = rows(`WHERE action IN ('user.block', 'user.unblock') AND user_id = ${bob.id}`);
    assert.deepEqual(admin.map((x) => `${x.actor_kind}:${x.action}`), ['admin:user.block', 'admin:user.unblock']);
  });

  it('GET /v1/account/activity: the user\'s own security rows, newest first, by pages', async () => {
    stack.ctl('balance', 'add', String(alice.id), '5', '--reason', 'not security');
    const all = await api(alice.jar, 'GET', '/v1/account/activity?limit=100');
    assert.equal(all.status, 200, all.text);
    assert.equal(all.headers.get('cache-control'), 'no-store');
    const acts = all.json.data.map((x) => x.action);
    assert.deepEqual(acts, ['key.delete', 'key.budget', 'key.reissue', 'key.create', 'signin']);
    assert.equal(all.json.next_before, null);
    assert.ok(all.json.data.every((x) => x.actor === 'user' && x.address === '127.0.0.1'));
    assert.match(all.json.data[0].time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // pages of two
    const p1 = await api(alice.jar, 'GET', '/v1/account/activity?limit=2');
    assert.deepEqual(p1.json.data.map((x) => x.action), acts.slice(0, 2));
    assert.equal(p1.json.next_before, p1.json.data[1].id);
    const p2 = await api(alice.jar, 'GET', `/v1/account/activity?limit=2&before=${p1.json.next_before}`);
    assert.deepEqual(p2.json.data.map((x) => x.action), acts.slice(2, 4));
    const p3 = await api(alice.jar, 'GET', `/v1/account/activity?limit=2&before=${p2.json.next_before}`);
    assert.deepEqual(p3.json.data.map((x) => x.action), ['signin']);
    assert.equal(p3.json.next_before, null);
    // bob sees his own only, an administrator's change to him included
    const b = await api(bob.jar, 'GET', '/v1/account/activity');
    assert.equal(b.status, 200, b.text);
    assert.ok(b.json.data.some((x) => x.action === 'user.block' && x.actor === 'admin'), b.text);
    assert.ok(b.json.data.some((x) => x.action === 'signin' && x.actor === 'user'), b.text);
    assert.ok(!b.json.data.some((x) => x.action.startsWith('key.')), b.text);
    assert.ok(!b.text.includes('"actor_id"') && !b.text.includes('root'), 'no operator name');
    // errors
    assertOpenAIError(await api(new CookieJar(), 'GET', '/v1/account/activity'), 401, 'NOT_SIGNED_IN');
    for (const q of ['limit=0', 'limit=101', 'limit=x', 'before=-1', 'before=abc']) {
      assertOpenAIError(await api(alice.jar, 'GET', `/v1/account/activity?${q}`), 400, 'INVALID_REQUEST');
    }
    assert.equal((await api(alice.jar, 'POST', '/v1/account/activity', {})).status, 405);
  });

  it('no audit row holds a key secret, a cookie, a token or a subject', () => {
    const dump = JSON.stringify(stack.sql('SELECT * FROM audit'));
    const cookies = [alice, bob].flatMap((j) => j.jar.cookies.map((c) => c.value)).filter(Boolean);
    const all = [...secrets, ...cookies, ...kit.secrets(), ...kit.subjects()];
    assert.ok(all.length >= 6, `${all.length} secrets`);
    for (const s of all) assert.ok(!dump.includes(s), `the audit table holds ${String(s).slice(0, 8)}...`);
  });
});

describe('the audit trail behind a proxy, and its purge', { timeout: 120000 }, () => {
  const DAY = 86400;
  let stack;
  let kit;
  let now;

  before(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    now = Math.floor(Date.now() / 1000);
    stack = await startStack({
      port, clock: now,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}\n`
        + `LoadModule remoteip_module ${HTTPD_MODULES}/mod_remoteip.so\n`
        + 'RemoteIPHeader X-Forwarded-For\nRemoteIPInternalProxy 127.0.0.1\nProviderPurgeInterval 1\n',
    });
  });

  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  it('records a refused sign-in with the client address mod_remoteip found', async () => {
    const r = await fetch(`${stack.baseURL}/v1/auth/idp1/callback?state=forged&code=x`,
      { headers: { 'x-forwarded-for': '203.0.113.77' } });
    await r.arrayBuffer();
    assert.equal(r.status, 400);
    const rows = stack.sql("SELECT address, actor_kind FROM audit WHERE action = 'signin.refused'");
    assert.deepEqual(rows, [{ address: '203.0.113.77', actor_kind: 'system' }]);
  });

  it('the periodic purge removes rows past the ledger\'s retention (400 days, whole UTC days) and keeps the younger', async () => {
    const row = (id, at) => `INSERT INTO audit (id, at, actor_kind, action) VALUES (${id}, ${at}, 'system', 'old.${id}')`;
    // ProviderLedgerRetention's cut: the start of the UTC day 400 days ago
    const cut = Math.floor(now / DAY) * DAY - 400 * DAY;
    stack.exec([row(9001, now - 401 * DAY), row(9002, cut - 60), row(9003, cut + 60)].join(';\n'));
    let left = [];
    for (let i = 0; i < 100; i++) {
      left = stack.sql('SELECT id FROM audit WHERE id > 9000 ORDER BY id').map((x) => x.id);
      if (left.length === 1) break;
      await sleep(100);
    }
    assert.deepEqual(left, [9003]);
  });
});
