// tests/integration/stream-pace.test.js: each event of a stream reaches the
// client before the gateway produces the next (issue 17: no batching a
// person would see as stutter). mockgw's lockstep fault makes the gateway
// wait, after each text piece it sends, until the client says it has that
// piece (GET /v1/_ack?n=N, sent by this test as each text delta arrives); a
// module that held an event back until the next one came would never let
// the gateway go on, and mockgw would count the piece as missed after its
// 10-second wait. No timing is asserted: only mockgw's count of pieces the
// client acknowledged and of pieces missed, for a relayed stream
// (/v1/messages) and a translated one (/v1/responses from the gateway's chat
// stream), each charged as usual.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './lib/server.js';

const VERSION = '2023-06-01';

describe('stream pace: each event flushed before the next is produced', { timeout: 120000 }, () => {
  let stack;
  let key;

  before(async () => {
    stack = await startStack({
      models: ['mock-claude-fault-lockstep', 'mock-gpt-fault-lockstep'],
      seed: (s) => {
        s.addModel('claude-lockstep', 'mock-claude-fault-lockstep',
          { family: 'anthropic', rates: { input: '1', output: '1' } });
        s.ctl('model', 'set', 'claude-lockstep', '--messages', 'on');
        s.addModel('gpt-lockstep', 'mock-gpt-fault-lockstep', { rates: { input: '1', output: '1' } });
        s.addUser('pace@example.test', 1000);
        key = s.createKey('pace@example.test').secret;
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  /** GET one of mockgw's own endpoints with the service token. */
  async function gateway(path) {
    const r = await fetch(`${stack.mock.url}${path}`, {
      headers: { authorization: `Bearer ${stack.token}` },
    });
    assert.equal(r.status, 200, `mockgw ${path}`);
    return r.json();
  }

  /**
   * Streams body to path, acknowledging each text delta (isDelta) to the
   * gateway as it arrives; returns the stream's status, events and request id.
   */
  async function lockstep(path, headers, body, isDelta) {
    const res = await fetch(`${stack.baseURL}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const out = { status: res.status, id: res.headers.get('x-request-id'), events: [], deltas: 0 };
    const decoder = new TextDecoder();
    let pending = '';
    for await (const chunk of res.body) {
      pending += decoder.decode(chunk, { stream: true });
      let at;
      while ((at = pending.indexOf('\n\n')) >= 0) {
        const raw = pending.slice(0, at);
        pending = pending.slice(at + 2);
        const data = raw.split('\n').find((l) => l.startsWith('data: '));
        const ev = data && data !== 'data: [DONE]' ? JSON.parse(data.slice(6)) : null;
        out.events.push(ev);
        if (ev && isDelta(ev)) {
          out.deltas += 1;
          await gateway(`/v1/_ack?n=${out.deltas}`);
        }
      }
    }
    return out;
  }

  async function check(path, headers, body, isDelta, lastType) {
    const before = await gateway('/v1/_lockstep');
    const s = await lockstep(path, headers, body, isDelta);
    const after = await gateway('/v1/_lockstep');
    assert.equal(s.status, 200);
    assert.equal(s.events.filter(Boolean).at(-1).type, lastType);
    // "mock reply to: hi" in pieces of 8 bytes: 3 text pieces
    assert.equal(s.deltas, 3);
    assert.deepEqual(after, {
      streams: before.streams + 1, acked: before.acked + s.deltas, missed: before.missed,
    });
    const row = stack.sql(`SELECT status FROM ledger WHERE request_id = '${s.id}'`)[0];
    assert.equal(row.status, 'ok');
  }

  it('relays each Messages event before the gateway sends the next', async () => {
    await check('/v1/messages', { 'x-api-key': key, 'anthropic-version': VERSION },
      { model: 'claude-lockstep', max_tokens: 16, stream: true,
        messages: [{ role: 'user', content: 'hi' }] },
      (ev) => ev.type === 'content_block_delta', 'message_stop');
  });

  it('translates and sends each Responses delta before the gateway sends the next', async () => {
    await check('/v1/responses', { authorization: `Bearer ${key}` },
      { model: 'gpt-lockstep', max_output_tokens: 16, stream: true, input: 'hi' },
      (ev) => ev.type === 'response.output_text.delta', 'response.completed');
  });
});
