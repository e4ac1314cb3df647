// tests/integration/hardening-json.test.js: request bodies are parsed as
// strict JSON (issue 11, defect 9). Single quotes, comments, trailing commas,
// NaN and raw control characters in strings are 400 INVALID_REQUEST in the
// transport's own error shape on every inference endpoint and on
// count_tokens, never served or charged (before the fix json-c's lenient
// mode served and charged them); a body that is valid JSON but not an object
// (null, 123, "x", []) is 400 "The request body must be a JSON object" (it
// was "unexpected end of JSON" for null and 123).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, seedCatalog, DEFAULT_UPSTREAMS } from './lib/server.js';
import { assertOpenAIError, assertNoSecrets } from './lib/helpers.js';
import {
  MESSAGES_UPSTREAMS, seedMessagesCatalog, messages, assertAnthropicError,
} from './lib/messages.js';

const MSGS = '[{"role":"user","content":"hello world"}]';

// Each endpoint's leniencies, as raw bodies that json-c's default mode reads.
const LENIENT = {
  chat: [
    `{'model':'prov-main','messages':${MSGS},'max_tokens':16}`,
    `{"model":"prov-main",/* comment */"messages":${MSGS},"max_tokens":16}`,
    `{"model":"prov-main","messages":${MSGS},"max_tokens":16} // comment`,
    `{"model":"prov-main","messages":${MSGS},"max_tokens":16,}`,
    `{"model":"prov-main","messages":[{"role":"user","content":"hello"},],"max_tokens":16}`,
    `{"model":"prov-main","messages":${MSGS},"max_tokens":16,"temperature":NaN}`,
    `{"model":"prov-main","messages":[{"role":"user","content":"a\tb"}],"max_tokens":16}`,
  ],
  messages: [
    `{'model':'claude-main','messages':${MSGS},'max_tokens':16}`,
    `{"model":"claude-main","messages":${MSGS},"max_tokens":16,}`,
    `{"model":"claude-main",// comment\n"messages":${MSGS},"max_tokens":16}`,
    `{"model":"claude-main","messages":[{"role":"user","content":[{"type":"text","text":"x"},]}],`
      + `"max_tokens":16}`,
  ],
  count_tokens: [
    `{'model':'claude-main','messages':${MSGS}}`,
    `{"model":"claude-main","messages":${MSGS},}`,
    `/**/{"model":"claude-main","messages":${MSGS}}`,
  ],
  responses: [
    `{'model':'prov-main','input':'hello world'}`,
    `{"model":"prov-main","input":"hello world",}`,
    `{"model":"prov-main",/* c */"input":"hello world"}`,
    `{"model":"prov-main","input":[{"type":"message","role":"user","content":"hi"},]}`,
    `{"model":"prov-main","input":"hello world","temperature":NaN}`,
  ],
};

const NOT_OBJECTS = ['null', '123', '"x"', '[]', 'true', ' null\n'];

describe('strict JSON request bodies', { timeout: 120000 }, () => {
  let stack;
  let user;

  before(async () => {
    stack = await startStack({
      models: [...DEFAULT_UPSTREAMS, ...MESSAGES_UPSTREAMS],
      seed: (s) => {
        seedCatalog(s);
        seedMessagesCatalog(s);
        user = { id: s.addUser('json@example.test', 1000) };
        user.key = s.createKey('json@example.test');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  async function seq() {
    return (await stack.mock.last().catch(() => ({ seq: 0 }))).seq;
  }

  function send(endpoint, body) {
    if (endpoint === 'messages') return messages(stack, user.key.secret, body);
    if (endpoint === 'count_tokens') {
      return messages(stack, user.key.secret, body, { path: '/v1/messages/count_tokens' });
    }
    const p = endpoint === 'chat' ? '/v1/chat/completions' : '/v1/responses';
    return stack.request('POST', p, { key: user.key.secret, body });
  }

  /** Sends body raw; asserts a 400 in the endpoint's shape, unseen by the gateway, uncharged. */
  async function refused(endpoint, body) {
    const s0 = await seq();
    const b0 = stack.balance(user.id);
    const rows = stack.sql('SELECT COUNT(*) AS n FROM ledger')[0].n;
    const res = await send(endpoint, body);
    assert.equal(await seq(), s0, `${endpoint}: the gateway was not called for ${body}`);
    assert.equal(stack.balance(user.id), b0, 'nothing charged');
    assert.equal(stack.sql('SELECT COUNT(*) AS n FROM ledger')[0].n, rows, 'no ledger row');
    assertNoSecrets(res, stack);
    const anthropic = endpoint === 'messages' || endpoint === 'count_tokens';
    const e = anthropic
      ? assertAnthropicError(res, 400, 'invalid_request_error', 'INVALID_REQUEST')
      : assertOpenAIError(res, 400, 'INVALID_REQUEST', { param: null });
    return e;
  }

  for (const endpoint of Object.keys(LENIENT)) {
    it(`${endpoint}: single quotes, comments, trailing commas, NaN are 400`, async () => {
      for (const body of LENIENT[endpoint]) {
        const e = await refused(endpoint, body);
        assert.match(e.message, /^The request body is not valid JSON: /, body);
      }
    });

    it(`${endpoint}: valid JSON that is not an object is 400 "must be a JSON object"`, async () => {
      for (const body of NOT_OBJECTS) {
        const e = await refused(endpoint, body);
        assert.equal(e.message, 'The request body must be a JSON object', body);
      }
    });
  }

  it('strict JSON that real clients write still passes, escapes and all', async () => {
    const text = 'it\'s "quoted" \u00e9 \ud83d\ude00 tab\tnewline\n/slash\\';
    let res = await stack.chat(user.key.secret, {
      model: 'prov-main', max_tokens: 16, temperature: 0.5,
      messages: [{ role: 'user', content: text }],
    });
    assert.equal(res.status, 200, res.text);
    assert.equal((await stack.mock.last()).body.messages[0].content, text);
    res = await messages(stack, user.key.secret, ` {"model":"claude-main","max_tokens":16,\r\n`
      + ` "messages":[{"role":"user","content":[{"type":"text","text":"1.5e3 \\u00e9"}]}]} \n`);
    assert.equal(res.status, 200, res.text);
    res = await stack.request('POST', '/v1/responses', {
      key: user.key.secret, body: { model: 'prov-main', input: text, max_output_tokens: 16 },
    });
    assert.equal(res.status, 200, res.text);
  });
});
