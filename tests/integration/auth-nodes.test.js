// tests/integration/auth-nodes.test.js: sign-in on two httpd nodes that
// share one PostgreSQL database behind one public name, as in production:
// a small front (a load balancer the test steers) listens on the public
// port, both nodes have ProviderPublicURL set to it (so the redirect URI,
// the cookies' host and the Origin check are the same on both), and each
// request of the test's browser goes through the front to the node the
// test picks. Pre-login states, sessions, refresh tokens and links live in
// the database, so: a sign-in started on node A finishes on node B with the
// binding cookie; the session works on both, and an active session that
// idled is renewed on the other node; a logout on A is seen at once on B;
// `providerctl user block` revokes on both; a link started on A finishes on
// B. The nodes run on the run's cluster under PROVIDER_TEST_PGSQL=1, else
// on a throwaway cluster of this file's own (as pgsql.test.js does), so the
// SQLite run covers it too.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startStack, freePort } from './lib/server.js';
import { PgCluster, PG_MODE } from './lib/pg.js';
import { startIdentityProviders } from './lib/idp.js';
import { CookieJar, signInAtProvider } from './lib/idp-client.js';

const ACTIVE = '__Host-provider-session';

/**
 * The front on 127.0.0.1:port: every request goes whole to front.to (a
 * stack) on a fresh connection, its answer comes back as it is; served
 * lists { node, method, path } in order.
 */
async function startFront(port) {
  const front = { to: null, served: [] };
  const server = http.createServer((req, res) => {
    const node = front.to;
    front.served.push({ node, method: req.method, path: req.url.split('?')[0] });
    const up = http.request({
      host: '127.0.0.1', port: node.port, method: req.method, path: req.url, headers: req.headers, agent: false,
    }, (answer) => {
      res.writeHead(answer.statusCode, answer.rawHeaders);
      answer.pipe(res);
    });
    up.on('error', (e) => { res.writeHead(599); res.end(`front: ${e.message}`); });
    req.pipe(up);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  front.stop = () => new Promise((resolve) => { server.close(resolve); server.closeAllConnections(); });
  return front;
}

describe('sign-in on two nodes sharing one PostgreSQL database', { timeout: 180000 }, () => {
  let cluster = null;
  let kit;
  let a;
  let b;
  let front;
  let base;
  let now;
  const cookieValues = new Set();
  const remember = (jar) => { for (const c of jar.cookies) if (c.value) cookieValues.add(c.value); };

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 2, plain: 0 });
    if (!PG_MODE) cluster = PgCluster.start();
    now = Math.floor(Date.now() / 1000);
    const directives = `ProviderPublicURL ${base}\n${kit.directives()}`;
    a = await startStack({ backend: 'pgsql', pgCluster: cluster || undefined, clock: now, directives });
    b = await startStack({ peer: a, directives });
    front = await startFront(port);
  });

  after(async () => {
    const errors = [];
    if (front) await front.stop();
    for (const s of [b, a]) {
      if (!s) continue;
      s.secrets.push(...kit.secrets(), ...kit.subjects(), ...cookieValues);
      await s.stop().catch((e) => errors.push(e));
    }
    if (kit) await kit.stop();
    if (cluster) cluster.stop();
    if (errors.length) throw errors[0];
  });

  /** The browser's request through the front, served by node. */
  function via(node, jar, pathname, init = {}) {
    front.to = node;
    return jar.fetch(`${base}${pathname}`, init);
  }

  async function who(node, jar) {
    const r = await via(node, jar, '/v1/auth/session');
    const body = await r.json();
    return r.status === 200 ? body.userId : r.status;
  }

  /** A sign-in (or link) begun on node `from` and finished on node `to`. */
  async function flow(from, to, name, { jar = new CookieJar(), login = 'alice', how = 'login' } = {}) {
    front.to = from;
    const mark = front.served.length;
    const at = await signInAtProvider(`${base}/v1/auth/${name}/${how}`, { jar, login, post: how === 'link' });
    assert.ok(at.callback, `no callback (${at.status}): ${at.body}`);
    assert.ok(at.callback.startsWith(`${base}/v1/auth/${name}/callback?`), 'the redirect URI is the public name\'s');
    assert.deepEqual(front.served.slice(mark).map((s) => s.node), [from], 'begun on one node');
    const res = await via(to, jar, new URL(at.callback).pathname + new URL(at.callback).search);
    const body = await res.text();
    remember(jar);
    return { res, body, jar };
  }

  it('serves both nodes from one database behind one public name', () => {
    assert.notEqual(a.port, b.port);
    assert.equal(a.pgDatabase, b.pgDatabase);
    assert.equal(a.backend, 'pgsql');
  });

  it('finishes on node B a sign-in begun on node A, and the session works on both', async () => {
    const r = await flow(a, b, 'idp1');
    assert.equal(r.res.status, 302, r.body);
    assert.equal(r.res.headers.get('location'), '/cabinet/');
    assert.ok(r.jar.get(base, ACTIVE), 'a session cookie');
    const id = await who(a, r.jar);
    assert.equal(typeof id, 'number');
    assert.equal(await who(b, r.jar), id);
    // the pre-login record A wrote was B's to take (and is gone)
    assert.equal(Number(a.sql('SELECT COUNT(*) AS n FROM signin_states')[0].n), 0, 'the state was taken');
  });

  it('renews on one node an active session that idled on the other', async () => {
    const { jar } = await flow(b, a, 'idp2');
    const id = await who(a, jar);
    const first = jar.get(base, ACTIVE);
    try {
      a.setClock(now + 301);
      assert.equal(await who(b, jar), id);
      const renewed = jar.get(base, ACTIVE);
      cookieValues.add(renewed);
      assert.notEqual(renewed, first, 'a new active token from the refresh cookie');
      assert.equal(await who(a, jar), id, 'the renewed token works on the other node');
    } finally {
      a.setClock(now);
    }
  });

  it('a logout on node A is seen at once on node B', async () => {
    const { jar } = await flow(a, b, 'idp1', { login: 'bob' });
    const kept = new CookieJar();
    kept.cookies = jar.cookies.map((c) => ({ ...c }));
    assert.equal(typeof await who(b, jar), 'number');
    const r = await via(a, jar, '/v1/auth/logout', { method: 'POST', headers: { origin: base } });
    assert.equal(r.status, 204);
    assert.equal(await who(b, kept), 401, 'node B refuses the revoked pair');
    assert.equal(await who(a, kept), 401);
  });

  it('providerctl user block revokes the sessions on both nodes', async () => {
    const one = await flow(a, a, 'idp2', { login: 'bob' });
    const two = await flow(b, b, 'idp2', { login: 'bob' });
    const id = await who(a, one.jar);
    assert.equal(await who(b, two.jar), id);
    a.ctl('user', 'block', String(id));
    try {
      for (const node of [a, b]) {
        assert.equal(await who(node, one.jar), 401);
        assert.equal(await who(node, two.jar), 401);
      }
      const again = await flow(a, b, 'idp2', { login: 'bob' });
      assert.equal(again.res.status, 403);
      assert.match(again.body, /This account is blocked/);
    } finally {
      a.ctl('user', 'unblock', String(id));
    }
  });

  it('finishes on node B a link begun on node A', async () => {
    for (const n of ['idp1', 'idp2']) kit.byName(n).users.add({ login: 'carol', email: `carol@${n}.example` });
    const { jar } = await flow(a, a, 'idp1', { login: 'carol' });
    const id = await who(b, jar);
    const link = await flow(a, b, 'idp2', { jar, login: 'carol', how: 'link' });
    assert.equal(link.res.status, 302, link.body);
    const r = await via(a, jar, '/v1/auth/identities');
    assert.deepEqual((await r.json()).identities.map((i) => i.provider), ['idp1', 'idp2']);
    const other = await flow(b, a, 'idp2', { login: 'carol' });
    assert.equal(await who(a, other.jar), id, 'the linked identity signs in to the same user on either node');
  });
});
