// tests/integration/lib/idp-client.js: what a test does in place of a user
// and a browser with the providers of lib/idp.js: a cookie jar for fetch
// (cookies kept per host, as browsers do, with Path, Max-Age and Expires),
// and signInAtProvider, which follows redirects from a starting URL (the
// service's /v1/auth/NAME/login, or a provider's authorization URL), fills
// in the provider's login form (or presses Cancel) and stops at the
// redirect back to the client's callback, which it does not fetch. The
// client side of the code flow (PKCE pairs, the authorization URL, the code
// exchange, id_token verification with jose against the provider's JWKS,
// userinfo) is here too, for the kit's own self-test and for tests that
// play the part of a client.

import crypto from 'node:crypto';
import * as jose from 'jose';
import { DEFAULT_PASSWORD } from './idp.js';

/* ------------------------------------------------------------------------ */
/* cookies                                                                   */

function defaultPath(pathname) {
  const i = pathname.lastIndexOf('/');
  return i <= 0 ? '/' : pathname.slice(0, i);
}

function pathMatches(cookiePath, reqPath) {
  if (reqPath === cookiePath) return true;
  if (!reqPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || reqPath[cookiePath.length] === '/';
}

/**
 * Cookies as a browser keeps them, for fetch: store(url, response) takes the
 * Set-Cookie lines of an answer, header(url) is the Cookie header to send,
 * fetch(url, init) does both around one request (redirects not followed).
 * Entries: { name, value, host, path, expires (ms or null), httpOnly,
 * secure, sameSite, raw } (raw: the Set-Cookie line).
 */
export class CookieJar {
  constructor() { this.cookies = []; }

  store(url, response) {
    const u = new URL(url);
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const c = {
        name: pair.slice(0, eq).trim(),
        value: pair.slice(eq + 1).trim(),
        host: u.hostname,
        domain: null,
        path: defaultPath(u.pathname),
        expires: null,
        httpOnly: false,
        secure: false,
        sameSite: null,
        raw: line,
      };
      for (const a of attrs) {
        const [k, ...rest] = a.split('=');
        const key = k.trim().toLowerCase();
        const v = rest.join('=').trim();
        if (key === 'path' && v.startsWith('/')) c.path = v;
        else if (key === 'domain' && v) c.domain = v.replace(/^\./, '').toLowerCase();
        else if (key === 'max-age') c.expires = Date.now() + Number(v) * 1000;
        else if (key === 'expires' && c.expires === null) c.expires = Date.parse(v);
        else if (key === 'httponly') c.httpOnly = true;
        else if (key === 'secure') c.secure = true;
        else if (key === 'samesite') c.sameSite = v;
      }
      this.cookies = this.cookies.filter((o) => !(o.name === c.name && o.host === c.host && o.path === c.path));
      if (c.expires === null || c.expires > Date.now()) this.cookies.push(c);
    }
  }

  /** The cookies a request to url carries. */
  matching(url) {
    const u = new URL(url);
    const now = Date.now();
    this.cookies = this.cookies.filter((c) => c.expires === null || c.expires > now);
    return this.cookies.filter((c) => (c.domain
      ? u.hostname === c.domain || u.hostname.endsWith(`.${c.domain}`)
      : u.hostname === c.host)
      && pathMatches(c.path, u.pathname)
      && (!c.secure || u.protocol === 'https:' || ['127.0.0.1', 'localhost'].includes(u.hostname)))
      .sort((a, b) => b.path.length - a.path.length);
  }

  header(url) { return this.matching(url).map((c) => `${c.name}=${c.value}`).join('; '); }

  /** The value of cookie name for url, or undefined. */
  get(url, name) { return this.matching(url).find((c) => c.name === name)?.value; }

  /** fetch with this jar's cookies; Set-Cookie stored; redirects not followed. */
  async fetch(url, init = {}) {
    const headers = new Headers(init.headers || {});
    const cookie = this.header(url);
    if (cookie) headers.set('cookie', cookie);
    const res = await fetch(url, { redirect: 'manual', ...init, headers });
    this.store(url, res);
    return res;
  }
}

/* ------------------------------------------------------------------------ */
/* the user at the provider                                                  */

function formOf(html, id) {
  const m = new RegExp(`<form[^>]*\\bid="${id}"[^>]*>`, 'i').exec(html);
  if (!m) return null;
  const a = /\baction="([^"]*)"/i.exec(m[0]);
  return a ? a[1].replace(/&amp;/g, '&') : null;
}

function isCallback(stopAt, url) {
  if (typeof stopAt === 'function') return stopAt(url);
  if (stopAt instanceof RegExp) return stopAt.test(url);
  return url.startsWith(stopAt);
}

/**
 * Follows redirects from url, answering a provider's login form, until a
 * redirect goes to the callback (not fetched). Options:
 *   jar       the CookieJar to use (default: a new one: a fresh browser)
 *   login, password  what to type (default 'alice' and DEFAULT_PASSWORD)
 *   cancel    press Cancel instead of signing in
 *   stopAt    the callback: a URL prefix, a RegExp or a function of the URL
 *             (default: any path ending in /callback)
 *   maxSteps  requests at most (default 20)
 *   post      url is a link's start: POSTed from its own origin (as the
 *             cabinet does), its JSON answer's url is where the flow goes on
 * Returns { callback (the URL, or null when the flow stopped elsewhere),
 * code, state, error (its query parameters, or null), formShown (whether the
 * login form was shown), status and body of the last answer when no
 * callback was reached, steps (the URLs requested), jar }.
 */
export async function signInAtProvider(url, opts = {}) {
  const jar = opts.jar || new CookieJar();
  const stopAt = opts.stopAt || ((u) => /\/callback$/.test(new URL(u).pathname));
  const steps = [];
  let formShown = false;
  let posted = false;
  let next = { url, init: { method: 'GET' } };
  if (opts.post) {
    steps.push(url);
    const res = await jar.fetch(url, { method: 'POST', headers: { origin: new URL(url).origin } });
    const body = await res.text();
    if (res.status !== 200) {
      return {
        callback: null, code: null, state: null, error: null, formShown, status: res.status, body, steps, jar,
      };
    }
    next = { url: new URL(JSON.parse(body).url, url).href, init: { method: 'GET' } };
  }
  for (let i = 0; i < (opts.maxSteps || 20); i++) {
    steps.push(next.url);
    const res = await jar.fetch(next.url, next.init);
    const loc = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && loc) {
      await res.arrayBuffer();
      const to = new URL(loc, next.url).href;
      if (isCallback(stopAt, to)) {
        const q = new URL(to).searchParams;
        return {
          callback: to, code: q.get('code'), state: q.get('state'), error: q.get('error'), formShown, steps, jar,
        };
      }
      next = { url: to, init: { method: 'GET' } };
      continue;
    }
    const body = await res.text();
    const action = res.status === 200 && formOf(body, 'kit-login');
    if (!action || posted) {
      return {
        callback: null, code: null, state: null, error: null, formShown, status: res.status, body, steps, jar,
      };
    }
    formShown = true;
    posted = true;
    const target = opts.cancel ? formOf(body, 'kit-abort') : action;
    const form = opts.cancel ? new URLSearchParams()
      : new URLSearchParams({ login: opts.login || 'alice', password: opts.password ?? DEFAULT_PASSWORD });
    next = {
      url: new URL(target, next.url).href,
      init: { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    };
  }
  throw new Error(`signInAtProvider: no callback after ${opts.maxSteps || 20} requests: ${steps.join(' -> ')}`);
}

/* ------------------------------------------------------------------------ */
/* the client side of the code flow                                          */

/** A PKCE pair: { verifier, challenge } (S256). */
export function pkcePair() {
  const verifier = crypto.randomBytes(32).toString('base64url');
  return { verifier, challenge: crypto.createHash('sha256').update(verifier).digest('base64url') };
}

/**
 * The authorization URL of provider p (an OpenIdProvider or a
 * PlainOAuthProvider) for its client: state, nonce (OpenID only), challenge
 * (S256; null: no PKCE), scope, redirectUri, extra parameters.
 */
export function authorizeUrl(p, {
  state = crypto.randomBytes(12).toString('base64url'), nonce = null, challenge = null,
  scope = p.kind === 'openid' ? 'openid email profile' : 'read:user user:email',
  redirectUri = p.redirectUri, extra = {},
} = {}) {
  const u = new URL(p.endpoints.authorization);
  const q = {
    response_type: 'code', client_id: p.clientId, redirect_uri: redirectUri, scope, state, ...extra,
  };
  if (nonce) q.nonce = nonce;
  if (challenge) Object.assign(q, { code_challenge: challenge, code_challenge_method: 'S256' });
  for (const [k, v] of Object.entries(q)) if (v !== null && v !== undefined) u.searchParams.set(k, v);
  return u.href;
}

/**
 * Exchanges code at p's token endpoint. Options: verifier, redirectUri,
 * auth ('client_secret_basic' or 'client_secret_post'; default: the
 * provider's), clientSecret (default: the right one). Returns
 * { status, body } (body parsed as JSON).
 */
export async function exchangeCode(p, code, {
  verifier = null, redirectUri = p.redirectUri, auth = p.auth || 'client_secret_basic',
  clientSecret = p.clientSecret,
} = {}) {
  const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri });
  if (verifier) form.set('code_verifier', verifier);
  const headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (auth === 'client_secret_post') {
    form.set('client_id', p.clientId);
    form.set('client_secret', clientSecret);
  } else {
    const enc = (s) => encodeURIComponent(s);
    headers.authorization = `Basic ${Buffer.from(`${enc(p.clientId)}:${enc(clientSecret)}`).toString('base64')}`;
  }
  const res = await fetch(p.endpoints.token, { method: 'POST', headers, body: form.toString() });
  const text = await res.text();
  let body;
  try { body = JSON.parse(text); } catch { body = text; }
  return { status: res.status, body };
}

/**
 * Verifies an OpenID Provider's id_token as a careful client does: the
 * signature against the provider's JWKS (fetched now) with the client's
 * registered algorithm only, iss, aud, exp/iat (currentDate: a Date for a
 * test clock), and nonce when given. Returns { payload, protectedHeader };
 * throws jose's error (or an Error naming the nonce) otherwise.
 */
export async function verifyIdToken(op, token, { nonce = null, currentDate = undefined } = {}) {
  const jwks = jose.createLocalJWKSet(await (await fetch(op.endpoints.jwks)).json());
  const r = await jose.jwtVerify(token, jwks, {
    issuer: op.issuer, audience: op.clientId, algorithms: [op.alg], currentDate, clockTolerance: 60,
    maxTokenAge: '1 day',  // with it, jose refuses an iat in the future
  });
  if (r.payload.azp !== undefined && r.payload.azp !== op.clientId) throw new Error('id_token azp is another client');
  if (nonce !== null && r.payload.nonce !== nonce) throw new Error('id_token nonce does not match');
  return r;
}

/** GET p's userinfo endpoint with an access token: { status, body }. */
export async function fetchUserinfo(p, accessToken) {
  const res = await fetch(p.endpoints.userinfo, { headers: { authorization: `Bearer ${accessToken}` } });
  const text = await res.text();
  let body;
  try { body = JSON.parse(text); } catch { body = text; }
  return { status: res.status, body };
}
