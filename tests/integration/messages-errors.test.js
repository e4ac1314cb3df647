// tests/integration/messages-errors.test.js: every refusal and failure of
// POST /v1/messages in the Anthropic error shape with the service's code, in
// the specification's order (the key before anything else), none of them charged
// and none of the request refusals reaching the gateway: the version header,
// validation (image/document blocks named), models outside the messages
// family, the key's budget and the balance (429/402 with x-should-retry:
// false), gateway faults (500 and malformed: 502; 429: 429 rate_limit_exceeded
// with Retry-After; a context overflow: 400 context_length_exceeded told in our
// words that start "prompt is too long"), and streams cut by the gateway or by
// the client, which are charged for what was delivered (the input the gateway
// reported and the output relayed, docs/internals/broken-streams.md).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './lib/server.js';
import {
  assertNoSecrets, eventually, expectedCharge, toMicro, unknownKey, worstHold, microToText,
} from './lib/helpers.js';
import {
  MESSAGES_CATALOG, MESSAGES_UPSTREAMS, seedMessagesCatalog, messages, messagesBody,
  messagesStream, assertAnthropicError, anthropicKinds, mockInputTokens,
} from './lib/messages.js';

describe('POST /v1/messages: refusals and failures', { timeout: 180000 }, () => {
  let stack;
  let user;
  let budgeted;
  let broke;

  before(async () => {
    stack = await startStack({
      models: MESSAGES_UPSTREAMS,
      overrides: { ProviderGatewayTimeout: '60', ProviderStreamPingInterval: '1' },
      seed: (s) => {
        seedMessagesCatalog(s);
        user = { id: s.addUser('err@example.test', 1000) };
        user.key = s.createKey('err@example.test');
        budgeted = { id: s.addUser('budget@example.test', 1000) };
        // one small request fits, a second one no longer does
        // room for the hold of one request, not of a second after its charge
        budgeted.key = s.createKey('budget@example.test', { budget: microToText(
          worstHold(MESSAGES_CATALOG['claude-main'].rates, messagesBody('claude-main'), 16)) });
        broke = { id: s.addUser('broke@example.test') };
        broke.key = s.createKey('broke@example.test');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  async function seq() {
    return (await stack.mock.last().catch(() => ({ seq: 0 }))).seq;
  }

  /** Runs fn and asserts that the gateway got no request and nothing was charged. */
  async function untouched(fn, who = user) {
    const s0 = await seq();
    const b0 = stack.balance(who.id);
    const res = await fn();
    assert.equal(await seq(), s0, 'the gateway was not called');
    assert.equal(stack.balance(who.id), b0, 'nothing charged');
    assertNoSecrets(res, stack);
    return res;
  }

  it('401 without a key or with an unknown one, before the version is looked at', async () => {
    let res = await untouched(() => messages(stack, null, messagesBody('claude-main'), { version: null }));
    assertAnthropicError(res, 401, 'authentication_error', 'INVALID_API_KEY');
    res = await untouched(() => messages(stack, unknownKey(), messagesBody('claude-main')));
    assertAnthropicError(res, 401, 'authentication_error', 'INVALID_API_KEY');
  });

  it('400 without anthropic-version, with a malformed one, or one before 2023-06-01', async () => {
    for (const version of [null, 'latest', '2023-6-1', '2023-13-01', '2023-01-01']) {
      const res = await untouched(() => messages(stack, user.key.secret, messagesBody('claude-main'),
        { version }));
      const e = assertAnthropicError(res, 400, 'invalid_request_error', 'INVALID_REQUEST');
      assert.match(e.message, /anthropic-version/);
    }
  });

  it('400 for invalid requests, naming the field or block', async () => {
    const cases = [
      [{ model: 'claude-main', messages: [{ role: 'user', content: 'x' }] }, /max_tokens/],
      [messagesBody('claude-main', { messages: [] }), /messages/],
      ['{"model":', /not valid JSON/],
      [messagesBody('claude-main', { messages: [{ role: 'user', content: [
        { type: 'text', text: 'see' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }] }),
      /messages\[0\]\.content\[1\]: 'image'/],
      [messagesBody('claude-main', { messages: [{ role: 'user', content: [
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] }),
      /messages\[0\]\.content\[0\]: 'document'/],
      [messagesBody('claude-main', { system: 42 }), /system/],
    ];
    for (const [body, re] of cases) {
      const res = await untouched(() => messages(stack, user.key.secret, body));
      const e = assertAnthropicError(res, 400, 'invalid_request_error', 'INVALID_REQUEST');
      assert.match(e.message, re);
    }
  });

  it('404 not_found_error for models that are not served on /v1/messages', async () => {
    for (const model of ['claude-off', 'gpt-chat', 'no-such-model']) {
      const res = await untouched(() => messages(stack, user.key.secret, messagesBody(model)));
      const e = assertAnthropicError(res, 404, 'not_found_error', 'MODEL_NOT_FOUND');
      assert.match(e.message, /\/v1\/messages/);
    }
  });

  it('429 for a spent key budget and 402 without credit, never retried by the SDKs', async () => {
    let res = await messages(stack, budgeted.key.secret, messagesBody('claude-main'));
    assert.equal(res.status, 200, res.text);
    res = await untouched(() => messages(stack, budgeted.key.secret, messagesBody('claude-main')),
      budgeted);
    assertAnthropicError(res, 429, 'rate_limit_error', 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    assert.equal(res.headers.get('x-should-retry'), 'false');
    assert.match(res.headers.get('retry-after') || '', /^[1-9][0-9]*$/, 'Retry-After in seconds');
    res = await untouched(() => messages(stack, broke.key.secret, messagesBody('claude-main')), broke);
    assertAnthropicError(res, 402, 'billing_error', 'INSUFFICIENT_CREDITS');
    assert.equal(res.headers.get('x-should-retry'), 'false');
    // count_tokens holds nothing, so it still works for both
    res = await messages(stack, broke.key.secret, messagesBody('claude-main'),
      { path: '/v1/messages/count_tokens' });
    assert.equal(res.status, 200, res.text);
  });

  it('says "prompt is too long" in our words (what Claude Code looks for), uncharged, plain and streamed', async () => {
    const b0 = stack.balance(user.id);
    const ours = "prompt is too long: 250000 tokens > 200000 maximum. The prompt is longer than "
      + "this model's context window.";
    let res = await messages(stack, user.key.secret, messagesBody('claude-overflow'));
    let e = assertAnthropicError(res, 400, 'invalid_request_error', 'context_length_exceeded');
    assert.equal(e.message, ours);
    assert.equal(stack.ledger(res.headers.get('x-request-id')).status, 'refused');
    res = await messages(stack, user.key.secret, messagesBody('claude-overflow', { stream: true }));
    e = assertAnthropicError(res, 400, 'invalid_request_error', 'context_length_exceeded');
    assert.equal(e.message, ours);
    assert.equal(stack.balance(user.id), b0);
  });

  it('gateway 500 and malformed answers are 502, a 429 is 429 with Retry-After, in our shape, released', async () => {
    const b0 = stack.balance(user.id);
    for (const stream of [false, true]) {
      let res = await messages(stack, user.key.secret, messagesBody('claude-500', { stream }));
      assertAnthropicError(res, 502, 'api_error', 'GATEWAY_ERROR');
      assert.equal(stack.ledger(res.headers.get('x-request-id')).credits, '0');
      res = await messages(stack, user.key.secret, messagesBody('claude-429', { stream }));
      assertAnthropicError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
      assert.equal(res.headers.get('retry-after'), '1', "the gateway's Retry-After");
      assert.notEqual(res.headers.get('x-should-retry'), 'false', 'the SDKs retry it');
      assert.equal(stack.ledger(res.headers.get('x-request-id')).credits, '0');
      res = await messages(stack, user.key.secret, messagesBody('claude-malformed', { stream }));
      assertAnthropicError(res, 502, 'api_error', 'GATEWAY_ERROR');
      assertNoSecrets(res, stack);
    }
    assert.equal(stack.balance(user.id), b0);
  });

  it('a stream cut by the gateway ends with an error event and is charged what was delivered', async () => {
    const b0 = stack.balance(user.id);
    // the gateway client logs the cut transfer as a warning
    const s = await stack.expectingLog(/PROV00030/, () => messagesStream(stack, user.key.secret,
      messagesBody('claude-cut', {
        max_tokens: 100, messages: [{ role: 'user', content: 'a somewhat longer question to answer' }],
      })));
    assert.equal(s.status, 200);
    const names = s.events.map((e) => e.event);
    assert.equal(names[0], 'message_start');
    assert.ok(!names.includes('message_stop'), names.join());
    assert.equal(names.at(-1), 'error');
    assert.equal(s.events.at(-1).json.error.code, 'GATEWAY_ERROR');
    // message_start reported the input (and 1 output token); the output is
    // the text relayed, 3 bytes a token rounded up
    const bytes = s.events.filter((e) => e.event === 'content_block_delta')
      .reduce((n, e) => n + Buffer.byteLength(e.json.delta.text), 0);
    assert.ok(bytes > 0, 'some text was relayed before the cut');
    const expected = expectedCharge(MESSAGES_CATALOG['claude-cut'].rates, anthropicKinds({
      input: mockInputTokens('a somewhat longer question to answer'),
      output: Math.max(1, Math.ceil(bytes / 3)) }));
    const row = stack.ledger(s.headers.get('x-request-id'));
    assert.equal(row.status, 'estimated');
    assert.equal(BigInt(row.credits), expected);
    assert.equal(toMicro(s.events.at(-1).json.usage.credits), expected, 'the client is told');
    assert.equal(stack.balance(user.id), b0 - expected);
    // non-streamed: a cut body is a gateway error, not charged
    const res = await stack.expectingLog(/PROV00030/, () =>
      messages(stack, user.key.secret, messagesBody('claude-cut')));
    assertAnthropicError(res, 502, 'api_error', 'GATEWAY_ERROR');
    assert.equal(stack.balance(user.id), b0 - expected);
  });

  it('a stream the client abandons is charged for what was relayed', async () => {
    const b0 = stack.balance(user.id);
    const s = await messagesStream(stack, user.key.secret, messagesBody('claude-drip', {
      max_tokens: 20, messages: [{ role: 'user', content: 'tell me a long story please' }],
    }), { abortAfter: 2 });
    assert.equal(s.events[0].event, 'message_start');
    const rid = s.headers.get('x-request-id');
    // the reported input, and the output relayed until the module noticed
    // (8-byte pieces; message_start said 1 token)
    const charge = (pieces) => expectedCharge(MESSAGES_CATALOG['claude-drip'].rates,
      anthropicKinds({ input: mockInputTokens('tell me a long story please'),
        output: Math.max(1, Math.ceil((8 * pieces) / 3)) }));
    let row;
    await eventually(() => {
      row = stack.ledger(rid);
      assert.equal(row.status, 'estimated', JSON.stringify(row));
    }, 15000, 250);
    const possible = Array.from({ length: 6 }, (_, k) => charge(k));
    assert.ok(possible.includes(BigInt(row.credits)), `credits ${row.credits} of ${possible}`);
    assert.ok(BigInt(row.credits) <= BigInt(row.reserved));
    assert.equal(stack.balance(user.id), b0 - BigInt(row.credits));
    assert.equal(stack.sql("SELECT COUNT(*) AS n FROM ledger WHERE status = 'reserved'")[0].n, 0,
      'no hold is left behind');
  });
});
