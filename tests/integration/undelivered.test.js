// tests/integration/undelivered.test.js: an answer the module fails to
// deliver by its own fault is never charged (issue 11, defect 2). Client text
// never reaches a response header: a hosted tool type with CR/LF on
// /v1/responses is named in x-provider-dropped-tools with token characters
// only (the answer is a 200, charged as usual, not httpd's 500 page). A
// header httpd would refuse (here one that mod_headers adds, as a
// misconfiguration would) is caught before anything is written: the client
// gets 500 INTERNAL_ERROR in its transport's JSON shape and the hold is
// released with the ledger status `undelivered`; one added after the module
// has written (httpd then answers with its own page) is released the same way.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, seedCatalog, HTTPD_MODULES } from './lib/server.js';
import {
  assertOpenAIError, chatBody, expectedCharge, kinds, toMicro,
} from './lib/helpers.js';
import {
  MESSAGES_UPSTREAMS, seedMessagesCatalog, messages, messagesBody, assertAnthropicError,
} from './lib/messages.js';
import { DEFAULT_UPSTREAMS, CATALOG } from './lib/server.js';

const MODELS = [...DEFAULT_UPSTREAMS, ...MESSAGES_UPSTREAMS];
// httpd's refusal of a header, the module's own report of it, and the release
const REFUSED_LOG = /AH0242[89]|AH02430|PROV0034[0-2]/;

function seed(s, email) {
  seedCatalog(s);
  seedMessagesCatalog(s);
  const user = { id: s.addUser(email, 100) };
  user.key = s.createKey(email);
  return user;
}

/** The request was released as undelivered: no charge, nothing held. */
function assertUndelivered(stack, user, res, before) {
  const rid = res.headers.get('x-request-id');
  assert.ok(rid, `x-request-id: ${res.status} ${res.text}`);
  const row = stack.ledger(rid);
  assert.ok(row, `a ledger row for ${rid}`);
  assert.equal(row.status, 'undelivered', JSON.stringify(row));
  assert.equal(row.credits, '0');
  assert.equal(res.headers.get('x-provider-credits'), null, 'no credits header');
  assert.equal(stack.balance(user.id), before, 'balance unchanged');
}

/** POST with a streamed answer read whole: {status, headers, text, json}. */
function post(stack, key, path, body, headers = {}) {
  return stack.request('POST', path, { key, body, headers });
}

describe('client text and headers httpd refuses', { timeout: 180000 }, () => {
  let stack;
  let user;

  before(async () => {
    stack = await startStack({
      models: MODELS,
      directives: [
        `LoadModule headers_module ${HTTPD_MODULES}/mod_headers.so`,
        // a header that httpd refuses, added after the module wrote its answer
        `Header always set "X-Bad Name" "1" "expr=%{HTTP:x-test-break} == 'late'"`,
      ].join('\n'),
      seed: (s) => { user = seed(s, 'hdr@example.test'); },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  it('names a hosted tool type with CR/LF in x-provider-dropped-tools as a token', async () => {
    for (const stream of [false, true]) {
      const b0 = stack.balance(user.id);
      const res = await post(stack, user.key.secret, '/v1/responses', {
        model: 'prov-main', input: 'hello', max_output_tokens: 8, stream,
        tools: [{ type: 'web_search\r\nX-Injected: 1' }, { type: 'file_search' },
          { type: ' \r\n' }],
      });
      assert.equal(res.status, 200, `stream ${stream}: ${res.status} ${res.text}`);
      assert.equal(res.headers.get('x-provider-dropped-tools'), 'web_searchX-Injected1,file_search');
      assert.equal(res.headers.get('x-injected'), null);
      const rid = res.headers.get('x-request-id');
      const row = stack.ledger(rid);
      assert.equal(row.status, 'ok');
      assert.ok(BigInt(row.credits) > 0n);
      if (!stream) assert.equal(toMicro(res.headers.get('x-provider-credits')), BigInt(row.credits));
      await stack.billingSettled();
      assert.equal(stack.balance(user.id), b0 - BigInt(row.credits));
    }
  });

  it('releases the hold when httpd refuses the answer after the module wrote it', async () => {
    const late = { 'x-test-break': 'late' };
    const cases = [
      ['/v1/chat/completions', chatBody('prov-main'), {}],
      ['/v1/responses', { model: 'prov-main', input: 'hi', max_output_tokens: 8 }, {}],
      ['/v1/responses', { model: 'prov-main', input: 'hi', max_output_tokens: 8, stream: true }, {}],
      ['/v1/messages', messagesBody('claude-main'), { 'anthropic-version': '2023-06-01' }],
      ['/v1/messages', messagesBody('claude-main', { stream: true }),
        { 'anthropic-version': '2023-06-01' }],
    ];
    for (const [path, body, headers] of cases) {
      const b0 = stack.balance(user.id);
      const seq = (await stack.mock.last()).seq;
      const res = await stack.expectingLog(REFUSED_LOG,
        () => post(stack, user.key.secret, path, body, { ...headers, ...late }));
      assert.equal(res.status, 500, `${path}: ${res.text}`);
      assert.ok((await stack.mock.last()).seq > seq, 'the gateway answered');
      // httpd cleared the headers with its own answer: find the row by time
      const rows = stack.sql(`SELECT request_id, status, CAST(credits AS TEXT) AS credits
          FROM ledger WHERE user_id = ${user.id} ORDER BY id DESC LIMIT 1`);
      assert.equal(rows[0].status, 'undelivered', `${path}: ${JSON.stringify(rows[0])}`);
      assert.equal(rows[0].credits, '0');
      assert.equal(stack.balance(user.id), b0, `${path}: balance unchanged`);
    }
  });

  it('still serves and charges without the broken header', async () => {
    const res = await stack.chat(user.key.secret, chatBody('prov-main'));
    assert.equal(res.status, 200, res.text);
    const expected = expectedCharge(CATALOG['prov-main'].rates, kinds({ prompt: 12, completion: 16 }));
    assert.equal(toMicro(res.headers.get('x-provider-credits')), expected);
    assert.equal(stack.ledger(res.headers.get('x-request-id')).status, 'ok');
  });
});

describe('a header httpd would refuse, present before the module answers', { timeout: 180000 }, () => {
  let stack;
  let user;

  before(async () => {
    stack = await startStack({
      models: MODELS,
      directives: [
        `LoadModule headers_module ${HTTPD_MODULES}/mod_headers.so`,
        'Header set "X-Bad Early" "1" early',
      ].join('\n'),
      seed: (s) => { user = seed(s, 'early@example.test'); },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  it('answers 500 INTERNAL_ERROR in the OpenAI shape and charges nothing', async () => {
    const cases = [
      ['/v1/chat/completions', chatBody('prov-main')],
      ['/v1/responses', { model: 'prov-main', input: 'hi', max_output_tokens: 8 }],
      ['/v1/responses', { model: 'prov-main', input: 'hi', max_output_tokens: 8, stream: true }],
    ];
    for (const [path, body] of cases) {
      const b0 = stack.balance(user.id);
      const res = await stack.expectingLog(REFUSED_LOG,
        () => post(stack, user.key.secret, path, body));
      assertOpenAIError(res, 500, 'INTERNAL_ERROR');
      assert.equal(res.headers.get('x-bad-early'), null);
      assertUndelivered(stack, user, res, b0);
    }
  });

  it('answers 500 INTERNAL_ERROR in the Anthropic shape and charges nothing', async () => {
    for (const stream of [false, true]) {
      const b0 = stack.balance(user.id);
      const res = await stack.expectingLog(REFUSED_LOG,
        () => messages(stack, user.key.secret, messagesBody('claude-main', { stream })));
      assertAnthropicError(res, 500, 'api_error', 'INTERNAL_ERROR');
      assertUndelivered(stack, user, res, b0);
    }
  });

  it('sends a refusal without the header', async () => {
    const res = await stack.expectingLog(REFUSED_LOG,
      () => post(stack, 'sk-prov-unknown', '/v1/chat/completions', chatBody('prov-main')));
    assertOpenAIError(res, 401, 'INVALID_API_KEY');
  });

  it('leaves no reservation open', () => {
    assert.deepEqual(stack.sql("SELECT request_id FROM ledger WHERE status = 'reserved'"), []);
  });
});
