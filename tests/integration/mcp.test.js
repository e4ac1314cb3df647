// tests/integration/mcp.test.js: the public MCP endpoint, POST /v1/mcp
// (issue 16, item 1): MCP's Streamable HTTP transport, stateless, answered
// with single JSON objects. The official TypeScript SDK's Client (npm
// @modelcontextprotocol/sdk, StreamableHTTPClientTransport) connects,
// lists the tools with their input and output schemas and calls
// list_models, whose structured content is GET /v1/models' catalog; raw
// HTTP covers what the transport and JSON-RPC demand of a server: version
// negotiation, notifications and client responses answered 202, GET 405,
// batches refused, a foreign Origin 403, an unsupported
// MCP-Protocol-Version 400, and -32700/-32600/-32601/-32602 for malformed
// messages, never a 5xx; search_docs finds the served /docs pages' sections
// and links to anchors that exist.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, seedCatalog, freePort, SRCDIR } from './lib/server.js';

const ACCEPT = 'application/json, text/event-stream';

/** POSTs one MCP message (an object, or text sent as is). */
function mcp(stack, message, headers = {}, urlPath = '/v1/mcp') {
  return stack.request('POST', urlPath, {
    body: typeof message === 'string' ? message : JSON.stringify(message),
    headers: { accept: ACCEPT, 'content-type': 'application/json', ...headers },
  });
}

function assertRpcError(res, status, code, id = null) {
  assert.equal(res.status, status, res.text);
  assert.match(res.headers.get('content-type') || '', /^application\/json/);
  assert.equal(res.json.jsonrpc, '2.0', res.text);
  assert.equal(res.json.id, id, res.text);
  assert.equal(res.json.error.code, code, res.text);
  assert.equal(typeof res.json.error.message, 'string');
}

describe('POST /v1/mcp, the public MCP endpoint', { timeout: 120000 }, () => {
  let stack;
  let base;

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    stack = await startStack({ port, seed: seedCatalog, directives: `ProviderPublicURL ${base}` });
  });

  after(async () => {
    if (stack) await stack.stop();
  });

  it('serves the official SDK client: initialize, tools/list with schemas, list_models as /v1/models', async () => {
    const client = new Client({ name: 'mod-provider-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/v1/mcp`));
    await client.connect(transport);   // its GET for a stream is answered 405
    try {
      assert.equal(client.getServerVersion().name, 'mod_provider');
      assert.ok(client.getServerCapabilities().tools, 'tools capability');
      assert.match(client.getInstructions() || '', /documentation/);
      const { tools } = await client.listTools();
      const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
      assert.ok(byName.list_models, JSON.stringify(tools));
      assert.ok(byName.search_docs, JSON.stringify(tools));
      assert.deepEqual(byName.search_docs.inputSchema.required, ['query']);
      for (const t of tools) {
        assert.equal(t.inputSchema.type, 'object', t.name);
        assert.equal(t.outputSchema.type, 'object', t.name);
        assert.ok(t.description.length > 20, t.name);
      }
      assert.ok(!tools.some((t) => /key|pay|admin|chat|complet/i.test(t.name)), 'read-only tools only');

      const res = await client.callTool({ name: 'list_models', arguments: {} });
      assert.notEqual(res.isError, true, JSON.stringify(res));
      const catalog = await stack.models();
      assert.equal(catalog.status, 200);
      assert.deepEqual(res.structuredContent, catalog.json);
      assert.deepEqual(JSON.parse(res.content[0].text), catalog.json);
      assert.ok(res.structuredContent.data.some((m) => m.publicId === 'prov-main' && m.pricing.input === 1.234567
        && m.max_output_tokens === 32768));

      const found = await client.callTool({ name: 'search_docs', arguments: { query: 'weekly budget', limit: 3 } });
      assert.notEqual(found.isError, true, JSON.stringify(found));
      const hits = found.structuredContent.results;
      assert.ok(hits.length > 0 && hits.length <= 3, JSON.stringify(hits));
      for (const h of hits) {
        assert.match(h.path, /^\/docs(\/[a-z0-9-]+)?#[\w-]+$/, h.path);
        assert.equal(h.url, `${base}${h.path}`);
        assert.match(`${h.title} ${h.excerpt}`.toLowerCase(), /budget/);
        // The link leads to a served page holding that anchor.
        const [page, anchor] = h.path.split('#');
        const res = await stack.request('GET', page);
        assert.equal(res.status, 200, page);
        assert.ok(res.text.includes(`id="${anchor}"`), h.path);
      }
      const mcpDocs = await client.callTool({ name: 'search_docs', arguments: { query: 'oauth authorization server' } });
      assert.ok(mcpDocs.structuredContent.results.some((h) => h.path.startsWith('/docs/mcp#')),
        JSON.stringify(mcpDocs.structuredContent));
      const none = await client.callTool({ name: 'search_docs', arguments: { query: 'zzqqxxyy' } });
      assert.deepEqual(none.structuredContent.results, []);
      const bad = await client.callTool({ name: 'search_docs', arguments: { query: '' } });
      assert.equal(bad.isError, true);
      assert.match(bad.content[0].text, /query/);
      // The schemas say additionalProperties false: an argument they do
      // not name is refused, not ignored (a misspelt "limit" is not silent).
      const extra = await client.callTool({ name: 'search_docs', arguments: { query: 'budget', limt: 2 } });
      assert.equal(extra.isError, true);
      assert.match(extra.content[0].text, /search_docs takes no argument "limt"/);
      const models = await client.callTool({ name: 'list_models', arguments: { family: 'x' } });
      assert.equal(models.isError, true);
      assert.match(models.content[0].text, /"family"/);

      await client.ping();
    } finally {
      await client.close();
    }
  });

  it('negotiates the protocol version: the client\'s when supported, else the newest', async () => {
    for (const v of ['2025-03-26', '2025-06-18', '2025-11-25']) {
      const res = await mcp(stack, { jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 't', version: '1' } } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.id, 1);
      assert.equal(res.json.result.protocolVersion, v);
      assert.equal(res.json.result.serverInfo.name, 'mod_provider');
    }
    const res = await mcp(stack, { jsonrpc: '2.0', id: 'x', method: 'initialize',
      params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    assert.equal(res.json.id, 'x');
    assert.equal(res.json.result.protocolVersion, '2025-11-25');
    assert.equal(res.headers.get('mcp-session-id'), null, 'stateless: no session');
  });

  it('answers notifications and client responses 202 with no body, ping with {}', async () => {
    let res = await mcp(stack, { jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.equal(res.status, 202);
    assert.equal(res.text, '');
    res = await mcp(stack, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } });
    assert.equal(res.status, 202);
    res = await mcp(stack, { jsonrpc: '2.0', id: 9, result: {} });
    assert.equal(res.status, 202);
    res = await mcp(stack, { jsonrpc: '2.0', id: 7, method: 'ping' },
      { 'mcp-protocol-version': '2025-06-18' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { jsonrpc: '2.0', id: 7, result: {} });
  });

  it('refuses GET and DELETE with 405 (no event stream, no session)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await stack.request(method, '/v1/mcp', { headers: { accept: 'text/event-stream' } });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.equal(res.json.error.code, -32600);
    }
  });

  it('refuses a foreign Origin with 403 and takes this site\'s', async () => {
    for (const origin of ['http://evil.example', 'null', `${base}.evil.example`, 'http://localhost']) {
      const res = await mcp(stack, { jsonrpc: '2.0', id: 1, method: 'ping' }, { origin });
      assertRpcError(res, 403, -32600);
    }
    const res = await mcp(stack, { jsonrpc: '2.0', id: 1, method: 'ping' }, { origin: base });
    assert.equal(res.status, 200, res.text);
  });

  it('refuses an unsupported MCP-Protocol-Version with 400', async () => {
    const res = await mcp(stack, { jsonrpc: '2.0', id: 1, method: 'ping' },
      { 'mcp-protocol-version': '2099-01-01' });
    assertRpcError(res, 400, -32600);
  });

  it('refuses batches as the 2025-06-18 revision removed them', async () => {
    const res = await mcp(stack, [{ jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' }]);
    assertRpcError(res, 400, -32600);
    assert.match(res.json.error.message, /batch/i);
  });

  it('gives JSON-RPC errors for malformed messages, never a 5xx', async () => {
    assertRpcError(await mcp(stack, '{"jsonrpc":"2.0","id":1,'), 400, -32700);
    assertRpcError(await mcp(stack, "{'jsonrpc':'2.0'}"), 400, -32700);
    assertRpcError(await mcp(stack, ''), 400, -32700);
    assertRpcError(await mcp(stack, '"ping"'), 400, -32600);
    assertRpcError(await mcp(stack, { id: 1, method: 'ping' }), 400, -32600, 1);
    assertRpcError(await mcp(stack, { jsonrpc: '1.0', id: 1, method: 'ping' }), 400, -32600, 1);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }), 400, -32600);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: null, method: 'ping' }), 400, -32600);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: 1, method: 42 }), 400, -32600, 1);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: 1 }), 400, -32600, 1);
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(70000) } });
    assertRpcError(await mcp(stack, big), 413, -32600);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'content-type': 'text/plain' }), 415, -32600);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: 1, method: 'ping' }, { accept: 'text/event-stream' }), 406, -32600);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: 2, method: 'resources/list' }), 200, -32601, 2);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: 3, method: 'tools/list', params: [1] }), 200, -32602, 3);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: 4, method: 'initialize', params: {} }), 200, -32602, 4);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: {} }), 200, -32602, 5);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: 6, method: 'tools/call',
      params: { name: 'make_payment', arguments: {} } }), 200, -32602, 6);
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: 7, method: 'tools/call',
      params: { name: 'list_models', arguments: [] } }), 200, -32602, 7);
    // The account's tools are not on the public endpoint.
    assertRpcError(await mcp(stack, { jsonrpc: '2.0', id: 8, method: 'tools/call',
      params: { name: 'account_limits', arguments: {} } }), 200, -32602, 8);
  });
});

// Issue 31, item 8: the public endpoint reads at most 64 KiB whatever
// ProviderMaxBodySize allows (4 MiB by default), and keeps the docs'
// sections per child, read again when a page changes.
describe('POST /v1/mcp: a small body limit, the docs cached and checked against the files', { timeout: 120000 }, () => {
  let stack;
  let docs;

  before(async () => {
    docs = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-mcp-docs-'));
    fs.cpSync(path.join(SRCDIR, 'docs', 'site'), docs, { recursive: true });
    fs.chmodSync(docs, 0o755); // mkdtemp's 0700 would hide it from httpd's user
    stack = await startStack({
      seed: seedCatalog,
      overrides: { ProviderMaxBodySize: String(4 * 1024 * 1024), ProviderDocsRoot: docs },
    });
  });

  after(async () => {
    if (stack) await stack.stop();
    if (docs) fs.rmSync(docs, { recursive: true, force: true });
  });

  const ping = (pad) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad } });
  const search = async (query) => {
    const res = await mcp(stack, { jsonrpc: '2.0', id: 7, method: 'tools/call',
      params: { name: 'search_docs', arguments: { query } } });
    assert.equal(res.status, 200, res.text);
    return res.json.result.structuredContent.results;
  };

  it('answers 413 to a message over 64 KiB (a 1 MiB one too), and takes one just under', async () => {
    for (const size of [1024 * 1024, 65537]) {
      const body = ping('x'.repeat(size - ping('').length));
      assert.equal(body.length, size);
      const res = await mcp(stack, body);
      assertRpcError(res, 413, -32600);
      assert.match(res.json.error.message, /65536 bytes/);
    }
    const fits = ping('x'.repeat(65536 - ping('').length));
    const ok = await mcp(stack, fits);
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.json.result, {});
  });

  it('finds a section added to a page at the next search, and one removed no more', async () => {
    assert.deepEqual(await search('quokkaword'), []);
    const page = path.join(docs, 'credits.html');
    const before = fs.readFileSync(page, 'utf8');
    fs.writeFileSync(page, `${before}\n<h2 id="quokka">Quokka section</h2>\n<p>The quokkaword is here.</p>\n`);
    const hits = await search('quokkaword');
    assert.equal(hits.length, 1, JSON.stringify(hits));
    assert.equal(hits[0].path, '/docs/credits#quokka');
    assert.match(hits[0].excerpt, /quokkaword/);
    fs.writeFileSync(page, before);
    // The same size as a changed page would be no proof: this one is shorter.
    assert.deepEqual(await search('quokkaword'), []);
  });
});
