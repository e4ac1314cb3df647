// tests/integration/browser/auth.test.js: the cabinet's first page in a real
// browser (Debian's chromium, headless, lib/browser.js), run by
// tests/integration/run.sh inside a loopback-only network namespace. The
// service on 127.0.0.1 lists "Sign in with <display>" per identity
// provider; the browser follows Provider Two's button to the provider on
// localhost (another site), fills in its login form and lands back in the
// cabinet, signed in. The session cookies are HttpOnly, SameSite=Lax,
// Secure, host-only; document.cookie, localStorage and sessionStorage hold
// nothing of them; the logout button signs out.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, freePort } from '../lib/server.js';
import { startIdentityProviders } from '../lib/idp.js';
import { launchBrowser, loopbackOnly, pageStorage, fillProviderLogin } from '../lib/browser.js';

describe('the cabinet in a browser', () => {
  let stack;
  let kit;
  let browser;
  let base;

  before(async () => {
    assert.ok(loopbackOnly(), 'runs inside a loopback-only network namespace (run.sh does this)');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 2, plain: 1 });
    stack = await startStack({ port, directives: `ProviderPublicURL ${base}\n${kit.directives()}` });
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  it('signs in through provider 2\'s form, lands in the cabinet, keeps the cookies from scripts, logs out', async () => {
    const op = kit.byName('idp2');
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${base}/cabinet/`);
      for (const p of kit.all) {
        assert.equal(await page.textContent(`#signin-${p.name} button`), `Sign in with ${p.display}`);
      }
      await Promise.all([page.waitForURL(`${op.issuer}/interaction/**`),
        page.click('text=Sign in with Provider Two')]);
      await fillProviderLogin(page, { login: 'alice' });
      await page.waitForURL(`${base}/cabinet/`);
      const alice = op.users.get('alice');
      assert.match(await page.textContent('#who'), new RegExp(`Signed in as .*\\(${alice.email.replace(/\./g, '\\.')}\\)`));

      const cookies = await context.cookies(base);
      const byName = Object.fromEntries(cookies.map((c) => [c.name, c]));
      for (const name of ['__Host-provider-session', '__Host-provider-refresh']) {
        const c = byName[name];
        assert.ok(c, `${name}: ${JSON.stringify(cookies.map((x) => x.name))}`);
        assert.equal(c.httpOnly, true);
        assert.equal(c.secure, true);
        assert.equal(c.sameSite, 'Lax');
        assert.equal(c.domain, '127.0.0.1');
        assert.equal(c.path, '/');
        stack.secrets.push(c.value);
      }
      assert.equal(byName['__Host-provider-signin'], undefined, 'the binding cookie is gone');
      const seen = await pageStorage(page);
      assert.equal(seen.cookie, '');
      assert.deepEqual(seen.localStorage, {});
      assert.deepEqual(seen.sessionStorage, {});

      await Promise.all([page.waitForURL(`${base}/cabinet/`), page.click('#logout button')]);
      await page.waitForSelector('#signed-out');
      const after = (await context.cookies(base)).map((c) => c.name);
      assert.ok(!after.includes('__Host-provider-session') && !after.includes('__Host-provider-refresh'), after.join(','));
    } finally {
      await context.close();
    }
  });
});
