// tests/integration/hardening-edges.test.js: the edges of issue 11, against a
// real apache2 + mod_provider + mockgw:
// * #3: a gateway that writes its own URL and an "Authorization: Bearer
//   <token>" line into an error (mockgw's leak and error-event faults) on
//   every transport, plain and streamed: the client gets the status class,
//   an allow-listed type and our message in its transport's shape, never the
//   gateway's address, token or words; the error log gets the gateway's text
//   masked (and the harness fails the file if the token is logged);
// * #6: with a long lookup cache (ProviderLookupCacheTTL 60), a blocked user,
//   a deleted key and a reissued key's old secret are refused at once on
//   count_tokens (which has no billing step) and on the inference endpoints;
// * #10: /v1/messages/... paths answer 404 in the Anthropic shape; a non-POST
//   on an inference path checks the key first (401), the user (403), then
//   405; Messages blocks outside text/tool_use/tool_result are refused by
//   name (a search_result inside a tool_result becomes text); a plan's
//   5-hour and 7-day windows are shared by two keys of one account, on the
//   test clock, with the same 429 and Retry-After for both.
// Runs on SQLite, and on PostgreSQL with PROVIDER_TEST_PGSQL=1.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, seedCatalog, CATALOG, DEFAULT_UPSTREAMS } from './lib/server.js';
import { assertOpenAIError, assertNoSecrets, chatBody, unknownKey, sseEvents } from './lib/helpers.js';
import {
  MESSAGES_UPSTREAMS, seedMessagesCatalog, messages, messagesBody, messagesStream,
  assertAnthropicError,
} from './lib/messages.js';
import {
  addBillModel, addPlan, subscribe, fullBody, nextHour, leavesAt, retryAfter, assertCharged,
  assertRefused, ledgerSums, bucketSum, FULL_CHARGE, MIN5, HOUR, WINDOW_5H, WINDOW_7D,
} from './lib/billing.js';

const LEAK_UPSTREAMS = ['mock-fault-leak', 'mock-fault-error-event', 'mock-claude-fault-leak',
  'mock-claude-fault-error-event'];


describe('issue 11 #3: gateway error text never reaches a client', { timeout: 120000 }, () => {
  let stack;
  let user;

  before(async () => {
    stack = await startStack({
      models: [...MESSAGES_UPSTREAMS, ...LEAK_UPSTREAMS],
      seed: (s) => {
        seedMessagesCatalog(s, {
          'claude-leak': { upstream: 'mock-claude-fault-leak', messages: true,
            rates: { input: '1', output: '1' } },
          'claude-event': { upstream: 'mock-claude-fault-error-event', messages: true,
            rates: { input: '1', output: '1' } },
        });
        s.addModel('gpt-leak', 'mock-fault-leak', { rates: { input: '1', output: '1' } });
        s.addModel('gpt-event', 'mock-fault-error-event', { rates: { input: '1', output: '1' } });
        user = { id: s.addUser('leak@example.test', 100) };
        user.key = s.createKey('leak@example.test');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  /** What the gateway wrote must not be in text: its address, its token, its words. */
  function noLeak(text, what) {
    for (const n of [stack.token, stack.gatewayURL, `127.0.0.1:${stack.mock.port}`,
      'upstream call to', 'Authorization', 'Bearer']) {
      assert.ok(!text.includes(n), `${what} reveals ${JSON.stringify(n.slice(0, 20))}: ${text}`);
    }
  }

  /** A refusal in the transport's shape, released (nothing charged), without a leak. */
  function refusedSafely(res, what) {
    assertNoSecrets(res, stack);
    noLeak(res.text, what);
    const row = stack.ledger(res.headers.get('x-request-id'));
    if (row) assert.equal(row.credits, '0', `${what}: ledger ${JSON.stringify(row)}`);
  }

  const OURS_400 = 'The model refused this request as invalid (HTTP 400 from the model gateway). '
    + 'Nothing was charged.';

  it('chat completions: a 4xx is 400 in our words, a 5xx is 502', async () => {
    const b0 = stack.balance(user.id);
    let res = await stack.chat(user.key.secret, chatBody('gpt-leak'));
    let e = assertOpenAIError(res, 400, 'INVALID_REQUEST');
    assert.equal(e.message, OURS_400);
    assert.equal(e.type, 'invalid_request_error');
    refusedSafely(res, 'chat 400');
    res = await stack.chat(user.key.secret, chatBody('gpt-event'));
    e = assertOpenAIError(res, 502, 'GATEWAY_ERROR');
    assert.match(e.message, /HTTP 500/);
    refusedSafely(res, 'chat 500');
    assert.equal(stack.balance(user.id), b0);
  });

  it('messages: plain and streamed refusals in the Anthropic shape, count_tokens too', async () => {
    const b0 = stack.balance(user.id);
    for (const stream of [false, true]) {
      const res = await messages(stack, user.key.secret, messagesBody('claude-leak', { stream }));
      const e = assertAnthropicError(res, 400, 'invalid_request_error', 'INVALID_REQUEST');
      assert.equal(e.message, OURS_400);
      refusedSafely(res, `messages 400 stream=${stream}`);
    }
    const res = await messages(stack, user.key.secret, messagesBody('claude-leak'),
      { path: '/v1/messages/count_tokens' });
    assertAnthropicError(res, 400, 'invalid_request_error', 'INVALID_REQUEST');
    refusedSafely(res, 'count_tokens 400');
    assert.equal(stack.balance(user.id), b0);
  });

  it('messages stream: a mid-stream error event is ours, with an allow-listed type', async () => {
    const s = await messagesStream(stack, user.key.secret, messagesBody('claude-event'));
    assert.equal(s.status, 200);
    noLeak(s.text, 'messages stream');
    assertNoSecrets({ text: s.text, headers: s.headers }, stack);
    const names = s.events.map((e) => e.event);
    assert.equal(names[0], 'message_start');
    assert.ok(!names.includes('message_stop'), names.join());
    const last = s.events.at(-1);
    assert.equal(last.event, 'error');
    assert.equal(last.json.type, 'error');
    assert.equal(last.json.error.type, 'overloaded_error', 'the gateway\'s type, allow-listed');
    // an overload keeps its meaning (issue 30), in our words
    assert.equal(last.json.error.code, 'server_is_overloaded');
    assert.equal(last.json.error.message,
      "The model is overloaded upstream; retry shortly. The model's answer was interrupted.");
    assert.equal(names.filter((n) => n === 'error').length, 1, 'one error event');
  });

  it('responses: plain and streamed refusals in the OpenAI shape, a mid-stream error as response.failed', async () => {
    const post = (body) => stack.request('POST', '/v1/responses', { key: user.key.secret, body });
    for (const stream of [false, true]) {
      const res = await post({ model: 'gpt-leak', input: 'hello world', stream });
      const e = assertOpenAIError(res, 400, 'INVALID_REQUEST');
      assert.equal(e.message, OURS_400);
      refusedSafely(res, `responses 400 stream=${stream}`);
    }
    let res = await post({ model: 'gpt-event', input: 'hello world' });
    assertOpenAIError(res, 502, 'GATEWAY_ERROR');
    refusedSafely(res, 'responses 500');

    res = await post({ model: 'gpt-event', input: 'hello world', stream: true });
    assert.equal(res.status, 200, res.text);
    noLeak(res.text, 'responses stream');
    assertNoSecrets(res, stack);
    const events = sseEvents(res.text);
    assert.equal(events[0].event, 'response.created');
    const last = events.at(-1);
    assert.equal(last.event, 'response.failed', events.map((e) => e.event).join());
    assert.equal(last.data.response.error.code, 'GATEWAY_ERROR');
  });

  it('logs what the gateway said, masked: no token, no address', async () => {
    // the stream errors are logged when the request ends
    await new Promise((r) => setTimeout(r, 300));
    const log = stack.readFile(stack.errorLog);
    const refused = log.split('\n').filter((l) => l.includes('PROV00320:'));
    const inStream = log.split('\n').filter((l) => l.includes('PROV00321:'));
    assert.ok(refused.length >= 8, `PROV00320 lines:\n${refused.join('\n')}`);
    assert.ok(inStream.length >= 2, `PROV00321 lines:\n${inStream.join('\n')}`);
    for (const line of [...refused, ...inStream]) {
      assert.ok(!line.includes(stack.token), `the token is logged: ${line}`);
      assert.ok(!line.includes(`127.0.0.1:${stack.mock.port}`), `the address is logged: ${line}`);
      // the gateway's words are there, with its secrets masked
      assert.match(line, /upstream call to \[redacted\]\/v1\/(chat\/completions|messages)/, line);
      assert.match(line, /the request carried Authorization: \[redacted\]/, line);
    }
    assert.ok(refused.some((l) => /HTTP 400 \(invalid_request_error\)/.test(l)), refused.join('\n'));
    assert.ok(inStream.some((l) => /\(overloaded_error\)/.test(l)), inStream.join('\n'));
  });
});

describe('issue 11 #6: a blocked user, a deleted key, a reissued key refused at once', { timeout: 120000 }, () => {
  let stack;
  const users = {};
  const CT = { path: '/v1/messages/count_tokens' };

  function mk(s, name) {
    const email = `${name}@recheck.test`;
    const id = s.addUser(email, 100);
    users[name] = { email, id, key: s.createKey(email) };
  }

  before(async () => {
    stack = await startStack({
      models: [...MESSAGES_UPSTREAMS, ...DEFAULT_UPSTREAMS],
      overrides: { ProviderLookupCacheTTL: '60' },
      seed: (s) => {
        seedMessagesCatalog(s);
        seedCatalog(s);
        for (const n of ['ctblock', 'ctdelete', 'ctreissue']) mk(s, n);
        for (const t of ['messages', 'chat', 'responses']) {
          for (const n of ['block', 'delete', 'reissue']) mk(s, `${t}${n}`);
        }
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  async function seq() {
    return (await stack.mock.last()).seq;
  }

  /** Runs fn and asserts the gateway was not called and nothing was charged. */
  async function untouched(u, fn) {
    const s0 = await seq();
    const b0 = stack.balance(u.id);
    const res = await fn();
    assert.equal(await seq(), s0, 'the gateway was not called');
    assert.equal(stack.balance(u.id), b0, 'nothing charged');
    assertNoSecrets(res, stack);
    return res;
  }

  const count = (key) => messages(stack, key, messagesBody('claude-main'), CT);

  it('count_tokens: a blocked user gets 403 at once, and is served again at once when unblocked', async () => {
    const u = users.ctblock;
    assert.equal((await count(u.key.secret)).status, 200, 'served (and cached)');
    stack.ctl('user', 'block', u.email);
    const res = await untouched(u, () => count(u.key.secret));
    assertAnthropicError(res, 403, 'permission_error', 'USER_BLOCKED');
    stack.ctl('user', 'unblock', u.email);
    assert.equal((await count(u.key.secret)).status, 200);
  });

  it('count_tokens: a deleted key gets 401 at once', async () => {
    const u = users.ctdelete;
    assert.equal((await count(u.key.secret)).status, 200);
    stack.ctl('key', 'delete', String(u.key.id));
    const res = await untouched(u, () => count(u.key.secret));
    assertAnthropicError(res, 401, 'authentication_error', 'INVALID_API_KEY');
  });

  it('count_tokens: a reissued key\'s old secret gets 401 at once, the new one works', async () => {
    const u = users.ctreissue;
    assert.equal((await count(u.key.secret)).status, 200);
    const fresh = stack.ctlJSON('key', 'reissue', String(u.key.id));
    assert.equal(typeof fresh.secret, 'string');
    stack.secrets.push(fresh.secret);
    const res = await untouched(u, () => count(u.key.secret));
    assertAnthropicError(res, 401, 'authentication_error', 'INVALID_API_KEY');
    assert.equal((await count(fresh.secret)).status, 200);
  });

  // The inference endpoints re-check key and account in the billing
  // transaction; the cache (60 s) only decides the order of the refusals.
  const transports = {
    messages: {
      send: (key) => messages(stack, key, messagesBody('claude-main')),
      refused: (res, status, code) => assertAnthropicError(res, status,
        status === 401 ? 'authentication_error' : 'permission_error', code),
    },
    chat: {
      send: (key) => stack.chat(key, chatBody('prov-main')),
      refused: (res, status, code) => assertOpenAIError(res, status, code),
    },
    responses: {
      send: (key) => stack.request('POST', '/v1/responses',
        { key, body: { model: 'prov-main', input: 'hello world', max_output_tokens: 16 } }),
      refused: (res, status, code) => assertOpenAIError(res, status, code),
    },
  };

  for (const [name, t] of Object.entries(transports)) {
    it(`${name}: refuses a blocked user, a deleted key and a reissued key's old secret at once`, async () => {
      let u = users[`${name}block`];
      assert.equal((await t.send(u.key.secret)).status, 200);
      stack.ctl('user', 'block', u.email);
      t.refused(await untouched(u, () => t.send(u.key.secret)), 403, 'USER_BLOCKED');

      u = users[`${name}delete`];
      assert.equal((await t.send(u.key.secret)).status, 200);
      stack.ctl('key', 'delete', String(u.key.id));
      t.refused(await untouched(u, () => t.send(u.key.secret)), 401, 'INVALID_API_KEY');

      u = users[`${name}reissue`];
      assert.equal((await t.send(u.key.secret)).status, 200);
      const fresh = stack.ctlJSON('key', 'reissue', String(u.key.id));
      stack.secrets.push(fresh.secret);
      t.refused(await untouched(u, () => t.send(u.key.secret)), 401, 'INVALID_API_KEY');
      assert.equal((await t.send(fresh.secret)).status, 200);
    });
  }
});

describe('issue 11 #10: small edges', { timeout: 120000 }, () => {
  let stack;
  let user;
  let blocked;

  before(async () => {
    stack = await startStack({
      models: [...MESSAGES_UPSTREAMS, ...DEFAULT_UPSTREAMS],
      seed: (s) => {
        seedMessagesCatalog(s);
        seedCatalog(s);
        user = { id: s.addUser('edge@example.test', 100) };
        user.key = s.createKey('edge@example.test');
        blocked = { id: s.addUser('edge-blocked@example.test', 100) };
        blocked.key = s.createKey('edge-blocked@example.test');
        s.ctl('user', 'block', 'edge-blocked@example.test');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  it('an unknown /v1/messages/... path is 404 in the Anthropic shape', async () => {
    for (const [method, path] of [['POST', '/v1/messages/batches'], ['GET', '/v1/messages/batches/b1'],
      ['POST', '/v1/messages/count_tokens/x']]) {
      const res = await stack.request(method, path, {
        headers: { 'x-api-key': user.key.secret, 'anthropic-version': '2023-06-01' },
        body: method === 'POST' ? messagesBody('claude-main') : undefined,
      });
      const e = assertAnthropicError(res, 404, 'not_found_error', 'NOT_FOUND');
      assert.match(e.message, /No such endpoint/);
    }
    // elsewhere under /v1: the OpenAI shape
    const res = await stack.request('POST', '/v1/chat/nothing', { key: user.key.secret, body: {} });
    assertOpenAIError(res, 404, 'NOT_FOUND');
  });

  it('a non-POST on an inference path checks the key (401) and the user (403) before the method (405)', async () => {
    const paths = {
      '/v1/chat/completions': 'openai',
      '/v1/responses': 'openai',
      '/v1/messages': 'anthropic',
      '/v1/messages/count_tokens': 'anthropic',
    };
    for (const [path, shape] of Object.entries(paths)) {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const send = (key) => stack.request(method, path, {
          headers: key ? { authorization: `Bearer ${key}` } : {},
        });
        const check = (res, status, code) => (shape === 'openai'
          ? assertOpenAIError(res, status, code)
          : assertAnthropicError(res, status, {
            401: 'authentication_error', 403: 'permission_error', 405: 'invalid_request_error',
          }[status], code));
        let res = await send(null);
        check(res, 401, 'INVALID_API_KEY');
        assert.equal(res.headers.get('allow'), null, `${method} ${path}: no Allow before the key`);
        check(await send(unknownKey()), 401, 'INVALID_API_KEY');
        check(await send(blocked.key.secret), 403, 'USER_BLOCKED');
        res = await send(user.key.secret);
        check(res, 405, 'METHOD_NOT_ALLOWED');
        assert.match(res.headers.get('allow') || '', /^POST$/, `${method} ${path}: Allow`);
      }
    }
  });

  it('refuses Messages blocks outside text, tool_use and tool_result by name, before the gateway', async () => {
    const s0 = (await stack.mock.last().catch(() => ({ seq: 0 }))).seq;
    const b0 = stack.balance(user.id);
    for (const type of ['server_tool_use', 'web_search_tool_result', 'search_result',
      'container_upload', 'mcp_tool_use', 'some_future_block']) {
      const res = await messages(stack, user.key.secret, messagesBody('claude-main', {
        messages: [
          { role: 'user', content: 'look it up' },
          { role: 'assistant', content: [{ type: 'text', text: 'searching' },
            { type, id: 'srvtoolu_1', name: 'web_search', input: { query: 'x' } }] },
          { role: 'user', content: 'and?' },
        ],
      }));
      const e = assertAnthropicError(res, 400, 'invalid_request_error', 'INVALID_REQUEST');
      assert.equal(e.message, `messages[1].content[1]: '${type}' blocks are not supported by this `
        + 'service (text, tool_use and tool_result blocks are)');
    }
    assert.equal((await stack.mock.last()).seq, s0, 'the gateway was not called');
    assert.equal(stack.balance(user.id), b0, 'nothing charged');
  });

  it('keeps what it documents: thinking dropped, a search_result in a tool_result made text', async () => {
    const res = await messages(stack, user.key.secret, messagesBody('claude-main', {
      messages: [
        { role: 'user', content: 'fetch it' },
        { role: 'assistant', content: [
          { type: 'thinking', thinking: 'hmm', signature: 'SIG' },
          { type: 'redacted_thinking', data: 'RED' },
          { type: 'tool_use', id: 'toolu_1', name: 'WebFetch', input: { url: 'https://a.example/' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [
          { type: 'search_result', source: 'https://a.example/', title: 'A',
            content: [{ type: 'text', text: 'page text' }], citations: { enabled: true } },
          { type: 'tool_reference', tool_name: 'Read' }] }] },
      ],
    }));
    assert.equal(res.status, 200, res.text);
    const sent = (await stack.mock.last()).body;
    const result = sent.messages[2].content[0];
    assert.deepEqual(result.content, [
      { type: 'text', text: 'A (https://a.example/)\npage text' },
      { type: 'text', text: '[tool_reference content is not supported by this service and was removed]' },
    ]);
    assert.deepEqual(sent.messages[1].content.map((b) => b.type), ['tool_use']);
  });
});

describe('issue 11 #10: a plan\'s windows are shared by the keys of one account', { timeout: 120000 }, () => {
  let stack;
  let u;

  before(async () => {
    const t0 = nextHour(Math.floor(Date.now() / 1000));
    stack = await startStack({
      clock: t0,
      seed: (s) => {
        addBillModel(s);
        const plan = addPlan(s, 'shared-windows', '2', '3');
        const email = 'two-keys@shared.test';
        const id = s.addUser(email);   // no balance: only the plan funds
        subscribe(s, email, 'shared-windows', id, plan);
        u = { email, id, a: s.createKey(id, { name: 'a' }), b: s.createKey(id, { name: 'b' }) };
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  const chat = (key) => stack.chat(key.secret, fullBody());

  /** Both keys are refused with the same 429 and Retry-After; returns it. */
  async function bothRefused(expected, what) {
    const ra = [];
    for (const key of [u.a, u.b]) {
      const res = await chat(key);
      assertRefused(res, 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
      ra.push(retryAfter(res));
    }
    assert.deepEqual(ra, [expected, expected], `${what}: Retry-After of key a and key b`);
  }

  it('spend through one key counts against the other in the 5-hour and the 7-day window', async () => {
    const h = nextHour(stack.clock);   // 5h quota 2 credits, 7d quota 3; a request is 1
    stack.setClock(h + 60);
    assertCharged(await chat(u.a), FULL_CHARGE);   // key a alone has used 1 of 2
    stack.setClock(h + 120);
    assertCharged(await chat(u.b), FULL_CHARGE);   // the account: 2 of 2 in 5 h
    let now = stack.setClock(h + 180);
    await bothRefused(leavesAt(h + 60, MIN5, WINDOW_5H) - now, '5-hour window');

    // the first 5-minute bucket leaves the 5-hour window: room for one more
    now = stack.setClock(leavesAt(h + 60, MIN5, WINDOW_5H));
    assertCharged(await chat(u.b), FULL_CHARGE);   // 7 d: 3 of 3
    // the 7-day window is full for both keys (key a has used only 1)
    await bothRefused(leavesAt(h + 60, HOUR, WINDOW_7D) - now, '7-day window');
    now = stack.setClock(h + 6 * HOUR);   // the 5-hour window is empty again
    await bothRefused(leavesAt(h + 60, HOUR, WINDOW_7D) - now, '7-day window, 5 hours later');
    stack.setClock(leavesAt(h + 60, HOUR, WINDOW_7D));
    assertCharged(await chat(u.a), FULL_CHARGE);

    const sums = ledgerSums(stack, `user_id = ${u.id}`);
    assert.equal(sums.planCredits, 4n * FULL_CHARGE);
    assert.equal(sums.balanceCredits, 0n);
    assert.equal(ledgerSums(stack, `key_id = ${u.a.id}`).credits, 2n * FULL_CHARGE);
    assert.equal(ledgerSums(stack, `key_id = ${u.b.id}`).credits, 2n * FULL_CHARGE);
    assert.equal(bucketSum(stack, 'user:m', u.id, 'plan_credits'), 4n * FULL_CHARGE);
    assert.equal(bucketSum(stack, 'user:h', u.id, 'plan_credits'), 4n * FULL_CHARGE);
  });
});
