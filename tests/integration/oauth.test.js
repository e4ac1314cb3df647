// tests/integration/oauth.test.js: the service's own OAuth 2.1
// authorization server and the protected MCP account endpoint (issue 16,
// items 2 and 3), step by step in raw HTTP (lib/oauth.js) with a user
// signed in through the kit's identity provider. Metadata (RFC 8414: S256
// only; RFC 9728), registration (public clients; https or loopback http
// redirect URIs only), the authorization request (the sign-in page
// without a session; the consent page with Allow and Deny; its form only
// from this site and with its token; PKCE S256 required; the resource and
// the scope checked; a wrong client or redirect URI never redirected;
// state and iss echoed), the token endpoint (the verifier, one-time codes
// whose replay revokes what they gave, 60-second codes, refresh rotation
// with reuse detection, RFC 6749 error bodies, no-store), revocation (RFC
// 7009), and the account endpoint: 401 with the metadata's address, tokens
// refused when expired (test clock), revoked, for another audience (a
// second node with another ProviderPublicURL on the same database), in the
// query string, of a blocked user or without account:read (403); its
// tools' figures equal providerctl's. Two nodes behind one public URL share
// codes, tokens and revocations through the database. Runs on SQLite and,
// with PROVIDER_TEST_PGSQL=1, on PostgreSQL.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, seedCatalog, freePort, ROOMY_LIMITS } from './lib/server.js';
import { startIdentityProviders } from './lib/idp.js';
import { chatBody } from './lib/helpers.js';
import { CookieJar } from './lib/idp-client.js';
import {
  SCOPE, signedIn, register, client, authParams, authorize, consentForm, decide, authorizeCode,
  token, exchange, revoke, account, callAccount, challengeOf,
} from './lib/oauth.js';

function assertOAuthError(res, status, error) {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.equal(res.json.error, error, JSON.stringify(res.json));
  assert.equal(typeof res.json.error_description, 'string');
  assert.equal(res.headers.get('cache-control'), 'no-store');
}

function redirectError(res, c, error, state) {
  assert.equal(res.status, 302, res.html);
  const u = new URL(res.location);
  assert.equal(`${u.origin}${u.pathname}`, c.redirectUri);
  assert.equal(u.searchParams.get('error'), error, res.location);
  assert.equal(u.searchParams.get('state'), state);
  assert.equal(u.searchParams.get('code'), null);
  return u;
}

async function listTools(stack, accessToken) {
  return account(stack, accessToken, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
}

describe('the OAuth 2.1 authorization server and /v1/mcp/account', { timeout: 180000 }, () => {
  let stack;
  let peer;
  let kit;
  let now;
  let jar;
  let c;

  before(async () => {
    const [port, peerPort] = [await freePort(), await freePort()];
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    now = Math.floor(Date.now() / 1000);
    stack = await startStack({ port, clock: now, seed: seedCatalog,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}\n${ROOMY_LIMITS}` });
    // Another node on the same database under another name: another audience.
    peer = await startStack({ port: peerPort, peer: stack,
      directives: `ProviderPublicURL http://127.0.0.1:${peerPort}` });
    jar = await signedIn(stack);
    c = await client(stack);
  });

  after(async () => {
    if (peer) await peer.stop();
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects(), ...jar.cookies.map((x) => x.value));
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  it('publishes RFC 8414 and RFC 9728 metadata (S256 only)', async () => {
    const as = await stack.request('GET', '/.well-known/oauth-authorization-server');
    assert.equal(as.status, 200, as.text);
    assert.equal(as.json.issuer, stack.baseURL);
    assert.deepEqual(as.json.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(as.json.response_types_supported, ['code']);
    assert.deepEqual(as.json.token_endpoint_auth_methods_supported, ['none']);
    assert.deepEqual(as.json.scopes_supported, [SCOPE]);
    assert.equal(as.json.authorization_response_iss_parameter_supported, true);
    for (const [k, p] of [['authorization_endpoint', '/oauth/authorize'], ['token_endpoint', '/oauth/token'],
      ['registration_endpoint', '/oauth/register'], ['revocation_endpoint', '/oauth/revoke']]) {
      assert.equal(as.json[k], `${stack.baseURL}${p}`);
    }
    const pr = await stack.request('GET', '/.well-known/oauth-protected-resource/v1/mcp/account');
    assert.equal(pr.status, 200, pr.text);
    assert.equal(pr.json.resource, `${stack.baseURL}/v1/mcp/account`);
    assert.deepEqual(pr.json.authorization_servers, [stack.baseURL]);
    assert.deepEqual(pr.json.scopes_supported, [SCOPE]);
    assert.deepEqual(pr.json.bearer_methods_supported, ['header']);
  });

  it('answers /v1/mcp/account without a token 401 with the way to the metadata', async () => {
    const r = await listTools(stack, null);
    assert.equal(r.status, 401, r.text);
    const ch = challengeOf(r);
    assert.equal(ch.scheme, 'Bearer');
    assert.equal(ch.resource_metadata, `${stack.baseURL}/.well-known/oauth-protected-resource/v1/mcp/account`);
    assert.equal(ch.scope, SCOPE);
    assert.equal(r.json.error.code, -32600);
    const basic = await account(stack, null, { jsonrpc: '2.0', id: 1, method: 'ping' },
      { headers: { authorization: 'Basic YTpi' } });
    assert.equal(basic.status, 400);
  });

  it('registers public clients only, with https or loopback http redirect URIs', async () => {
    const ok = await register(stack, { redirect_uris: ['https://app.example/cb', 'http://[::1]/cb', 'http://localhost:9/cb'] });
    assert.equal(ok.status, 201, JSON.stringify(ok.json));
    assert.match(ok.json.client_id, /^mcp-/);
    assert.equal(ok.json.token_endpoint_auth_method, 'none');
    assert.equal(ok.json.client_secret, undefined);
    assert.equal(ok.headers.get('cache-control'), 'no-store');
    for (const uri of ['http://app.example/cb', 'http://127.0.0.2.example/cb', 'myapp://cb', 'https://app.example/cb#x',
      'https://user:pw@app.example/cb', 'javascript:alert(1)', '/relative']) {
      const r = await register(stack, { redirect_uris: [uri] });
      assert.equal(r.status, 400, uri);
      assert.equal(r.json.error, 'invalid_redirect_uri', uri);
    }
    for (const body of [{ redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'client_secret_basic' },
      { redirect_uris: ['https://a.example/cb'], grant_types: ['client_credentials'] },
      { redirect_uris: ['https://a.example/cb'], scope: 'account:write' },
      { redirect_uris: ['https://a.example/cb'], client_name: 'x'.repeat(101) }]) {
      const r = await register(stack, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.json.error, 'invalid_client_metadata', JSON.stringify(body));
    }
    const none = await register(stack, {});
    assert.equal(none.json.error, 'invalid_redirect_uri');
  });

  it('sends a browser without a session to sign in and back', async () => {
    const { params } = authParams(stack, c);
    const r = await authorize(stack, new (jar.constructor)(), params);
    assert.equal(r.status, 200, r.html);
    assert.match(r.html, /<form id="signin-idp1" method="get" action="\/v1\/auth\/idp1\/login">/);
    const back = /name="return" value="([^"]+)"/.exec(r.html)[1].replace(/&amp;/g, '&');
    assert.equal(back, `/oauth/authorize?${new URLSearchParams(params)}`);
    assert.equal(r.headers.get('x-frame-options'), 'DENY');
  });

  it('takes a request without scope as asking for account:read (RFC 6749 3.3: the default scope)', async () => {
    const { params } = authParams(stack, c, { scope: null });
    assert.equal(params.scope, undefined);
    const page = await authorize(stack, jar, params);
    assert.equal(page.status, 200, page.html);
    assert.match(page.html, /<code id="scope">account:read<\/code>/);
    const empty = await authorize(stack, jar, { ...params, scope: '' });
    assert.match(empty.html, /<code id="scope">account:read<\/code>/);
  });

  it('completes the flow: consent, Allow, code with state and iss, tokens, the account tools', async () => {
    const { params, verifier } = authParams(stack, c);
    const page = await authorize(stack, jar, params);
    assert.equal(page.status, 200, page.html);
    assert.match(page.html, /<strong>Test MCP client<\/strong> <span id="unverified">\(a name the application gave itself: this site has not verified it\)<\/span> asks to read your balance/);
    assert.match(page.html, /<code id="scope">account:read<\/code>/);
    assert.match(page.html, /<button type="submit" id="allow" name="decision" value="allow">Allow<\/button>/);
    assert.match(page.html, /<button type="submit" id="deny" name="decision" value="deny">Deny<\/button>/);
    assert.match(page.headers.get('content-security-policy'), /frame-ancestors 'none'/);
    const res = await decide(stack, jar, consentForm(page.html), 'allow');
    assert.equal(res.status, 302, res.html);
    const q = new URL(res.location).searchParams;
    assert.equal(q.get('state'), params.state);
    assert.equal(q.get('iss'), stack.baseURL);
    const t = await exchange(stack, c, { code: q.get('code'), verifier });
    assert.equal(t.token_type, 'Bearer');
    assert.ok(t.expires_in > 0 && t.expires_in <= 3600, String(t.expires_in));
    assert.equal(t.scope, SCOPE);
    assert.ok(t.refresh_token);

    const init = await account(stack, t.access_token, { jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    assert.equal(init.status, 200, init.text);
    assert.equal(init.json.result.protocolVersion, '2025-06-18');
    const tools = await listTools(stack, t.access_token);
    assert.deepEqual(tools.json.result.tools.map((x) => x.name).sort(), ['account_limits', 'account_usage']);
  });

  it('gives account_limits and account_usage figures equal to providerctl\'s, never a secret', async () => {
    const email = kit.byName('idp1').users.get('alice').email;
    const uid = stack.userId(email);
    stack.ctl('balance', 'add', String(uid), '25.5', '--reason', 'test');
    stack.ctl('plan', 'add', 'mcp-pro', '--5h', '10', '--7d', '50');
    stack.ctl('subscription', 'set', String(uid), 'mcp-pro');
    const key = stack.createKey(uid, { name: 'laptop', budget: 20 });
    // The module's clock on from the subscription's start (providerctl's real time).
    now = stack.setClock(Math.floor(Date.now() / 1000) + 1);
    const chat = await stack.chat(key.secret, chatBody('prov-main'));
    assert.equal(chat.status, 200, chat.text);
    await stack.billingSettled();

    const got = await authorizeCode(stack, jar, c);
    const t = await exchange(stack, c, got);
    const limits = await callAccount(stack, t.access_token, 'account_limits');
    assert.notEqual(limits.isError, true, JSON.stringify(limits));
    const s = limits.structuredContent;
    const ctl = stack.ctlJSON('balance', 'show', String(uid));
    assert.equal(s.balance, ctl.balance);
    assert.equal(s.held, ctl.held);
    assert.equal(s.plan.name, 'mcp-pro');
    const [w5, w7] = s.plan.windows;
    assert.equal(w5.window, '5h');
    assert.equal(w5.quota, ctl.windows['5h'].quota);
    assert.equal(w5.used, ctl.windows['5h'].used);
    assert.ok(w5.used > 0, 'the chat was paid from the plan');
    assert.equal(w5.returns_at, ctl.windows['5h'].reset_at);
    assert.equal(w7.quota, ctl.windows['7d'].quota);
    assert.equal(w7.used, ctl.windows['7d'].used);
    assert.ok(Math.abs(w7.remaining - (w7.quota - w7.used)) < 1e-9);
    const k = stack.ctlJSON('key', 'show', String(key.id));
    assert.deepEqual(s.keys.map((x) => x.id), [String(key.id)]);
    assert.equal(s.keys[0].name, 'laptop');
    assert.equal(s.keys[0].prefix, k.prefix);
    assert.equal(s.keys[0].weekly_budget, 20);
    assert.equal(s.keys[0].week_used, k.spent_7d);
    assert.ok(s.keys[0].week_used > 0);
    assert.equal(s.keys[0].returns_at, k.budget_reset_at);
    assert.ok(!JSON.stringify(limits).includes(key.secret), 'no key secret');
    // The cabinet's own answer, for the same user at the same time.
    const cab = await jar.fetch(`${stack.baseURL}/v1/account`);
    const cabJson = await cab.json();
    assert.equal(cab.status, 200, JSON.stringify(cabJson));
    assert.deepEqual(s.plan, cabJson.plan);
    assert.deepEqual([s.balance, s.held, s.available], [cabJson.balance, cabJson.held, cabJson.available]);

    const day = new Date(now * 1000).toISOString().slice(0, 10);
    for (const by of ['day', 'key', 'model']) {
      const usage = (await callAccount(stack, t.access_token, 'account_usage', { days: 1, by })).structuredContent;
      const report = stack.ctlJSON('usage', 'report', '--user', String(uid), '--since', day, '--by', by);
      const rows = report.rows.map((r) => ({ group: String(r[by === 'key' ? 'key_id' : by]), requests: r.requests,
        credits: r.credits }));
      assert.deepEqual(usage.data.map((r) => ({ group: r.group, requests: r.requests, credits: r.credits })), rows, by);
      assert.equal(usage.data[0].requests, 1);
      if (by === 'key') assert.equal(usage.data[0].name, 'laptop');
      const cabUsage = await (await jar.fetch(`${stack.baseURL}/v1/usage?days=1&by=${by}`)).json();
      assert.deepEqual(usage, cabUsage, by);
    }
    const bad = await callAccount(stack, t.access_token, 'account_usage', { days: 31 });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /days/);
    const extra = await callAccount(stack, t.access_token, 'account_usage', { days: 1, user: 'someone' });
    assert.equal(extra.isError, true);
    assert.match(extra.content[0].text, /account_usage takes no argument "user"/);
  });

  it('refuses an unregistered client or redirect URI on its own page, never redirecting', async () => {
    for (const extra of [{ client_id: 'mcp-unknown' }, { redirect_uri: 'http://127.0.0.1:5173/other' },
      { redirect_uri: 'https://evil.example/callback' }, { redirect_uri: null }]) {
      const { params } = authParams(stack, c, extra);
      const r = await authorize(stack, jar, params);
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.location, null);
      assert.match(r.html, /<p id="reason">/);
    }
    // A loopback redirect URI may name another port (RFC 8252 7.3).
    const { params } = authParams(stack, c, { redirect_uri: 'http://127.0.0.1:6000/callback' });
    assert.equal((await authorize(stack, jar, params)).status, 200);
  });

  it('refuses every other fault on its own page too, signed in or not: no redirect before the user saw the client (RFC 9700 4.11.2)', async () => {
    const cases = [
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge_method: null }, 'invalid_request'],
      [{ code_challenge: null, code_challenge_method: null }, 'invalid_request'],
      [{ resource: 'https://other.example/v1/mcp/account' }, 'invalid_target'],
      [{ resource: `${stack.baseURL}/v1/mcp` }, 'invalid_target'],
      [{ resource: null }, 'invalid_request'],
      [{ scope: 'account:write' }, 'invalid_scope'],
      [{ scope: 'account:read admin' }, 'invalid_scope'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
    ];
    // An attacker's own client with its own https redirect URI, anonymous or
    // through a victim's session: our page, never a 302 to that URI.
    const evil = await register(stack, { client_name: 'Evil', redirect_uris: ['https://evil.example/cb'] });
    assert.equal(evil.status, 201);
    const attacker = { clientId: evil.json.client_id, redirectUri: 'https://evil.example/cb' };
    for (const who of [c, attacker]) {
      for (const [extra, error] of cases) {
        for (const cookies of [jar, new CookieJar()]) {
          const { params } = authParams(stack, who, extra);
          const r = await authorize(stack, cookies, params);
          const what = `${who.clientId} ${JSON.stringify(extra)} ${cookies === jar ? 'signed in' : 'anonymous'}`;
          assert.equal(r.status, 400, what);
          assert.equal(r.location, null, what);
          assert.match(r.html, new RegExp(`<code id="error">${error}</code>`), what);
          assert.match(r.html, /<p id="reason">/, what);
          assert.doesNotMatch(r.html, /evil\.example/, what);
        }
      }
    }
  });

  it('answers Deny with access_denied, and takes the form only from this site with its token', async () => {
    const { params } = authParams(stack, c);
    const page = await authorize(stack, jar, params);
    const fields = consentForm(page.html);
    const denied = await decide(stack, jar, fields, 'deny');
    const u = redirectError(denied, c, 'access_denied', params.state);
    assert.equal(u.searchParams.get('iss'), stack.baseURL);
    const cross = await decide(stack, jar, fields, 'allow', { origin: 'http://evil.example' });
    assert.equal(cross.status, 403);
    const forged = await decide(stack, jar, { ...fields, csrf: 'A'.repeat(43) }, 'allow');
    assert.equal(forged.status, 403);
    const changed = await decide(stack, jar, { ...fields, state: 'other' }, 'allow');
    assert.equal(changed.status, 403);
    const other = await signedIn(stack, 'idp1', 'bob');
    const stolen = await decide(stack, other, fields, 'allow');
    assert.equal(stolen.status, 403, 'another session\'s form');
    const anonymous = await decide(stack, new (jar.constructor)(), fields, 'allow');
    assert.equal(anonymous.status, 401);
    stack.secrets.push(...other.cookies.map((x) => x.value));
  });

  it('needs the right verifier, client and redirect URI at the token endpoint', async () => {
    const got = await authorizeCode(stack, jar, c);
    const base = { grant_type: 'authorization_code', code: got.code, redirect_uri: c.redirectUri,
      client_id: c.clientId, code_verifier: got.verifier };
    const { code_verifier: _, ...noVerifier } = base;
    assertOAuthError(await token(stack, noVerifier), 400, 'invalid_request');
    const wrong = await token(stack, { ...base, code_verifier: 'x'.repeat(43) });
    assertOAuthError(wrong, 400, 'invalid_grant');
    // The code is spent by the failed try: the right verifier comes too late.
    assertOAuthError(await token(stack, base), 400, 'invalid_grant');
    const got2 = await authorizeCode(stack, jar, c);
    assertOAuthError(await token(stack, { ...base, code: got2.code, code_verifier: got2.verifier,
      redirect_uri: 'http://127.0.0.1:5173/other' }), 400, 'invalid_grant');
    const got3 = await authorizeCode(stack, jar, c);
    assertOAuthError(await token(stack, { ...base, code: got3.code, code_verifier: got3.verifier,
      client_id: 'mcp-unknown' }), 401, 'invalid_client');
    assertOAuthError(await token(stack, { grant_type: 'password', username: 'a', password: 'b' }), 400,
      'unsupported_grant_type');
    const dup = await fetch(`${stack.baseURL}/oauth/token`, { method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code&code=a&code=b' });
    assert.equal(dup.status, 400);
    assert.equal((await dup.json()).error, 'invalid_request');
  });

  it('revokes what a code gave when the code is used again', async () => {
    const got = await authorizeCode(stack, jar, c);
    const t = await exchange(stack, c, got);
    assert.equal((await listTools(stack, t.access_token)).status, 200);
    const again = await token(stack, { grant_type: 'authorization_code', code: got.code, redirect_uri: c.redirectUri,
      client_id: c.clientId, code_verifier: got.verifier });
    assertOAuthError(again, 400, 'invalid_grant');
    const r = await listTools(stack, t.access_token);
    assert.equal(r.status, 401);
    assert.equal(challengeOf(r).error, 'invalid_token');
    assertOAuthError(await token(stack, { grant_type: 'refresh_token', refresh_token: t.refresh_token,
      client_id: c.clientId }), 400, 'invalid_grant');
  });

  it('lets a code live 60 seconds at most', async () => {
    const got = await authorizeCode(stack, jar, c);
    stack.setClock(now + 61);
    try {
      assertOAuthError(await token(stack, { grant_type: 'authorization_code', code: got.code,
        redirect_uri: c.redirectUri, client_id: c.clientId, code_verifier: got.verifier }), 400, 'invalid_grant');
    } finally {
      stack.setClock(now);
    }
  });

  it('rotates refresh tokens and revokes the grant when a rotated one comes back', async () => {
    const t = await exchange(stack, c, await authorizeCode(stack, jar, c));
    const r1 = await token(stack, { grant_type: 'refresh_token', refresh_token: t.refresh_token,
      client_id: c.clientId, resource: `${stack.baseURL}/v1/mcp/account` });
    assert.equal(r1.status, 200, JSON.stringify(r1.json));
    stack.secrets.push(r1.json.access_token, r1.json.refresh_token);
    assert.notEqual(r1.json.refresh_token, t.refresh_token);
    assert.equal((await listTools(stack, r1.json.access_token)).status, 200);
    assertOAuthError(await token(stack, { grant_type: 'refresh_token', refresh_token: r1.json.refresh_token,
      client_id: 'mcp-other' }), 400, 'invalid_grant');
    const t2 = await exchange(stack, c, await authorizeCode(stack, jar, c));
    const r2 = await token(stack, { grant_type: 'refresh_token', refresh_token: t2.refresh_token, client_id: c.clientId });
    assert.equal(r2.status, 200);
    stack.secrets.push(r2.json.access_token, r2.json.refresh_token);
    // The rotated token again: refused, and the whole grant with it.
    assertOAuthError(await token(stack, { grant_type: 'refresh_token', refresh_token: t2.refresh_token,
      client_id: c.clientId }), 400, 'invalid_grant');
    assert.equal((await listTools(stack, r2.json.access_token)).status, 401);
    assertOAuthError(await token(stack, { grant_type: 'refresh_token', refresh_token: r2.json.refresh_token,
      client_id: c.clientId }), 400, 'invalid_grant');
    const t3 = await exchange(stack, c, await authorizeCode(stack, jar, c));
    assertOAuthError(await token(stack, { grant_type: 'refresh_token', refresh_token: t3.refresh_token,
      client_id: c.clientId, resource: 'https://other.example/v1/mcp/account' }), 400, 'invalid_target');
  });

  it('refuses tokens that are expired, revoked, for another audience or in the query string', async () => {
    const t = await exchange(stack, c, await authorizeCode(stack, jar, c));
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    assert.equal((await account(stack, t.access_token, ping)).status, 200);
    const q = await account(stack, null, ping, { query: `?access_token=${t.access_token}` });
    assert.equal(q.status, 400);
    assert.equal(challengeOf(q).error, 'invalid_request');
    const both = await account(stack, t.access_token, ping, { query: `?access_token=${t.access_token}` });
    assert.equal(both.status, 400);
    // Another node under another name: the token is not for it.
    const foreign = await account(peer, t.access_token, ping);
    assert.equal(foreign.status, 401, foreign.text);
    assert.equal(challengeOf(foreign).error, 'invalid_token');
    assert.match(challengeOf(foreign).error_description, /another resource/);
    stack.setClock(now + 3601);
    try {
      const late = await account(stack, t.access_token, ping);
      assert.equal(late.status, 401);
      assert.equal(challengeOf(late).error, 'invalid_token');
    } finally {
      stack.setClock(now);
    }
    assert.equal((await account(stack, t.access_token, ping)).status, 200);
    // Never a silent no-op: without client_id, or with another client's, a 400
    // and the token still works (RFC 7009 2.1).
    const anon = await revoke(stack, { token: t.access_token });
    assertOAuthError(anon, 400, 'invalid_request');
    assert.match(anon.json.error_description, /client_id/);
    const other = await register(stack, { redirect_uris: ['http://127.0.0.1:5173/callback'] });
    assertOAuthError(await revoke(stack, { token: t.access_token, client_id: other.json.client_id }),
      400, 'invalid_request');
    assert.equal((await account(stack, t.access_token, ping)).status, 200, 'not revoked');
    const rv = await revoke(stack, { token: t.access_token, client_id: c.clientId });
    assert.equal(rv.status, 200);
    assert.equal((await account(stack, t.access_token, ping)).status, 401);
    assert.equal((await revoke(stack, { token: 'unknown', client_id: c.clientId })).status, 200);
    assert.equal((await revoke(stack, { client_id: c.clientId })).status, 400);
    // Revoking the refresh token ends the grant (its access tokens too).
    const t2 = await exchange(stack, c, await authorizeCode(stack, jar, c));
    assert.equal((await revoke(stack, { token: t2.refresh_token, token_type_hint: 'refresh_token',
      client_id: c.clientId })).status, 200);
    assert.equal((await account(stack, t2.access_token, ping)).status, 401);
  });

  it('answers 403 insufficient_scope to a token without account:read', async () => {
    const t = await exchange(stack, c, await authorizeCode(stack, jar, c));
    stack.exec(`UPDATE oauth_grants SET scope = 'profile' WHERE id = (SELECT MAX(id) FROM oauth_grants)`);
    const r = await account(stack, t.access_token, { jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.equal(r.status, 403, r.text);
    assert.equal(challengeOf(r).error, 'insufficient_scope');
    assert.equal(challengeOf(r).scope, SCOPE);
  });

  it('stores codes and tokens as SHA-256 only', async () => {
    const got = await authorizeCode(stack, jar, c);
    const t = await exchange(stack, c, got);
    const dump = JSON.stringify([stack.sql('SELECT * FROM oauth_codes'), stack.sql('SELECT * FROM oauth_tokens'),
      stack.sql('SELECT * FROM oauth_grants')]);
    for (const secret of [got.code, t.access_token, t.refresh_token]) assert.ok(!dump.includes(secret));
  });

  it('lists the authorized clients for the cabinet and revokes one from there', async () => {
    const other = await client(stack, { name: 'Other tool', redirectUri: 'https://other.example/cb' });
    const t = await exchange(stack, c, await authorizeCode(stack, jar, c));
    const list = async (j) => {
      const r = await j.fetch(`${stack.baseURL}/v1/mcp/clients`);
      return { status: r.status, cache: r.headers.get('cache-control'), json: await r.json() };
    };
    let l = await list(jar);
    assert.equal(l.status, 200, JSON.stringify(l.json));
    assert.match(l.cache, /^no-store/);
    const mine = l.json.data.find((x) => x.client_id === c.clientId);
    assert.ok(mine, JSON.stringify(l.json));
    assert.equal(mine.name, 'Test MCP client');
    assert.equal(mine.scope, SCOPE);
    assert.match(mine.authorized_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok(!l.json.data.some((x) => x.client_id === other.clientId), 'never authorized');
    assert.equal((await list(new (jar.constructor)())).status, 401);
    const del = (j, id, origin = stack.baseURL) => j.fetch(`${stack.baseURL}/v1/mcp/clients/${id}`,
      { method: 'DELETE', headers: origin ? { origin } : {} });
    let r = await del(jar, c.clientId, 'http://evil.example');
    assert.equal(r.status, 403);
    assert.equal((await r.json()).error.code, 'CROSS_SITE_REQUEST');
    assert.equal((await listTools(stack, t.access_token)).status, 200);
    r = await del(jar, c.clientId);
    assert.equal(r.status, 204);
    assert.equal((await listTools(stack, t.access_token)).status, 401);
    assertOAuthError(await token(stack, { grant_type: 'refresh_token', refresh_token: t.refresh_token,
      client_id: c.clientId }), 400, 'invalid_grant');
    l = await list(jar);
    assert.ok(!l.json.data.some((x) => x.client_id === c.clientId));
    r = await del(jar, c.clientId);
    assert.equal(r.status, 404);
    // the audit trail: the authorizations and the one revocation (the 404 wrote none), no token
    const audit = stack.sql(`SELECT action, actor_kind, address FROM audit WHERE target_kind = 'oauth_client'
      AND target_id = '${c.clientId}' ORDER BY id`);
    assert.ok(audit.some((x) => x.action === 'oauth.authorize' && x.actor_kind === 'user'
      && x.address === '127.0.0.1'), JSON.stringify(audit));
    assert.equal(audit.filter((x) => x.action === 'oauth.revoke').length, 1, JSON.stringify(audit));
    const dump = JSON.stringify(stack.sql('SELECT * FROM audit'));
    for (const s of [t.access_token, t.refresh_token]) assert.ok(!dump.includes(s), 'a token in the audit table');
  });

  it('revokes every token when the user is blocked', async () => {
    const t = await exchange(stack, c, await authorizeCode(stack, jar, c));
    assert.equal((await listTools(stack, t.access_token)).status, 200);
    const email = kit.byName('idp1').users.get('alice').email;
    stack.ctl('user', 'block', email);
    try {
      assert.equal((await listTools(stack, t.access_token)).status, 401);
      const live = stack.sql(`SELECT COUNT(*) AS n FROM oauth_grants g JOIN users u ON u.id = g.user_id
        WHERE u.email = '${email}' AND g.revoked_at IS NULL`);
      assert.equal(Number(live[0].n), 0);
      assertOAuthError(await token(stack, { grant_type: 'refresh_token', refresh_token: t.refresh_token,
        client_id: c.clientId }), 400, 'invalid_grant');
    } finally {
      stack.ctl('user', 'unblock', email);
    }
    assert.equal((await listTools(stack, t.access_token)).status, 401, 'unblocking brings nothing back');
  });
});

describe('two nodes on one database behind one public URL', { timeout: 180000 }, () => {
  let a;
  let b;
  let kit;
  let jar;
  let c;

  before(async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const base = `http://127.0.0.1:${portA}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    const directives = `ProviderPublicURL ${base}\n${kit.directives()}\n${ROOMY_LIMITS}`;
    a = await startStack({ port: portA, seed: seedCatalog, directives });
    b = await startStack({ port: portB, peer: a, directives });
    b.publicURL = base;   // both behind one name, as behind a load balancer
    jar = await signedIn(a);
    c = await client(b);
  });

  after(async () => {
    if (b) await b.stop();
    if (a) {
      a.secrets.push(...kit.secrets(), ...kit.subjects(), ...jar.cookies.map((x) => x.value));
      await a.stop();
    }
    if (kit) await kit.stop();
  });

  it('redeems at one node a code issued by the other, and a revocation is seen by both at once', async () => {
    const got = await authorizeCode(a, jar, c);
    // The token endpoint of node B (the client's request went to another node).
    const t = await token(b, { grant_type: 'authorization_code', code: got.code, redirect_uri: c.redirectUri,
      client_id: c.clientId, code_verifier: got.verifier, resource: `${a.baseURL}/v1/mcp/account` });
    assert.equal(t.status, 200, JSON.stringify(t.json));
    a.secrets.push(t.json.access_token, t.json.refresh_token, got.code);
    for (const node of [a, b]) assert.equal((await listTools(node, t.json.access_token)).status, 200);
    // The code again, at the first node: refused there, and the tokens die on both.
    assertOAuthError(await token(a, { grant_type: 'authorization_code', code: got.code, redirect_uri: c.redirectUri,
      client_id: c.clientId, code_verifier: got.verifier }), 400, 'invalid_grant');
    for (const node of [a, b]) assert.equal((await listTools(node, t.json.access_token)).status, 401);

    const t2 = await exchange(a, c, await authorizeCode(b, jar, c));
    const r = await token(b, { grant_type: 'refresh_token', refresh_token: t2.refresh_token, client_id: c.clientId });
    assert.equal(r.status, 200);
    a.secrets.push(r.json.access_token, r.json.refresh_token);
    assert.equal((await revoke(b, { token: r.json.refresh_token, client_id: c.clientId })).status, 200);
    for (const node of [a, b]) assert.equal((await listTools(node, r.json.access_token)).status, 401);
  });
});
