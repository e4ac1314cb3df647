// tests/integration/identity-kit.test.js: core/identity against real
// identity providers, before the module serves sign-in: the kit's four
// OpenID Providers (npm oidc-provider: RS256, ES256, client_secret_basic and
// _post) and its plain OAuth 2.0 provider, driven through
// tests/identity/signin_probe (core/identity end to end in one program:
// the provider parsed from its ProviderIdentityProvider line, the
// authorization request, the provider's login form filled in by
// lib/idp-client.js, the callback's record, the code exchange, the user
// made on the first sign-in and found on the second, a session). Then every
// bad id_token the kit can sign is refused (the unknown kid after exactly
// one more JWKS fetch), a replayed state finds nothing, a wrong PKCE
// verifier is refused by the provider, and no log line of core holds a
// client secret, a code, a token or a subject.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { BUILDDIR } from './lib/server.js';
import { startIdentityProviders, ID_TOKEN_DEFECTS } from './lib/idp.js';
import { signInAtProvider } from './lib/idp-client.js';

const PROBE = path.join(BUILDDIR, 'tests/identity/signin_probe');
// The service's base URL: nothing listens there, the drive stops at the
// redirect to its callback.
const PUBLIC = 'http://127.0.0.1:9';
const UNVERIFIED = "The identity provider's answer could not be verified.";

/**
 * One sign-in through provider p: the probe begins, the user signs in at
 * the provider (drive), the probe finishes. Returns { out (stdout lines
 * but the URL), log (core's log lines), flow }.
 */
function probe(db, p, { drive = (url) => signInAtProvider(url), args = [], replay = false } = {}) {
  return new Promise((resolve, reject) => {
    const line = p.directive().replace(/^ProviderIdentityProvider /, '');
    const child = spawn(PROBE, [`sqlite3:${db}`, PUBLIC, line, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [];
    let log = '';
    let flow = null;
    child.stderr.on('data', (d) => { log += d; });
    readline.createInterface({ input: child.stdout }).on('line', async (l) => {
      if (!l.startsWith('URL ')) {
        out.push(l);
        return;
      }
      try {
        flow = await drive(l.slice(4));
        const cb = flow.callback || `${PUBLIC}/v1/auth/${p.name}/callback?error=none`;
        child.stdin.write(`${cb}\n${replay ? `replay\n${cb}\n` : ''}`);
        child.stdin.end();
      } catch (e) {
        child.kill();
        reject(e);
      }
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`signin_probe exited ${code}:\n${log}`));
      else resolve({ out, log, flow });
    });
  });
}

/** The OK line's fields: { user, created, email, name, sub }. */
function ok(r) {
  const l = r.out.find((x) => x.startsWith('OK '));
  assert.ok(l, `no sign-in: ${r.out.join(' | ')}\n${r.log}`);
  return Object.fromEntries(l.slice(3).split(' ').map((kv) => kv.split('=')));
}

describe('core/identity against the kit\'s identity providers', { timeout: 240000 }, () => {
  let kit;
  let dir;
  let db;
  const logs = [];

  before(async () => {
    assert.ok(fs.existsSync(PROBE), `${PROBE} is missing: build first (make)`);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-idkit-'));
    db = path.join(dir, 'provider.db');
    kit = await startIdentityProviders({ redirectBase: PUBLIC, dir });
  });
  after(async () => {
    if (kit) {
      const errors = kit.all.flatMap((p) => p.errors.map((e) => `${p.name}: ${e.stack || e}`));
      await kit.stop();
      assert.deepEqual(errors, [], 'the providers had server errors');
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('signs in through each provider: the user made on the first sign-in, found on the second', async () => {
    const users = new Set();
    for (const p of kit.all) {
      const first = await probe(db, p);
      logs.push(first.log);
      const a = ok(first);
      const alice = p.users.all().find((u) => u.login === 'alice');
      assert.equal(a.created, '1', p.name);
      assert.equal(a.sub, String(alice.sub), `${p.name}: the subject is the provider's user id`);
      assert.equal(a.email, `alice@${p.name}.example`);
      const again = await probe(db, p);
      logs.push(again.log);
      const b = ok(again);
      assert.equal(b.created, '0', `${p.name}: found again`);
      assert.equal(b.user, a.user);
      users.add(a.user);
    }
    assert.equal(users.size, kit.all.length, 'one user per identity');
  });

  for (const defect of ID_TOKEN_DEFECTS) {
    it(`refuses an id_token with the defect: ${defect}`, async () => {
      const op = kit.ops[1];
      const mark = op.log.mark();
      op.defect = defect;
      let r;
      try {
        r = await probe(db, op);
      } finally {
        op.defect = null;
      }
      logs.push(r.log);
      assert.ok(r.out.some((l) => l.startsWith(`FAIL exchange `) && l.includes(UNVERIFIED)),
        `${defect}: ${r.out.join(' | ')}`);
      assert.match(r.log, /PROV00525: identity provider idp2: id_token refused: /);
      // a fresh process fetches the JWKS once; an unknown kid makes it fetch it once more
      assert.equal(op.log.since(mark, 'jwks').length, defect === 'unknown-kid' ? 2 : 1, defect);
    });
  }

  it('a state serves once: the same callback again finds nothing', async () => {
    const r = await probe(db, kit.ops[0], { replay: true });
    logs.push(r.log);
    ok(r);
    assert.ok(r.out.includes('REPLAY 70015'), r.out.join(' | '));   // APR_NOTFOUND
  });

  it('a wrong PKCE verifier: the provider refuses the code', async () => {
    for (const p of [kit.ops[0], kit.plain[0]]) {
      const mark = p.log.mark();
      const r = await probe(db, p, { args: ['--wrong-verifier'] });
      logs.push(r.log);
      assert.ok(r.out.some((l) => l.startsWith('FAIL exchange ')), `${p.name}: ${r.out.join(' | ')}`);
      assert.equal(p.log.since(mark, 'token').length, 1);
      assert.equal(p.log.since(mark, 'token')[0].status >= 400, true);
    }
  });

  it('no log line holds a client secret, a code, a token or a subject', () => {
    const all = logs.join('');
    assert.ok(all.length > 0);
    for (const secret of [...kit.secrets(), ...kit.subjects()]) {
      assert.ok(!all.includes(secret), `a log line holds ${secret.slice(0, 6)}...`);
    }
  });
});
