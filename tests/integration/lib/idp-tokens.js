// tests/integration/lib/idp-tokens.js: the signing keys of the test identity
// providers (lib/idp.js) and the rewriting of the id_tokens they hand out.
// An OpenID Provider of the kit signs with keys made here (RS256 or ES256,
// each with its own kid); a test can then ask for an id_token with one
// defect (a bad signature, a claim that must be refused, alg "none", an HMAC
// signed with the public key, a kid the JWKS never held), for claims it
// changes itself, or for times taken from a test clock. Everything is signed
// with npm jose; nothing here talks to the network.

import crypto from 'node:crypto';
import * as jose from 'jose';

/**
 * The id_token defects a provider can be switched to (provider.defect):
 *   signature          signed by a stranger key under the provider's own kid
 *   nonce              a nonce that is not the one the client sent
 *   aud                an audience that is another client
 *   azp                an authorized party that is another client (aud kept)
 *   iss                the issuer spelt another way (http://127.0.0.1:PORT)
 *   expired            iat two hours ago, exp one hour ago
 *   iat-future         issued an hour from now
 *   alg-none           header {"alg":"none"}, no signature
 *   hs256-public-key   HS256 with the provider's public key (PEM) as the secret
 *   unknown-kid        signed by a key whose kid is in no JWKS the provider serves
 */
export const ID_TOKEN_DEFECTS = Object.freeze([
  'signature', 'nonce', 'aud', 'azp', 'iss', 'expired', 'iat-future',
  'alg-none', 'hs256-public-key', 'unknown-kid',
]);

const b64u = (buf) => Buffer.from(buf).toString('base64url');

/**
 * A new signing key: { alg, kid, privateKey, publicKey, privateJwk, publicJwk }.
 * privateJwk is what oidc-provider's `jwks` configuration takes; publicJwk
 * what a JWKS document shows.
 */
export async function makeSigningKey(alg = 'RS256', kid = null) {
  const { privateKey, publicKey } = await jose.generateKeyPair(alg, { extractable: true });
  const id = kid || `${alg.toLowerCase()}-${crypto.randomBytes(6).toString('hex')}`;
  const privateJwk = { ...(await jose.exportJWK(privateKey)), kid: id, alg, use: 'sig' };
  const publicJwk = { ...(await jose.exportJWK(publicKey)), kid: id, alg, use: 'sig' };
  return { alg, kid: id, privateKey, publicKey, privateJwk, publicJwk };
}

/** Signs claims with key under header (its alg and kid are the key's). */
export async function signWith(key, claims, header = {}) {
  return new jose.SignJWT(claims)
    .setProtectedHeader({ typ: 'JWT', ...header, alg: key.alg, kid: key.kid })
    .sign(key.privateKey);
}

/** A compact JWS with {"alg":"none"} and an empty signature. */
export function unsigned(claims, header = {}) {
  const h = { ...header, alg: 'none' };
  delete h.kid;
  return `${b64u(JSON.stringify(h))}.${b64u(JSON.stringify(claims))}.`;
}

/**
 * HS256 over claims with the public key's PEM text as the HMAC secret: what a
 * verifier that lets the token's header choose the algorithm would accept.
 */
export async function hmacWithPublicKey(key, claims, header = {}) {
  const pem = await jose.exportSPKI(key.publicKey);
  const secret = new TextEncoder().encode(pem);
  return new jose.SignJWT(claims)
    .setProtectedHeader({ typ: 'JWT', ...header, alg: 'HS256', kid: key.kid })
    .sign(secret);
}

/** Moves iat, exp and auth_time so that iat is `now` (the lifetime is kept). */
function shiftTimes(claims, now) {
  const life = typeof claims.exp === 'number' && typeof claims.iat === 'number'
    ? claims.exp - claims.iat : 3600;
  const out = { ...claims, iat: now, exp: now + life };
  if (typeof claims.auth_time === 'number') out.auth_time = now;
  return out;
}

/**
 * Rewrites an id_token the provider issued. opts:
 *   key      the provider's current signing key (makeSigningKey)
 *   issuer   the provider's issuer (for the 'iss' defect)
 *   clock    epoch seconds of the test clock, or null for the real time
 *   defect   one of ID_TOKEN_DEFECTS, or null
 *   tamper   (claims, header) => void, changes the claims or header in place
 *            before signing (with the provider's real key)
 *   resign   sign again with key even when nothing else changes (key is
 *            not the one the token was signed with: a rotated key)
 * Returns the token unchanged when there is nothing to do.
 */
export async function rewriteIdToken(token, {
  key, issuer, clock = null, defect = null, tamper = null, resign = false,
}) {
  if (clock === null && !defect && !tamper && !resign) return token;
  let claims = jose.decodeJwt(token);
  const header = { ...jose.decodeProtectedHeader(token) };
  const now = clock ?? Math.floor(Date.now() / 1000);
  if (clock !== null) claims = shiftTimes(claims, clock);
  if (tamper) tamper(claims, header);
  switch (defect) {
    case null:
    case undefined:
      return signWith(key, claims, header);
    case 'signature': {
      const stranger = await makeSigningKey(key.alg, key.kid);
      return signWith(stranger, claims, header);
    }
    case 'nonce':
      return signWith(key, { ...claims, nonce: `not-the-nonce-${crypto.randomBytes(6).toString('hex')}` }, header);
    case 'aud':
      return signWith(key, { ...claims, aud: 'another-client' }, header);
    case 'azp':
      return signWith(key, { ...claims, azp: 'another-client' }, header);
    case 'iss': {
      const u = new URL(issuer);
      u.hostname = u.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
      return signWith(key, { ...claims, iss: u.href.replace(/\/$/, '') }, header);
    }
    case 'expired':
      return signWith(key, { ...claims, iat: now - 7200, exp: now - 3600, auth_time: now - 7200 }, header);
    case 'iat-future':
      return signWith(key, { ...claims, iat: now + 3600, exp: now + 7200, auth_time: now + 3600 }, header);
    case 'alg-none':
      return unsigned(claims, header);
    case 'hs256-public-key':
      return hmacWithPublicKey(key, claims, header);
    case 'unknown-kid': {
      const stranger = await makeSigningKey(key.alg, `unknown-${crypto.randomBytes(6).toString('hex')}`);
      return signWith(stranger, claims, header);
    }
    default:
      throw new Error(`unknown id_token defect ${JSON.stringify(defect)} (known: ${ID_TOKEN_DEFECTS.join(', ')})`);
  }
}
