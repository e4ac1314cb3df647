// tests/integration/docs.test.js: the documentation as served (issue 15):
// every page of docs/site/ at /docs/NAME with its headers (a strict CSP, no
// third-party asset), a unique stable id on every heading, no marker left,
// the catalog's live model ids and the service's base URL put in at request
// time; the documented error codes against core/base/prov_error.c's table;
// every internal link and anchor resolving; and /v1/docs, an OpenAPI 3.1
// document checked by an OpenAPI validator, whose paths are compared with
// the module's routes (route() in mod_provider/mod_provider.c and the
// /v1/auth routes of mod_provider_auth.c) both ways, by reading the source
// and by asking the server, and whose schemas the server's real answers
// (each transport's answer and errors, the catalog) are validated against.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startStack, seedCatalog, SRCDIR, DEFAULT_UPSTREAMS } from './lib/server.js';
import { answerChecker, PENDING_PATHS, PENDING_CODES } from './lib/openapi.js';

const SITE = path.join(SRCDIR, 'docs', 'site');
const PAGES = fs.readdirSync(SITE).filter((f) => /^[a-z0-9][a-z0-9-]*\.html$/.test(f)).map((f) => f.slice(0, -5));


/** The error table of core/base/prov_error.c: [{code, status}]. */
function errorTable() {
  const src = fs.readFileSync(path.join(SRCDIR, 'core', 'base', 'prov_error.c'), 'utf8');
  const rows = [...src.matchAll(/\[PROV_E_\w+\]\s*=\s*\{\s*"([A-Za-z_]+)",\s*(\d{3}),/g)];
  assert.ok(rows.length >= 19, 'the error table was read');
  return rows.map((m) => ({ code: m[1], status: Number(m[2]) }));
}

/** The literal paths and prefixes route() takes, from mod_provider.c. */
function routeLiterals() {
  const src = fs.readFileSync(path.join(SRCDIR, 'mod_provider', 'mod_provider.c'), 'utf8');
  const body = src.slice(src.indexOf('route(const char *uri)'));
  const fn = body.slice(0, body.indexOf('\n}\n'));
  // "/v1" goes with the "/v1/" prefix: the fallback that answers 404 NOT_FOUND.
  const exact = [...fn.matchAll(/!strcmp\(uri, "([^"]+)"\)/g)].map((m) => m[1])
    .filter((p) => p !== '/v1');
  const prefixes = [...fn.matchAll(/!strncmp\(uri, "([^"]+)", \d+\)/g)].map((m) => m[1]);
  assert.ok(exact.includes('/v1/chat/completions') && prefixes.includes('/v1/auth/'),
    'route() was read');
  return { exact, prefixes };
}

/** The /v1/auth/... routes of mod_provider_auth.c's handler. */
function authLiterals() {
  const src = fs.readFileSync(path.join(SRCDIR, 'mod_provider', 'mod_provider_auth.c'), 'utf8');
  const fn = src.slice(src.indexOf('int provider_auth_handler('));
  const own = [...fn.matchAll(/!strcmp\(rest, "([^"]+)"\)/g)].map((m) => `/v1/auth/${m[1]}`);
  // A prefix such as "identities/" takes a provider's name after it.
  own.push(...[...fn.matchAll(/!strncmp\(rest, "([^"]+\/)", \d+\)/g)]
    .map((m) => `/v1/auth/${m[1]}{provider}`));
  const per = [...new Set([...fn.matchAll(/strcmp\(slash, "\/([a-z]+)"\)/g)].map((m) => m[1]))]
    .map((v) => `/v1/auth/{provider}/${v}`);
  assert.ok(own.includes('/v1/auth/session') && per.includes('/v1/auth/{provider}/login'));
  return [...own, ...per];
}

function headingIds(html) {
  return [...html.matchAll(/<h([1-6])(\s[^>]*)?>/g)].map((m) => {
    const id = /\sid="([^"]+)"/.exec(m[2] || '');
    return { level: Number(m[1]), id: id ? id[1] : null };
  });
}

function allIds(html) {
  return new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]));
}

/** A concrete path for an OpenAPI path template. */
function concrete(p) {
  return p.replace('{provider}', 'nosuchprovider').replace('{id}', '999999')
    .replace('{publicId}', 'nosuchmodel').replace('{page}', 'errors');
}

/** Whether the server routes path (anything but the generic "not served"). */
async function served(stack, p, method) {
  const r = await fetch(`${stack.baseURL}${concrete(p)}`, { method, redirect: 'manual' });
  const text = await r.text();
  if (r.status !== 404) return true;
  if (/No such endpoint/.test(text)) return false;          // the module's /v1 fallback
  if (/was not found on this server/.test(text)) return false; // httpd's own 404
  return true;
}

describe('the documentation pages and the OpenAPI description', () => {
  let stack;
  let catalog;
  let key;
  const pages = {};

  before(async () => {
    stack = await startStack({ models: [...DEFAULT_UPSTREAMS, 'mock-claude'], seed: (s) => {
      seedCatalog(s);
      s.addModel('docs-claude-x', 'mock-claude', { name: 'Docs test', family: 'anthropic',
        rates: { input: '1', output: '2' } });
      s.ctl('model', 'set', 'docs-claude-x', '--messages', 'on');
      s.addModel('docs-disabled', 'mock-main', { rates: { input: '1', output: '2' } });
      s.ctl('model', 'disable', 'docs-disabled');
      s.addUser('docs@example.test', 100);
      key = s.createKey('docs@example.test').secret;
    } });
    catalog = (await (await fetch(`${stack.baseURL}/v1/models`)).json()).data.map((m) => m.publicId);
    for (const name of PAGES) {
      const url = name === 'index' ? '/docs' : `/docs/${name}`;
      const r = await fetch(`${stack.baseURL}${url}`);
      pages[name] = { url, status: r.status, headers: r.headers, html: await r.text() };
    }
  });
  after(async () => { if (stack) await stack.stop(); });

  it('serves every page of docs/site/ with its headers, no marker left and no outside asset', () => {
    assert.ok(PAGES.length >= 10 && PAGES.includes('index') && PAGES.includes('claude-code')
      && PAGES.includes('codex'), PAGES.join(','));
    for (const [name, p] of Object.entries(pages)) {
      assert.equal(p.status, 200, name);
      assert.equal(p.headers.get('content-type'), 'text/html; charset=utf-8');
      const csp = p.headers.get('content-security-policy');
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /style-src 'self'/);
      assert.doesNotMatch(csp, /script-src|unsafe/);
      assert.equal(p.headers.get('x-content-type-options'), 'nosniff');
      assert.doesNotMatch(p.html, /\{\{\s*\w+\s*\}\}/, `${name}: a marker is left`);
      assert.doesNotMatch(p.html, /<script|\sstyle="|\son[a-z]+="/i, `${name}: script or inline style`);
      for (const m of p.html.matchAll(/\s(?:src|href)="([^"]+)"/g)) {
        const u = m[1];
        const external = /^[a-z]+:/i.test(u);
        // The only outside address is the MCP specification's site, a link.
        assert.ok(!external || /^<a\s/.test(p.html.slice(p.html.lastIndexOf('<', m.index), m.index + 1))
          , `${name}: ${u} is an outside asset`);
      }
      assert.match(p.html, /<link rel="stylesheet" href="\/docs\/style.css">/);
    }
    assert.match(pages.index.html, new RegExp(`<code>${stack.baseURL}</code>`), 'the base URL');
  });

  it('has one navigation on every page, naming every page, and installs every file', () => {
    const navs = Object.values(pages).map((p) => /<nav[^>]*>([\s\S]*?)<\/nav>/.exec(p.html)[1]);
    assert.equal(new Set(navs).size, 1, 'the pages\' navigations differ');
    for (const p of Object.values(pages)) assert.ok(navs[0].includes(`href="${p.url}"`), p.url);
    const am = fs.readFileSync(path.join(SRCDIR, 'Makefile.am'), 'utf8');
    const list = /^DOCS_SITE =((?:.*\\\n)*.*)$/m.exec(am)[1].replace(/\\\n/g, ' ').trim().split(/\s+/);
    assert.deepEqual([...list].sort(), fs.readdirSync(SITE).map((f) => `docs/site/${f}`).sort(),
      'Makefile.am\'s DOCS_SITE (what make install installs) is docs/site/');
  });

  it('gives every heading a unique, stable id', () => {
    for (const [name, p] of Object.entries(pages)) {
      const hs = headingIds(p.html);
      assert.ok(hs.length >= 3, name);
      assert.equal(hs.filter((h) => h.level === 1).length, 1, `${name}: one h1`);
      for (const h of hs) assert.ok(h.id && /^[A-Za-z0-9_-]+$/.test(h.id), `${name}: h${h.level} without a usable id`);
      const ids = [...p.html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]);
      assert.equal(new Set(ids).size, ids.length, `${name}: an id used twice`);
    }
    // The anchors other parts of the service link to.
    for (const [name, id] of [['index', 'keys'], ['index', 'authentication'], ['errors', 'codes'],
      ['credits', 'windows'], ['credits', 'reservation'], ['credits', 'rate-card'],
      ['cabinet', 'api'], ['mcp', 'account'], ['chat', 'not-supported'],
      ['messages', 'not-supported'], ['responses', 'not-supported'], ['claude-code', 'script'],
      ['codex', 'uninstall']]) {
      assert.ok(allIds(pages[name].html).has(id), `${name}#${id}`);
    }
  });

  it('shows the catalog\'s live model ids, taken at request time', async () => {
    assert.ok(catalog.includes('docs-claude-x') && !catalog.includes('docs-disabled'));
    const listed = (html) => [...html.matchAll(/<ul class="models">(.*?)<\/ul>/gs)]
      .map((m) => [...m[1].matchAll(/<code>([^<]+)<\/code>/g)].map((c) => c[1]));
    const [all, msgs] = listed(pages.index.html);
    assert.deepEqual(all, catalog, 'the index lists the catalog');
    assert.deepEqual(msgs, ['docs-claude-x'], 'and the Messages models');
    assert.deepEqual(listed(pages['claude-code'].html), [['docs-claude-x']]);
    assert.deepEqual(listed(pages.codex.html), [catalog]);
    assert.match(pages.messages.html, /"model": "docs-claude-x"/);
    assert.match(pages.chat.html, new RegExp(`"model": "${catalog[0]}"`));
    // No ProviderPublicURL here: the page shows the request's own origin, so
    // no shared cache may keep it for another client.
    assert.equal(pages.index.headers.get('cache-control'), 'private, no-cache');
    // A model added now shows at once (no restart, no cache of the page).
    stack.addModel('docs-new-model', 'mock-main', { rates: { input: '1', output: '1' } });
    const again = await (await fetch(`${stack.baseURL}/docs/codex`)).text();
    assert.ok(listed(again)[0].includes('docs-new-model'), 'a new model is listed');
  });

  it('documents every error code of the table with its status, and no other', () => {
    const table = errorTable();
    const html = pages.errors.html;
    const documented = [...html.matchAll(/<h3 id="([A-Za-z_]+)"><code>\1<\/code> \((\d{3})(?:; [^)]*)?\)<\/h3>/g)]
      .map((m) => ({ code: m[1], status: Number(m[2]) }));
    const inTable = new Set(table.map((t) => t.code));
    for (const t of table) {
      const d = documented.find((x) => x.code === t.code);
      assert.ok(d, `${t.code} is not documented on /docs/errors`);
      assert.equal(d.status, t.status, `${t.code}: documented ${d.status}, table ${t.status}`);
    }
    for (const d of documented) {
      assert.ok(inTable.has(d.code) || PENDING_CODES.includes(d.code),
        `${d.code} is documented but not in prov_error.c's table`);
    }
    for (const c of PENDING_CODES) {
      assert.ok(!inTable.has(c), `${c} is in the table now: take it out of PENDING_CODES`);
    }
    // The summary table links every code, with the same status.
    for (const d of documented) {
      assert.match(html, new RegExp(`<tr><td>${d.status}</td><td><a href="#${d.code}">`), d.code);
    }
  });

  it('resolves every internal link and anchor of every page', async () => {
    const seen = new Map();
    for (const [name, p] of Object.entries(pages)) {
      for (const m of p.html.matchAll(/<a\s[^>]*href="([^"]+)"/g)) {
        const href = m[1].replace(/&amp;/g, '&');
        if (/^[a-z]+:/i.test(href)) continue;
        assert.ok(href.startsWith('/') || href.startsWith('#'), `${name}: relative link ${href}`);
        const [target, anchor] = href.startsWith('#') ? [p.url, href.slice(1)] : href.split('#');
        if (!seen.has(target)) {
          const r = await fetch(`${stack.baseURL}${target}`);
          seen.set(target, { status: r.status, html: await r.text() });
        }
        const t = seen.get(target);
        if (PENDING_PATHS.includes(target)) continue;
        assert.equal(t.status, 200, `${name}: ${href} answers ${t.status}`);
        if (anchor) assert.ok(allIds(t.html).has(anchor), `${name}: ${href}: no such anchor`);
      }
    }
    assert.ok(seen.size >= 12, `${seen.size} targets`);
  });

  it('answers unknown pages, other methods and the old index path as it should', async () => {
    let r = await fetch(`${stack.baseURL}/docs/no-such-page`);
    assert.equal(r.status, 404);
    assert.match(await r.text(), /No such page/);
    r = await fetch(`${stack.baseURL}/docs/Bad.Name`);
    assert.equal(r.status, 404);
    await r.text();
    r = await fetch(`${stack.baseURL}/docs/`, { redirect: 'manual' });
    assert.equal(r.status, 301);
    assert.equal(r.headers.get('location'), '/docs');
    await r.text();
    r = await fetch(`${stack.baseURL}/docs/errors`, { method: 'POST' });
    assert.equal(r.status, 405);
    await r.text();
    r = await fetch(`${stack.baseURL}/docs/style.css`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/css');
    assert.match(await r.text(), /@media print/);
    r = await fetch(`${stack.baseURL}/v1/docs`, { method: 'DELETE' });
    assert.equal(r.status, 405);
    assert.equal((await r.json()).error.code, 'METHOD_NOT_ALLOWED');
  });

  describe('/v1/docs', () => {
    let doc;
    before(async () => {
      const r = await fetch(`${stack.baseURL}/v1/docs`);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'application/json');
      doc = await r.json();
    });

    it('is a valid OpenAPI 3.1 document whose every $ref resolves', async () => {
      assert.equal(doc.openapi, '3.1.0');
      const v = new Validator();
      const res = await v.validate(structuredClone(doc));
      assert.ok(res.valid, JSON.stringify(res.errors, null, 1)?.slice(0, 3000));
      assert.equal(v.version, '3.1');
      const walk = (o) => {
        if (Array.isArray(o)) { o.forEach(walk); return; }
        if (!o || typeof o !== 'object') return;
        if (typeof o.$ref === 'string') {
          assert.match(o.$ref, /^#\//);
          const target = o.$ref.slice(2).split('/').reduce((x, k) => (x ? x[k] : undefined), doc);
          assert.ok(target, `${o.$ref} does not resolve`);
        }
        Object.values(o).forEach(walk);
      };
      walk(doc);
      assert.deepEqual(doc.servers, [{ url: stack.baseURL }]);
    });

    it('has the error shape with every code of the table', () => {
      const codes = doc.components.schemas.ErrorCode.enum;
      assert.deepEqual([...codes].sort(),
        [...new Set([...errorTable().map((t) => t.code), ...PENDING_CODES])].sort());
      assert.deepEqual(doc.components.schemas.Error.required, ['error']);
      for (const p of ['/v1/chat/completions', '/v1/messages', '/v1/responses']) {
        const op = doc.paths[p].post;
        for (const s of ['401', '402', '429']) assert.ok(op.responses[s], `${p} ${s}`);
        assert.ok(op.requestBody.content['application/json'].schema.$ref);
      }
    });

    it('lists every route of the module, and the module serves every path it lists', async () => {
      const documented = Object.keys(doc.paths);
      const { exact, prefixes } = routeLiterals();
      for (const p of [...exact, ...authLiterals()]) {
        if (documented.includes(p)) continue;
        // An alias answers with a redirect to a documented path.
        const r = await fetch(`${stack.baseURL}${concrete(p)}`, { redirect: 'manual' });
        await r.text();
        assert.ok(r.status === 301 && documented.includes(r.headers.get('location')),
          `the module routes ${p}, which /v1/docs does not list`);
      }
      for (const pre of prefixes.filter((x) => x !== '/v1/')) {
        assert.ok(documented.some((d) => d.startsWith(pre) && d !== pre.replace(/\/$/, '')),
          `no documented path under ${pre}`);
      }
      for (const p of documented) {
        const method = Object.keys(doc.paths[p]).find((k) => k !== 'parameters').toUpperCase();
        const is = await served(stack, p, method);
        if (PENDING_PATHS.includes(p)) {
          assert.ok(!is, `${p} is served now: take it out of PENDING_PATHS`);
        } else {
          assert.ok(is, `/v1/docs lists ${method} ${p}, which the module does not serve`);
        }
      }
      for (const p of PENDING_PATHS) assert.ok(documented.includes(p), `${p} pending but not listed`);
    });

    it('describes what the server answers: each transport\'s answer and errors', async () => {
      const check = answerChecker(doc, stack.baseURL);
      const post = (body, headers) => ({ method: 'POST', body: JSON.stringify(body),
        headers: { 'content-type': 'application/json', ...headers } });
      const bearer = { authorization: `Bearer ${key}` };
      const anthropic = { 'x-api-key': key, 'anthropic-version': '2023-06-01' };
      const user = [{ role: 'user', content: 'hi' }];
      await check('/v1/models', undefined, 200);
      const anthropicList = await check('/v1/models?limit=2', { headers: { 'anthropic-version': '2023-06-01' } }, 200,
        { template: '/v1/models' });
      assert.equal(anthropicList.data[0].type, 'model');
      await check('/v1/models?limit=0', { headers: { 'anthropic-version': '2023-06-01' } }, 400, { template: '/v1/models' });
      await check('/v1/models/prov-main', undefined, 200, { template: '/v1/models/{id}' });
      await check('/v1/models/no-such', undefined, 404, { template: '/v1/models/{id}' });
      await check('/v1/models/docs-claude-x', { headers: { 'x-api-key': key } }, 200, { template: '/v1/models/{id}' });
      await check('/v1/models/prov-main', { headers: { 'x-api-key': key } }, 404, { template: '/v1/models/{id}' });
      await check('/v1/chat/completions', post({ model: 'prov-main', messages: user, max_tokens: 16 }, bearer), 200);
      await check('/v1/chat/completions', post({ model: 'prov-main', messages: user }, {}), 401);
      await check('/v1/chat/completions', post({ model: 'no-such', messages: user }, bearer), 404);
      await check('/v1/chat/completions', post({ model: 'prov-main', messages: user, stream: true }, bearer), 400);
      await check('/v1/messages', post({ model: 'docs-claude-x', max_tokens: 16, messages: user }, anthropic), 200);
      await check('/v1/messages', post({ model: 'docs-claude-x', max_tokens: 16, messages: user },
        { 'anthropic-version': '2023-06-01' }), 401);
      await check('/v1/messages', post({ model: 'prov-main', max_tokens: 16, messages: user }, anthropic), 404);
      await check('/v1/messages/count_tokens', post({ model: 'docs-claude-x', messages: user }, anthropic), 200);
      await check('/v1/responses', post({ model: 'prov-main', input: 'hi' }, bearer), 200);
      await check('/v1/responses', post({ model: 'prov-main', input: 'hi', previous_response_id: 'r' }, bearer), 400);
      const e = await check('/v1/auth/session', undefined, 401);
      assert.equal(e.error.code, 'NOT_SIGNED_IN');
      await check('/v1/auth/identities', undefined, 401);
    });

    it('describes the catalog as GET /v1/models answers it', async () => {
      const { data } = await (await fetch(`${stack.baseURL}/v1/models`)).json();
      const model = doc.components.schemas.Model;
      for (const m of data) {
        for (const f of model.required) assert.ok(f in m, `${f} missing in ${JSON.stringify(m)}`);
        for (const f of Object.keys(m)) assert.ok(f in model.properties, `${f} undocumented`);
        if (m.pricing) {
          assert.deepEqual(Object.keys(m.pricing).sort(),
            [...doc.components.schemas.Pricing.required].sort());
        }
      }
    });
  });
});

/** The Markdown files of the tree an operator or a developer reads. */
function markdownFiles() {
  const out = ['README.md', 'tests/README.md'];
  const walk = (dir) => {
    for (const e of fs.readdirSync(path.join(SRCDIR, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.md')) out.push(rel);
    }
  };
  walk('docs');
  return out;
}

/** The anchors of a Markdown file: its headings as GitHub slugs them, and <a id>s. */
function markdownAnchors(text) {
  const ids = new Set();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const h = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (h) {
      ids.add(h[1].trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-'));
    }
  }
  for (const m of text.matchAll(/<a id="([^"]+)"><\/a>/g)) ids.add(m[1]);
  return ids;
}

describe('the operator\'s documentation in the tree', () => {
  it('documents every directive of the command table in provider.conf and the reference', () => {
    const src = fs.readFileSync(path.join(SRCDIR, 'mod_provider', 'mod_provider_config.c'), 'utf8');
    const table = src.slice(src.indexOf('provider_config_cmds[]'));
    const names = [...table.matchAll(/AP_INIT_\w+\(\s*"(\w+)"/g)].map((m) => m[1]);
    assert.ok(names.length >= 23 && names.includes('ProviderStreamPingInterval'), 'the table was read');
    const conf = fs.readFileSync(path.join(SRCDIR, 'httpd-conf', 'provider.conf'), 'utf8');
    const ref = fs.readFileSync(path.join(SRCDIR, 'docs', 'reference', 'directives.md'), 'utf8');
    const sections = [...ref.matchAll(/^### (\w+)$/gm)].map((m) => m[1]);
    for (const n of names) {
      assert.ok(new RegExp(`\\b${n}\\b`).test(conf), `${n} is not in httpd-conf/provider.conf`);
      assert.ok(sections.includes(n), `${n} has no section in docs/reference/directives.md`);
    }
    for (const s of sections) assert.ok(names.includes(s), `directives.md documents ${s}, not a directive`);
  });

  it('lists every error code of the table in docs/reference/errors.md with its status', () => {
    const ref = fs.readFileSync(path.join(SRCDIR, 'docs', 'reference', 'errors.md'), 'utf8');
    for (const t of errorTable()) {
      assert.match(ref, new RegExp(`^\\| ${t.status} \\| \`${t.code}\` \\|`, 'm'), t.code);
    }
  });

  it('resolves every relative link and anchor of README.md, tests/README.md and docs/', () => {
    const files = markdownFiles();
    assert.ok(files.includes('docs/reference/directives.md') && files.includes('docs/design.md'));
    let links = 0;
    for (const f of files) {
      const text = fs.readFileSync(path.join(SRCDIR, f), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const href = m[1];
        if (/^[a-z]+:/i.test(href)) continue;
        const [target, anchor] = href.split('#');
        const file = target ? path.normalize(path.join(path.dirname(f), target)) : f;
        assert.ok(fs.existsSync(path.join(SRCDIR, file)), `${f}: ${href}: no such file`);
        links++;
        if (anchor) {
          assert.ok(markdownAnchors(fs.readFileSync(path.join(SRCDIR, file), 'utf8')).has(anchor),
            `${f}: ${href}: no such anchor`);
        }
      }
    }
    assert.ok(links >= 50, `${links} links`);
  });

  it('ships every Markdown document of docs/ (Makefile.am\'s nobase_dist_doc_DATA)', () => {
    const am = fs.readFileSync(path.join(SRCDIR, 'Makefile.am'), 'utf8');
    const list = /^nobase_dist_doc_DATA =((?:.*\\\n)*.*)$/m.exec(am)[1].replace(/\\\n/g, ' ').trim().split(/\s+/);
    assert.deepEqual([...list].sort(), markdownFiles().filter((f) => f.startsWith('docs/')).sort());
  });
});
