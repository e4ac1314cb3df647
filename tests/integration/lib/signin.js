// tests/integration/lib/signin.js: a service (lib/server.js) and the kit's
// identity providers (lib/idp.js) started for each other, over plain http on
// loopback (ProviderCookieSecure Off), with a whole sign-in as a user does it
// (lib/idp-client.js), the per-address limits roomy (ROOMY_LIMITS: the tests
// play many flows from one address) and a stop that checks the error log holds none of the
// kit's secrets, subjects or the cookies handed out. And the sign-in itself
// for the tests that start their own stack and kit: signInFlow (the whole
// flow through a provider) and signInUser (a cabinet user's session cookies
// and id), the one helper the cabinet's tests share.
//
//   const s = await startSignIn({ kit: { count: 2 }, stack: { clock: now } });
//   const { res, body, jar } = await s.signIn('idp1', { login: 'bob' });
//   await s.stop();
//
//   const alice = await signInUser(stack, 'alice');   // { jar, status, id }

import assert from 'node:assert/strict';
import { startStack, freePort, ROOMY_LIMITS } from './server.js';
import { startIdentityProviders } from './idp.js';
import { CookieJar, signInAtProvider } from './idp-client.js';

/**
 * A whole sign-in at base through the kit's provider name, as a browser
 * does: { res (the callback's answer, its body read), body, jar, flow }.
 */
export async function signInFlow(base, name, { login = 'alice', jar = new CookieJar() } = {}) {
  const flow = await signInAtProvider(`${base}/v1/auth/${name}/login`, { jar, login });
  assert.ok(flow.callback, `no callback (${flow.status}): ${flow.body}`);
  const res = await jar.fetch(flow.callback);
  const body = await res.text();
  return { res, body, jar, flow };
}

/**
 * Signs login into the cabinet of stack (startStack's) through the kit's
 * provider name (idp1 unless told): { jar (the session's cookies), status
 * (the callback's: 302 when signed in), id (the user's id from
 * /v1/auth/session; null unless 302, or with whoami false) }. status: the
 * callback's status asserted (null: any).
 */
export async function signInUser(stack, login = 'alice',
  { name = 'idp1', jar = new CookieJar(), status = 302, whoami = true } = {}) {
  const { res, body } = await signInFlow(stack.baseURL, name, { login, jar });
  if (status !== null) assert.equal(res.status, status, body);
  const id = whoami && res.status === 302
    ? (await (await jar.fetch(`${stack.baseURL}/v1/auth/session`)).json()).userId : null;
  return { jar, status: res.status, id };
}

/**
 * Starts the kit (options kit: startIdentityProviders's, redirectBase set
 * here) and a stack (options stack: startStack's; its directives come after
 * ProviderPublicURL, ProviderCookieSecure Off and the kit's providers).
 * Returns { base, kit, stack, signIn(name, { login, jar }), stop() }.
 */
export async function startSignIn({ kit: kitOpts = {}, stack: stackOpts = {} } = {}) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const kit = await startIdentityProviders({ ...kitOpts, redirectBase: base });
  let stack;
  try {
    stack = await startStack({
      ...stackOpts,
      port,
      // Many flows from one address: the per-address limits out of the way.
      directives: [`ProviderPublicURL ${base}`, 'ProviderCookieSecure Off', kit.directives(),
        ROOMY_LIMITS, stackOpts.directives || ''].join('\n'),
    });
  } catch (e) {
    await kit.stop();
    throw e;
  }
  const cookieValues = new Set();
  return {
    base,
    kit,
    stack,
    /** A whole sign-in through provider name: { res (the callback's answer), body, jar }. */
    async signIn(name, { login = 'alice', jar = new CookieJar() } = {}) {
      const { res, body } = await signInFlow(base, name, { login, jar });
      this.remember(jar);
      return { res, body, jar };
    },
    /** The jar's cookie values: none may reach the error log. */
    remember(jar) {
      for (const c of jar.cookies) if (c.value) cookieValues.add(c.value);
    },
    async stop() {
      for (const op of kit.ops) op.release();
      try {
        stack.secrets.push(...kit.secrets(), ...kit.subjects(), ...cookieValues);
        await stack.stop();
      } finally {
        await kit.stop();
      }
    },
  };
}
