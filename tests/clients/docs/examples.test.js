// tests/clients/docs/examples.test.js: the copy-paste examples of the /docs
// pages, taken from the served pages (live model ids and base URL in them)
// and run as a reader would, with the key in PROVIDER_API_KEY as the pages
// say: every curl line in bash (a JSON answer that is no error), every
// TypeScript example with node and the official SDK it imports (openai from
// tests/, @anthropic-ai/sdk from tests/clients/messages/), every Python
// example compiled by python3 (the Python SDKs are not installed here). An
// example that calls a path listed pending (lib/openapi.js) is skipped until
// that path is served.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack, seedCatalog, DEFAULT_UPSTREAMS } from '../../integration/lib/server.js';
import { PENDING_PATHS } from '../../integration/lib/openapi.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const TESTS = path.resolve(here, '..', '..');
const MESSAGES = path.join(TESTS, 'clients', 'messages');
const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const PAGES = ['index', 'chat', 'messages', 'responses', 'mcp'];

function codeBlocks(html) {
  const un = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'").replace(/&amp;/g, '&');
  return [...html.matchAll(/<pre><code(?: id="[^"]+")?>([\s\S]*?)<\/code><\/pre>/g)].map((m) => un(m[1]));
}

describe('the examples of the /docs pages, run as written', { timeout: 300000 }, () => {
  let stack;
  let key;
  let dir;
  const blocks = [];

  before(async () => {
    stack = await startStack({
      models: [...DEFAULT_UPSTREAMS, 'mock-claude'],
      seed: (s) => {
        seedCatalog(s);
        // the catalog's first ids are what the pages show: make them plain models
        s.addModel('a-docs-model', 'mock-main', { rates: { input: '1', output: '2' } });
        s.addModel('b-docs-claude', 'mock-claude', { family: 'anthropic', rates: { input: '1', output: '2' } });
        s.ctl('model', 'set', 'b-docs-claude', '--messages', 'on');
        s.addUser('examples@example.test', 100);
        key = s.createKey('examples@example.test').secret;
      },
    });
    for (const page of PAGES) {
      const r = await fetch(`${stack.baseURL}${page === 'index' ? '/docs' : `/docs/${page}`}`);
      assert.equal(r.status, 200);
      for (const text of codeBlocks(await r.text())) blocks.push({ page, text });
    }
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-examples-'));
  });
  after(async () => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    if (stack) await stack.stop();
  });

  const env = () => ({ PATH: process.env.PATH, HOME: dir, PROVIDER_API_KEY: key });
  const pending = (text) => PENDING_PATHS.some((p) => text.includes(`${stack.baseURL}${p}`)
    && !text.includes(`${stack.baseURL}${p}/`));

  it('runs every curl example', () => {
    const curls = blocks.filter((b) => b.text.startsWith('curl '));
    assert.ok(curls.length >= 4, `${curls.length} curl examples`);
    let ran = 0;
    for (const { page, text } of curls) {
      if (pending(text)) continue;
      const r = spawnSync('bash', ['-c', text], { env: env(), encoding: 'utf8', timeout: 30000 });
      assert.equal(r.status, 0, `${page}: ${text}\n${r.stderr}`);
      const answer = JSON.parse(r.stdout);
      assert.ok(!answer.error && answer.type !== 'error', `${page}: ${text}\n${r.stdout}`);
      // A list, a completion, a message, a response, or MCP's JSON-RPC result.
      assert.ok(answer.data || answer.choices || answer.content || answer.output
        || (answer.jsonrpc === '2.0' && answer.result), r.stdout);
      ran++;
    }
    assert.ok(ran >= 4, `${ran} ran`);
  });

  it('runs every TypeScript example with the official SDK it imports', () => {
    const ts = blocks.filter((b) => /^import \w+ from "(openai|@anthropic-ai\/sdk)";/.test(b.text));
    assert.equal(ts.length, 3, 'chat, messages, responses');
    for (const { page, text } of ts) {
      // The SDKs are installed where node finds them from these folders; the
      // Anthropic one under its alias (tests/clients/messages/package.json).
      const anthropic = text.includes('@anthropic-ai/sdk');
      const file = path.join(anthropic ? MESSAGES : TESTS, `.docs-example-${page}.mjs`);
      fs.writeFileSync(file, anthropic ? text.replace('"@anthropic-ai/sdk"', '"anthropic-sdk-1"') : text);
      try {
        const r = spawnSync(process.execPath, [file], { env: env(), encoding: 'utf8', timeout: 60000 });
        assert.equal(r.status, 0, `${page}: ${r.stderr}`);
        assert.match(r.stdout, /mock reply to: /, `${page}: ${r.stdout}`);
      } finally {
        fs.rmSync(file, { force: true });
      }
    }
  });

  it('compiles every Python example', () => {
    const py = blocks.filter((b) => /^import os\nfrom (openai|anthropic) import/.test(b.text));
    assert.equal(py.length, 3, 'chat, messages, responses');
    for (const { page, text } of py) {
      const file = path.join(dir, `${page}.py`);
      fs.writeFileSync(file, text);
      const r = spawnSync(PYTHON, ['-m', 'py_compile', file], { encoding: 'utf8' });
      assert.equal(r.status, 0, `${page}: ${r.stderr}`);
    }
  });
});
