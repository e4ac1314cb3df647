// tests/integration/messages.test.js: successful POST /v1/messages and
// /v1/messages/count_tokens against a real apache2 + mod_provider + mockgw:
// both ways to send the key and the version dates the SDKs send, the exact
// charge (Anthropic token kinds: cache reads at the cache rate, cache creation
// as input) in x-provider-credits, usage.credits, the ledger and the balance;
// what the gateway receives (upstream id, normalised body, the version it
// knows, the beta flags, never the client's key); streams relayed event by
// event and flushed (arrival times), pings while the gateway is silent,
// credits in the last message_delta and the stream settled at message_stop;
// count_tokens forwarded or estimated and never charged.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './lib/server.js';
import { assertNoSecrets, expectedCharge, rawUsageCredits, toMicro } from './lib/helpers.js';
import {
  MESSAGES_CATALOG, MESSAGES_UPSTREAMS, seedMessagesCatalog, messages, messagesBody,
  messagesStream, anthropicKinds, mockInputTokens,
} from './lib/messages.js';

describe('POST /v1/messages: answers and charging', { timeout: 180000 }, () => {
  let stack;
  let user;
  const modelId = {};

  before(async () => {
    stack = await startStack({
      models: MESSAGES_UPSTREAMS,
      overrides: { ProviderGatewayTimeout: '60', ProviderStreamPingInterval: '1' },
      seed: (s) => {
        seedMessagesCatalog(s);
        user = { id: s.addUser('claude@example.test', 1000) };
        user.key = s.createKey('claude@example.test');
      },
    });
    for (const r of stack.sql('SELECT id, public_id FROM models')) modelId[r.public_id] = r.id;
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  function checkLedger(rid, expected, status = 'ok', model = 'claude-main') {
    const row = stack.ledger(rid);
    assert.ok(row, `a ledger row for ${rid}`);
    assert.equal(row.user_id, user.id);
    assert.equal(row.key_id, user.key.id);
    assert.equal(row.model_id, modelId[model]);
    assert.equal(row.transport, 'messages');
    assert.equal(BigInt(row.credits), expected, `ledger credits of ${JSON.stringify(row)}`);
    assert.equal(row.status, status);
    return row;
  }

  it('answers a Message with the exact charge (cache read and creation priced apart)', async () => {
    const before = stack.balance(user.id);
    // a system prompt of 5,000 bytes: the hold covers the 5,600 input tokens reported
    const body = messagesBody('claude-main', {
      max_tokens: 300, system: 'x'.repeat(5000),
      metadata: { mock_usage: { prompt: 1000, completion: 250, cached: 4000, creation: 600 } },
    });
    const res = await messages(stack, user.key.secret, body);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.type, 'message');
    assert.equal(res.json.role, 'assistant');
    assert.equal(res.json.model, 'claude-main', 'the public model id');
    assert.deepEqual(res.json.content, [{ type: 'text', text: 'mock reply to: hello world' }]);
    assert.equal(res.json.stop_reason, 'end_turn');
    assert.equal(res.json.usage.input_tokens, 1000);
    assert.equal(res.json.usage.cache_read_input_tokens, 4000);
    // input 1000 + 600 creation at 3, 4000 cache at 0.3, 250 output at 15
    const expected = expectedCharge(MESSAGES_CATALOG['claude-main'].rates,
      anthropicKinds({ input: 1000, creation: 600, cacheRead: 4000, output: 250 }));
    assert.equal(expected, 4800n + 1200n + 3750n);
    assert.equal(toMicro(res.headers.get('x-provider-credits')), expected);
    assert.equal(toMicro(rawUsageCredits(res.text)), expected);
    assert.equal(stack.balance(user.id), before - expected);
    checkLedger(res.headers.get('x-request-id'), expected);
    const row = stack.ledger(res.headers.get('x-request-id'));
    assert.equal(row.input_tokens, 1600);
    assert.equal(row.cache_tokens, 4000);
    assert.equal(row.output_tokens, 250);
    assert.equal(row.reasoning_tokens, 0);
    assertNoSecrets(res, stack);
  });

  it('takes the key as x-api-key, as Bearer, or both, and later version dates', async () => {
    for (const [auth, version] of [['x-api-key', '2023-06-01'], ['bearer', '2025-11-01'],
      ['both', '2024-02-29']]) {
      const res = await messages(stack, user.key.secret, messagesBody('claude-nocache'),
        { auth, version });
      assert.equal(res.status, 200, `${auth} ${version}: ${res.text}`);
      assert.equal(res.json.model, 'claude-nocache');
      // 12 input at 1.000001 -> 13 micro (rounded up); 16 output at 5.5 -> 88
      const expected = expectedCharge(MESSAGES_CATALOG['claude-nocache'].rates,
        anthropicKinds({ input: mockInputTokens('hello world'), output: 16 }));
      assert.equal(expected, 101n);
      assert.equal(toMicro(res.headers.get('x-provider-credits')), expected);
      checkLedger(res.headers.get('x-request-id'), expected, 'ok', 'claude-nocache');
    }
  });

  it('routes on the path: ?beta=true is served the same', async () => {
    const res = await messages(stack, user.key.secret, messagesBody('claude-main'),
      { path: '/v1/messages?beta=true' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.type, 'message');
  });

  it('forwards natively: upstream id, normalised body, known version, betas, no client key', async () => {
    const body = {
      model: 'claude-main',
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2000 },
      metadata: { user_id: 'session-1' },
      stop_sequences: ['END'],
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      tools: [{ name: 'Read', description: 'read a file', input_schema: { type: 'object' },
        cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'read it', cache_control: { type: 'ephemeral' } }] },
        { role: 'assistant', content: [
          { type: 'thinking', thinking: 'I should read', signature: 'sig-abc' },
          { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: '/tmp/x.png' } }] },
        { role: 'system', content: 'Mid-conversation reminder.' },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [
          { type: 'text', text: 'file follows' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        ] }] },
      ],
    };
    const res = await messages(stack, user.key.secret, body, {
      auth: 'both', version: '2025-11-01',
      headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14,some-future-beta' },
    });
    assert.equal(res.status, 200, res.text);
    assert.ok(res.json.content[0].text.startsWith('tool said: file follows\n[image content is not supp'),
      `the reply echoes the tool result with the note: ${res.text}`);
    const last = await stack.mock.last();
    assert.equal(last.path, '/v1/messages');
    assert.equal(last.body.model, 'mock-claude');
    assert.equal(last.headers['anthropic-version'], '2023-06-01');
    assert.equal(last.headers['anthropic-beta'], 'interleaved-thinking-2025-05-14,some-future-beta');
    assert.equal(last.headers['x-api-key'], undefined, 'the client key is not forwarded');
    assert.match(last.headers.authorization, /^Bearer gwtok-/, 'the service token');
    const sent = JSON.stringify(last.body);
    assert.ok(!sent.includes(user.key.secret));
    assert.ok(!sent.includes('cache_control'), sent);
    assert.ok(!sent.includes('thinking'), sent);
    assert.ok(!sent.includes('sig-abc'), sent);
    assert.ok(!sent.includes('iVBORw0KGgo='), sent);
    assert.deepEqual(last.body.metadata, { user_id: 'session-1' });
    assert.deepEqual(last.body.stop_sequences, ['END']);
    assert.deepEqual(last.body.system, [{ type: 'text', text: 'You are terse.' },
      { type: 'text', text: 'Mid-conversation reminder.' }]);
    assert.equal(last.body.messages.length, 3);
    assert.deepEqual(last.body.messages[1].content,
      [{ type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: '/tmp/x.png' } }]);
    assert.deepEqual(last.body.messages[2].content[0].content[1], {
      type: 'text', text: '[image content is not supported by this service and was removed]' });
    assert.deepEqual(last.body.tools, [{ name: 'Read', description: 'read a file',
      input_schema: { type: 'object' } }]);
  });

  it('answers a tool_use and then reads the tool_result (a tool round trip)', async () => {
    const tools = [{ name: 'get_weather', description: 'weather', input_schema: {
      type: 'object', properties: { city: { type: 'string' } } } }];
    const ask = { role: 'user', content: 'weather?\nARGS: {"city":"Paris"}' };
    const first = await messages(stack, user.key.secret,
      messagesBody('claude-main', { max_tokens: 100, tools, messages: [ask] }));
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.stop_reason, 'tool_use');
    const use = first.json.content[0];
    assert.equal(use.type, 'tool_use');
    assert.deepEqual(use.input, { city: 'Paris' });
    const second = await messages(stack, user.key.secret, messagesBody('claude-main', {
      max_tokens: 100, tools, messages: [ask, { role: 'assistant', content: first.json.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }],
    }));
    assert.equal(second.status, 200, second.text);
    assert.equal(second.json.content[0].text, 'tool said: sunny');
  });

  it('streams event by event, flushed, with credits in message_delta and settles at message_stop', async () => {
    const before = stack.balance(user.id);
    const s = await messagesStream(stack, user.key.secret, messagesBody('claude-trickle', {
      messages: [{ role: 'user', content: 'hi' }], system: 'x'.repeat(5000),
      metadata: { mock_usage: { prompt: 5000, completion: 16, cached: 1000 } },
    }));
    assert.equal(s.status, 200);
    assert.match(s.headers.get('content-type'), /^text\/event-stream/);
    assert.ok(s.headers.get('x-request-id'));
    const names = s.events.map((e) => e.event).filter((n) => n !== 'ping');
    // "mock reply to: hi" in pieces of 8 bytes: three deltas
    assert.deepEqual(names, ['message_start', 'content_block_start', 'content_block_delta',
      'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta',
      'message_stop']);
    for (const e of s.events) assert.equal(e.json?.type, e.event, `data.type of ${e.raw}`);
    // The gateway sleeps 1.6 s between events: a relay that buffered would
    // deliver them together at the end.
    const start = s.events.find((e) => e.event === 'message_start');
    const stop = s.events.find((e) => e.event === 'message_stop');
    assert.ok(stop.at - start.at > 6000, `message_start at ${start.at} ms, message_stop at ${stop.at} ms`);
    // One ping comes from the gateway itself; ours fill the silences.
    const pings = s.events.filter((e) => e.event === 'ping');
    assert.ok(pings.length >= 3, `pings: ${pings.length} in ${s.text}`);
    assert.equal(start.json.message.model, 'claude-trickle');
    const text = s.events.filter((e) => e.event === 'content_block_delta')
      .map((e) => e.json.delta.text).join('');
    assert.equal(text, 'mock reply to: hi');
    const expected = expectedCharge(MESSAGES_CATALOG['claude-trickle'].rates,
      anthropicKinds({ input: 5000, cacheRead: 1000, output: 16 }));
    const delta = s.events.find((e) => e.event === 'message_delta');
    assert.equal(delta.json.usage.output_tokens, 16);
    assert.equal(toMicro(/"credits":([0-9.e-]+)/.exec(delta.data)[1]), expected);
    assert.equal(stack.balance(user.id), before - expected);
    checkLedger(s.headers.get('x-request-id'), expected, 'ok', 'claude-trickle');
    assertNoSecrets({ text: s.text, headers: s.headers }, stack);
  });

  it('streams a tool_use as input_json_delta pieces', async () => {
    const s = await messagesStream(stack, user.key.secret, messagesBody('claude-main', {
      max_tokens: 50,
      tools: [{ name: 'a', input_schema: { type: 'object' } }, { name: 'b', input_schema: { type: 'object' } }],
      tool_choice: { type: 'tool', name: 'b' },
      messages: [{ role: 'user', content: 'go\nARGS: {"path":"/etc/hostname","n":1}' }],
    }));
    assert.equal(s.status, 200);
    const block = s.events.find((e) => e.event === 'content_block_start').json.content_block;
    assert.equal(block.type, 'tool_use');
    assert.equal(block.name, 'b');
    const json = s.events.filter((e) => e.event === 'content_block_delta')
      .map((e) => e.json.delta.partial_json).join('');
    assert.deepEqual(JSON.parse(json), { path: '/etc/hostname', n: 1 });
    const delta = s.events.find((e) => e.event === 'message_delta');
    assert.equal(delta.json.delta.stop_reason, 'tool_use');
    assert.equal(s.events.at(-1).event, 'message_stop');
  });

  it('counts tokens through the gateway, never charged and never in the ledger', async () => {
    const before = stack.balance(user.id);
    const ledgerRows = stack.sql('SELECT COUNT(*) AS n FROM ledger')[0].n;
    const body = { model: 'claude-main', system: 'sys', messages: [{ role: 'user', content: 'count me please' }],
      thinking: { type: 'enabled', budget_tokens: 1024 } };
    const res = await messages(stack, user.key.secret, body, { path: '/v1/messages/count_tokens' });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { input_tokens: mockInputTokens('sys', 'count me please') });
    const last = await stack.mock.last();
    assert.equal(last.path, '/v1/messages/count_tokens');
    assert.equal(last.body.model, 'mock-claude');
    assert.equal(last.body.thinking, undefined);
    assert.equal(res.headers.get('x-provider-credits'), null);
    // a gateway without count_tokens: our estimate
    const est = await messages(stack, user.key.secret, { ...body, model: 'claude-nocount' },
      { path: '/v1/messages/count_tokens?beta=true' });
    assert.equal(est.status, 200, est.text);
    assert.equal(est.headers.get('x-provider-token-count'), 'estimated');
    assert.ok(Number.isInteger(est.json.input_tokens) && est.json.input_tokens > 0, est.text);
    assert.equal(stack.balance(user.id), before);
    assert.equal(stack.sql('SELECT COUNT(*) AS n FROM ledger')[0].n, ledgerRows);
  });
});
