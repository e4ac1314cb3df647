// tests/integration/ratelimit.test.js: the anonymous endpoints under a flood
// (issue 31), on one httpd with one of the kit's OpenID Providers, behind
// mod_remoteip (RemoteIPHeader X-Forwarded-For, the test itself the trusted
// proxy): each test speaks from addresses of its own, so the limits are
// counted per client address as a proxy reports it, never per proxy.
// 300 registrations from one address: the default burst gets 201, the rest
// 429 with Retry-After and RFC 6749's JSON error, and no row; another
// address is not affected. The token endpoint (JSON error), the public MCP
// (a JSON-RPC error), /oauth/authorize and the sign-in start (small pages)
// answer 429 in their own shapes. 1,000 anonymous login starts from one
// address write a bounded number of pre-login records: under the default
// limit, and with the limit lifted (the per-address cap of the records).
// Two children share one count (shared memory). The periodic purge
// (ProviderPurgeInterval 1) removes a day-old unused client, an expired
// pre-login record and an ended session, and keeps a client with a live
// grant; providerctl oauth clients sees the same rows.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startStack, freePort, sleep, HTTPD_MODULES } from './lib/server.js';
import { startIdentityProviders } from './lib/idp.js';

const DAY = 86400;
const REGISTER_BURST = 20;   // prov_ratelimit.c's defaults
const TOKEN_BURST = 60;
const SIGNIN_BURST = 30;
const MCP_BURST = 60;
const PER_CLIENT = 16;       // PROV_SIGNIN_PER_CLIENT

describe('anonymous endpoints: per-address limits, bounded rows, the purge', () => {
  let stack = null;
  let kit = null;
  let base = null;
  let now = 0;
  let addr = 0;
  /** A client address of its own for each use (TEST-NET-3). */
  const fresh = () => `203.0.113.${++addr}`;
  const remoteip = [
    `LoadModule remoteip_module ${HTTPD_MODULES}/mod_remoteip.so`,
    'RemoteIPHeader X-Forwarded-For',
    'RemoteIPInternalProxy 127.0.0.1',
    // which child answered which client (%a: the address mod_remoteip
    // found; mod_log_config is built in)
    'CustomLog logs/access.log "%P %a %>s"',
  ].join('\n');

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    now = Math.floor(Date.now() / 1000);
    stack = await startStack({
      port, clock: now, children: 2, threads: 8,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}\n${remoteip}\n`
        + 'ProviderPurgeInterval 1\n',
    });
  });

  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  const register = (from, name = 'flood') => fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
    body: JSON.stringify({ client_name: name, redirect_uris: ['http://127.0.0.1:5173/cb'] }),
  });

  /**
   * Sends the burst (each answered okStatus), then keeps sending until a 429:
   * on a slow machine the bucket refills while the burst is sent (perMinute
   * tokens a minute), so at most that many more, plus one, may pass. Returns
   * the 429.
   */
  async function burstThenLimited(send, burst, okStatus, perMinute) {
    const t0 = Date.now();
    let res = null;
    for (let i = 0; i < burst; i++) {
      res = await send();
      assert.equal(res.status, okStatus, `request ${i}`);
      await res.arrayBuffer();
    }
    for (let extra = 0; ; extra++) {
      res = await send();
      if (res.status !== okStatus) return res;
      await res.arrayBuffer();
      const refilled = Math.floor(((Date.now() - t0) / 60000) * perMinute) + 1;
      assert.ok(extra < refilled, `${burst + extra + 1} requests passed in ${Date.now() - t0} ms: `
        + `more than the burst of ${burst} and ${refilled} refilled at ${perMinute} a minute`);
    }
  }

  /** A 429's common parts: Retry-After a whole number of seconds, not stored. */
  function assertLimited(res, maxWait) {
    assert.equal(res.status, 429);
    const wait = Number(res.headers.get('retry-after'));
    assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= maxWait, `Retry-After ${wait}`);
    assert.equal(res.headers.get('cache-control'), 'no-store');
  }

  it('limits 300 registrations from one address: the burst, then 429 with Retry-After and no row', async () => {
    const from = fresh();
    const clientsBefore = stack.sql('SELECT COUNT(*) AS n FROM oauth_clients')[0].n;
    const statuses = [];
    let limited = null;
    await stack.expectingLog(/PROV00780/, async () => {
      for (let i = 0; i < 300; i++) {
        const res = await register(from);
        statuses.push(res.status);
        const body = await res.json();
        if (res.status === 429 && !limited) limited = { res, body };
      }
    });
    const created = statuses.filter((s) => s === 201).length;
    // the burst, and at most one more refilled meanwhile (10 a minute)
    assert.ok(created >= REGISTER_BURST && created <= REGISTER_BURST + 1, `created ${created}`);
    assert.equal(statuses.filter((s) => s === 429).length, 300 - created);
    assert.deepEqual(statuses.slice(0, REGISTER_BURST), Array(REGISTER_BURST).fill(201));
    assertLimited(limited.res, 6);
    assert.match(limited.res.headers.get('content-type'), /^application\/json/);
    assert.equal(limited.body.error, 'temporarily_unavailable');
    assert.match(limited.body.error_description, /Too many requests from your address/);
    assert.equal(stack.sql('SELECT COUNT(*) AS n FROM oauth_clients')[0].n, clientsBefore + created);
    // another address, and the proxy itself, are counted apart
    assert.equal((await register(fresh())).status, 201);
    assert.equal((await fetch(`${base}/oauth/register`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:5173/cb'] }),
    })).status, 201);
    // the first refusal is logged once, with the address (not 280 lines)
    const lines = stack.readFile(stack.errorLog).split('\n')
      .filter((l) => l.includes('PROV00780') && l.includes(from));
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0], /register: client 203\.0\.113\.\d+ over its limit \(10 a minute, burst 20\)/);
  });

  it('answers the token endpoint and the public MCP in their own shapes', async () => {
    const from = fresh();
    const token = () => fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': from },
      body: 'grant_type=authorization_code&code=nope&client_id=nope&code_verifier=x',
    });
    let res = null;
    await stack.expectingLog(/PROV00780/, async () => {
      res = await burstThenLimited(token, TOKEN_BURST, 400, 60);
    });
    assertLimited(res, 1);
    assert.equal((await res.json()).error, 'temporarily_unavailable');

    const mcp = () => fetch(`${base}/v1/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'x-forwarded-for': from },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    await stack.expectingLog(/PROV00780/, async () => {
      res = await burstThenLimited(mcp, MCP_BURST, 200, 120);
    });
    assertLimited(res, 1);
    const body = await res.json();
    assert.equal(body.jsonrpc, '2.0');
    assert.equal(body.error.code, -32000);
    assert.match(body.error.message, /Too many requests/);
  });

  it('gives /oauth/authorize and the sign-in start a small page with Retry-After', async () => {
    for (const [path, burst] of [['/oauth/authorize?client_id=x', 30], ['/v1/auth/idp1/login', SIGNIN_BURST]]) {
      const from = fresh();
      let res = null;
      await stack.expectingLog(/PROV00780/, async () => {
        for (let i = 0; i <= burst; i++) {
          res = await fetch(`${base}${path}`, { redirect: 'manual', headers: { 'x-forwarded-for': from } });
          if (i < burst) assert.notEqual(res.status, 429, `${path} request ${i}`);
          if (i < burst) await res.arrayBuffer();
        }
      });
      assertLimited(res, 2);
      assert.match(res.headers.get('content-type'), /^text\/html/);
      assert.match(await res.text(), /<p id="reason">Too many requests from your address: try again in \d+ s\.<\/p>/);
    }
  });

  it('1,000 anonymous login starts from one address write a bounded number of rows', async () => {
    const from = fresh();
    const rows = () => stack.sql('SELECT COUNT(*) AS n FROM signin_states')[0].n;
    const before = rows();
    const counts = { 302: 0, 429: 0 };
    await stack.expectingLog(/PROV00780/, async () => {
      for (let i = 0; i < 1000; i++) {
        const res = await fetch(`${base}/v1/auth/idp1/login`, { redirect: 'manual', headers: { 'x-forwarded-for': from } });
        counts[res.status] = (counts[res.status] || 0) + 1;
        await res.arrayBuffer();
      }
    });
    assert.ok(counts[302] >= SIGNIN_BURST && counts[302] <= SIGNIN_BURST + 2, JSON.stringify(counts));
    assert.equal(counts[302] + counts[429], 1000, JSON.stringify(counts));
    // what was let through kept at most PER_CLIENT records of this address
    const mine = stack.sql(`SELECT COUNT(*) AS n FROM signin_states WHERE client_key = '${from}'`)[0].n;
    assert.equal(mine, PER_CLIENT);
    assert.ok(rows() - before <= PER_CLIENT);
  });

  it('keeps the records of one address bounded with its limit lifted; IPv6 counts by /64', async () => {
    await stack.restartHttpd({
      directives: `${stack.opts.directives}ProviderAnonRateLimit signin 0\n`,
    });
    const from = fresh();
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`${base}/v1/auth/idp1/login`, { redirect: 'manual', headers: { 'x-forwarded-for': from } });
      assert.equal(res.status, 302, `start ${i}`);
      await res.arrayBuffer();
    }
    assert.equal(stack.sql(`SELECT COUNT(*) AS n FROM signin_states WHERE client_key = '${from}'`)[0].n,
      PER_CLIENT);
    // an IPv6 client counts by its /64
    for (const a of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:3::1']) {
      const res = await fetch(`${base}/v1/auth/idp1/login`, { redirect: 'manual', headers: { 'x-forwarded-for': a } });
      assert.equal(res.status, 302);
    }
    assert.deepEqual(stack.sql("SELECT client_key, COUNT(*) AS n FROM signin_states WHERE client_key LIKE '2001:%' "
      + 'GROUP BY client_key ORDER BY client_key'),
    [{ client_key: '2001:db8:1:2::/64', n: 2 }, { client_key: '2001:db8:1:3::/64', n: 1 }]);
  });

  /**
   * One registration on a connection of its own (no keep-alive): a new
   * connection goes to whichever child accepts it, and none is reused after
   * the event MPM closed it because that child's workers were all busy (a
   * close that races a request any HTTP client may see, and fetch does not
   * retry a POST). Resolves to the status.
   */
  const registerAlone = (from) => new Promise((resolve, reject) => {
    const body = JSON.stringify({ client_name: 'both', redirect_uris: ['http://127.0.0.1:5173/cb'] });
    const req = http.request(`${base}/oauth/register`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body),
        'x-forwarded-for': from, connection: 'close' },
    }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
    req.on('error', reject);
    req.end(body);
  });

  it('shares one count between the children (shared memory)', async () => {
    const from = fresh();
    // rounds of concurrent requests (fewer than the 16 workers), spread over
    // both children; what they let through together is one address's burst
    const all = [];
    await stack.expectingLog(/PROV00780/, async () => {
      for (let round = 0; round < 4; round++) {
        all.push(...await Promise.all(Array.from({ length: 14 }, () => registerAlone(from))));
      }
    });
    const created = all.filter((s) => s === 201).length;
    assert.ok(created >= REGISTER_BURST && created <= REGISTER_BURST + 1, `created ${created}`);
    const pids = new Set(stack.readFile(`${stack.dir}/logs/access.log`).split('\n')
      .filter((l) => l.split(' ')[1] === from).map((l) => l.split(' ')[0]));
    assert.equal(pids.size, 2, 'both children answered this address');
  });

  it('purges by itself what is over and keeps what is live; providerctl oauth clients sees it', async () => {
    const old = now - 2 * DAY;
    stack.exec(`
      INSERT INTO oauth_clients (client_id, name, redirect_uris, created_at) VALUES
        ('mcp-old-unused', 'old', 'http://127.0.0.1:5173/cb', ${old}),
        ('mcp-old-live', 'live', 'http://127.0.0.1:5173/cb', ${old});
      INSERT INTO users (email, created_at) VALUES ('purge@example.com', ${old});
      INSERT INTO oauth_grants (client_id, user_id, code_hash, scope, resource, created_at)
        SELECT 'mcp-old-live', id, 'codehash-purge', 'account:read', '${base}/v1/mcp/account', ${old}
        FROM users WHERE email = 'purge@example.com';
      INSERT INTO oauth_tokens (token_hash, grant_id, kind, created_at, expires_at)
        SELECT 'tokenhash-purge', id, 'refresh', ${old}, ${now + 20 * DAY} FROM oauth_grants
        WHERE code_hash = 'codehash-purge';
      INSERT INTO sessions (user_id, active_hash, refresh_hash, active_expires, refresh_expires, created_at)
        SELECT id, 'a-ended', 'r-ended', ${old}, ${now - 1}, ${old} FROM users WHERE email = 'purge@example.com';
      INSERT INTO signin_states (state_hash, provider, sealed, created_at, expires_at)
        VALUES ('statehash-ended', 'idp1', 'x', ${now - 700}, ${now - 100});
    `);
    // (the purge may already have run: it looks every second)
    const gone = () => stack.sql("SELECT client_id FROM oauth_clients WHERE client_id LIKE 'mcp-old-%'");
    await stack.expectingLog(/PROV00785/, async () => {
      for (let i = 0; i < 50 && gone().length !== 1; i++) await sleep(200);
    });
    assert.deepEqual(gone(), [{ client_id: 'mcp-old-live' }]);
    assert.equal(stack.sql("SELECT COUNT(*) AS n FROM sessions WHERE active_hash = 'a-ended'")[0].n, 0);
    assert.equal(stack.sql("SELECT COUNT(*) AS n FROM signin_states WHERE state_hash = 'statehash-ended'")[0].n, 0);
    assert.equal(stack.sql("SELECT COUNT(*) AS n FROM oauth_tokens WHERE token_hash = 'tokenhash-purge'")[0].n, 1);
    assert.match(stack.readFile(stack.errorLog), /PROV00785: purged \d+ pre-login record\(s\), \d+ session\(s\)/);
    // the clients registered by the flood above are a day from their purge
    stack.setClock(now + DAY + 60);
    await stack.expectingLog(/PROV00785/, async () => {
      for (let i = 0; i < 50 && stack.sql("SELECT COUNT(*) AS n FROM oauth_clients WHERE name = 'flood'")[0].n; i++) {
        await sleep(200);
      }
    });
    assert.equal(stack.sql("SELECT COUNT(*) AS n FROM oauth_clients WHERE name = 'flood'")[0].n, 0);
    assert.deepEqual(stack.ctlJSON('oauth', 'clients').filter((c) => c.client_id === 'mcp-old-live')
      .map((c) => c.live_grants), [1]);
  });
});
