// tests/integration/lib/oauth.js: a client of the service's own OAuth 2.1
// authorization server and of its MCP account endpoint, in raw HTTP, for
// the tests that play each step by hand (tests/integration/oauth.test.js):
// a signed-in cabinet user (lib/idp-client.js through the kit's provider),
// registration, the authorization request with PKCE, the consent form
// (read from the page, sent back with its anti-forgery token), the code
// exchange and refresh, revocation, and MCP messages with a bearer token.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { pkcePair } from './idp-client.js';
import { signInUser } from './signin.js';

export const SCOPE = 'account:read';

/** The site a stack serves: its own URL, or stack.publicURL when it is one node behind another name. */
export function site(stack) { return stack.publicURL || stack.baseURL; }
export const ACCEPT = 'application/json, text/event-stream';

/** Signs login in at the kit's provider name (lib/signin.js): the browser's CookieJar. */
export async function signedIn(stack, name = 'idp1', login = 'alice') {
  return (await signInUser(stack, login, { name, whoami: false })).jar;
}

/** POST /oauth/register: { status, json }. */
export async function register(stack, body) {
  const r = await fetch(`${stack.baseURL}/oauth/register`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: r.status, headers: r.headers, json: await r.json().catch(() => null) };
}

/** A registered public client with a loopback redirect URI: { clientId, redirectUri }. */
export async function client(stack, { name = 'Test MCP client', redirectUri = 'http://127.0.0.1:5173/callback' } = {}) {
  const r = await register(stack, {
    client_name: name, redirect_uris: [redirectUri], grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'], token_endpoint_auth_method: 'none', scope: SCOPE,
  });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return { clientId: r.json.client_id, redirectUri, name };
}

/** The authorization request's parameters (PKCE S256 unless overridden). */
export function authParams(stack, c, extra = {}) {
  const pkce = pkcePair();
  const params = {
    response_type: 'code', client_id: c.clientId, redirect_uri: c.redirectUri,
    code_challenge: pkce.challenge, code_challenge_method: 'S256', scope: SCOPE,
    state: crypto.randomBytes(12).toString('base64url'), resource: `${site(stack)}/v1/mcp/account`,
    ...extra,
  };
  for (const k of Object.keys(params)) if (params[k] === null) delete params[k];
  return { params, verifier: pkce.verifier };
}

export function authorizeURL(stack, params) {
  return `${stack.baseURL}/oauth/authorize?${new URLSearchParams(params)}`;
}

/** The hidden inputs of the consent form in html (entities decoded). */
export function consentForm(html) {
  const form = /<form id="consent"[\s\S]*?<\/form>/.exec(html);
  assert.ok(form, `no consent form: ${html}`);
  const fields = {};
  for (const m of form[0].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[m[1]] = m[2].replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>')
      .replace(/&#39;/g, "'").replace(/&amp;/g, '&');
  }
  return fields;
}

/** GET /oauth/authorize with the browser's jar: { status, location, html }. */
export async function authorize(stack, jar, params) {
  const r = await jar.fetch(authorizeURL(stack, params));
  return { status: r.status, location: r.headers.get('location'), html: await r.text(), headers: r.headers };
}

/** POSTs the consent form (fields) with decision: { status, location, html }. */
export async function decide(stack, jar, fields, decision, { origin = site(stack) } = {}) {
  const headers = { 'content-type': 'application/x-www-form-urlencoded' };
  if (origin) headers.origin = origin;
  const r = await jar.fetch(`${stack.baseURL}/oauth/authorize`, {
    method: 'POST', headers, body: new URLSearchParams({ ...fields, decision }).toString(),
  });
  return { status: r.status, location: r.headers.get('location'), html: await r.text() };
}

/** The whole authorization by a signed-in jar, Allow pressed: { code, state, iss, verifier, params }. */
export async function authorizeCode(stack, jar, c, extra = {}) {
  const { params, verifier } = authParams(stack, c, extra);
  const page = await authorize(stack, jar, params);
  assert.equal(page.status, 200, page.html);
  const res = await decide(stack, jar, consentForm(page.html), 'allow');
  assert.equal(res.status, 302, res.html);
  const q = new URL(res.location).searchParams;
  assert.ok(q.get('code'), res.location);
  return { code: q.get('code'), state: q.get('state'), iss: q.get('iss'), location: res.location, verifier, params };
}

/** POST /oauth/token with form fields: { status, headers, json }. */
export async function token(stack, fields) {
  const r = await fetch(`${stack.baseURL}/oauth/token`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: r.status, headers: r.headers, json: await r.json().catch(() => null) };
}

/** The code exchanged: the token answer's JSON (asserted 200). */
export async function exchange(stack, c, got, extra = {}) {
  const r = await token(stack, {
    grant_type: 'authorization_code', code: got.code, redirect_uri: c.redirectUri, client_id: c.clientId,
    code_verifier: got.verifier, resource: `${site(stack)}/v1/mcp/account`, ...extra,
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  stack.secrets.push(r.json.access_token, r.json.refresh_token, got.code);
  return r.json;
}

/** POST /oauth/revoke. */
export async function revoke(stack, fields) {
  const r = await fetch(`${stack.baseURL}/oauth/revoke`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: r.status, headers: r.headers, json: await r.json().catch(() => null) };
}

/** One MCP message to /v1/mcp/account with the bearer token (null: none). */
export async function account(stack, accessToken, message, { headers = {}, query = '' } = {}) {
  const h = { accept: ACCEPT, 'content-type': 'application/json', ...headers };
  if (accessToken) h.authorization = `Bearer ${accessToken}`;
  const r = await fetch(`${stack.baseURL}/v1/mcp/account${query}`, {
    method: 'POST', headers: h, body: JSON.stringify(message),
  });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, headers: r.headers, text, json };
}

/** tools/call name with args on the account endpoint: the result (asserted 200). */
export async function callAccount(stack, accessToken, name, args = {}) {
  const r = await account(stack, accessToken, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
  assert.equal(r.status, 200, r.text);
  assert.ok(r.json.result, r.text);
  return r.json.result;
}

/** The WWW-Authenticate parameters of an answer. */
export function challengeOf(res) {
  const h = res.headers.get('www-authenticate') || '';
  const out = { scheme: h.split(' ')[0] };
  for (const m of h.matchAll(/(\w+)="([^"]*)"/g)) out[m[1]] = m[2];
  return out;
}
