// tests/integration/browser/mcp-oauth.test.js: the official MCP TypeScript
// SDK's client (npm @modelcontextprotocol/sdk: Client,
// StreamableHTTPClientTransport and an OAuthClientProvider of the test's
// own) against POST /v1/mcp/account, with the user in Debian's chromium
// (lib/browser.js), run by tests/integration/run.sh inside a loopback-only
// network namespace. The SDK meets the 401, discovers the protected
// resource (RFC 9728) and the authorization server (RFC 8414), registers
// itself (RFC 7591) and sends the user to /oauth/authorize with PKCE S256
// and the resource; the browser, signed in to the cabinet through the
// kit's identity provider, sees the consent page naming the client and
// clicks Allow; the redirect brings the code (with state and iss) to the
// client's loopback callback; the SDK exchanges it, lists the account's
// tools and calls account_limits, whose figures equal providerctl's; the
// cabinet page then lists the client and its Revoke button ends its token.
// The public endpoint answers the same SDK without a token.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { startStack, seedCatalog, freePort } from '../lib/server.js';
import { startIdentityProviders } from '../lib/idp.js';
import { launchBrowser, loopbackOnly, fillProviderLogin } from '../lib/browser.js';
import { chatBody } from '../lib/helpers.js';

/** An OAuthClientProvider kept in memory, as a CLI client would keep it on disk. */
class MemoryProvider {
  constructor(redirectUrl) {
    this.redirect = redirectUrl;
    this.sentState = crypto.randomBytes(16).toString('base64url');
    this.authorizationUrl = null;
    this.info = undefined;
    this.saved = undefined;
    this.verifier = undefined;
  }

  get redirectUrl() { return this.redirect; }

  get clientMetadata() {
    return {
      client_name: 'SDK test client', redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state() { return this.sentState; }
  clientInformation() { return this.info; }
  saveClientInformation(info) { this.info = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  redirectToAuthorization(url) { this.authorizationUrl = url; }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
}

/** The client's loopback callback: resolves with the query of the first request. */
async function callbackServer() {
  const port = await freePort();
  let resolve;
  const got = new Promise((r) => { resolve = r; });
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, `http://127.0.0.1:${port}`);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('You may close this window.');
    if (u.pathname === '/callback') resolve(u.searchParams);
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${port}/callback`, got, close: () => new Promise((r) => server.close(r)) };
}

describe('the MCP SDK client through OAuth, with the user in a browser', { timeout: 180000 }, () => {
  let stack;
  let kit;
  let browser;
  let base;
  let cb;

  before(async () => {
    assert.ok(loopbackOnly(), 'runs inside a loopback-only network namespace (run.sh does this)');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    stack = await startStack({ port, seed: seedCatalog, directives: `ProviderPublicURL ${base}\n${kit.directives()}` });
    browser = await launchBrowser();
    cb = await callbackServer();
  });

  after(async () => {
    if (cb) await cb.close();
    if (browser) await browser.close();
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  it('answers the SDK on the public endpoint without a token', async () => {
    const client = new Client({ name: 'sdk-public', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/v1/mcp`)));
    try {
      const res = await client.callTool({ name: 'list_models', arguments: {} });
      assert.deepEqual(res.structuredContent, (await stack.models()).json);
    } finally {
      await client.close();
    }
  });

  it('runs 401, discovery, registration, consent in the browser, token, tools/list, account_limits', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${base}/cabinet/`);
      await Promise.all([page.waitForURL(`${kit.byName('idp1').issuer}/interaction/**`),
        page.click('text=Sign in with Provider One')]);
      await fillProviderLogin(page, { login: 'alice' });
      await page.waitForURL(`${base}/cabinet/`);
      for (const c of await context.cookies(base)) stack.secrets.push(c.value);

      const uid = stack.userId(kit.byName('idp1').users.get('alice').email);
      stack.ctl('balance', 'add', String(uid), '12.5', '--reason', 'test');
      const key = stack.createKey(uid, { name: 'laptop', budget: 5 });
      assert.equal((await stack.chat(key.secret, chatBody('prov-main'))).status, 200);
      await stack.billingSettled();

      const provider = new MemoryProvider(cb.url);
      const serverUrl = new URL(`${base}/v1/mcp/account`);
      const first = new Client({ name: 'sdk-account', version: '1.0.0' });
      await assert.rejects(first.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })),
        (e) => e instanceof UnauthorizedError);
      assert.ok(provider.info && /^mcp-/.test(provider.info.client_id), 'registered');
      const auth = new URL(provider.authorizationUrl);
      assert.equal(`${auth.origin}${auth.pathname}`, `${base}/oauth/authorize`);
      assert.equal(auth.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(auth.searchParams.get('resource'), `${base}/v1/mcp/account`);
      assert.equal(auth.searchParams.get('scope'), 'account:read');

      await page.goto(auth.href);
      assert.match(await page.textContent('#client'), /SDK test client/);
      assert.equal(await page.textContent('#scope'), 'account:read');
      await Promise.all([page.waitForURL(`${cb.url}?**`), page.click('#allow')]);
      const q = await cb.got;
      assert.equal(q.get('state'), provider.sentState);
      assert.equal(q.get('iss'), base);
      stack.secrets.push(q.get('code'));

      const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
      await transport.finishAuth(q.get('code'));
      stack.secrets.push(provider.saved.access_token, provider.saved.refresh_token);
      const client = new Client({ name: 'sdk-account', version: '1.0.0' });
      await client.connect(transport);
      try {
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name).sort(), ['account_limits', 'account_usage']);
        const res = await client.callTool({ name: 'account_limits', arguments: {} });
        assert.notEqual(res.isError, true, JSON.stringify(res));
        const ctl = stack.ctlJSON('balance', 'show', String(uid));
        assert.equal(res.structuredContent.balance, ctl.balance);
        assert.equal(res.structuredContent.held, ctl.held);
        assert.equal(res.structuredContent.plan, null);
        const k = stack.ctlJSON('key', 'show', String(key.id));
        assert.equal(res.structuredContent.keys[0].week_used, k.spent_7d);
        assert.equal(res.structuredContent.keys[0].weekly_budget, 5);
        assert.ok(!JSON.stringify(res).includes(key.secret));
      } finally {
        await client.close();
      }

      // The cabinet lists the client and revokes it: its token is refused at once.
      await page.goto(`${base}/cabinet/`);
      const item = page.locator(`#mcp-client-list li[data-client="${provider.info.client_id}"]`);
      await item.waitFor();
      assert.match(await item.textContent(), /SDK test client \(account:read\)/);
      await item.locator('button.revoke').click();
      await page.locator('#confirm-dialog').waitFor({ state: 'visible' });
      assert.match(await page.textContent('#confirm-text'), /Revoke SDK test client\?/);
      await page.click('#confirm-ok');
      await page.locator('#mcp-client-list li', { hasText: 'None.' }).waitFor();
      const after = await fetch(serverUrl, { method: 'POST', headers: { authorization: `Bearer ${provider.saved.access_token}`,
        'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
      assert.equal(after.status, 401);
    } finally {
      await context.close();
    }
  });
});
