// tests/integration/auth-edges.test.js: sign-in at its edges, on one httpd
// with two of the kit's OpenID Providers. Plain-http development
// (ProviderCookieSecure Off on a loopback ProviderPublicURL): a whole
// sign-in whose cookies have no __Host- prefix and no Secure attribute, a
// session that works, a logout. A provider out of reach: httpd starts
// while its issuer answers nothing (discovery is fetched at first use), a
// login then lands on the readable failure page (200, not a 5xx a front
// would hide; no provider text) with warning lines that hold no secret;
// once the provider is back, the next login works (the cache is refreshed
// on failure, after its short pause); a provider that goes away between
// its login form and the callback gives the same page, and the next sign-in
// works again.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startStack, freePort } from './lib/server.js';
import { startIdentityProviders } from './lib/idp.js';
import { CookieJar, signInAtProvider } from './lib/idp-client.js';
import { signInFlow } from './lib/signin.js';

const NAMES = ['provider-session', 'provider-refresh', 'provider-signin'];
const RETRY = 5;   // PROV_IDP_META_RETRY: the pause after a failed discovery fetch
const REACH = /PROV00501|PROV00520|PROV00570/;

describe('sign-in edges: plain-http cookies, a provider out of reach', () => {
  const cookieValues = new Set();   // none may reach the log
  const remember = (jar) => { for (const c of jar.cookies) if (c.value) cookieValues.add(c.value); };
  let stack = null;
  let kit = null;
  let base = null;
  let now = 0;

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 2, plain: 0 });
    await kit.byName('idp2').pause();
    now = Math.floor(Date.now() / 1000);
    stack = await startStack({
      port, clock: now, directives: `ProviderPublicURL ${base}\nProviderCookieSecure Off\n${kit.directives()}`,
    });
  });

  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects(), ...cookieValues);
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  /** A whole sign-in: { res (the callback's answer), body, jar, flow }. */
  async function signIn(name, jar = new CookieJar()) {
    const done = await signInFlow(base, name, { jar });
    remember(jar);
    return done;
  }

  const whoIs = async (jar) => (await jar.fetch(`${base}/v1/auth/session`)).status;

  /** The failure page of a provider out of reach. */
  function assertUnreachablePage(res, body) {
    assert.equal(res.status, 200, 'not a 5xx that a front would replace');
    assert.match(res.headers.get('content-type'), /^text\/html/);
    assert.match(body, /<p id="reason">The identity provider could not be reached\. Please try again later\.<\/p>/);
    assert.match(body, /href="\/cabinet\/"/);
    assert.doesNotMatch(body, /curl|refused|ECONN|localhost/i, 'no transport detail');
  }

  it('signs in over plain http with cookies that are neither Secure nor __Host-', async () => {
    const jar = new CookieJar();
    const flow = await signInAtProvider(`${base}/v1/auth/idp1/login`, { jar });
    const binding = jar.cookies.find((c) => c.name === 'provider-signin');
    assert.ok(binding, 'the binding cookie, without the prefix');
    assert.equal(binding.secure, false);
    const res = await jar.fetch(flow.callback);
    await res.arrayBuffer();
    remember(jar);
    assert.equal(res.status, 302);
    const lines = res.headers.getSetCookie();
    for (const name of NAMES.slice(0, 2)) {
      const line = lines.find((l) => l.startsWith(`${name}=`));
      assert.ok(line, `${name} set`);
      assert.match(line, /; HttpOnly/);
      assert.match(line, /; SameSite=Lax/);
      assert.match(line, /; Path=\//);
      assert.doesNotMatch(line, /Secure|Domain=/i);
    }
    assert.ok(!lines.some((l) => l.startsWith('__Host-')), 'no __Host- name');
    assert.equal(await whoIs(jar), 200, 'the session works');
    const prefixed = new CookieJar();
    prefixed.cookies = jar.cookies.map((c) => ({ ...c, name: `__Host-${c.name}` }));
    assert.equal(await whoIs(prefixed), 401, 'the Secure names are not this server\'s');
    const out = await jar.fetch(`${base}/v1/auth/logout`, { method: 'POST', headers: { origin: base } });
    assert.equal(out.status, 204);
    assert.equal(await whoIs(jar), 401);
  });

  it('started while a provider was out of reach, shows a page for it, and signs in once it is back', async () => {
    const op = kit.byName('idp2');
    const from = stack.logSize();
    let r;
    let body;
    await stack.expectingLog(REACH, async () => {
      r = await new CookieJar().fetch(`${base}/v1/auth/idp2/login`);
      body = await r.text();
    });
    assertUnreachablePage(r, body);
    assert.equal(r.headers.get('location'), null, 'not sent to the provider');
    const log = fs.readFileSync(stack.errorLog, 'utf8').slice(from);
    assert.match(log, /\[provider:warn\].*PROV00501: identity provider idp2: cannot use its discovery document/);
    assert.match(log, /\[provider:warn\].*PROV00570: sign-in through idp2 failed at begin \(200: the provider is out of reach\)/);
    assert.equal(await whoIs(new CookieJar()), 401, 'the server serves on');
    await op.resume();
    stack.setClock(now + RETRY + 1);   // past the pause after the failed fetch
    const ok = await signIn('idp2');
    assert.equal(ok.res.status, 302, ok.body);
    assert.equal(await whoIs(ok.jar), 200);
    assert.ok(op.log.count('discovery') >= 1, 'the discovery document was fetched once it was back');
  });

  it('shows the same page when the provider goes away before the callback, and signs in once it is back', async () => {
    const op = kit.byName('idp1');
    const jar = new CookieJar();
    const flow = await signInAtProvider(`${base}/v1/auth/idp1/login`, { jar });
    assert.ok(flow.callback);
    await op.pause();
    let r;
    let body;
    try {
      await stack.expectingLog(REACH, async () => {
        r = await jar.fetch(flow.callback);
        body = await r.text();
      });
    } finally {
      await op.resume();
    }
    assertUnreachablePage(r, body);
    assert.equal(await whoIs(jar), 401, 'no session');
    const ok = await signIn('idp1');
    assert.equal(ok.res.status, 302, ok.body);
    assert.equal(await whoIs(ok.jar), 200);
  });
});
