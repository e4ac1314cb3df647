// tests/integration/usage-strict.test.js: usage is read strictly (issue 29,
// rows 7-10; docs/internals/billing.md, "How usage reports are read"), on
// each transport, plain and streamed, against mockgw's usage faults
// (tests/mockgw/README.md). A usage whose counts are strings, floats, null,
// {} or under the other family's names is no usage: the answer is charged
// the estimate (ledger status `estimated`), the client told that figure, and
// an unreadable report is logged (PROV00305, naming the request). A Responses
// stream whose first chunk carries usage and whose text follows is charged
// for the text (the report was partial). A reported input of 0 takes the
// input estimate, in a complete answer and in a stream the client leaves.
// Messages content after message_delta is not relayed, and the figure told
// is the charge; Responses text after the usage chunk is relayed and counted.
// Runs on SQLite, and on PostgreSQL with PROVIDER_TEST_PGSQL=1.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startStack } from './lib/server.js';
import { toMicro } from './lib/helpers.js';
import { messages, messagesStream, mockInputTokens } from './lib/messages.js';

// A micro-credit an input token, two an output token.
const RATES = { input: '1', output: '2' };
const SHAPES = ['usage-strings', 'usage-float', 'usage-null', 'usage-empty', 'usage-renamed'];
const UNREADABLE = /PROV00305/;

/** The documented input estimate: floor(prompt bytes / 3) + 8 per message + 16. */
const inputEstimate = (text) => Math.floor(Buffer.byteLength(text) / 3) + 8 + 16;
/** Output tokens of delivered text: 3 bytes a token, rounded up. */
const outputTokens = (bytes) => Math.ceil(bytes / 3);
const charge = (input, output) => BigInt(input) + 2n * BigInt(output);

/** The data of an SSE body's events, parsed. */
function sse(text) {
  return text.split('\n\n').filter((b) => b.trim()).map((b) => JSON.parse(
    b.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n')));
}

const deltaBytes = (evs) => evs.filter((e) => e.type === 'response.output_text.delta')
  .reduce((n, e) => n + Buffer.byteLength(e.delta), 0);

describe('usage read strictly', { timeout: 300000 }, () => {
  let stack;
  let user;
  const chatModels = {};
  const claudeModels = {};

  before(async () => {
    const upstreams = [];
    for (const f of [...SHAPES, 'zero-input', 'after-delta', 'early-usage,pieces-375']) {
      chatModels[f] = `us-${f.replace(/[^a-z0-9]+/g, '-')}`;
      claudeModels[f] = `usc-${f.replace(/[^a-z0-9]+/g, '-')}`;
      upstreams.push(`mock-fault-${f}`, `mock-claude-fault-${f}`);
    }
    upstreams.push('mock-main', 'mock-claude-fault-zero-input,trickle-400');
    stack = await startStack({
      models: upstreams,
      overrides: { ProviderGatewayTimeout: '30' },
      seed: (s) => {
        for (const f of Object.keys(chatModels)) {
          s.addModel(chatModels[f], `mock-fault-${f}`, { rates: RATES });
          s.addModel(claudeModels[f], `mock-claude-fault-${f}`,
            { rates: RATES, family: 'anthropic' });
          s.ctl('model', 'set', claudeModels[f], '--messages', 'on');
        }
        s.addModel('us-main', 'mock-main', { rates: RATES });
        s.addModel('usc-zero-drip', 'mock-claude-fault-zero-input,trickle-400',
          { rates: RATES, family: 'anthropic' });
        s.ctl('model', 'set', 'usc-zero-drip', '--messages', 'on');
        user = { id: s.addUser('strict@example.test', 100) };
        user.key = s.createKey('strict@example.test');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  /** The ledger row of rid once settled; the balance moved by its credits. */
  function settled(rid, before) {
    return stack.settledRow(rid, user.id, before);
  }

  /** Runs send (returning a response-like object with headers) expecting
   * PROV00305 for an unreadable shape; checks the log names the request
   * exactly when the shape is unreadable (usage null is no report at all). */
  async function sent(shape, send) {
    const from = stack.logSize();
    const res = await stack.expectingLog(UNREADABLE, send);
    const rid = res.headers.get('x-request-id');
    assert.ok(rid, 'x-request-id');
    await stack.billingSettled();
    const log = fs.readFileSync(stack.errorLog, 'utf8').slice(from).split('\n')
      .filter((l) => UNREADABLE.test(l) && l.includes(rid));
    assert.equal(log.length, shape === 'usage-null' ? 0 : 1, `${shape}: ${log.join('\n')}`);
    return { res, rid };
  }

  const post = (path, body) => stack.request('POST', path, { key: user.key.secret, body });
  const claude = (model, text, extra = {}) => ({
    model, max_tokens: 60, messages: [{ role: 'user', content: text }], ...extra,
  });

  /* ---- row 7: unreadable usage is no usage ----------------------------------- */

  for (const shape of SHAPES) {
    it(`${shape}: chat is charged the estimate`, async () => {
      const b0 = stack.balance(user.id);
      const text = `what does ${shape} cost`;
      const { res, rid } = await sent(shape, () => stack.chat(user.key.secret,
        { model: chatModels[shape], messages: [{ role: 'user', content: text }], max_tokens: 50 }));
      assert.equal(res.status, 200, res.text);
      const expected = charge(inputEstimate(text),
        outputTokens(Buffer.byteLength(res.json.choices[0].message.content)));
      const row = await settled(rid, b0);
      assert.equal(row.status, 'estimated');
      assert.equal(BigInt(row.credits), expected);
      assert.equal(toMicro(res.headers.get('x-provider-credits')), expected);
    });

    it(`${shape}: messages, plain and streamed, is charged the estimate`, async () => {
      let b0 = stack.balance(user.id);
      const text = `and on messages, ${shape}`;
      let { res, rid } = await sent(shape, () => messages(stack, user.key.secret,
        claude(claudeModels[shape], text)));
      assert.equal(res.status, 200, res.text);
      let expected = charge(inputEstimate(text),
        outputTokens(Buffer.byteLength(res.json.content[0].text)));
      let row = await settled(rid, b0);
      assert.equal(row.status, 'estimated');
      assert.equal(BigInt(row.credits), expected);
      assert.equal(toMicro(res.headers.get('x-provider-credits')), expected);

      b0 = stack.balance(user.id);
      ({ res, rid } = await sent(shape, () => messagesStream(stack, user.key.secret,
        claude(claudeModels[shape], text))));
      assert.equal(res.status, 200);
      assert.equal(res.events.at(-1).event, 'message_stop');
      const bytes = res.events.filter((e) => e.event === 'content_block_delta')
        .reduce((n, e) => n + Buffer.byteLength(e.json.delta.text || ''), 0);
      expected = charge(inputEstimate(text), outputTokens(bytes));
      row = await settled(rid, b0);
      assert.equal(row.status, 'estimated');
      assert.equal(BigInt(row.credits), expected);
      const delta = res.events.find((e) => e.event === 'message_delta');
      assert.equal(toMicro(delta.json.usage.credits), expected, 'message_delta told it');
    });

    it(`${shape}: responses, plain and streamed, is charged the estimate`, async () => {
      let b0 = stack.balance(user.id);
      const text = `and on responses, ${shape}`;
      let { res, rid } = await sent(shape, () => post('/v1/responses',
        { model: chatModels[shape], input: text }));
      assert.equal(res.status, 200, res.text);
      let expected = charge(inputEstimate(text),
        outputTokens(Buffer.byteLength(res.json.output[0].content[0].text)));
      let row = await settled(rid, b0);
      assert.equal(row.status, 'estimated');
      assert.equal(BigInt(row.credits), expected);
      assert.equal(toMicro(res.json.usage.credits), expected);

      b0 = stack.balance(user.id);
      ({ res, rid } = await sent(shape, () => post('/v1/responses',
        { model: chatModels[shape], input: text, stream: true })));
      const evs = sse(res.text);
      assert.equal(evs.at(-1).type, 'response.completed');
      expected = charge(inputEstimate(text), outputTokens(deltaBytes(evs)));
      row = await settled(rid, b0);
      assert.equal(row.status, 'estimated');
      assert.equal(BigInt(row.credits), expected);
      assert.equal(toMicro(evs.at(-1).response.usage.credits), expected);
    });
  }

  it('a negative count is no usage either: the estimate, not the hold', async () => {
    const b0 = stack.balance(user.id);
    const text = 'hello\nUSAGE: prompt=-5,completion=3';
    const { res, rid } = await sent('negative', () => stack.chat(user.key.secret,
      { model: 'us-main', messages: [{ role: 'user', content: text }], max_tokens: 50 }));
    assert.equal(res.status, 200, res.text);
    const expected = charge(inputEstimate(text),
      outputTokens(Buffer.byteLength(res.json.choices[0].message.content)));
    const row = await settled(rid, b0);
    assert.equal(row.status, 'estimated');
    assert.equal(BigInt(row.credits), expected);
    assert.ok(BigInt(row.credits) < BigInt(row.reserved), 'not the hold');
  });

  /* ---- row 8: a usage chunk followed by text is partial ---------------------- */

  it('early usage: a Responses stream is charged for the text after it', async () => {
    const b0 = stack.balance(user.id);
    const text = 'usage first, then the text';
    const res = await post('/v1/responses',
      { model: chatModels['early-usage,pieces-375'], input: text, stream: true });
    const evs = sse(res.text);
    assert.equal(evs.at(-1).type, 'response.completed');
    const bytes = deltaBytes(evs);
    assert.ok(bytes >= 3000, `the text: ${bytes} bytes`);
    const row = await settled(res.headers.get('x-request-id'), b0);
    assert.equal(row.status, 'estimated');
    assert.equal(Number(row.input_tokens), mockInputTokens(text), 'the reported input');
    assert.equal(Number(row.output_tokens), outputTokens(bytes));
    const expected = charge(mockInputTokens(text), outputTokens(bytes));
    assert.equal(BigInt(row.credits), expected);
    assert.equal(toMicro(evs.at(-1).response.usage.credits), expected);
  });

  /* ---- row 9: a reported input of 0 ----------------------------------------- */

  it('zero input: complete answers take the input estimate', async () => {
    const text = 'x'.repeat(3000);
    const cases = [
      () => stack.chat(user.key.secret, { model: chatModels['zero-input'], max_tokens: 50,
        messages: [{ role: 'user', content: text }] }),
      () => messages(stack, user.key.secret, claude(claudeModels['zero-input'], text)),
      () => post('/v1/responses', { model: chatModels['zero-input'], input: text,
        max_output_tokens: 50 }),
    ];
    for (const send of cases) {
      const b0 = stack.balance(user.id);
      const res = await send();
      assert.equal(res.status, 200, res.text);
      const row = await settled(res.headers.get('x-request-id'), b0);
      assert.equal(row.status, 'ok');
      assert.equal(Number(row.input_tokens), inputEstimate(text));
      assert.equal(BigInt(row.credits), charge(inputEstimate(text), 20));
      assert.equal(toMicro(res.headers.get('x-provider-credits')), BigInt(row.credits));
    }
  });

  it('zero input: a Messages stream the client leaves is charged the input estimate', async () => {
    const b0 = stack.balance(user.id);
    const text = 'y'.repeat(30000);
    const s = await messagesStream(stack, user.key.secret, claude('usc-zero-drip', text),
      { abortAfter: 4 });
    assert.equal(s.events[0].json.message.usage.input_tokens, 0, 'the gateway said 0');
    assert.equal(s.events[3].event, 'content_block_delta');
    const row = await settled(s.headers.get('x-request-id'), b0);
    assert.equal(row.status, 'estimated');
    assert.equal(Number(row.input_tokens), inputEstimate(text));
    // the estimate, and at least the piece the client read
    const possible = Array.from({ length: 8 }, (_, k) => charge(inputEstimate(text),
      Math.max(1, outputTokens(8 * k))));
    assert.ok(possible.slice(1).includes(BigInt(row.credits)), `${row.credits} of ${possible}`);
  });

  /* ---- row 10: content after the final usage ------------------------------- */

  it('after delta: Messages content after message_delta is not relayed', async () => {
    const b0 = stack.balance(user.id);
    const text = 'say something, then something late';
    const s = await messagesStream(stack, user.key.secret, claude(claudeModels['after-delta'],
      text));
    assert.equal(s.status, 200);
    assert.equal(s.events.at(-1).event, 'message_stop');
    const names = s.events.map((e) => e.event);
    assert.equal(names.indexOf('message_delta'), names.length - 2, `nothing between: ${names}`);
    assert.ok(!s.text.includes('late'), 'the late text never reached the client');
    const row = await settled(s.headers.get('x-request-id'), b0);
    assert.equal(row.status, 'ok');
    const expected = charge(mockInputTokens(text), 20);
    assert.equal(BigInt(row.credits), expected);
    const delta = s.events.find((e) => e.event === 'message_delta');
    assert.equal(toMicro(delta.json.usage.credits), expected, 'the figure told is the charge');
  });

  it('after delta: Responses text after the usage chunk is relayed and counted', async () => {
    const b0 = stack.balance(user.id);
    const text = 'and on responses, something late';
    const res = await post('/v1/responses',
      { model: chatModels['after-delta'], input: text, stream: true });
    const evs = sse(res.text);
    assert.equal(evs.at(-1).type, 'response.completed');
    const bytes = deltaBytes(evs);
    assert.ok(bytes > 1000, `the late text was relayed: ${bytes} bytes`);
    const row = await settled(res.headers.get('x-request-id'), b0);
    assert.equal(row.status, 'estimated');
    const expected = charge(mockInputTokens(text), outputTokens(bytes));
    assert.equal(BigInt(row.credits), expected);
    assert.equal(toMicro(evs.at(-1).response.usage.credits), expected);
  });
});
