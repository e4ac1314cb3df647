// tests/integration/no-keys.test.js: no real key anywhere (issue 15, "keys
// must not be placed in documentation, source control or browser storage"):
// every file of the repository (git's list, or the tree when there is no
// git), the docs as installed (docs/site/, the manual page) and the docs as
// served with live values (every page and /v1/docs of a server whose database
// holds real keys) are searched for anything shaped like a secret: this
// service's keys (sk-prov- and 43 random characters), other vendors' API keys,
// cloud access keys, private keys. A test fixture is told from a real key by
// its look: made of one repeated character or of runs like "abcdef" and
// "012345". The check is shown to find a key that providerctl just made.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startStack, seedCatalog, SRCDIR } from './lib/server.js';

const SHAPES = [
  /sk-prov-[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g,                  // this service's keys
  /sk-(?!prov-)(?:proj-|ant-(?:api\d\d-)?|svcacct-)?[A-Za-z0-9_-]{32,}/g, // other vendors' keys
  /\bAKIA[0-9A-Z]{16}\b/g,                                         // cloud access key ids
  /\bgh[pousr]_[A-Za-z0-9]{36}\b/g,                                // forge tokens
  /\bxox[abprs]-[A-Za-z0-9-]{20,}/g,                               // chat tokens
  /-----BEGIN (?:RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----/g,        // private keys
];

/** True when the secret part of s looks made by hand: few distinct
 * characters, or a run of six ascending ones (abcdef, 012345). */
function looksFake(s) {
  if (s.startsWith('-----BEGIN')) return false;
  const body = s.replace(/^(sk-(?:prov-|proj-|ant-(?:api\d\d-)?|svcacct-)?|AKIA|gh[pousr]_|xox[abprs]-)/, '');
  if (new Set(body).size < 12) return true;
  let run = 1;
  for (let i = 1; i < body.length; i++) {
    run = body.charCodeAt(i) === body.charCodeAt(i - 1) + 1 ? run + 1 : 1;
    if (run >= 6) return true;
  }
  return false;
}

/** The key-shaped strings of text that do not look fake. */
export function findKeys(text) {
  const found = [];
  for (const re of SHAPES) {
    for (const m of text.matchAll(re)) if (!looksFake(m[0])) found.push(m[0]);
  }
  return found;
}

/** The repository's files: git's list, or the tree without build output. */
function repositoryFiles() {
  const git = spawnSync('git', ['-C', SRCDIR, 'ls-files', '-z'], { encoding: 'utf8' });
  if (git.status === 0 && git.stdout) return git.stdout.split('\0').filter(Boolean);
  const out = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(SRCDIR, rel), { withFileTypes: true })) {
      const r = path.join(rel, e.name);
      if (e.isDirectory()) {
        if (!['node_modules', '.git', '.libs', '.deps', 'autom4te.cache'].includes(e.name)) walk(r);
      } else if (e.isFile() && !/\.(o|lo|la|so|a)$/.test(e.name)) {
        out.push(r);
      }
    }
  };
  walk('');
  return out;
}

function scanFile(rel) {
  const buf = fs.readFileSync(path.join(SRCDIR, rel));
  if (buf.includes(0)) return [];   // binary
  return findKeys(buf.toString('utf8')).map((k) => `${rel}: ${k.slice(0, 14)}...`);
}

describe('no real key in the repository or the docs', () => {
  let stack;
  let secret;

  before(async () => {
    stack = await startStack({ seed: (s) => {
      seedCatalog(s);
      s.addUser('keys@example.test', 10);
      secret = s.createKey('keys@example.test').secret;
    } });
  });
  after(async () => { if (stack) await stack.stop(); });

  it('finds a key providerctl made, and takes the fixtures for what they are', () => {
    assert.deepEqual(findKeys(`export KEY=${secret}\n`), [secret]);
    assert.deepEqual(findKeys(`"${secret}"`), [secret]);
    assert.equal(findKeys(`sk-prov-${'A'.repeat(43)}`).length, 0);
    assert.equal(findKeys('sk-proj-abcdefghijklmnop0123456789ABCDEFGH').length, 0);
    assert.equal(findKeys('PASTE_API_KEY_HERE sk-prov- sk-prov-…').length, 0);
    assert.equal(findKeys(`-----BEGIN ${'PRIVATE'} KEY-----`).length, 1);
  });

  it('has none in any file of the repository', () => {
    const files = repositoryFiles();
    assert.ok(files.length > 200, `${files.length} files`);
    assert.ok(files.includes('docs/site/claude-code.html') && files.includes('cli/providerctl.1'));
    assert.deepEqual(files.flatMap(scanFile), []);
  });

  it('has none in the docs as served, though the database holds keys', async () => {
    const pages = fs.readdirSync(path.join(SRCDIR, 'docs', 'site'))
      .filter((f) => /^[a-z0-9][a-z0-9-]*\.html$/.test(f)).map((f) => (f === 'index.html' ? '/docs' : `/docs/${f.slice(0, -5)}`));
    let bytes = 0;
    for (const url of [...pages, '/docs/style.css', '/v1/docs']) {
      const r = await fetch(`${stack.baseURL}${url}`);
      assert.equal(r.status, 200, url);
      const text = await r.text();
      bytes += text.length;
      assert.deepEqual(findKeys(text), [], url);
      assert.ok(!text.includes(secret.slice(8, 20)), `${url} shows a part of a key`);
    }
    assert.ok(bytes > 50000);
  });
});
