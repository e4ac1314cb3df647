// tests/integration/browser/idp-kit.test.js: the self-test of the browser
// kit (lib/browser.js) with the identity providers (lib/idp.js), without the
// module. Run by tests/integration/run.sh inside a loopback-only network
// namespace. A small relying party in this file, on 127.0.0.1, stands where
// the service will: its page links to "Sign in with Provider Two"; Debian's
// chromium, headless, follows it to the provider on localhost (another
// site), fills in the provider's own login form and comes back with a code
// the relying party exchanges (PKCE, client secret, id_token verified with
// jose). The test then reads the cookies back through the browser context,
// HttpOnly ones included, checks what document.cookie and the page's storage
// show, that a SameSite=Lax cookie crosses the redirect back and a Strict one
// does not (localhost and 127.0.0.1 are two sites), that the provider's
// session signs in again without the form, and the plain OAuth 2.0 provider's
// form in the browser too.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import { startIdentityProviders } from '../lib/idp.js';
import { pkcePair, authorizeUrl, exchangeCode, verifyIdToken, fetchUserinfo } from '../lib/idp-client.js';
import { launchBrowser, loopbackOnly, pageStorage, fillProviderLogin } from '../lib/browser.js';

const rand = () => crypto.randomBytes(16).toString('hex');

function cookiesOf(req) {
  const out = {};
  for (const part of (req.headers.cookie || '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

/**
 * The relying party: GET / (who is signed in, or a sign-in link per
 * provider), GET /login/NAME (pre-login record, cookies, redirect to the
 * provider), GET /v1/auth/NAME/callback (checks, code exchange, session).
 */
class RelyingParty {
  constructor() {
    this.prelogins = new Map();  // id -> { provider, state, nonce, verifier }
    this.sessions = new Map();   // id -> email
    this.callbacks = [];         // { provider, cookies (names the callback carried) }
    this.kit = null;
  }

  async start() {
    this.server = http.createServer((req, res) => this.route(req, res).catch((e) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`relying party error: ${e.message}`);
    }));
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${this.server.address().port}`;
  }

  async route(req, res) {
    const url = new URL(req.url, this.base);
    const jar = cookiesOf(req);
    const html = (status, body, headers = {}) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
      res.end(`<!DOCTYPE html><html><head><title>Relying party</title></head><body>${body}</body></html>`);
    };
    if (url.pathname === '/') {
      const who = this.sessions.get(jar.rp_session);
      if (who) return html(200, `<p id="who">Signed in as ${who}</p>`);
      return html(200, this.kit.all.map((p) => `<a id="signin-${p.name}" href="/login/${p.name}">Sign in with ${p.display}</a>`).join('<br>'));
    }
    let m = /^\/login\/([\w-]+)$/.exec(url.pathname);
    if (m) {
      const p = this.kit.byName(m[1]);
      const { verifier, challenge } = pkcePair();
      const rec = { provider: p.name, state: rand(), nonce: p.kind === 'openid' ? rand() : null, verifier };
      const id = rand();
      this.prelogins.set(id, rec);
      res.writeHead(302, {
        location: authorizeUrl(p, { state: rec.state, nonce: rec.nonce, challenge }),
        'set-cookie': [`rp_prelogin=${id}; HttpOnly; SameSite=Lax; Path=/`, 'rp_strict=1; HttpOnly; SameSite=Strict; Path=/'],
      });
      return res.end();
    }
    m = /^\/v1\/auth\/([\w-]+)\/callback$/.exec(url.pathname);
    if (m) {
      this.callbacks.push({ provider: m[1], cookies: Object.keys(jar).sort() });
      const rec = this.prelogins.get(jar.rp_prelogin);
      this.prelogins.delete(jar.rp_prelogin);
      const p = this.kit.byName(m[1]);
      if (!rec || rec.provider !== m[1] || url.searchParams.get('state') !== rec.state) {
        return html(400, '<p id="error">This sign-in is not the one this browser started.</p>');
      }
      const t = await exchangeCode(p, url.searchParams.get('code') || '', { verifier: rec.verifier });
      if (t.status !== 200) return html(400, `<p id="error">The provider refused the code (${t.status}).</p>`);
      let email;
      if (p.kind === 'openid') {
        email = (await verifyIdToken(p, t.body.id_token, { nonce: rec.nonce })).payload.email;
      } else {
        email = (await fetchUserinfo(p, t.body.access_token)).body.email;
      }
      const sid = rand();
      this.sessions.set(sid, email);
      res.writeHead(303, {
        location: '/',
        'set-cookie': [`rp_session=${sid}; HttpOnly; SameSite=Lax; Path=/`, 'rp_visible=yes; SameSite=Lax; Path=/',
          'rp_prelogin=; Max-Age=0; Path=/'],
      });
      return res.end();
    }
    return html(404, 'not found');
  }

  async stop() {
    await new Promise((resolve) => { this.server.close(resolve); this.server.closeAllConnections(); });
  }
}

describe('the browser kit: chromium signs in through a kit provider\'s login form', { timeout: 120000 }, () => {
  let rp;
  let kit;
  let browser;
  before(async () => {
    assert.ok(loopbackOnly(), 'runs inside a loopback-only network namespace (run.sh does this)');
    rp = new RelyingParty();
    await rp.start();
    kit = await startIdentityProviders({ redirectBase: rp.base, count: 2, plain: 1 });
    rp.kit = kit;
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await browser.close();
    if (kit) {
      const errors = kit.all.flatMap((p) => p.errors.map((e) => `${p.name}: ${e.stack || e}`));
      await kit.stop();
      assert.deepEqual(errors, [], 'the providers had server errors');
    }
    if (rp) await rp.stop();
  });

  it('signs in through provider 2\'s form and reads the cookies back, HttpOnly ones included', async () => {
    const op = kit.byName('idp2');
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${rp.base}/`);
      const mark = op.log.mark();
      await Promise.all([page.waitForURL(`${op.issuer}/interaction/**`), page.click('#signin-idp2')]);
      assert.equal(await page.title(), 'Sign in to Provider Two');
      await fillProviderLogin(page, { login: 'alice' });
      await page.waitForURL(`${rp.base}/`);
      assert.equal(await page.textContent('#who'), `Signed in as ${op.users.get('alice').email}`);

      const cookies = await context.cookies(rp.base);
      const byName = Object.fromEntries(cookies.map((c) => [c.name, c]));
      assert.equal(byName.rp_session?.httpOnly, true, JSON.stringify(cookies));
      assert.equal(byName.rp_session.sameSite, 'Lax');
      assert.equal(byName.rp_session.domain, '127.0.0.1', 'host-only, on the relying party\'s host');
      assert.equal(byName.rp_visible?.httpOnly, false);
      assert.equal(byName.rp_prelogin, undefined, 'the pre-login cookie is gone');

      const seen = await pageStorage(page);
      assert.equal(seen.cookie.split('; ').sort().join('; '), 'rp_visible=yes', 'a script sees only the non-HttpOnly cookie');
      assert.ok(!seen.cookie.includes(byName.rp_session.value));
      assert.deepEqual(seen.localStorage, {});
      assert.deepEqual(seen.sessionStorage, {});

      // The callback came from the provider's site: the Lax cookie came with
      // it, the Strict one did not.
      const cb = rp.callbacks.at(-1);
      assert.ok(cb.cookies.includes('rp_prelogin'), JSON.stringify(cb));
      assert.ok(!cb.cookies.includes('rp_strict'), JSON.stringify(cb));

      const opCookies = await context.cookies(op.issuer);
      assert.ok(opCookies.some((c) => c.name === '_session_idp2' && c.httpOnly && c.domain === 'localhost'),
        JSON.stringify(opCookies.map((c) => c.name)));

      // The browser talked to the authorization endpoint and the form; the
      // relying party (node) to the token endpoint and the JWKS.
      const log = op.log.since(mark).filter((e) => e.endpoint !== 'favicon');
      assert.deepEqual(log.map((e) => `${e.method} ${e.endpoint} ${e.status}`), [
        'GET authorization 303', 'GET interaction 200', 'POST interaction 303', 'GET authorization 303',
        'POST token 200', 'GET jwks 200']);
      assert.ok(log.slice(0, 4).every((e) => /Chrome/.test(e.userAgent)), 'the browser');
      assert.ok(log.slice(4).every((e) => !/Chrome/.test(e.userAgent)), 'the relying party');

      // Signed out at the relying party, signed in again at the provider:
      // no form this time.
      await context.clearCookies({ domain: '127.0.0.1' });
      await page.goto(`${rp.base}/`);
      const again = op.log.mark();
      await Promise.all([page.waitForURL(`${rp.base}/`), page.click('#signin-idp2')]);
      await page.waitForSelector('#who');
      assert.equal(await page.textContent('#who'), `Signed in as ${op.users.get('alice').email}`);
      assert.deepEqual(op.log.since(again, 'interaction'), [], 'no login form');
    } finally {
      await context.close();
    }
  });

  it('shows the form again after a wrong password', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${rp.base}/`);
      await page.click('#signin-idp1');
      await fillProviderLogin(page, { login: 'bob', password: 'wrong' });
      assert.match(await page.textContent('.error'), /Invalid username or password/);
      assert.equal(await page.inputValue('#login'), 'bob');
      await fillProviderLogin(page, { login: 'bob' });
      await page.waitForURL(`${rp.base}/`);
      assert.equal(await page.textContent('#who'), `Signed in as ${kit.byName('idp1').users.get('bob').email}`);
    } finally {
      await context.close();
    }
  });

  it('signs in through the plain OAuth 2.0 provider\'s form', async () => {
    const p = kit.byName('oauth1');
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${rp.base}/`);
      await Promise.all([page.waitForURL(`${p.base}/**`), page.click('#signin-oauth1')]);
      await fillProviderLogin(page, { login: 'alice' });
      await page.waitForURL(`${rp.base}/`);
      assert.equal(await page.textContent('#who'), `Signed in as ${p.users.get('alice').email}`);
      assert.deepEqual(p.log.since(0).map((e) => e.endpoint).filter((e) => e !== 'favicon'),
        ['authorization', 'authorization', 'token', 'userinfo']);
    } finally {
      await context.close();
    }
  });
});
