// tests/integration/auth-email.test.js: only a verified email becomes an
// account's (issue 31, item 7), through httpd and the kit's real providers.
// users.email is unique and providerctl finds users by it, so an address
// nobody checked must not be taken first come, first served. An OpenID
// Provider that says email_verified false: the account gets no email (the
// placeholder; /v1/auth/session says null) and providerctl does not find it
// by that address; the address's owner, verified, then gets it. A provider
// that says nothing of it: no email, unless its definition says
// emails_verified=on, which never overrides an explicit false. A plain
// OAuth 2.0 provider (which never says): no email without
// emails_verified=on, the email with it.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSignIn } from './lib/signin.js';

const VICTIM = 'victim@corp.example';

describe('the email of a new account: verified only', () => {
  let s = null;
  let stack = null;

  before(async () => {
    s = await startSignIn({
      kit: {
        count: 2,
        providers: [
          { users: [
            { login: 'mallory', email: VICTIM, emailVerified: false },
            { login: 'victim', email: VICTIM, emailVerified: true },
            { login: 'nosay', emailVerified: null },
          ] },
          { emailsVerified: true, users: [
            { login: 'nosay', emailVerified: null },
            { login: 'liar', emailVerified: false },
          ] },
        ],
        plain: 2,
        plainOptions: [{ emailsVerified: false }, {}],
      },
    });
    ({ stack } = s);
  });

  after(async () => {
    if (s) await s.stop();
  });

  /** Signs login in through provider name: { userId, email } as /v1/auth/session says. */
  async function signIn(name, login) {
    const { res, body, jar } = await s.signIn(name, { login });
    assert.equal(res.status, 302, body);
    const who = await jar.fetch(`${s.base}/v1/auth/session`);
    assert.equal(who.status, 200);
    return who.json();
  }

  /** The user providerctl finds by ref (an email), or null when it finds none. */
  function ctlFind(ref) {
    try {
      return stack.ctlJSON('user', 'show', ref);
    } catch (e) {
      assert.match(String(e.message), /exited 1: .*unknown user/);
      return null;
    }
  }

  it('an email the provider says is not verified is not the account\'s; its verified owner gets it', async () => {
    const mallory = await signIn('idp1', 'mallory');
    assert.equal(mallory.email, null, 'no email shown');
    assert.equal(Number(stack.sql(`SELECT COUNT(*) AS n FROM users WHERE email = '${VICTIM}'`)[0].n), 0);
    const row = stack.sql(`SELECT email FROM users WHERE id = ${mallory.userId}`)[0];
    assert.match(row.email, /^signin-[0-9a-f]{24}@no-email\.invalid$/);
    assert.equal(ctlFind(VICTIM), null, 'providerctl does not find mallory by the address');

    const victim = await signIn('idp1', 'victim');
    assert.notEqual(victim.userId, mallory.userId);
    assert.equal(victim.email, VICTIM);
    const found = ctlFind(VICTIM);
    assert.ok(found, 'providerctl finds the verified owner');
    assert.equal(Number(found.id), Number(victim.userId));
  });

  it('an email the provider does not call verified: not taken, unless the definition says emails_verified=on', async () => {
    const plain = await signIn('idp1', 'nosay');
    assert.equal(plain.email, null);
    assert.equal(ctlFind('nosay@idp1.example'), null);
    const vouched = await signIn('idp2', 'nosay');
    assert.equal(vouched.email, 'nosay@idp2.example');
    assert.equal(Number(ctlFind('nosay@idp2.example').id), Number(vouched.userId));
    const liar = await signIn('idp2', 'liar');
    assert.equal(liar.email, null, 'emails_verified=on does not override email_verified false');
    assert.equal(ctlFind('liar@idp2.example'), null);
  });

  it('a plain OAuth 2.0 provider\'s email: taken only with emails_verified=on', async () => {
    const without = await signIn('oauth1', 'alice');
    assert.equal(without.email, null);
    assert.equal(ctlFind('alice@oauth1.example'), null);
    const withIt = await signIn('oauth2', 'alice');
    assert.equal(withIt.email, 'alice@oauth2.example');
    assert.equal(Number(ctlFind('alice@oauth2.example').id), Number(withIt.userId));
  });
});
