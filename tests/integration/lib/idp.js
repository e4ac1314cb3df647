// tests/integration/lib/idp.js: the identity providers of the sign-in tests.
// It starts real OpenID Providers (npm oidc-provider, an OpenID Certified
// implementation) and a small plain OAuth 2.0 provider (no OpenID: authorize,
// token and user endpoints, the user id in a JSON field), each on a loopback
// port of its own and addressed as http://localhost:PORT, so that they are
// another site than the service under test on 127.0.0.1. Each has one
// registered confidential client (its secret written to a file for
// ProviderIdentityProvider's client_secret_file=) whose redirect URI the test
// gives, the code flow with PKCE S256 required, a login form of its own
// (lib/idp-client.js fills it in with fetch; a browser fills it in by hand),
// a log of every request it served, and switches that make it hand out bad
// id_tokens (lib/idp-tokens.js) or sign with a test clock, pause() and
// resume() to take an OpenID Provider out of reach and back on its port, and
// hang (a set of endpoint names) to make it accept requests there and never
// answer them until release().
//
//   const kit = await startIdentityProviders({ redirectBase: 'http://127.0.0.1:PORT' });
//   kit.ops[1].issuer, kit.ops[1].defect = 'nonce', kit.ops[1].log.since(mark)
//   kit.directives()  // the ProviderIdentityProvider lines of every provider
//   await kit.stop();

import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import Provider from 'oidc-provider';
import { makeSigningKey, rewriteIdToken } from './idp-tokens.js';

export { ID_TOKEN_DEFECTS } from './idp-tokens.js';

/** The password of every user a provider makes unless the test gives one. */
export const DEFAULT_PASSWORD = 'correct horse battery staple';

const rand = (n = 16) => crypto.randomBytes(n).toString('hex');

const escapeHtml = (s) => String(s).replace(/[&<>"']/g,
  (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

/* ------------------------------------------------------------------------ */
/* the request log                                                           */

/**
 * What a provider was asked, in order: entries { at (ms since the epoch),
 * method, path (without the query), endpoint (a name: 'discovery', 'jwks',
 * 'authorization', 'interaction', 'token', 'userinfo', 'favicon' (a
 * browser's), or 'other'),
 * status (once answered), userAgent }.
 */
export class RequestLog {
  constructor() { this.entries = []; }

  record(req, endpoint) {
    const e = {
      at: Date.now(),
      method: req.method,
      path: new URL(req.url, 'http://x').pathname,
      endpoint,
      status: null,
      userAgent: req.headers['user-agent'] || '',
    };
    this.entries.push(e);
    return e;
  }

  /** A position in the log, for since(). */
  mark() { return this.entries.length; }

  /** The entries after mark (all of them without one), of one endpoint if given. */
  since(mark = 0, endpoint = null) {
    return this.entries.slice(mark).filter((e) => !endpoint || e.endpoint === endpoint);
  }

  /** How many requests an endpoint got (every endpoint without one). */
  count(endpoint = null) { return this.since(0, endpoint).length; }

  clear() { this.entries.length = 0; }
}

/* ------------------------------------------------------------------------ */
/* HTTP plumbing shared by both kinds                                        */

/** Listens on 127.0.0.1 (on port, or a free one) and, when the host has it, [::1] on the same port. */
async function listenLoopback(handler, wanted = 0) {
  const listen = (srv, port, host) => new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, host, () => { srv.removeListener('error', reject); resolve(); });
  });
  const v4 = http.createServer(handler);
  await listen(v4, wanted, '127.0.0.1');
  const { port } = v4.address();
  const servers = [v4];
  const v6 = http.createServer(handler);
  try {
    await listen(v6, port, '::1');
    servers.push(v6);
  } catch { /* no IPv6 loopback here: localhost is 127.0.0.1 alone */ }
  return { port, servers };
}

async function closeServers(servers) {
  await Promise.all(servers.map((s) => new Promise((resolve) => {
    s.close(() => resolve());
    s.closeAllConnections();
  })));
}

async function readForm(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/**
 * The login page both kinds show: a form posting `login` and `password` to
 * action (ids #login, #password, #submit), and a Cancel button posting to
 * abort (#cancel). lib/idp-client.js finds the form by its id, kit-login.
 */
function loginPage({ display, action, abort, error = null, login = '' }) {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in to ${escapeHtml(display)}</title></head>
<body>
<h1>${escapeHtml(display)}</h1>
<p>Sign in to continue.</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<form id="kit-login" method="post" action="${escapeHtml(action)}">
  <label>Username <input id="login" name="login" autocomplete="username" value="${escapeHtml(login)}" required></label>
  <label>Password <input id="password" name="password" type="password" autocomplete="current-password" required></label>
  <button id="submit" type="submit">Sign in</button>
</form>
<form id="kit-abort" method="post" action="${escapeHtml(abort)}"><button id="cancel" type="submit">Cancel</button></form>
</body></html>
`;
}

function writeSecretFile(dir, name, secret) {
  const file = path.join(dir, `${name}.client-secret`);
  fs.writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return file;
}

function directiveValue(v) {
  return /[\s"]/.test(v) ? `"${String(v).replace(/(["\\])/g, '\\$1')}"` : v;
}

/** Users of a provider, by login name. */
class Users {
  constructor(providerName, makeId) {
    this.providerName = providerName;
    this.makeId = makeId;
    this.byLogin = new Map();
  }

  add({ login, password = DEFAULT_PASSWORD, email, name, sub, emailVerified = true }) {
    if (!login) throw new Error('a user needs a login');
    const u = {
      login,
      password,
      email: email ?? `${login}@${this.providerName}.example`,
      name: name ?? `${login[0].toUpperCase()}${login.slice(1)} of ${this.providerName}`,
      sub: sub ?? this.makeId(login),
      emailVerified,
    };
    this.byLogin.set(login, u);
    return u;
  }

  get(login) { return this.byLogin.get(login); }

  bySub(sub) {
    for (const u of this.byLogin.values()) if (String(u.sub) === String(sub)) return u;
    return undefined;
  }

  check(login, password) {
    const u = this.byLogin.get(login);
    return u && u.password === password ? u : null;
  }

  all() { return [...this.byLogin.values()]; }
}

/* ------------------------------------------------------------------------ */
/* an OpenID Provider (oidc-provider)                                        */

/** oidc-provider's storage, in memory, one per provider. */
class MemoryStore {
  constructor(rows, model) {
    this.rows = rows;
    this.model = model;
  }

  key(id) { return `${this.model}:${id}`; }

  async upsert(id, payload, expiresIn) {
    this.rows.set(this.key(id), { payload, exp: expiresIn ? Date.now() + expiresIn * 1000 : null });
  }

  async find(id) {
    const r = this.rows.get(this.key(id));
    if (!r) return undefined;
    if (r.exp !== null && r.exp < Date.now()) {
      this.rows.delete(this.key(id));
      return undefined;
    }
    return r.payload;
  }

  async findByUid(uid) {
    for (const [k, r] of this.rows) {
      if (k.startsWith(`${this.model}:`) && r.payload.uid === uid) return this.find(k.slice(this.model.length + 1));
    }
    return undefined;
  }

  async findByUserCode(userCode) {
    for (const [k, r] of this.rows) {
      if (k.startsWith(`${this.model}:`) && r.payload.userCode === userCode) return this.find(k.slice(this.model.length + 1));
    }
    return undefined;
  }

  async consume(id) {
    const r = this.rows.get(this.key(id));
    if (r) r.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) { this.rows.delete(this.key(id)); }

  async revokeByGrantId(grantId) {
    for (const [k, r] of this.rows) if (r.payload.grantId === grantId) this.rows.delete(k);
  }
}

const OP_ENDPOINTS = [
  [/^\/\.well-known\/openid-configuration$/, 'discovery'],
  [/^\/jwks$/, 'jwks'],
  [/^\/auth(\/|$)/, 'authorization'],
  [/^\/interaction\//, 'interaction'],
  [/^\/token$/, 'token'],
  [/^\/me$/, 'userinfo'],
  [/^\/favicon\.ico$/, 'favicon'],
];

function classify(table, p) {
  for (const [re, name] of table) if (re.test(p)) return name;
  return 'other';
}

/**
 * One OpenID Provider. Options:
 *   name         the provider's name ({identity_provider} in the service's paths)
 *   display      the name its login page and the directive's display= show
 *   redirectUri  the registered redirect URI (required)
 *   dir          where the client secret file goes
 *   alg          'RS256' (default) or 'ES256': how its id_tokens are signed
 *   auth         'client_secret_basic' (default) or 'client_secret_post'
 *   claimsInIdToken  true (default): email and name in the id_token as well as
 *                from userinfo; false: only sub in it (oidc-provider's default)
 *   users        [{ login, password, email, name, sub, emailVerified }] (default:
 *                alice, bob); emailVerified true (default), false, or null (the
 *                claim says neither)
 *   emailsVerified  true: the directive says emails_verified=on (default false)
 *   timeout      the directive's timeout= (seconds), or null (default) for none
 * Switches a test may set at any time: defect (one of ID_TOKEN_DEFECTS or
 * null), tamper ((claims, header) => void, then signed with the real key),
 * clock (epoch seconds the id_token's iat, exp and auth_time start from, or
 * null for the real time), hang (a Set of endpoint names: requests there are
 * logged and never answered until release()); rotateKey() makes a new
 * signing key.
 */
export class OpenIdProvider {
  constructor(opts) {
    if (!opts.redirectUri) throw new Error('an identity provider needs its client\'s redirectUri');
    this.kind = 'openid';
    this.name = opts.name;
    this.display = opts.display || opts.name;
    this.redirectUri = opts.redirectUri;
    this.dir = opts.dir;
    this.alg = opts.alg || 'RS256';
    this.auth = opts.auth || 'client_secret_basic';
    this.claimsInIdToken = opts.claimsInIdToken !== false;
    this.emailsVerified = !!opts.emailsVerified;
    this.timeout = opts.timeout ?? null;
    this.hang = new Set();
    this.hung = [];            // the answers held back by hang, to release()
    this.log = new RequestLog();
    this.users = new Users(this.name, () => `sub-${this.name}-${rand(12)}`);
    for (const u of opts.users || [{ login: 'alice' }, { login: 'bob' }]) this.users.add(u);
    this.defect = null;
    this.tamper = null;
    this.clock = null;
    this.issued = new Set();   // codes and tokens it handed out (never in a log)
    this.errors = [];          // oidc-provider's own server errors
    this.servers = [];
  }

  async start() {
    const { port, servers } = await listenLoopback((req, res) => this.handler(req, res));
    this.port = port;
    this.servers = servers;
    this.issuer = `http://localhost:${port}`;
    this.clientId = `client-${this.name}-${rand(4)}`;
    this.clientSecret = `secret-${rand(24)}`;
    this.secretFile = writeSecretFile(this.dir, this.name, this.clientSecret);
    // An RS256 key always (oidc-provider signs its own artefacts with one),
    // and the id_token's key when that is another algorithm.
    this.keys = [await makeSigningKey('RS256')];
    if (this.alg !== 'RS256') this.keys.push(await makeSigningKey(this.alg));
    this.originalKey = this.keys.find((k) => k.alg === this.alg);
    this.signingKey = this.originalKey;
    this.provider = new Provider(this.issuer, this.configuration());
    this.provider.on('server_error', (ctx, err) => this.errors.push(err));
    this.provider.use((ctx, next) => this.logRequest(ctx, next));
    this.provider.use((ctx, next) => this.strictClientAuth(ctx, next));
    this.provider.use((ctx, next) => this.rewriteAnswers(ctx, next));
    this.provider.use((ctx, next) => this.interaction(ctx, next));
    this.handler = this.provider.callback();
    return this;
  }

  configuration() {
    const rows = new Map();
    return {
      adapter: (model) => new MemoryStore(rows, model),
      clients: [{
        client_id: this.clientId,
        client_secret: this.clientSecret,
        redirect_uris: [this.redirectUri],
        response_types: ['code'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: this.auth,
        id_token_signed_response_alg: this.alg,
      }],
      jwks: { keys: this.keys.map((k) => k.privateJwk) },
      // Cookies are kept per host, not per port: every provider of the kit
      // is on localhost, so each names its own.
      cookies: {
        keys: [rand(32)],
        names: {
          session: `_session_${this.name}`,
          interaction: `_interaction_${this.name}`,
          resume: `_interaction_resume_${this.name}`,
        },
      },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
      conformIdTokenClaims: !this.claimsInIdToken,
      features: { devInteractions: { enabled: false } },
      interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
      pkce: { required: () => true },
      ttl: {
        AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600,
      },
      findAccount: (ctx, sub) => {
        const u = this.users.bySub(sub);
        if (!u) return undefined;
        return {
          accountId: u.sub,
          claims: () => ({ sub: u.sub, email: u.email, email_verified: u.emailVerified, name: u.name }),
        };
      },
      // A first-party client: the consent is taken as given, so a sign-in is
      // the login form alone.
      loadExistingGrant: async (ctx) => {
        const id = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
        if (id) return ctx.oidc.provider.Grant.find(id);
        const grant = new ctx.oidc.provider.Grant({
          clientId: ctx.oidc.client.clientId,
          accountId: ctx.oidc.session.accountId,
        });
        grant.addOIDCScope(ctx.oidc.params.scope || 'openid');
        await grant.save();
        return grant;
      },
    };
  }

  async logRequest(ctx, next) {
    const e = this.log.record(ctx.req, classify(OP_ENDPOINTS, ctx.path));
    try {
      if (this.hang.has(e.endpoint)) {
        await new Promise((resolve) => this.hung.push(resolve));
        ctx.status = 503;
        ctx.body = { error: 'temporarily_unavailable' };
        return;
      }
      await next();
    } finally {
      e.status = ctx.status;
    }
  }

  /** Answers (503) every request hang held back, and hangs no more. */
  release() {
    this.hang.clear();
    for (const resolve of this.hung.splice(0)) resolve();
  }

  /**
   * oidc-provider takes client_secret_basic and client_secret_post from any
   * client that has a secret; the kit holds the client to the one method it
   * registered (the directive's auth=), so that a test sees which one the
   * service used. Only the Authorization header is looked at: the body is
   * oidc-provider's to read.
   */
  async strictClientAuth(ctx, next) {
    if (ctx.method === 'POST' && ctx.path === '/token') {
      const basic = /^basic\s/i.test(ctx.get('authorization'));
      if (basic !== (this.auth === 'client_secret_basic')) {
        ctx.status = 401;
        ctx.body = { error: 'invalid_client', error_description: `the client authenticates with ${this.auth}` };
        return undefined;
      }
    }
    return next();
  }

  /** The id_token switches, the served JWKS after a rotation, and the record of issued values. */
  async rewriteAnswers(ctx, next) {
    await next();
    if (ctx.path === '/token' && ctx.status === 200 && ctx.body && typeof ctx.body === 'object') {
      for (const k of ['access_token', 'refresh_token', 'id_token']) {
        if (ctx.body[k]) this.issued.add(ctx.body[k]);
      }
      if (ctx.body.id_token) {
        ctx.body = {
          ...ctx.body,
          id_token: await rewriteIdToken(ctx.body.id_token, {
            key: this.signingKey,
            issuer: this.issuer,
            clock: this.clock,
            defect: this.defect,
            tamper: this.tamper,
            resign: this.signingKey !== this.originalKey,
          }),
        };
        this.issued.add(ctx.body.id_token);
      }
    }
    if (ctx.path === '/jwks' && ctx.status === 200) ctx.body = { keys: this.publicJwks() };
    const loc = ctx.response.get('location');
    if (loc && loc.startsWith(this.redirectUri)) {
      const code = new URL(loc).searchParams.get('code');
      if (code) this.issued.add(code);
    }
  }

  /** The login form and the abort button of an interaction. */
  async interaction(ctx, next) {
    const m = /^\/interaction\/([\w-]+)(?:\/(login|abort))?$/.exec(ctx.path);
    if (!m) return next();
    ctx.set('cache-control', 'no-store');
    let details;
    try {
      details = await this.provider.interactionDetails(ctx.req, ctx.res);
    } catch (e) {
      ctx.status = 400;
      ctx.type = 'text/plain';
      ctx.body = `this sign-in expired or is unknown (${e.name})`;
      return undefined;
    }
    const { uid, prompt } = details;
    const finish = async (result, merge) => {
      const to = await this.provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: merge });
      ctx.redirect(to);
      ctx.status = 303;
    };
    const page = (error = null, login = '') => {
      ctx.type = 'html';
      ctx.body = loginPage({
        display: this.display, action: `/interaction/${uid}/login`, abort: `/interaction/${uid}/abort`, error, login,
      });
    };
    if (uid !== m[1]) {
      ctx.status = 400;
      ctx.type = 'text/plain';
      ctx.body = 'this sign-in belongs to another browser';
    } else if (ctx.method === 'GET' && !m[2] && prompt.name === 'login') {
      page();
    } else if (ctx.method === 'GET' && !m[2] && prompt.name === 'consent') {
      // loadExistingGrant grants everything, so this is only reached for
      // claims it did not cover: grant them too.
      const grant = new this.provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
      if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
      if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
      await finish({ consent: { grantId: await grant.save() } }, true);
    } else if (ctx.method === 'POST' && m[2] === 'login') {
      const form = await readForm(ctx.req);
      const u = this.users.check(form.get('login') || '', form.get('password') || '');
      if (u) await finish({ login: { accountId: u.sub } }, false);
      else page('Invalid username or password.', form.get('login') || '');
    } else if (ctx.method === 'POST' && m[2] === 'abort') {
      await finish({ error: 'access_denied', error_description: 'End-User aborted interaction' }, false);
    } else {
      ctx.status = 405;
      ctx.type = 'text/plain';
      ctx.body = 'not here';
    }
    return undefined;
  }

  get endpoints() {
    const u = (p) => `${this.issuer}${p}`;
    return {
      discovery: u('/.well-known/openid-configuration'),
      authorization: u('/auth'),
      token: u('/token'),
      userinfo: u('/me'),
      jwks: u('/jwks'),
    };
  }

  /** The JWKS it serves: every key it has signed with, rotated ones included. */
  publicJwks() { return this.keys.map((k) => k.publicJwk); }

  /** A new signing key of the same algorithm; id_tokens are signed with it from now on. */
  async rotateKey() {
    const k = await makeSigningKey(this.alg);
    this.keys.push(k);
    this.signingKey = k;
    return k;
  }

  /** The ProviderIdentityProvider directive for it. */
  directive() {
    const parts = ['ProviderIdentityProvider', this.name, `issuer=${this.issuer}`, `client_id=${this.clientId}`,
      `client_secret_file=${directiveValue(this.secretFile)}`, `display=${directiveValue(this.display)}`];
    if (this.auth !== 'client_secret_basic') parts.push(`auth=${this.auth}`);
    if (this.emailsVerified) parts.push('emails_verified=on');
    if (this.timeout !== null) parts.push(`timeout=${this.timeout}`);
    return parts.join(' ');
  }

  /** Out of reach: nothing listens on its port until resume(). */
  async pause() {
    await closeServers(this.servers);
    this.servers = [];
  }

  /** Listens again on the same port, its clients, keys and users unchanged. */
  async resume() {
    this.servers = (await listenLoopback((req, res) => this.handler(req, res), this.port)).servers;
  }

  async stop() {
    this.release();
    await closeServers(this.servers);
  }
}

/* ------------------------------------------------------------------------ */
/* a plain OAuth 2.0 provider                                                */

const PLAIN_ENDPOINTS = [
  [/^\/login\/oauth\/authorize(\/|$)/, 'authorization'],
  [/^\/login\/oauth\/access_token$/, 'token'],
  [/^\/user$/, 'userinfo'],
  [/^\/favicon\.ico$/, 'favicon'],
];

/**
 * A plain OAuth 2.0 provider in the manner of a source-code host's sign-in:
 * GET /login/oauth/authorize (its login form), POST /login/oauth/access_token
 * (client_secret_basic or client_secret_post; PKCE S256 checked when the
 * authorization request had a code_challenge, required with requirePkce),
 * GET /user with the access token as a Bearer token, which answers
 * { [subjectField]: id, login, name, email } (no email_verified: such a
 * provider says nothing of it). Options: name, display, redirectUri, dir,
 * users, subjectField ('id'), numericIds (true: the id is a JSON number),
 * requirePkce (false), emailsVerified (true: the directive says
 * emails_verified=on, the operator vouching that the provider shows only
 * verified addresses; false: it does not).
 */
export class PlainOAuthProvider {
  constructor(opts) {
    if (!opts.redirectUri) throw new Error('an identity provider needs its client\'s redirectUri');
    this.kind = 'oauth2';
    this.name = opts.name;
    this.display = opts.display || opts.name;
    this.redirectUri = opts.redirectUri;
    this.dir = opts.dir;
    this.subjectField = opts.subjectField || 'id';
    this.numericIds = opts.numericIds !== false;
    this.requirePkce = !!opts.requirePkce;
    this.emailsVerified = opts.emailsVerified !== false;
    this.log = new RequestLog();
    this.users = new Users(this.name, () => (this.numericIds
      ? 100000000 + crypto.randomInt(800000000) : `user-${rand(10)}`));
    for (const u of opts.users || [{ login: 'alice' }, { login: 'bob' }]) this.users.add(u);
    this.pending = new Map();  // request id -> the authorization request
    this.codes = new Map();    // code -> { user, redirectUri, challenge, used }
    this.tokens = new Map();   // access token -> user
    this.issued = new Set();
    this.errors = [];
    this.servers = [];
  }

  async start() {
    const { port, servers } = await listenLoopback((req, res) => {
      const e = this.log.record(req, classify(PLAIN_ENDPOINTS, new URL(req.url, 'http://x').pathname));
      res.on('finish', () => { e.status = res.statusCode; });
      this.route(req, res).catch((err) => {
        this.errors.push(err);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error');
      });
    });
    this.port = port;
    this.servers = servers;
    this.base = `http://localhost:${port}`;
    this.clientId = `client-${this.name}-${rand(4)}`;
    this.clientSecret = `secret-${rand(24)}`;
    this.secretFile = writeSecretFile(this.dir, this.name, this.clientSecret);
    return this;
  }

  get endpoints() {
    return {
      authorization: `${this.base}/login/oauth/authorize`,
      token: `${this.base}/login/oauth/access_token`,
      userinfo: `${this.base}/user`,
    };
  }

  async route(req, res) {
    const url = new URL(req.url, this.base);
    const p = url.pathname;
    res.setHeader('cache-control', 'no-store');
    if (req.method === 'GET' && p === '/login/oauth/authorize') return this.authorize(url, res);
    const m = /^\/login\/oauth\/authorize\/([0-9a-f]+)\/(login|abort)$/.exec(p);
    if (req.method === 'POST' && m) return this.submit(m[1], m[2], await readForm(req), res);
    if (req.method === 'POST' && p === '/login/oauth/access_token') return this.token(req, await readForm(req), res);
    if (req.method === 'GET' && p === '/user') return this.user(req, res);
    res.writeHead(404, { 'content-type': 'text/plain' });
    return res.end('not found');
  }

  authorize(url, res) {
    const q = url.searchParams;
    if (q.get('client_id') !== this.clientId || q.get('redirect_uri') !== this.redirectUri) {
      res.writeHead(400, { 'content-type': 'text/plain' });
      return res.end('unknown client or redirect_uri');
    }
    const back = (error) => {
      const to = new URL(this.redirectUri);
      to.searchParams.set('error', error);
      if (q.get('state')) to.searchParams.set('state', q.get('state'));
      res.writeHead(302, { location: to.href });
      return res.end();
    };
    if (q.get('response_type') !== 'code') return back('unsupported_response_type');
    const challenge = q.get('code_challenge');
    if (challenge && q.get('code_challenge_method') !== 'S256') return back('invalid_request');
    if (!challenge && this.requirePkce) return back('invalid_request');
    const rid = rand(12);
    this.pending.set(rid, { state: q.get('state'), challenge, scope: q.get('scope') || '' });
    return this.page(res, rid);
  }

  page(res, rid, error = null, login = '') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(loginPage({
      display: this.display,
      action: `/login/oauth/authorize/${rid}/login`,
      abort: `/login/oauth/authorize/${rid}/abort`,
      error,
      login,
    }));
  }

  submit(rid, what, form, res) {
    const r = this.pending.get(rid);
    if (!r) {
      res.writeHead(400, { 'content-type': 'text/plain' });
      return res.end('this sign-in expired or is unknown');
    }
    const to = new URL(this.redirectUri);
    if (what === 'login') {
      const u = this.users.check(form.get('login') || '', form.get('password') || '');
      if (!u) return this.page(res, rid, 'Invalid username or password.', form.get('login') || '');
      const code = rand(20);
      this.codes.set(code, { user: u, challenge: r.challenge, scope: r.scope, used: false, exp: Date.now() + 600000 });
      this.issued.add(code);
      to.searchParams.set('code', code);
    } else {
      to.searchParams.set('error', 'access_denied');
    }
    if (r.state) to.searchParams.set('state', r.state);
    this.pending.delete(rid);
    res.writeHead(303, { location: to.href });
    return res.end();
  }

  token(req, form, res) {
    const fail = (status, error) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error }));
    };
    let id = form.get('client_id');
    let secret = form.get('client_secret');
    const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization || '');
    if (basic) {
      const [u, s] = Buffer.from(basic[1], 'base64').toString('utf8').split(':');
      id = decodeURIComponent((u || '').replace(/\+/g, ' '));
      secret = decodeURIComponent((s || '').replace(/\+/g, ' '));
    }
    if (id !== this.clientId || secret !== this.clientSecret) return fail(401, 'invalid_client');
    if (form.get('grant_type') !== 'authorization_code') return fail(400, 'unsupported_grant_type');
    const c = this.codes.get(form.get('code') || '');
    if (!c || c.used || c.exp < Date.now() || form.get('redirect_uri') !== this.redirectUri) {
      return fail(400, 'invalid_grant');
    }
    c.used = true;
    if (c.challenge) {
      const v = form.get('code_verifier') || '';
      if (crypto.createHash('sha256').update(v).digest('base64url') !== c.challenge) return fail(400, 'invalid_grant');
    }
    const token = `at-${rand(20)}`;
    this.tokens.set(token, c.user);
    this.issued.add(token);
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ access_token: token, token_type: 'bearer', scope: c.scope }));
  }

  user(req, res) {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization || '');
    const u = m && this.tokens.get(m[1]);
    if (!u) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
      return res.end(JSON.stringify({ message: 'Bad credentials' }));
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ [this.subjectField]: u.sub, login: u.login, name: u.name, email: u.email }));
  }

  /** The ProviderIdentityProvider directive for it. */
  directive() {
    const e = this.endpoints;
    return ['ProviderIdentityProvider', this.name, `authorization_endpoint=${e.authorization}`,
      `token_endpoint=${e.token}`, `userinfo_endpoint=${e.userinfo}`, `subject_field=${this.subjectField}`,
      `client_id=${this.clientId}`, `client_secret_file=${directiveValue(this.secretFile)}`,
      `display=${directiveValue(this.display)}`, ...(this.emailsVerified ? ['emails_verified=on'] : [])].join(' ');
  }

  async stop() { await closeServers(this.servers); }
}

/* ------------------------------------------------------------------------ */
/* the kit                                                                   */

const DISPLAY = ['Provider One', 'Provider Two', 'Provider Three', 'Provider Four'];

/**
 * Starts the identity providers of a test. Options:
 *   redirectBase  the service's base URL (http://127.0.0.1:PORT): each client's
 *                 redirect URI is `${redirectBase}/v1/auth/${name}/callback`
 *   count         how many OpenID Providers (default 4), named idp1..idpN
 *                 and shown as "Provider One".. unless providers says otherwise
 *   providers     per OpenID Provider, options of OpenIdProvider (name,
 *                 display, alg, auth, claimsInIdToken, users); default: the
 *                 third signs with ES256 and the fourth authenticates with
 *                 client_secret_post, the others RS256 and client_secret_basic
 *   plain         how many plain OAuth 2.0 providers (default 1), named
 *                 oauth1.. ("Plain OAuth One"..); plainOptions: their options
 *   dir           where the client secret files go (default: a new temp dir,
 *                 removed by stop())
 * Returns { ops, plain, all, byName(name), directives(), secrets(),
 * subjects(), stop() }.
 */
export async function startIdentityProviders(opts = {}) {
  if (!opts.redirectBase) throw new Error('startIdentityProviders needs redirectBase (the service\'s base URL)');
  const count = opts.count ?? 4;
  const plainCount = opts.plain ?? 1;
  const ownDir = !opts.dir;
  const dir = opts.dir || fs.mkdtempSync(path.join(os.tmpdir(), 'prov-idp-'));
  const redirect = (name) => `${opts.redirectBase.replace(/\/$/, '')}/v1/auth/${name}/callback`;
  const kit = {
    dir,
    ops: [],
    plain: [],
    get all() { return [...this.ops, ...this.plain]; },
    byName(name) { return this.all.find((p) => p.name === name); },
    /** ProviderIdentityProvider lines, one per provider, joined by newlines. */
    directives() { return this.all.map((p) => p.directive()).join('\n'); },
    /** Client secrets, codes and tokens handed out: none may appear in a log or an answer. */
    secrets() {
      return this.all.flatMap((p) => [p.clientSecret, ...p.issued]);
    },
    /** The subjects (user ids) of every provider's users: never shown by the service. */
    subjects() { return this.all.flatMap((p) => p.users.all().map((u) => String(u.sub))); },
    async stop() {
      await Promise.all(this.all.map((p) => p.stop()));
      if (ownDir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    for (let i = 0; i < count; i++) {
      const given = (opts.providers || [])[i] || {};
      const name = given.name || `idp${i + 1}`;
      const op = new OpenIdProvider({
        display: DISPLAY[i] || `Provider ${i + 1}`,
        alg: i === 2 ? 'ES256' : 'RS256',
        auth: i === 3 ? 'client_secret_post' : 'client_secret_basic',
        ...given,
        name,
        dir,
        redirectUri: given.redirectUri || redirect(name),
      });
      kit.ops.push(op);
      await op.start();
    }
    for (let i = 0; i < plainCount; i++) {
      const given = (opts.plainOptions || [])[i] || {};
      const name = given.name || `oauth${i + 1}`;
      const p = new PlainOAuthProvider({
        display: `Plain OAuth ${['One', 'Two', 'Three', 'Four'][i] || i + 1}`,
        ...given,
        name,
        dir,
        redirectUri: given.redirectUri || redirect(name),
      });
      kit.plain.push(p);
      await p.start();
    }
  } catch (e) {
    await kit.stop().catch(() => {});
    throw e;
  }
  return kit;
}
