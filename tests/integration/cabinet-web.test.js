// tests/integration/cabinet-web.test.js: how the module serves the cabinet's
// files (mod_provider_cabinet.c, ProviderWebRoot) over plain HTTP: the page
// and its two assets with their content types, the Content-Security-Policy
// and the other security headers on every answer, no-store for the page and
// ETag/Last-Modified revalidation (304) for the assets, HEAD, the methods it
// refuses, and no file outside the web root or outside its short list of
// names (dot segments raw and percent-encoded, encoded slashes, hidden and
// backup files, subfolders, a symlink-free check of names): each of those is
// 404 without a byte of another file. GET /v1/auth/providers lists the
// configured identity providers, publicly; the CSP's form-action names
// their origins, which a sign-in form's redirect needs.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startStack, freePort, SRCDIR } from './lib/server.js';
import { startIdentityProviders } from './lib/idp.js';

const WEB = path.join(SRCDIR, 'web');

/** GET (or method) of a raw path, exactly as written (no URL normalisation). */
function raw(port, rawPath, { method = 'GET', headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: rawPath, method, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

function cspOf(headers) {
  const csp = headers['content-security-policy'];
  assert.ok(csp, 'a Content-Security-Policy');
  return Object.fromEntries(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k, v]));
}

describe('the cabinet\'s files', () => {
  let stack;
  let kit;

  before(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 2, plain: 1 });
    stack = await startStack({ port, directives: `ProviderPublicURL ${base}\n${kit.directives()}` });
  });

  after(async () => {
    try {
      if (stack) {
        stack.secrets.push(...kit.secrets());
        await stack.stop();
      }
    } finally {
      if (kit) await kit.stop();
    }
  });

  it('serves the page, no-store, with a strict policy naming the providers\' origins in form-action', async () => {
    const r = await raw(stack.port, '/cabinet/');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(r.headers['cache-control'], 'no-store');
    assert.equal(r.body, fs.readFileSync(path.join(WEB, 'index.html'), 'utf8'));
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    assert.equal(r.headers['x-frame-options'], 'DENY');
    assert.equal(r.headers['referrer-policy'], 'same-origin');
    const csp = cspOf(r.headers);
    assert.deepEqual(csp['default-src'], ["'none'"]);
    assert.deepEqual(csp['script-src'], ["'self'"]);
    assert.deepEqual(csp['style-src'], ["'self'"]);
    assert.deepEqual(csp['connect-src'], ["'self'"]);
    assert.deepEqual(csp['img-src'], ["'self'", 'data:']);
    assert.deepEqual(csp['frame-ancestors'], ["'none'"]);
    assert.deepEqual(csp['base-uri'], ["'none'"]);
    const origins = kit.all.map((p) => new URL(p.issuer || p.base).origin);
    assert.deepEqual(csp['form-action'], ["'self'", ...new Set(origins)]);
    // Nothing inline for the policy to refuse, nothing from elsewhere.
    assert.doesNotMatch(r.body, /<script>|<script [^>]*>[^<]|\sstyle=|\son[a-z]+=|https?:\/\//i);
  });

  it('serves the script and the styles with their types, revalidated by ETag and Last-Modified', async () => {
    for (const [name, type] of [['app.js', 'text/javascript; charset=utf-8'], ['app.css', 'text/css; charset=utf-8']]) {
      const r = await raw(stack.port, `/cabinet/${name}`);
      assert.equal(r.status, 200, name);
      assert.equal(r.headers['content-type'], type);
      assert.equal(r.body, fs.readFileSync(path.join(WEB, name), 'utf8'));
      assert.equal(r.headers['cache-control'], 'no-cache');
      assert.ok(r.headers.etag, 'an ETag');
      assert.ok(r.headers['last-modified'], 'a Last-Modified');
      assert.ok(r.headers['content-security-policy']);
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      const again = await raw(stack.port, `/cabinet/${name}`, { headers: { 'if-none-match': r.headers.etag } });
      assert.equal(again.status, 304);
      assert.equal(again.body, '');
      const since = await raw(stack.port, `/cabinet/${name}`, { headers: { 'if-modified-since': r.headers['last-modified'] } });
      assert.equal(since.status, 304);
      const stale = await raw(stack.port, `/cabinet/${name}`, { headers: { 'if-none-match': '"nope"' } });
      assert.equal(stale.status, 200);
      const head = await raw(stack.port, `/cabinet/${name}`, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
      assert.equal(Number(head.headers['content-length']), fs.statSync(path.join(WEB, name)).size);
    }
  });

  it('serves every module the page imports (web/*.js, relative imports only), each installed by make install', async () => {
    const files = fs.readdirSync(WEB).filter((f) => f.endsWith('.js'));
    const imported = new Set(['app.js']);
    for (const f of files) {
      for (const m of fs.readFileSync(path.join(WEB, f), 'utf8').matchAll(/^import (?:[^;]* from )?'([^']+)';$/gm)) {
        assert.match(m[1], /^\.\/[a-z0-9-]+\.js$/, `${f} imports ${m[1]}: only this folder's modules`);
        imported.add(m[1].slice(2));
      }
    }
    assert.deepEqual([...imported].sort(), files.sort(), 'every module is imported, every import exists');
    const am = fs.readFileSync(path.join(SRCDIR, 'Makefile.am'), 'utf8');
    const listed = (am.match(/^WEB_FILES = ((?:.*\\\n)*.*)$/m) || ['', ''])[1].split(/[\s\\]+/).filter(Boolean);
    assert.deepEqual(listed.sort(), fs.readdirSync(WEB).map((f) => `web/${f}`).sort(), 'Makefile.am WEB_FILES');
    for (const f of files) {
      const r = await raw(stack.port, `/cabinet/${f}`);
      assert.equal(r.status, 200, f);
      assert.equal(r.headers['content-type'], 'text/javascript; charset=utf-8', f);
      assert.equal(r.body, fs.readFileSync(path.join(WEB, f), 'utf8'), f);
    }
    const page = await raw(stack.port, '/cabinet/');
    assert.match(page.body, /<script type="module" src="\/cabinet\/app\.js"><\/script>/);
  });

  it('redirects /cabinet to /cabinet/ and refuses other methods', async () => {
    const r = await raw(stack.port, '/cabinet');
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, '/cabinet/');
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const m = await raw(stack.port, '/cabinet/app.js', { method });
      assert.equal(m.status, 405, method);
      assert.equal(JSON.parse(m.body).error.code, 'METHOD_NOT_ALLOWED');
    }
  });

  it('serves nothing outside its short list of names: dot segments, encoded dots and slashes, other files', async () => {
    const secretish = fs.readFileSync(path.join(SRCDIR, 'mod_provider', 'mod_provider_cabinet.c'), 'utf8').slice(0, 40);
    const paths = [
      '/cabinet/../', '/cabinet/../mod_provider/mod_provider_cabinet.c',
      '/cabinet/%2e%2e/', '/cabinet/%2e%2e/mod_provider/mod_provider_cabinet.c',
      '/cabinet/%2E%2E/%2E%2E/etc/passwd', '/cabinet/..%2fmod_provider%2fmod_provider_cabinet.c',
      '/cabinet/%2e%2e%2fmod_provider%2fmod_provider_cabinet.c', '/cabinet/.%2e/web/app.js',
      '/cabinet/nope.js', '/cabinet/app.js~', '/cabinet/.htaccess', '/cabinet/APP.JS', '/cabinet/app.js/',
      '/cabinet/web/app.js', '/cabinet/./app.jsx', '/cabinet/app.js%00.css', '/cabinet/app', '/cabinet/.js',
      '/cabinet/index.html.bak', '/cabinet/%61pp.json', '/cabinet/a%2fb.js', '/cabinet//etc/passwd',
    ];
    // httpd itself refuses a path that climbs above the root, at error level (AH10244).
    const answers = await stack.expectingLog(/AH10244: invalid URI path/,
      () => Promise.all(paths.map((p) => raw(stack.port, p))));
    for (const [i, p] of paths.entries()) {
      const r = answers[i];
      assert.ok(r.status === 404 || r.status === 400, `${p}: ${r.status}`);
      assert.ok(!r.body.includes(secretish), `${p} shows no other file`);
      assert.ok(!r.body.includes('root:x:0:0'), `${p} shows no system file`);
      if (/json/.test(r.headers['content-type'] || '')) {
        assert.equal(JSON.parse(r.body).error.code, 'NOT_FOUND', p);
      }
    }
    // httpd removes dot segments before the module sees the path: what is
    // left of these is served as the path it became.
    const r = await raw(stack.port, '/cabinet/./app.js');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/javascript; charset=utf-8');
  });

  it('lists the identity providers publicly: name, display, login and link paths', async () => {
    const r = await raw(stack.port, '/v1/auth/providers');
    assert.equal(r.status, 200);
    assert.equal(r.headers['cache-control'], 'no-store');
    assert.deepEqual(JSON.parse(r.body), {
      data: kit.all.map((p) => ({ name: p.name, display: p.display, login: `/v1/auth/${p.name}/login`, link: `/v1/auth/${p.name}/link` })),
    });
    const post = await raw(stack.port, '/v1/auth/providers', { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(JSON.parse(post.body).error.code, 'METHOD_NOT_ALLOWED');
  });
});

describe('the cabinet without its files', () => {
  it('warns at start-up and answers 404 in JSON when ProviderWebRoot holds no page', async () => {
    const stack = await startStack({ overrides: { ProviderWebRoot: '/nonexistent/web' }, startupLog: /PROV00630/ });
    try {
      assert.match(stack.readFile(stack.errorLog), /PROV00630: ProviderWebRoot \/nonexistent\/web has no index\.html/);
      const r = await stack.request('GET', '/cabinet/');
      assert.equal(r.status, 404);
      assert.equal(r.json.error.code, 'NOT_FOUND');
      const providers = await stack.request('GET', '/v1/auth/providers');
      assert.deepEqual(providers.json, { data: [] }, 'no providers configured: an empty list');
    } finally {
      await stack.stop();
    }
  });
});
