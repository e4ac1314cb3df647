// tests/integration/idp-slow.test.js: an identity provider that hangs does
// not stall the server (issue 31, item 3). The kit's OpenID Providers (lib/
// idp.js) with `hang`: the provider accepts the requests of an endpoint and
// never answers them. Sixty concurrent login starts against a provider whose
// discovery document hangs: one fetch reaches it (single flight), the others
// get the "could not be reached" page at once, and meanwhile a cabinet
// request and a chat completion answer long before the provider's timeouts
// (5 s to connect, 10 s in all): no database connection is held across the
// fetch. Then a callback whose token endpoint hangs ends at the provider's
// timeout= (3 s here), well before the per-call 10 s, on the same page, and
// the provider works again once it answers.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { seedCatalog } from './lib/server.js';
import { startSignIn } from './lib/signin.js';
import { CookieJar, signInAtProvider } from './lib/idp-client.js';
import { chatBody, eventually } from './lib/helpers.js';

const STARTS = 60;
const PER_CALL_CONNECT_MS = 5000;   // prov_idp_http's connect timeout
const PER_CALL_TOTAL_MS = 10000;    // prov_idp_http's total timeout
const CALLBACK_TIMEOUT_S = 3;       // idp3's timeout=
const UNREACHABLE = /<p id="reason">The identity provider could not be reached\. Please try again later\.<\/p>/;
const RETRY = 5;                    // PROV_IDP_META_RETRY

describe('a slow identity provider does not stall the server', () => {
  let s = null;
  let stack = null;
  let base = null;
  let now = 0;
  let key = null;

  before(async () => {
    now = Math.floor(Date.now() / 1000);
    // threads: enough for the sixty starts to be concurrent in one child
    // (with fewer, httpd's own queue, not the module, decides who waits)
    s = await startSignIn({
      kit: { count: 3, plain: 0, providers: [{}, {}, { timeout: CALLBACK_TIMEOUT_S }] },
      stack: { clock: now, seed: seedCatalog, threads: STARTS + 20 },
    });
    ({ stack, base } = s);
    key = stack.createKey(stack.addUser('payer@example.com', 100)).secret;
  });

  after(async () => {
    if (s) await s.stop();
  });

  /** fn's result and how long it took (ms). */
  async function timed(fn) {
    const t0 = Date.now();
    const r = await fn();
    return { r, ms: Date.now() - t0 };
  }

  it('answers a cabinet request and a chat completion at once while 60 login starts wait on a hanging provider', async () => {
    const cabinet = await s.signIn('idp1');
    assert.equal(cabinet.res.status, 302, cabinet.body);
    const op = s.kit.byName('idp2');
    op.hang.add('discovery');
    const mark = op.log.mark();
    const from = stack.logSize();
    let answers;
    await stack.expectingLog(/PROV0050[12]|PROV00570/, async () => {
      const starts = Array.from({ length: STARTS }, () => fetch(`${base}/v1/auth/idp2/login`, { redirect: 'manual' })
        .then(async (r) => ({ status: r.status, location: r.headers.get('location'), body: await r.text() })));
      await eventually(() => assert.equal(op.log.since(mark, 'discovery').length, 1), 5000, 20);

      const account = await timed(() => cabinet.jar.fetch(`${base}/v1/account`));
      const chat = await timed(() => stack.chat(key, chatBody('prov-main')));
      assert.equal(account.r.status, 200, await account.r.text());
      assert.equal(chat.r.status, 200, chat.r.text);
      assert.equal(op.hung.length, 1, 'the discovery fetch was still in flight meanwhile');
      for (const [what, t] of [['the cabinet request', account.ms], ['the chat completion', chat.ms]]) {
        assert.ok(t < PER_CALL_CONNECT_MS / 2, `${what} took ${t} ms while the provider hung`);
      }
      // the sign-ins that did not fetch have failed already, without waiting
      await eventually(() => assert.ok(fs.readFileSync(stack.errorLog, 'utf8').slice(from)
        .split('\n').filter((l) => /PROV00570: sign-in through idp2 failed at begin/.test(l)).length >= STARTS - 1),
      PER_CALL_CONNECT_MS / 2, 50);
      op.release();
      answers = await Promise.all(starts);
    });
    assert.equal(op.log.since(mark, 'discovery').length, 1, 'one fetch, not one per sign-in');
    assert.equal(answers.length, STARTS);
    for (const a of answers) {
      assert.equal(a.status, 200, 'the page, not a 5xx a front would replace');
      assert.equal(a.location, null, 'not sent to the provider');
      assert.match(a.body, UNREACHABLE);
    }
    const log = fs.readFileSync(stack.errorLog, 'utf8').slice(from);
    assert.match(log, /PROV00502: identity provider idp2: its discovery document is being fetched for another request/);
    assert.match(log, /PROV00501: identity provider idp2: cannot use its discovery document/);

    // it answers again: the next sign-in (after the pause that follows a failure) works
    stack.setClock(now + RETRY + 1);
    const ok = await s.signIn('idp2');
    assert.equal(ok.res.status, 302, ok.body);
  });

  it('ends a callback whose token endpoint hangs at the provider\'s timeout=, with the page', async () => {
    const op = s.kit.byName('idp3');
    const jar = new CookieJar();
    const flow = await signInAtProvider(`${base}/v1/auth/idp3/login`, { jar });
    assert.ok(flow.callback, `no callback (${flow.status}): ${flow.body}`);
    op.hang.add('token');
    const mark = op.log.mark();
    const from = stack.logSize();
    let cb;
    let body;
    await stack.expectingLog(/PROV00520|PROV00570/, async () => {
      cb = await timed(() => jar.fetch(flow.callback));
      body = await cb.r.text();
    });
    op.release();
    s.remember(jar);
    assert.equal(op.log.since(mark, 'token').length, 1, 'the token endpoint was asked');
    assert.equal(cb.r.status, 200);
    assert.match(body, UNREACHABLE);
    assert.ok(cb.ms >= (CALLBACK_TIMEOUT_S - 1) * 1000, `the callback waited for the provider (${cb.ms} ms)`);
    assert.ok(cb.ms < PER_CALL_TOTAL_MS - 2000, `the callback ended by its deadline (${cb.ms} ms)`);
    const log = fs.readFileSync(stack.errorLog, 'utf8').slice(from);
    assert.match(log, /PROV00520: identity provider idp3: the token endpoint cannot be reached: .*timeout=/);
    assert.match(log, /PROV00570: sign-in through idp3 failed at the exchange \(200: the provider is out of reach\)/);
    assert.equal((await jar.fetch(`${base}/v1/auth/session`)).status, 401, 'nobody signed in');
  });
});
