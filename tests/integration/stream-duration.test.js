// tests/integration/stream-duration.test.js: a settlement always lands, and a
// stream has a maximum duration (issue 29, rows 6 and 11, invariant 4), on
// SQLite and (PROVIDER_TEST_PGSQL=1) PostgreSQL.
//
// A stream that outlives ProviderHoldTimeout (the test clock moved past the
// timeout while the mock gateway trickles its events) has its hold expired
// by the billing writer's sweep; the stream's settlement then completes the
// expired row: the ledger ends `ok` with the credits the client was told,
// the balance and the key's buckets carry the charge, once. And a stream
// that reaches ProviderStreamMaxDuration is ended like a gateway cut, in the
// transport's own error event (Messages `event: error`, Responses
// `response.failed`) naming the limit, charged for what was delivered. A
// ProviderStreamMaxDuration at or above ProviderHoldTimeout is refused at
// start-up.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, DEFAULT_UPSTREAMS } from './lib/server.js';
import { eventually, toMicro } from './lib/helpers.js';
import { messagesStream, MESSAGES_UPSTREAMS } from './lib/messages.js';
import { bucketSum, nextHour } from './lib/billing.js';

const HOLD_TIMEOUT = 60;
const RATES = { input: '1', output: '2' };
// About 8 s of stream: 20 text pieces 400 ms apart.
const SLOW = { 'sd-claude': 'mock-claude-fault-trickle-400,pieces-20',
  'sd-gpt': 'mock-fault-trickle-400,pieces-20' };
// What the sweep and the late settlement log (warnings).
const LATE_LOG = /PROV00051|PROV00058/;
const CUT_LOG = /PROV00104|PROV00120|PROV00140/;

/** Events of an SSE body: [{event, data}] with data parsed as JSON. */
function sse(text) {
  return text.split('\n\n').filter((b) => b.trim()).map((block) => {
    let event = null;
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    return { event, data: JSON.parse(data.join('\n')) };
  });
}

/** A stack whose slow models stream for about 8 s; extra: directives. */
function slowStack(extra, clock) {
  const user = {};
  return startStack({
    clock,
    models: [...DEFAULT_UPSTREAMS, ...MESSAGES_UPSTREAMS, ...Object.values(SLOW)],
    overrides: { ProviderHoldTimeout: String(HOLD_TIMEOUT), ...extra },
    seed: (s) => {
      for (const [id, up] of Object.entries(SLOW)) {
        const claude = id.includes('claude');
        s.addModel(id, up, { rates: RATES, ...(claude ? { family: 'anthropic' } : {}) });
        if (claude) s.ctl('model', 'set', id, '--messages', 'on');
      }
      user.id = s.addUser('duration@example.test', 100);
      user.key = s.createKey('duration@example.test');
    },
  }).then((stack) => ({ stack, user }));
}

const claudeBody = (text) => ({ model: 'sd-claude', max_tokens: 400,
  messages: [{ role: 'user', content: text }] });
const gptBody = (text) => ({ model: 'sd-gpt', input: text, stream: true,
  max_output_tokens: 400 });

describe('a stream outlives its hold (row 6): the late settlement lands', { timeout: 180000 }, () => {
  let stack;
  let user;
  let clock = nextHour(Math.floor(Date.now() / 1000)) + 60;
  before(async () => {
    ({ stack, user } = await slowStack({}, clock));
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  /**
   * Runs send() (a slow stream), and while it streams moves the clock past
   * the hold timeout and waits for the sweep to expire its hold. Returns
   * [what send resolved to, the request id].
   */
  async function outliveHold(send) {
    const pending = send();
    let rid = null;
    await eventually(() => {
      const rows = stack.sql(`SELECT request_id FROM ledger WHERE user_id = ${user.id}
        AND status = 'reserved'`);
      assert.equal(rows.length, 1, 'the stream holds its estimate');
      rid = rows[0].request_id;
    }, 5000, 50);
    clock += HOLD_TIMEOUT + 5;
    stack.setClock(clock);
    await eventually(() => assert.equal(stack.ledger(rid).status, 'expired'), 5000, 50);
    return [await pending, rid];
  }

  /** The row of rid, once settled late: charged told, the balance and the
   * key's week carry it. */
  async function landed(rid, told, b0, week0) {
    let row;
    await eventually(() => {
      row = stack.ledger(rid);
      assert.notEqual(row.status, 'expired', 'the late settlement completed the row');
    }, 10000, 100);
    await stack.billingSettled();
    assert.equal(row.status, 'ok');
    assert.ok(told > 0n);
    assert.equal(BigInt(row.credits), told, 'the ledger says what the client was told');
    assert.ok(Number(row.output_tokens) > 0);
    assert.equal(stack.balance(user.id), b0 - told, 'the balance carries the charge');
    assert.equal(bucketSum(stack, 'key:h', user.key.id) - week0, told, 'the key\'s week too');
  }

  it('messages: the stream ends complete and its expired row is charged what it was told', async () => {
    const b0 = stack.balance(user.id);
    const week0 = bucketSum(stack, 'key:h', user.key.id);
    const [s, rid] = await stack.expectingLog(LATE_LOG, () => outliveHold(
      () => messagesStream(stack, user.key.secret, claudeBody('outlive the hold'))));
    assert.equal(s.status, 200);
    assert.equal(s.headers.get('x-request-id'), rid);
    assert.ok(s.events.some((e) => e.event === 'message_stop'), s.text);
    const delta = s.events.find((e) => e.event === 'message_delta');
    await landed(rid, toMicro(delta.json.usage.credits), b0, week0);
    // Once: another sweep later moves nothing.
    clock += HOLD_TIMEOUT + 5;
    stack.setClock(clock);
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(stack.ledger(rid).status, 'ok');
    assert.equal(stack.balance(user.id), b0 - toMicro(delta.json.usage.credits));
  });

  it('responses: the same through response.completed', async () => {
    const b0 = stack.balance(user.id);
    const week0 = bucketSum(stack, 'key:h', user.key.id);
    const [res, rid] = await stack.expectingLog(LATE_LOG, () => outliveHold(
      () => stack.request('POST', '/v1/responses',
        { key: user.key.secret, body: gptBody('outlive the hold too') })));
    assert.equal(res.status, 200, res.text);
    const last = sse(res.text).at(-1).data;
    assert.equal(last.type, 'response.completed', res.text);
    await landed(rid, toMicro(last.response.usage.credits), b0, week0);
  });
});

describe('ProviderStreamMaxDuration', { timeout: 180000 }, () => {
  let stack;
  let user;
  before(async () => {
    ({ stack, user } = await slowStack({ ProviderStreamMaxDuration: '2' }));
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  /** The ledger row of rid once settled; the balance moved by its credits. */
  function settled(rid, before) {
    return stack.settledRow(rid, user.id, before);
  }

  it('messages: a stream that reaches it ends in an error event naming it, charged what was delivered', async () => {
    const b0 = stack.balance(user.id);
    const t0 = Date.now();
    const s = await stack.expectingLog(CUT_LOG,
      () => messagesStream(stack, user.key.secret, claudeBody('go on for too long')));
    const took = Date.now() - t0;
    assert.equal(s.status, 200);
    assert.ok(took >= 1900 && took < 6000, `cut after ${took} ms`);
    const last = s.events.at(-1);
    assert.equal(last.event, 'error', s.text);
    assert.equal(last.json.error.type, 'timeout_error');
    assert.match(last.json.error.message, /longest time a stream may last here \(2 s\)/);
    assert.ok(!s.events.some((e) => e.event === 'message_stop'));
    const deltas = s.events.filter((e) => e.event === 'content_block_delta');
    assert.ok(deltas.length > 0 && deltas.length < 20, `${deltas.length} pieces delivered`);
    const told = toMicro(last.json.usage.credits);
    const row = await settled(s.headers.get('x-request-id'), b0);
    assert.equal(row.status, 'estimated', 'billed by what was delivered');
    assert.equal(BigInt(row.credits), told);
    assert.ok(told > 0n);
    assert.ok(BigInt(row.credits) < BigInt(row.reserved));
  });

  it('responses: response.failed with STREAM_MAX_DURATION, charged what was delivered', async () => {
    const b0 = stack.balance(user.id);
    const res = await stack.expectingLog(CUT_LOG, () => stack.request('POST', '/v1/responses',
      { key: user.key.secret, body: gptBody('and this one too') }));
    assert.equal(res.status, 200);
    const evs = sse(res.text);
    const last = evs.at(-1).data;
    assert.equal(last.type, 'response.failed', res.text);
    assert.equal(last.response.error.code, 'STREAM_MAX_DURATION');
    assert.match(last.response.error.message, /\(2 s\)/);
    assert.ok(evs.some((e) => e.data.type === 'response.output_text.delta'));
    const told = toMicro(last.response.usage.credits);
    const row = await settled(res.headers.get('x-request-id'), b0);
    assert.equal(row.status, 'estimated');
    assert.equal(BigInt(row.credits), told);
    assert.ok(told > 0n);
  });
});

describe('ProviderStreamMaxDuration against ProviderHoldTimeout', { timeout: 60000 }, () => {
  it('refuses to start with a maximum at or above the hold timeout', async () => {
    await assert.rejects(startStack({
      overrides: { ProviderHoldTimeout: '600', ProviderStreamMaxDuration: '600' },
    }), (e) => {
      assert.match(e.message, /apache2 exited at start/);
      assert.match(e.message, /PROV00009: ProviderStreamMaxDuration \(600 s\) must be below ProviderHoldTimeout \(600 s\)/);
      return true;
    });
  });
});
