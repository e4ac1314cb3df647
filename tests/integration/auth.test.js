// tests/integration/auth.test.js: sign-in through httpd (mod_provider's
// /v1/auth routes) against the kit's identity providers (lib/idp.js: real
// oidc-provider OpenID Providers on localhost, a plain OAuth 2.0 one), the
// service on 127.0.0.1, a user played by lib/idp-client.js (a cookie jar
// and the providers' login forms). Start-up: every bad sign-in directive
// stops httpd with a message naming it. Then: the first sign-in makes the
// user, the second finds it; the cookies' attributes; GET
// /v1/auth/session; the return path (never off this site); logout (same
// site only); a block revokes at once and refuses the next sign-in; the
// active session renewed from the refresh cookie without the provider
// (its request log) and extended by activity; the 30-day end; a replayed
// state, another browser, a cancel and every bad id_token end on a page
// with a short reason; linking (409 for another user's identity);
// unlinking (same site only, 404 for an identity the user lacks, 409
// LAST_IDENTITY for the last); and no secret, token, cookie value or
// subject in the error log.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, freePort, ROOMY_LIMITS } from './lib/server.js';
import { startIdentityProviders, ID_TOKEN_DEFECTS } from './lib/idp.js';
import { CookieJar, signInAtProvider } from './lib/idp-client.js';

const ACTIVE = '__Host-provider-session';
const REFRESH = '__Host-provider-refresh';
const BINDING = '__Host-provider-signin';
const CORE_LOG = /PROV005\d\d|PROV0057\d/;

/* ------------------------------------------------------------------------ */
/* start-up                                                                  */

describe('sign-in directives at start-up', () => {
  let dir;
  let secret;
  const issuer = 'http://localhost:9';
  const line = (name, extra = '') => `ProviderIdentityProvider ${name} issuer=${issuer} `
    + `client_id=c-${name} client_secret_file=${secret}${extra}`;
  const publicURL = 'ProviderPublicURL http://127.0.0.1:9';

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-auth-conf-'));
    secret = path.join(dir, 'secret');
    fs.writeFileSync(secret, 'a-client-secret\n', { mode: 0o600 });
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const refused = [
    ['an unknown key', () => `${publicURL}\n${line('one', ' colour=blue')}`, /ProviderIdentityProvider.*colour/],
    ['no client_id', () => `${publicURL}\nProviderIdentityProvider one issuer=${issuer} client_secret_file=${secret}`,
      /ProviderIdentityProvider.*client_id/],
    ['an unreadable secret file', () => `${publicURL}\n${line('one').replace(secret, path.join(dir, 'none'))}`,
      /ProviderIdentityProvider.*client_secret_file/],
    ['a fifth provider', () => [publicURL, ...['a', 'b', 'c', 'd', 'e'].map((n) => line(n))].join('\n'),
      /ProviderIdentityProvider e: at most 4/],
    ['a name twice', () => `${publicURL}\n${line('one')}\n${line('one')}`, /ProviderIdentityProvider one: .*already/],
    ['a bad name', () => `${publicURL}\n${line('a/b')}`, /ProviderIdentityProvider/],
    ['a plain-http issuer off loopback', () => `${publicURL}\n${line('one').replace(issuer, 'http://example.com')}`,
      /ProviderIdentityProvider.*issuer/],
    ['providers without ProviderPublicURL', () => line('one'), /ProviderIdentityProvider needs ProviderPublicURL/],
    ['a ProviderPublicURL with a path', () => 'ProviderPublicURL https://api.example.com/base', /ProviderPublicURL/],
    ['a plain-http ProviderPublicURL off loopback', () => 'ProviderPublicURL http://api.example.com', /ProviderPublicURL/],
    ['ProviderCookieSecure Off on https', () => 'ProviderPublicURL https://api.example.com\nProviderCookieSecure Off',
      /ProviderCookieSecure Off is allowed only/],
    ['ProviderCookieSecure Off without ProviderPublicURL', () => 'ProviderCookieSecure Off',
      /ProviderCookieSecure Off is allowed only/],
    ['ProviderCookieSecure maybe', () => 'ProviderCookieSecure maybe', /ProviderCookieSecure/],
  ];
  for (const [what, directives, message] of refused) {
    it(`refuses ${what}`, async () => {
      await assert.rejects(startStack({ directives: directives() }), (e) => {
        assert.match(e.message, /apache2 exited at start/);
        assert.match(e.message, message);
        assert.doesNotMatch(e.message, /a-client-secret/);
        return true;
      });
    });
  }

  it('starts with the kit\'s four OpenID Providers and its plain one only when there are four in all', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const kit = await startIdentityProviders({ redirectBase: base });
    try {
      await assert.rejects(startStack({ port, directives: `ProviderPublicURL ${base}\n${kit.directives()}` }),
        /at most 4 identity providers/);
      const stack = await startStack({
        port,
        directives: `ProviderPublicURL ${base}\nProviderCookieSecure Off\n`
          + `${kit.ops.slice(0, 3).map((p) => p.directive()).join('\n')}\n${kit.plain[0].directive()}`,
      });
      const r = await fetch(`${base}/v1/auth/session`);
      assert.equal(r.status, 401);
      await stack.stop();
    } finally {
      await kit.stop();
    }
  });
});

/* ------------------------------------------------------------------------ */
/* sign-in                                                                   */

/** Starts a sign-in at the service and fills in the provider's form: the flow, stopped at the callback. */
async function toCallback(stack, name, { jar = new CookieJar(), login = 'alice', ret = null, cancel = false, how = 'login' } = {}) {
  const q = ret === null ? '' : `?return=${encodeURIComponent(ret)}`;
  const flow = await signInAtProvider(`${stack.baseURL}/v1/auth/${name}/${how}${q}`,
    { jar, login, cancel, post: how === 'link' });
  assert.ok(flow.callback, `no callback (${flow.status}): ${flow.body}`);
  return flow;
}

/** A whole sign-in: { res (the callback's answer), body, jar }. */
async function signIn(stack, name, opts = {}) {
  const flow = await toCallback(stack, name, opts);
  const res = await flow.jar.fetch(flow.callback);
  const body = await res.text();
  return { res, body, jar: flow.jar, flow };
}

async function session(stack, jar) {
  const r = await jar.fetch(`${stack.baseURL}/v1/auth/session`);
  return { status: r.status, body: await r.json(), setCookie: r.headers.getSetCookie() };
}

function logout(stack, jar, headers = {}) {
  return jar.fetch(`${stack.baseURL}/v1/auth/logout`, { method: 'POST', headers });
}

/** A copy of jar (the same cookies, kept apart). */
function copyJar(jar) {
  const j = new CookieJar();
  j.cookies = jar.cookies.map((c) => ({ ...c }));
  return j;
}

describe('sign-in through httpd', () => {
  let stack;
  let kit;
  let now;
  const cookieValues = new Set();
  const remember = (jar) => { for (const c of jar.cookies) if (c.value) cookieValues.add(c.value); };

  before(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({
      redirectBase: base, count: 3, providers: [{}, {}, { auth: 'client_secret_post' }],
    });
    now = Math.floor(Date.now() / 1000);
    stack = await startStack({ port, clock: now,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}\n${ROOMY_LIMITS}` });
  });

  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects(), ...cookieValues);
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  it('makes the user on the first sign-in with every provider and finds it on the second', async () => {
    for (const p of kit.all) {
      const first = await signIn(stack, p.name, { login: 'alice' });
      assert.equal(first.res.status, 302, first.body);
      assert.equal(first.res.headers.get('location'), '/cabinet/');
      remember(first.jar);
      const who = await session(stack, first.jar);
      assert.equal(who.status, 200);
      assert.equal(who.body.email, p.users.get('alice').email);
      const again = await signIn(stack, p.name, { login: 'alice' });
      assert.equal(again.res.status, 302, again.body);
      remember(again.jar);
      const who2 = await session(stack, again.jar);
      assert.equal(who2.body.userId, who.body.userId, `${p.name}: the second sign-in finds the user`);
      assert.notEqual(again.jar.get(stack.baseURL, ACTIVE), first.jar.get(stack.baseURL, ACTIVE));
      for (const s of kit.subjects()) assert.ok(!JSON.stringify(who.body).includes(s));
    }
    const users = stack.sql('SELECT COUNT(*) AS n FROM users')[0].n;
    assert.equal(Number(users), kit.all.length, 'one user per provider identity');
  });

  it('sets HttpOnly, SameSite=Lax, Secure, host-only __Host- cookies on Path=/', async () => {
    const flow = await toCallback(stack, 'idp1');
    const binding = flow.jar.cookies.find((c) => c.name === BINDING);
    assert.ok(binding, 'the binding cookie');
    const res = await flow.jar.fetch(flow.callback);
    await res.arrayBuffer();
    remember(flow.jar);
    const lines = res.headers.getSetCookie();
    for (const name of [ACTIVE, REFRESH]) {
      const line = lines.find((l) => l.startsWith(`${name}=`));
      assert.ok(line, `${name} set`);
      assert.match(line, /; HttpOnly/);
      assert.match(line, /; SameSite=Lax/);
      assert.match(line, /; Secure/);
      assert.match(line, /; Path=\//);
      assert.doesNotMatch(line, /Domain=/i);
      assert.match(line.split(';')[0], new RegExp(`^${name}=[A-Za-z0-9_-]{43}$`));
    }
    assert.match(lines.find((l) => l.startsWith(`${ACTIVE}=`)), /Max-Age=300;/);
    assert.match(lines.find((l) => l.startsWith(`${REFRESH}=`)), /Max-Age=2592000;/);
    assert.ok(lines.some((l) => l.startsWith(`${BINDING}=;`) && /Max-Age=0/.test(l)), 'the binding cookie removed');
    assert.equal(res.headers.get('cache-control'), 'no-store');
  });

  it('answers 401 in the JSON error shape with no session', async () => {
    const r = await fetch(`${stack.baseURL}/v1/auth/session`);
    assert.equal(r.status, 401);
    assert.equal((await r.json()).error.code, 'NOT_SIGNED_IN');
    const g = await fetch(`${stack.baseURL}/v1/auth/session`, { headers: { cookie: `${ACTIVE}=x; ${REFRESH}=y` } });
    assert.equal(g.status, 401);
    assert.ok(g.headers.getSetCookie().some((l) => l.startsWith(`${ACTIVE}=;`)), 'a stale cookie removed');
    await g.arrayBuffer();
  });

  it('returns to a path on this site only', async () => {
    for (const [ret, to] of [['/cabinet/keys?x=1', '/cabinet/keys?x=1'], ['//evil.example/', '/cabinet/'],
      ['https://evil.example/', '/cabinet/'], ['/\\evil.example', '/cabinet/'], ['cabinet', '/cabinet/']]) {
      const r = await signIn(stack, 'idp2', { ret });
      remember(r.jar);
      assert.equal(r.res.status, 302);
      assert.equal(r.res.headers.get('location'), to, ret);
    }
  });

  it('logs out from this site only, and the pair is dead everywhere', async () => {
    const { jar } = await signIn(stack, 'idp1', { login: 'bob' });
    remember(jar);
    const kept = copyJar(jar);
    let r = await logout(stack, jar);
    assert.equal(r.status, 403);
    assert.equal((await r.json()).error.code, 'CROSS_SITE_REQUEST');
    r = await logout(stack, jar, { origin: 'http://localhost:1' });
    assert.equal(r.status, 403);
    await r.arrayBuffer();
    r = await logout(stack, jar, { referer: 'http://evil.example/' });
    assert.equal(r.status, 403);
    await r.arrayBuffer();
    assert.equal((await session(stack, jar)).status, 200, 'a refused logout ends nothing');
    r = await logout(stack, jar, { origin: stack.baseURL });
    assert.equal(r.status, 204);
    assert.equal((await session(stack, jar)).status, 401);
    assert.equal((await session(stack, kept)).status, 401, 'the old cookies are revoked');
    const again = await signIn(stack, 'idp1', { login: 'bob' });
    remember(again.jar);
    r = await logout(stack, again.jar, { referer: `${stack.baseURL}/cabinet/` });
    assert.equal(r.status, 204);
  });

  it('ends the session a new sign-in replaces in the same browser', async () => {
    const first = await signIn(stack, 'idp1', { login: 'bob' });
    remember(first.jar);
    const kept = copyJar(first.jar);
    assert.equal((await session(stack, kept)).status, 200);
    // The same browser signs in again (as bob, then as carol): the session
    // whose cookies each sign-in replaces is revoked, not left live unseen.
    let flow = await toCallback(stack, 'idp1', { jar: first.jar, login: 'bob' });
    await stack.expectingLog(/PROV00577/, async () => {
      await (await first.jar.fetch(flow.callback)).arrayBuffer();
    });
    remember(first.jar);
    assert.equal((await session(stack, first.jar)).status, 200, 'the new one lives');
    assert.equal((await session(stack, kept)).status, 401, 'the replaced one is dead');
    const second = copyJar(first.jar);
    kit.byName('idp2').users.add({ login: 'erin', email: 'erin@idp2.example' });
    flow = await toCallback(stack, 'idp2', { jar: first.jar, login: 'erin' });
    await stack.expectingLog(/PROV00577/, async () => {
      await (await first.jar.fetch(flow.callback)).arrayBuffer();
    });
    remember(first.jar);
    assert.equal((await session(stack, second)).status, 401);
    assert.equal((await session(stack, first.jar)).status, 200);
  });

  it('a block revokes every session at once and refuses the next sign-in', async () => {
    const a = await signIn(stack, 'idp3', { login: 'bob' });
    const b = await signIn(stack, 'idp3', { login: 'bob' });
    remember(a.jar);
    remember(b.jar);
    const id = (await session(stack, a.jar)).body.userId;
    assert.equal((await session(stack, b.jar)).status, 200);
    stack.ctl('user', 'block', String(id));
    assert.equal((await session(stack, a.jar)).status, 401);
    assert.equal((await session(stack, b.jar)).status, 401);
    const c = await signIn(stack, 'idp3', { login: 'bob' });
    assert.equal(c.res.status, 403);
    assert.match(c.body, /This account is blocked/);
    assert.equal(c.jar.get(stack.baseURL, ACTIVE), undefined);
    stack.ctl('user', 'unblock', String(id));
  });

  it('renews an expired active session from the refresh cookie without the provider, and activity extends it', async () => {
    const op = kit.byName('idp1');
    const { jar } = await signIn(stack, 'idp1');
    remember(jar);
    const mark = op.log.mark();
    const first = jar.get(stack.baseURL, ACTIVE);
    try {
      stack.setClock(now + 240);                       // 4 min: still active, extended to 9
      assert.equal((await session(stack, jar)).status, 200);
      stack.setClock(now + 480);                       // 8 min: active thanks to the extension
      assert.equal((await session(stack, jar)).status, 200);
      assert.equal(jar.get(stack.baseURL, ACTIVE), first, 'extended, not renewed');
      stack.setClock(now + 480 + 301);                 // idle > 5 min
      const s = await session(stack, jar);
      assert.equal(s.status, 200);
      const renewed = jar.get(stack.baseURL, ACTIVE);
      assert.notEqual(renewed, first, 'a new active token');
      cookieValues.add(renewed);
      assert.deepEqual(op.log.since(mark), [], 'the provider was not contacted');
      const old = new CookieJar();
      old.cookies = [{ ...jar.cookies.find((c) => c.name === ACTIVE), value: first }];
      assert.equal((await session(stack, old)).status, 401, 'the old active token is dead');
    } finally {
      stack.setClock(now);
    }
  });

  it('ends a session 30 days after the sign-in', async () => {
    const { jar } = await signIn(stack, 'oauth1');
    remember(jar);
    try {
      stack.setClock(now + 30 * 24 * 3600 - 60);
      assert.equal((await session(stack, jar)).status, 200);
      stack.setClock(now + 30 * 24 * 3600 + 1);
      const s = await session(stack, jar);
      assert.equal(s.status, 401);
      assert.ok(s.setCookie.some((l) => l.startsWith(`${REFRESH}=;`)), 'the refresh cookie removed');
    } finally {
      stack.setClock(now);
    }
  });

  it('refuses a replayed state, another browser\'s callback and a cancel with a page', async () => {
    const flow = await toCallback(stack, 'idp1');
    const other = new CookieJar();
    let r;
    let body;
    await stack.expectingLog(/PROV00513/, async () => {
      r = await other.fetch(flow.callback);
      assert.equal(r.status, 400);
      assert.match(await r.text(), /started in another browser/);
      r = await other.fetch(flow.callback);
      body = await r.text();
    });
    assert.equal(r.status, 400);
    assert.match(r.headers.get('content-type'), /^text\/html/);
    // A sign-in's result page cannot be framed by another site.
    assert.equal(r.headers.get('x-frame-options'), 'DENY');
    assert.match(r.headers.get('content-security-policy'), /frame-ancestors 'none'/);
    assert.match(body, /expired or was already used/, 'the first try took the state');
    const fresh = await toCallback(stack, 'idp2');
    await stack.expectingLog(/PROV00513/, async () => {
      r = await new CookieJar().fetch(fresh.callback);
      body = await r.text();
    });
    assert.equal(r.status, 400);
    assert.match(body, /started in another browser/);
    r = await fresh.jar.fetch(fresh.callback);
    body = await r.text();
    assert.equal(r.status, 400, 'taken once, even by the wrong browser');
    const ok = await toCallback(stack, 'idp2');
    r = await ok.jar.fetch(ok.callback);
    remember(ok.jar);
    assert.equal(r.status, 302);
    await r.arrayBuffer();
    r = await ok.jar.fetch(ok.callback);
    body = await r.text();
    assert.equal(r.status, 400);
    assert.match(body, /expired or was already used/);
    const cancel = await toCallback(stack, 'idp3', { cancel: true });
    r = await cancel.jar.fetch(cancel.callback);
    body = await r.text();
    assert.equal(r.status, 400);
    assert.match(body, /did not confirm the sign-in/);
    assert.doesNotMatch(body, /access_denied|error_description/);
  });

  it('refuses every bad id_token with a page', async () => {
    const op = kit.byName('idp1');
    for (const defect of ID_TOKEN_DEFECTS) {
      op.defect = defect;
      try {
        await stack.expectingLog(CORE_LOG, async () => {
          const r = await signIn(stack, 'idp1');
          assert.equal(r.res.status, 400, `${defect}: ${r.body}`);
          assert.match(r.body, /answer could not be verified/, defect);
          assert.equal(r.jar.get(stack.baseURL, ACTIVE), undefined, defect);
        });
      } finally {
        op.defect = null;
      }
    }
  });

  it('links another identity from a session, once, and refuses another user\'s with 409', async () => {
    for (const n of ['idp1', 'idp2']) kit.byName(n).users.add({ login: 'carol', email: `carol@${n}.example` });
    const a = await signIn(stack, 'idp1', { login: 'carol' });
    remember(a.jar);
    const me = (await session(stack, a.jar)).body.userId;
    const ids = async (jar) => {
      const r = await jar.fetch(`${stack.baseURL}/v1/auth/identities`);
      const text = await r.text();
      for (const sub of kit.subjects()) assert.ok(!text.includes(sub), 'no subject shown');
      return { status: r.status, body: text ? JSON.parse(text) : null };
    };
    assert.deepEqual((await ids(a.jar)).body.identities.map((i) => i.provider), ['idp1']);
    const refreshBefore = a.jar.get(stack.baseURL, REFRESH);
    let flow = await toCallback(stack, 'idp2', { jar: a.jar, login: 'carol', how: 'link', ret: '/cabinet/linked' });
    let r = await a.jar.fetch(flow.callback);
    await r.arrayBuffer();
    assert.equal(r.status, 302);
    assert.equal(r.headers.get('location'), '/cabinet/linked');
    assert.ok(!r.headers.getSetCookie().some((l) => l.startsWith(`${REFRESH}=`)), 'no new session');
    assert.equal(a.jar.get(stack.baseURL, REFRESH), refreshBefore);
    const list = (await ids(a.jar)).body.identities;
    assert.deepEqual(list.map((i) => i.provider), ['idp1', 'idp2']);
    for (const i of list) {
      assert.deepEqual(Object.keys(i).sort(), ['createdAt', 'provider']);
      assert.match(i.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    const b = await signIn(stack, 'idp2', { login: 'carol' });
    remember(b.jar);
    assert.equal((await session(stack, b.jar)).body.userId, me, 'the linked identity signs in to the same user');
    flow = await toCallback(stack, 'idp2', { jar: a.jar, login: 'carol', how: 'link' });
    r = await a.jar.fetch(flow.callback);
    await r.arrayBuffer();
    assert.equal(r.status, 302, 'linking the same identity again is a no-op');
    assert.equal((await ids(a.jar)).body.identities.length, 2);
    // alice at idp3 is another user's (the first test made it)
    flow = await toCallback(stack, 'idp3', { jar: a.jar, login: 'alice', how: 'link' });
    r = await a.jar.fetch(flow.callback);
    const page = await r.text();
    assert.equal(r.status, 409);
    assert.match(page, /IDENTITY_ALREADY_LINKED/);
    assert.match(page, /already belongs to another account/);
    flow = await toCallback(stack, 'idp3', { jar: a.jar, login: 'alice', how: 'link' });
    r = await a.jar.fetch(flow.callback, { headers: { accept: 'application/json' } });
    assert.equal(r.status, 409);
    assert.equal((await r.json()).error.code, 'IDENTITY_ALREADY_LINKED');
    assert.equal((await ids(a.jar)).body.identities.length, 2, 'nothing merged');
    // the callback of a link needs the session it started from
    flow = await toCallback(stack, 'oauth1', { jar: a.jar, login: 'bob', how: 'link' });
    const otherSession = copyJar(b.jar);
    const binding = a.jar.cookies.find((c) => c.name === BINDING);
    otherSession.cookies.push({ ...binding });
    r = await otherSession.fetch(flow.callback);
    assert.equal(r.status, 400);
    assert.match(await r.text(), /started from another session/);
    assert.equal((await ids(a.jar)).body.identities.length, 2);
    // no session: no link
    r = await fetch(`${stack.baseURL}/v1/auth/idp2/link`, { method: 'POST', redirect: 'manual',
      headers: { origin: stack.baseURL } });
    assert.equal(r.status, 401);
    assert.equal((await r.json()).error.code, 'NOT_SIGNED_IN');
    // A link is a state change: never a GET (a cross-site navigation carries
    // the Lax session cookie), never a POST from another site.
    r = await a.jar.fetch(`${stack.baseURL}/v1/auth/idp2/link`);
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('location'), null);
    assert.equal((await r.json()).error.code, 'METHOD_NOT_ALLOWED');
    for (const headers of [{ origin: 'https://evil.example' }, {}]) {
      r = await a.jar.fetch(`${stack.baseURL}/v1/auth/idp2/link`, { method: 'POST', headers });
      assert.equal(r.status, 403, JSON.stringify(headers));
      assert.equal(r.headers.get('location'), null);
      assert.equal((await r.json()).error.code, 'CROSS_SITE_REQUEST');
    }
    assert.equal((await ids(new CookieJar())).status, 401);
  });

  it('unlinks an identity from this site only, never the last one', async () => {
    for (const n of ['idp1', 'idp2']) kit.byName(n).users.add({ login: 'dave', email: `dave@${n}.example` });
    const a = await signIn(stack, 'idp1', { login: 'dave' });
    remember(a.jar);
    const me = (await session(stack, a.jar)).body.userId;
    const flow = await toCallback(stack, 'idp2', { jar: a.jar, login: 'dave', how: 'link' });
    let r = await a.jar.fetch(flow.callback);
    await r.arrayBuffer();
    assert.equal(r.status, 302);
    const providers = async () => (await (await a.jar.fetch(`${stack.baseURL}/v1/auth/identities`)).json())
      .identities.map((i) => i.provider);
    assert.deepEqual(await providers(), ['idp1', 'idp2']);
    const unlink = (name, headers = { origin: stack.baseURL }, jar = a.jar) => jar.fetch(
      `${stack.baseURL}/v1/auth/identities/${name}`, { method: 'DELETE', headers },
    );
    const error = async (res, status, code) => {
      assert.equal(res.status, status);
      const body = await res.json();
      assert.equal(body.error.code, code);
      return body;
    };
    await error(await unlink('idp2', {}), 403, 'CROSS_SITE_REQUEST');
    await error(await unlink('idp2', { origin: 'http://localhost:1' }), 403, 'CROSS_SITE_REQUEST');
    await error(await unlink('idp2', { referer: 'http://evil.example/cabinet/' }), 403, 'CROSS_SITE_REQUEST');
    await error(await unlink('idp2', { origin: stack.baseURL }, new CookieJar()), 401, 'NOT_SIGNED_IN');
    assert.deepEqual(await providers(), ['idp1', 'idp2'], 'a refused unlink removes nothing');
    await error(await unlink('idp3'), 404, 'NOT_FOUND');
    await error(await unlink('nope'), 404, 'NOT_FOUND');
    r = await a.jar.fetch(`${stack.baseURL}/v1/auth/identities/idp2`);
    await error(r, 405, 'METHOD_NOT_ALLOWED');
    r = await unlink('idp2', { referer: `${stack.baseURL}/cabinet/` });
    assert.equal(r.status, 204);
    assert.equal(await r.text(), '');
    assert.deepEqual(await providers(), ['idp1']);
    const body = await error(await unlink('idp1'), 409, 'LAST_IDENTITY');
    assert.match(body.error.message, /last sign-in method/);
    assert.deepEqual(await providers(), ['idp1'], 'the last identity stays');
    assert.equal((await session(stack, a.jar)).body.userId, me, 'the session goes on');
    const again = await signIn(stack, 'idp2', { login: 'dave' });
    remember(again.jar);
    assert.notEqual((await session(stack, again.jar)).body.userId, me, 'the unlinked identity is no longer the user\'s');
  });

  it('answers an unknown provider or path with 404', async () => {
    let r = await fetch(`${stack.baseURL}/v1/auth/nope/login`);
    assert.equal(r.status, 404);
    assert.match(await r.text(), /no such sign-in method/);
    r = await fetch(`${stack.baseURL}/v1/auth/idp1/other`);
    assert.equal(r.status, 404);
    assert.equal((await r.json()).error.code, 'NOT_FOUND');
    r = await fetch(`${stack.baseURL}/v1/auth/session`, { method: 'POST' });
    assert.equal(r.status, 405);
    await r.arrayBuffer();
  });
});
