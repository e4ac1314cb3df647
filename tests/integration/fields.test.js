// tests/integration/fields.test.js: only what was held reaches the gateway
// (issue 29, invariant 3), through the real server: each transport accepts a
// documented set of top-level request fields (core/transport/prov_fields.c,
// docs/internals/transports.md "The fields") and refuses any other with a
// 400 in its own error shape naming the field, before the gateway is called;
// every captured request of the real clients (tests/fuzz/corpus/*_request)
// is still served; chat's `n` is 1 to 8 and reaches the gateway, two output
// caps at once are refused; Messages' thinking budget must be below
// max_tokens; service_tier is not forwarded.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startStack, seedCatalog, DEFAULT_UPSTREAMS, SRCDIR } from './lib/server.js';
import { assertOpenAIError } from './lib/helpers.js';
import {
  seedMessagesCatalog, MESSAGES_UPSTREAMS, messages, messagesBody, assertAnthropicError,
} from './lib/messages.js';

const CORPUS = path.join(SRCDIR, 'tests', 'fuzz', 'corpus');

/** The JSON captures of a corpus directory: [{name, body}]. */
function captures(dir) {
  return fs.readdirSync(path.join(CORPUS, dir)).filter((f) => f.endsWith('.json')).sort()
    .map((f) => ({ name: f, body: JSON.parse(fs.readFileSync(path.join(CORPUS, dir, f), 'utf8')) }));
}

describe('top-level request fields', { timeout: 180000 }, () => {
  let stack;
  let user;

  before(async () => {
    stack = await startStack({
      models: [...DEFAULT_UPSTREAMS, ...MESSAGES_UPSTREAMS],
      seed: (s) => {
        seedCatalog(s);
        seedMessagesCatalog(s);
        user = { id: s.addUser('fields@example.test', 1000) };
        user.key = s.createKey('fields@example.test');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  const chat = (body) => stack.chat(user.key.secret, body);
  const resp = (body) => stack.request('POST', '/v1/responses', { key: user.key.secret, body });
  const msgs = (body, opts) => messages(stack, user.key.secret, body, opts);
  const chatMsg = [{ role: 'user', content: 'hi' }];

  /** Runs fn and asserts that the gateway got no request meanwhile. */
  async function notForwarded(fn) {
    const before = (await stack.mock.last()).seq;
    const res = await fn();
    assert.equal((await stack.mock.last()).seq, before, 'the gateway was not called');
    return res;
  }

  it('chat: an unknown field is a 400 naming it, in OpenAI words, on either parse path', async () => {
    // plain (the fast path's shape) and legacy `message` (the json-c path's)
    for (const body of [
      { model: 'prov-main', messages: chatMsg, max_tokens: 5, best_of: 2 },
      { model: 'prov-main', message: 'hi', best_of: 2 },
    ]) {
      const res = await notForwarded(() => chat(body));
      const e = assertOpenAIError(res, 400, 'INVALID_REQUEST', { param: 'best_of' });
      assert.equal(e.type, 'invalid_request_error');
      assert.equal(e.message, 'Unrecognized request argument supplied: best_of');
    }
  });

  it('responses: an unknown field is a 400 naming it, in OpenAI words', async () => {
    const res = await notForwarded(() => resp({ model: 'prov-main', input: 'hi', n: 2 }));
    const e = assertOpenAIError(res, 400, 'INVALID_REQUEST', { param: 'n' });
    assert.equal(e.message, 'Unrecognized request argument supplied: n');
  });

  it('messages and count_tokens: an unknown field is a 400 naming it, in Anthropic words', async () => {
    let res = await notForwarded(() => msgs(messagesBody('claude-main', { speed: 'fast' })));
    let e = assertAnthropicError(res, 400, 'invalid_request_error', 'INVALID_REQUEST');
    assert.equal(e.message, 'speed: Extra inputs are not permitted');
    res = await notForwarded(() => msgs({ model: 'claude-main', messages: chatMsg,
      mcp_servers: [] }, { path: '/v1/messages/count_tokens' }));
    e = assertAnthropicError(res, 400, 'invalid_request_error', 'INVALID_REQUEST');
    assert.equal(e.message, 'mcp_servers: Extra inputs are not permitted');
  });

  it('the specific refusals keep their words', async () => {
    let e = assertOpenAIError(await notForwarded(() => chat({ model: 'prov-main',
      messages: chatMsg, tools: [{ type: 'function', function: { name: 'f' } }] })),
    400, 'INVALID_REQUEST', { param: 'tools' });
    assert.match(e.message, /tools are not supported/);
    e = assertOpenAIError(await notForwarded(() => resp({ model: 'prov-main', input: 'hi',
      previous_response_id: 'resp_1' })), 400, 'INVALID_REQUEST', { param: 'previous_response_id' });
    assert.match(e.message, /stateless/);
  });

  it('chat: n from 1 to 8 reaches the gateway; anything else is a 400 naming n', async () => {
    const ok = await chat({ model: 'prov-main', messages: chatMsg, max_tokens: 5, n: 3 });
    assert.equal(ok.status, 200, ok.text);
    const last = await stack.mock.last();
    assert.equal(last.path, '/v1/chat/completions');
    assert.equal(last.body.n, 3);
    assert.equal(last.body.model, 'mock-main');
    for (const n of [0, -1, 9, 1.5, '2', true]) {
      const res = await notForwarded(() => chat({ model: 'prov-main', messages: chatMsg, n }));
      const e = assertOpenAIError(res, 400, 'INVALID_REQUEST', { param: 'n' });
      assert.match(e.message, /from 1 to 8/);
    }
  });

  it('chat: max_tokens and max_completion_tokens together are a 400 naming both', async () => {
    const res = await notForwarded(() => chat({ model: 'prov-main', messages: chatMsg,
      max_completion_tokens: 1, max_tokens: 1000 }));
    const e = assertOpenAIError(res, 400, 'INVALID_REQUEST',
      { param: 'max_tokens,max_completion_tokens' });
    assert.equal(e.message, 'send one of max_tokens and max_completion_tokens, not both');
    const one = await chat({ model: 'prov-main', messages: chatMsg, max_completion_tokens: 4 });
    assert.equal(one.status, 200, one.text);
    assert.equal((await stack.mock.last()).body.max_completion_tokens, 4);
  });

  it('messages: thinking.budget_tokens must be below max_tokens', async () => {
    const res = await notForwarded(() => msgs(messagesBody('claude-main', {
      max_tokens: 1024, thinking: { type: 'enabled', budget_tokens: 1024 } })));
    const e = assertAnthropicError(res, 400, 'invalid_request_error', 'INVALID_REQUEST');
    assert.match(e.message, /^thinking\.budget_tokens \(1024\) must be less than max_tokens \(1024\)/);
    const ok = await msgs(messagesBody('claude-main', {
      max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 } }));
    assert.equal(ok.status, 200, ok.text);
  });

  it('service_tier is accepted and not forwarded (the catalog prices the default tier)', async () => {
    let res = await chat({ model: 'prov-main', messages: chatMsg, max_tokens: 3,
      service_tier: 'priority' });
    assert.equal(res.status, 200, res.text);
    assert.ok(!('service_tier' in (await stack.mock.last()).body));
    res = await msgs(messagesBody('claude-main', { service_tier: 'auto' }));
    assert.equal(res.status, 200, res.text);
    assert.ok(!('service_tier' in (await stack.mock.last()).body));
  });

  it('every captured client request is still served (SDKs, Claude Code, Codex)', async () => {
    const sent = [];
    // each capture served, or refused for a reason of its own, never as unknown
    const serve = async (dir, send, unknown) => {
      for (const { name, body } of captures(dir)) {
        const res = await send(name, body);
        if (name.startsWith('refused_')) {
          assert.equal(res.status, 400, `${name}: ${res.text}`);
          assert.doesNotMatch(res.text, unknown);
        } else {
          assert.equal(res.status, 200, `${name}: ${res.text}`);
        }
        sent.push(name);
      }
    };
    await serve('chat_request', (n, body) => chat({ ...body, model: 'prov-main' }), /Unrecognized/);
    await serve('messages_request', (n, body) => msgs({ ...body, model: 'claude-main' },
      n.includes('count_tokens') ? { path: '/v1/messages/count_tokens' } : {}), /Extra inputs/);
    await serve('responses_request', (n, body) => resp({ ...body, model: 'prov-main' }),
      /Unrecognized/);
    assert.ok(sent.includes('claude_code_turn.json') && sent.includes('codex_turn.json'), sent.join());
  });
});
