// tests/integration/idp-kit.test.js: the self-test of the identity-provider
// kit (lib/idp.js, lib/idp-tokens.js, lib/idp-client.js), without the module:
// each of the four OpenID Providers (oidc-provider) serves discovery and its
// JWKS and completes the code flow with PKCE S256 through its login form,
// driven with fetch and a cookie jar; its id_token verifies with jose
// against the JWKS; each bad-token switch really produces its defect (and
// only it); the test clock, tampered claims and a rotated key sign valid
// tokens; PKCE is required and checked; the request log records what was
// asked and when; hang holds an endpoint's answers until release(); the
// directive says emails_verified= and timeout= when asked; the plain OAuth
// 2.0 provider issues codes, tokens and a user id in its subject field. The
// sign-in tests rely on all of it.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import * as jose from 'jose';
import {
  startIdentityProviders, ID_TOKEN_DEFECTS, DEFAULT_PASSWORD, PlainOAuthProvider, OpenIdProvider,
} from './lib/idp.js';
import {
  CookieJar, signInAtProvider, pkcePair, authorizeUrl, exchangeCode, verifyIdToken, fetchUserinfo,
} from './lib/idp-client.js';

// Nothing listens here: the drive stops at the redirect to the callback.
const SERVICE = 'http://127.0.0.1:9';

/** A whole code flow as a client does it: { code, tokens, nonce, verifier, flow }. */
async function codeFlow(p, { login = 'alice', jar = new CookieJar() } = {}) {
  const { verifier, challenge } = pkcePair();
  const nonce = p.kind === 'openid' ? `nonce-${Math.random().toString(36).slice(2)}` : null;
  const state = `state-${Math.random().toString(36).slice(2)}`;
  const flow = await signInAtProvider(authorizeUrl(p, { state, nonce, challenge }), { jar, login });
  assert.ok(flow.callback, `${p.name}: no callback: ${flow.status} ${flow.body}`);
  assert.equal(flow.state, state);
  assert.ok(flow.code, `${p.name}: no code in ${flow.callback}`);
  const tokens = await exchangeCode(p, flow.code, { verifier });
  assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
  return { code: flow.code, tokens: tokens.body, nonce, verifier, flow };
}

describe('the identity-provider kit', { timeout: 120000 }, () => {
  let kit;
  before(async () => {
    kit = await startIdentityProviders({ redirectBase: SERVICE });
  });
  after(async () => {
    if (!kit) return;
    const errors = kit.all.flatMap((p) => p.errors.map((e) => `${p.name}: ${e.stack || e}`));
    await kit.stop();
    assert.deepEqual(errors, [], 'the providers had server errors');
  });

  it('starts four OpenID Providers and one plain OAuth 2.0 provider on localhost', () => {
    assert.equal(kit.ops.length, 4);
    assert.equal(kit.plain.length, 1);
    assert.deepEqual(kit.all.map((p) => p.name), ['idp1', 'idp2', 'idp3', 'idp4', 'oauth1']);
    const ports = new Set(kit.all.map((p) => p.port));
    assert.equal(ports.size, 5);
    for (const op of kit.ops) {
      assert.equal(op.issuer, `http://localhost:${op.port}`);
      assert.equal(op.redirectUri, `${SERVICE}/v1/auth/${op.name}/callback`);
    }
    assert.deepEqual(kit.ops.map((op) => op.alg), ['RS256', 'RS256', 'ES256', 'RS256']);
    assert.deepEqual(kit.ops.map((op) => op.auth),
      ['client_secret_basic', 'client_secret_basic', 'client_secret_basic', 'client_secret_post']);
  });

  it('writes each client secret to a file and each provider\'s directive', () => {
    const lines = kit.directives().split('\n');
    assert.equal(lines.length, 5);
    for (const [i, p] of kit.all.entries()) {
      assert.equal(fs.readFileSync(p.secretFile, 'utf8'), `${p.clientSecret}\n`);
      assert.equal(fs.statSync(p.secretFile).mode & 0o077, 0, 'the secret file is private');
      assert.ok(lines[i].startsWith(`ProviderIdentityProvider ${p.name} `), lines[i]);
      assert.ok(lines[i].includes(`client_id=${p.clientId} `), lines[i]);
      assert.ok(lines[i].includes(`client_secret_file=${p.secretFile} `), lines[i]);
      assert.ok(lines[i].includes(`display="${p.display}"`), lines[i]);
      assert.ok(!lines[i].includes(p.clientSecret), 'the secret itself is not in the directive');
    }
    assert.match(lines[0], / issuer=http:\/\/localhost:\d+ /);
    assert.match(lines[3], / auth=client_secret_post$/);
    assert.match(lines[4], / authorization_endpoint=\S+ token_endpoint=\S+ userinfo_endpoint=\S+ subject_field=id /);
  });

  it('serves OpenID discovery and a JWKS with the signing key of each provider', async () => {
    for (const op of kit.ops) {
      const d = await (await fetch(op.endpoints.discovery)).json();
      assert.equal(d.issuer, op.issuer);
      assert.equal(d.authorization_endpoint, op.endpoints.authorization);
      assert.equal(d.token_endpoint, op.endpoints.token);
      assert.equal(d.userinfo_endpoint, op.endpoints.userinfo);
      assert.equal(d.jwks_uri, op.endpoints.jwks);
      assert.deepEqual(d.code_challenge_methods_supported, ['S256']);
      assert.ok(d.id_token_signing_alg_values_supported.includes(op.alg));
      assert.ok(d.token_endpoint_auth_methods_supported.includes(op.auth));
      const jwks = await (await fetch(d.jwks_uri)).json();
      const k = jwks.keys.find((x) => x.kid === op.signingKey.kid);
      assert.ok(k, `${op.name}: its signing key is in its JWKS`);
      assert.equal(k.alg, op.alg);
      assert.ok(jwks.keys.every((x) => x.d === undefined && x.p === undefined), 'no private part in the JWKS');
    }
  });

  it('completes the code flow with PKCE through each provider\'s login form; the id_token verifies', async () => {
    for (const op of kit.ops) {
      const alice = op.users.get('alice');
      const r = await codeFlow(op);
      assert.equal(r.flow.formShown, true);
      const { payload, protectedHeader } = await verifyIdToken(op, r.tokens.id_token, { nonce: r.nonce });
      assert.equal(protectedHeader.alg, op.alg);
      assert.equal(protectedHeader.kid, op.signingKey.kid);
      assert.equal(payload.sub, alice.sub);
      assert.equal(payload.iss, op.issuer);
      assert.equal(payload.aud, op.clientId);
      assert.equal(payload.email, alice.email);
      assert.equal(payload.name, alice.name);
      const info = await fetchUserinfo(op, r.tokens.access_token);
      assert.equal(info.status, 200);
      assert.deepEqual(info.body, { sub: alice.sub, email: alice.email, email_verified: true, name: alice.name });
      assert.ok(op.issued.has(r.code) && op.issued.has(r.tokens.access_token) && op.issued.has(r.tokens.id_token));
    }
  });

  it('keeps the client authentication it registered', async () => {
    const op = kit.ops[3];  // client_secret_post
    const r = await signInAtProvider(authorizeUrl(op, { nonce: 'n', challenge: pkcePair().challenge }));
    const basic = await exchangeCode(op, r.code, { auth: 'client_secret_basic' });
    assert.equal(basic.status, 401);
    assert.equal(basic.body.error, 'invalid_client');
    const post = await exchangeCode(kit.ops[0], 'whatever', { auth: 'client_secret_post' });
    assert.equal(post.status, 401);
    assert.equal(post.body.error, 'invalid_client');
    const wrong = await exchangeCode(kit.ops[0], 'whatever', { clientSecret: 'not-the-secret' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error, 'invalid_client');
  });

  it('shows the form again after a wrong password, returns access_denied on Cancel, and signs in again without the form', async () => {
    const op = kit.ops[1];
    const { challenge } = pkcePair();
    const bad = await signInAtProvider(authorizeUrl(op, { nonce: 'n', challenge }), { password: 'wrong' });
    assert.equal(bad.callback, null);
    assert.equal(bad.status, 200);
    assert.match(bad.body, /Invalid username or password/);
    assert.match(bad.body, /id="kit-login"/);

    const cancel = await signInAtProvider(authorizeUrl(op, { nonce: 'n', challenge, state: 's1' }), { cancel: true });
    assert.equal(cancel.error, 'access_denied');
    assert.equal(cancel.state, 's1');
    assert.equal(cancel.code, null);

    const jar = new CookieJar();
    const first = await signInAtProvider(authorizeUrl(op, { nonce: 'n', challenge }), { jar, login: 'bob' });
    assert.ok(first.code && first.formShown);
    const again = await signInAtProvider(authorizeUrl(op, { nonce: 'n', challenge }), { jar });
    assert.ok(again.code, 'the provider\'s session signs in again');
    assert.equal(again.formShown, false);
    assert.ok(jar.cookies.some((c) => c.name === `_session_${op.name}` && c.httpOnly));
  });

  it('requires PKCE S256 and refuses a wrong verifier and a replayed code', async () => {
    const op = kit.ops[0];
    const none = await signInAtProvider(authorizeUrl(op, { nonce: 'n', challenge: null, state: 'p' }));
    assert.equal(none.error, 'invalid_request');
    assert.equal(none.state, 'p');

    const { verifier, challenge } = pkcePair();
    const r = await signInAtProvider(authorizeUrl(op, { nonce: 'n', challenge }));
    const mismatch = await exchangeCode(op, r.code, { verifier: pkcePair().verifier });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.body.error, 'invalid_grant');

    const r2 = await signInAtProvider(authorizeUrl(op, { nonce: 'n', challenge }));
    assert.equal((await exchangeCode(op, r2.code, { verifier })).status, 200);
    const replay = await exchangeCode(op, r2.code, { verifier });
    assert.equal(replay.status, 400);
    assert.equal(replay.body.error, 'invalid_grant');
  });

  for (const which of [0, 2]) {
    it(`makes each id_token defect and only it (${which === 0 ? 'RS256' : 'ES256'})`, async () => {
      const op = kit.ops[which];
      const jwks = jose.createLocalJWKSet(await (await fetch(op.endpoints.jwks)).json());
      const kids = new Set(op.publicJwks().map((k) => k.kid));
      // maxTokenAge: jose checks that iat is not in the future only with it.
      const opts = { issuer: op.issuer, audience: op.clientId, algorithms: [op.alg], maxTokenAge: '1 day' };
      const reason = async (token) => {
        try {
          await jose.jwtVerify(token, jwks, opts);
          return 'verified';
        } catch (e) {
          return e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' ? `claim ${e.claim}` : e.code;
        }
      };
      const alice = op.users.get('alice');
      try {
        for (const defect of ID_TOKEN_DEFECTS) {
          op.defect = defect;
          const r = await codeFlow(op);
          const token = r.tokens.id_token;
          const header = jose.decodeProtectedHeader(token);
          const claims = jose.decodeJwt(token);
          assert.equal(claims.sub, alice.sub, `${defect}: the rest of the token is kept`);
          const why = await reason(token);
          const expected = {
            signature: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
            nonce: 'verified',
            aud: 'claim aud',
            azp: 'verified',
            iss: 'claim iss',
            expired: 'ERR_JWT_EXPIRED',
            'iat-future': 'claim iat',
            'alg-none': 'ERR_JOSE_ALG_NOT_ALLOWED',
            'hs256-public-key': 'ERR_JOSE_ALG_NOT_ALLOWED',
            'unknown-kid': 'ERR_JWKS_NO_MATCHING_KEY',
          }[defect];
          assert.equal(why, expected, `${defect}: ${why}`);
          if (defect === 'signature') assert.equal(header.kid, op.signingKey.kid);
          if (defect === 'nonce') assert.notEqual(claims.nonce, r.nonce);
          if (defect === 'azp') {
            assert.equal(claims.azp, 'another-client');
            await assert.rejects(verifyIdToken(op, token, { nonce: r.nonce }), /azp/);
          }
          if (defect === 'iss') assert.equal(claims.iss, `http://127.0.0.1:${op.port}`);
          if (defect === 'alg-none') {
            assert.equal(header.alg, 'none');
            assert.equal(token.split('.')[2], '', 'no signature');
          }
          if (defect === 'hs256-public-key') {
            assert.equal(header.alg, 'HS256');
            assert.equal(header.kid, op.signingKey.kid);
            // What it is: an HMAC keyed with the public key's PEM text.
            const pem = new TextEncoder().encode(await jose.exportSPKI(op.signingKey.publicKey));
            await jose.jwtVerify(token, pem, { algorithms: ['HS256'] });
          }
          if (defect === 'unknown-kid') assert.ok(!kids.has(header.kid), header.kid);
          if (['aud', 'iss', 'expired', 'iat-future', 'nonce', 'azp'].includes(defect)) {
            assert.equal(header.kid, op.signingKey.kid, `${defect}: signed with the real key`);
          }
        }
      } finally {
        op.defect = null;
      }
      assert.equal(await reason((await codeFlow(op)).tokens.id_token), 'verified', 'back to good tokens');
    });
  }

  it('signs valid id_tokens with changed claims, on a test clock and with a rotated key', async () => {
    const op = kit.ops[0];
    try {
      op.tamper = (claims) => { claims.azp = op.clientId; };
      let r = await codeFlow(op);
      let v = await verifyIdToken(op, r.tokens.id_token, { nonce: r.nonce });
      assert.equal(v.payload.azp, op.clientId);
      op.tamper = null;

      op.clock = 1700000000;
      r = await codeFlow(op);
      const claims = jose.decodeJwt(r.tokens.id_token);
      assert.equal(claims.iat, 1700000000);
      assert.equal(claims.exp, 1700000000 + 600);
      await verifyIdToken(op, r.tokens.id_token, { nonce: r.nonce, currentDate: new Date(1700000100 * 1000) });
      await assert.rejects(verifyIdToken(op, r.tokens.id_token), { code: 'ERR_JWT_EXPIRED' });
      op.clock = null;

      const old = op.signingKey.kid;
      const k = await op.rotateKey();
      const jwks = await (await fetch(op.endpoints.jwks)).json();
      assert.deepEqual(jwks.keys.map((x) => x.kid).filter((x) => x === old || x === k.kid).sort(), [old, k.kid].sort());
      r = await codeFlow(op);
      v = await verifyIdToken(op, r.tokens.id_token, { nonce: r.nonce });
      assert.equal(v.protectedHeader.kid, k.kid);
    } finally {
      op.tamper = null;
      op.clock = null;
    }
  });

  it('logs every request with its endpoint, status and time, so a test can tell it was not contacted', async () => {
    const op = kit.ops[2];
    const mark = op.log.mark();
    assert.deepEqual(op.log.since(mark), [], 'nothing since the mark');
    const t0 = Date.now();
    await fetch(op.endpoints.discovery);
    await fetch(op.endpoints.jwks);
    const r = await codeFlow(op);
    await fetchUserinfo(op, r.tokens.access_token);
    const t1 = Date.now();
    const seen = op.log.since(mark);
    assert.deepEqual(seen.map((e) => e.endpoint), ['discovery', 'jwks', 'authorization', 'interaction',
      'interaction', 'authorization', 'token', 'userinfo']);
    assert.deepEqual(seen.map((e) => e.method), ['GET', 'GET', 'GET', 'GET', 'POST', 'GET', 'POST', 'GET']);
    assert.deepEqual(seen.map((e) => e.status), [200, 200, 303, 200, 303, 303, 200, 200]);
    assert.ok(seen.every((e) => e.at >= t0 && e.at <= t1), 'times within the test');
    assert.equal(op.log.since(mark, 'token').length, 1);
    assert.ok(!seen.some((e) => e.path.includes('?')), 'paths without their query');

    const quiet = op.log.mark();
    for (const other of kit.ops.filter((o) => o !== op)) await fetch(other.endpoints.discovery);
    assert.deepEqual(op.log.since(quiet), [], 'requests to other providers are not in its log');
  });

  it('runs a plain OAuth 2.0 provider: login form, code with PKCE, token, the user id in its field', async () => {
    const p = kit.plain[0];
    const alice = p.users.get('alice');
    assert.equal(typeof alice.sub, 'number');
    const mark = p.log.mark();
    const r = await codeFlow(p);
    assert.equal(r.tokens.token_type, 'bearer');
    assert.equal(r.tokens.id_token, undefined, 'no OpenID here');
    const info = await fetchUserinfo(p, r.tokens.access_token);
    assert.equal(info.status, 200);
    assert.deepEqual(info.body, { id: alice.sub, login: 'alice', name: alice.name, email: alice.email });
    assert.deepEqual(p.log.since(mark).map((e) => `${e.endpoint} ${e.status}`),
      ['authorization 200', 'authorization 303', 'token 200', 'userinfo 200']);

    // client_secret_post works too; a wrong secret, a wrong verifier, a
    // replayed code and a bad access token do not.
    const { verifier, challenge } = pkcePair();
    let f = await signInAtProvider(authorizeUrl(p, { challenge }));
    assert.equal((await exchangeCode(p, f.code, { verifier, auth: 'client_secret_post' })).status, 200);
    const replay = await exchangeCode(p, f.code, { verifier });
    assert.deepEqual([replay.status, replay.body.error], [400, 'invalid_grant']);
    f = await signInAtProvider(authorizeUrl(p, { challenge }));
    const wrongSecret = await exchangeCode(p, f.code, { verifier, clientSecret: 'nope' });
    assert.deepEqual([wrongSecret.status, wrongSecret.body.error], [401, 'invalid_client']);
    f = await signInAtProvider(authorizeUrl(p, { challenge }));
    const mismatch = await exchangeCode(p, f.code, { verifier: pkcePair().verifier });
    assert.deepEqual([mismatch.status, mismatch.body.error], [400, 'invalid_grant']);
    assert.equal((await fetchUserinfo(p, 'at-not-a-token')).status, 401);

    const cancel = await signInAtProvider(authorizeUrl(p, { challenge, state: 'c' }), { cancel: true });
    assert.deepEqual([cancel.error, cancel.state], ['access_denied', 'c']);
    const elsewhere = await fetch(authorizeUrl(p, { redirectUri: 'http://127.0.0.1:9/elsewhere' }), { redirect: 'manual' });
    assert.equal(elsewhere.status, 400, 'never redirects to an unregistered URI');
  });

  it('puts a string user id in another field when asked', async () => {
    const p = await new PlainOAuthProvider({
      name: 'oauth-str', redirectUri: `${SERVICE}/v1/auth/oauth-str/callback`, dir: kit.dir,
      subjectField: 'user_id', numericIds: false, requirePkce: true,
    }).start();
    try {
      const none = await signInAtProvider(authorizeUrl(p, { challenge: null }));
      assert.equal(none.error, 'invalid_request', 'PKCE required');
      const r = await codeFlow(p, { login: 'bob' });
      const info = await fetchUserinfo(p, r.tokens.access_token);
      assert.equal(typeof info.body.user_id, 'string');
      assert.equal(info.body.user_id, p.users.get('bob').sub);
      assert.equal(info.body.id, undefined);
      assert.match(p.directive(), / subject_field=user_id /);
    } finally {
      await p.stop();
    }
  });

  it('hangs the endpoints a test names until release(); says emails_verified and timeout in its directive', async () => {
    const op = kit.ops[0];
    const mark = op.log.mark();
    op.hang.add('discovery');
    let answered = false;
    const held = fetch(op.endpoints.discovery).then((r) => { answered = true; return r; });
    await new Promise((resolve) => { setTimeout(resolve, 300); });
    assert.equal(answered, false, 'not answered while hung');
    assert.equal(op.log.since(mark, 'discovery').length, 1, 'but received and logged');
    assert.equal((await fetch(op.endpoints.jwks)).status, 200, 'the other endpoints answer');
    op.release();
    const r = await held;
    assert.equal(r.status, 503);
    assert.equal((await fetch(op.endpoints.discovery)).status, 200, 'released: answers again');
    const a = new OpenIdProvider({ name: 'idp-ev', redirectUri: `${SERVICE}/v1/auth/idp-ev/callback`, dir: kit.dir,
      emailsVerified: true, timeout: 3, users: [{ login: 'nosay', emailVerified: null }] });
    assert.match(a.directive(), / emails_verified=on timeout=3$/);
    assert.doesNotMatch(kit.ops[1].directive(), /emails_verified|timeout=/);
    assert.match(kit.plain[0].directive(), / emails_verified=on$/);
    assert.equal(a.users.get('nosay').emailVerified, null);
  });

  it('lists the secrets and subjects a test must never see from the service', async () => {
    const op = kit.ops[1];
    const r = await codeFlow(op, { login: 'bob' });
    const secrets = kit.secrets();
    for (const s of [op.clientSecret, r.code, r.tokens.access_token, r.tokens.id_token]) {
      assert.ok(secrets.includes(s), 'listed');
    }
    assert.ok(kit.subjects().includes(op.users.get('bob').sub));
    assert.ok(kit.subjects().includes(String(kit.plain[0].users.get('bob').sub)));
    assert.equal(DEFAULT_PASSWORD.length > 8, true);
  });
});
