// tests/clients/messages/sdk.test.js: client compatibility of /v1/messages
// with the official `@anthropic-ai/sdk`, one 0.x and one 1.x release (npm
// aliases in package.json). They authenticate and version differently: 0.x
// sends x-api-key and anthropic-version 2023-06-01, 1.x sends a Bearer token
// and a later date; both must work. For each: messages.create (and the
// credits it was charged), a streamed message read through the SDK's own
// stream helper (credits in the raw message_delta), a tool round trip, and
// our refusals surfacing as the SDK's error classes. The model's own
// upstream conditions keep Anthropic's meaning: a context overflow is a
// BadRequestError saying "prompt is too long: N tokens > M maximum" (plain,
// and a stream refused before its first event), an overload is status 529
// with type overloaded_error (1.x: its OverloadedError; 0.x has no class of
// its own: InternalServerError), which the SDK retries; nothing is charged
// for either. models.list() pages through the Messages models in
// Anthropic's list shape, and models.retrieve() answers one.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic0 from 'anthropic-sdk-0';
import Anthropic1 from 'anthropic-sdk-1';
import { startStack } from '../../integration/lib/server.js';
import { expectedCharge, toMicro, unknownKey } from '../../integration/lib/helpers.js';
import {
  MESSAGES_CATALOG, MESSAGES_UPSTREAMS, seedMessagesCatalog, anthropicKinds, mockInputTokens,
} from '../../integration/lib/messages.js';
import { MESSAGES_FAULTS, seedFaults, ledgerRows, timedFetch } from '../lib/upstream.js';

// overloaded: the SDK's class for a 529; tag: its own "once" model (MESSAGES_FAULTS)
const SDKS = [
  { name: '0.x', Anthropic: Anthropic0, auth: 'x-api-key', version: /^2023-06-01$/,
    overloaded: Anthropic0.InternalServerError, tag: '0' },
  { name: '1.x', Anthropic: Anthropic1, auth: 'authorization', version: /^20\d\d-\d\d-\d\d$/,
    overloaded: Anthropic1.OverloadedError, tag: '1' },
];

describe('the official Anthropic SDKs on /v1/messages', { timeout: 180000 }, () => {
  let stack;
  let user;

  before(async () => {
    stack = await startStack({
      models: [...MESSAGES_UPSTREAMS, ...Object.values(MESSAGES_FAULTS)],
      seed: (s) => {
        seedMessagesCatalog(s);
        seedFaults(s, MESSAGES_FAULTS, 'anthropic');
        user = { id: s.addUser('sdk-claude@example.test', 100) };
        user.key = s.createKey('sdk-claude@example.test');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  for (const sdk of SDKS) {
    describe(`@anthropic-ai/sdk ${sdk.name}`, () => {
      let client;
      const sent = [];   // the headers the SDK sent, per request

      before(() => {
        const recordingFetch = (url, init) => {
          sent.push(new Headers(init?.headers));
          return fetch(url, init);
        };
        client = new sdk.Anthropic({
          apiKey: user.key.secret, baseURL: stack.baseURL, maxRetries: 0, fetch: recordingFetch,
        });
      });

      it('creates a message, authenticated its own way, and shows the charge', async () => {
        const before = stack.balance(user.id);
        const { data, response } = await client.messages.create({
          model: 'claude-main', max_tokens: 9,
          messages: [{ role: 'user', content: 'hello sdk' }],
        }).withResponse();
        const h = sent.at(-1);
        if (sdk.auth === 'x-api-key') {
          assert.equal(h.get('x-api-key'), user.key.secret);
        } else {
          assert.equal(h.get('authorization'), `Bearer ${user.key.secret}`);
        }
        assert.match(h.get('anthropic-version'), sdk.version);
        assert.equal(data.type, 'message');
        assert.equal(data.model, 'claude-main');
        assert.equal(data.content[0].text, 'mock reply to: hello sdk');
        assert.equal(data.usage.output_tokens, 9);
        const expected = expectedCharge(MESSAGES_CATALOG['claude-main'].rates,
          anthropicKinds({ input: mockInputTokens('hello sdk'), output: 9 }));
        assert.equal(toMicro(response.headers.get('x-provider-credits')), expected);
        assert.equal(toMicro(data.usage.credits), expected);
        assert.equal(stack.balance(user.id), before - expected);
      });

      it('streams a message through the SDK stream helper', async () => {
        const before = stack.balance(user.id);
        const stream = client.messages.stream({
          model: 'claude-main', max_tokens: 12,
          messages: [{ role: 'user', content: 'stream to me' }],
        });
        let text = '';
        const raw = [];
        stream.on('text', (t) => { text += t; });
        stream.on('streamEvent', (ev) => raw.push(ev));
        const final = await stream.finalMessage();
        assert.equal(text, 'mock reply to: stream to me');
        assert.equal(final.content[0].text, 'mock reply to: stream to me');
        assert.equal(final.model, 'claude-main');
        assert.equal(final.stop_reason, 'end_turn');
        assert.equal(final.usage.output_tokens, 12);
        assert.equal(raw[0].type, 'message_start');
        assert.equal(raw.at(-1).type, 'message_stop');
        const expected = expectedCharge(MESSAGES_CATALOG['claude-main'].rates,
          anthropicKinds({ input: mockInputTokens('stream to me'), output: 12 }));
        const delta = raw.find((ev) => ev.type === 'message_delta');
        assert.equal(toMicro(delta.usage.credits), expected);
        assert.equal(stack.balance(user.id), before - expected);
      });

      it('does a tool round trip', async () => {
        const tools = [{ name: 'lookup', description: 'look a word up', input_schema: {
          type: 'object', properties: { word: { type: 'string' } }, required: ['word'] } }];
        const ask = { role: 'user', content: 'define it\nARGS: {"word":"apache"}' };
        const first = await client.messages.create({
          model: 'claude-main', max_tokens: 64, tools, messages: [ask],
        });
        assert.equal(first.stop_reason, 'tool_use');
        const use = first.content.find((b) => b.type === 'tool_use');
        assert.ok(use, JSON.stringify(first.content));
        assert.equal(use.name, 'lookup');
        assert.deepEqual(use.input, { word: 'apache' });
        // the second turn streamed, as agents do
        const final = await client.messages.stream({
          model: 'claude-main', max_tokens: 64, tools,
          messages: [ask, { role: 'assistant', content: first.content }, {
            role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id,
              content: [{ type: 'text', text: 'a web server' }] }],
          }],
        }).finalMessage();
        assert.equal(final.stop_reason, 'end_turn');
        assert.equal(final.content[0].text, 'tool said: a web server');
      });

      it('surfaces refusals as the SDK\'s error classes with our code', async () => {
        const bad = new sdk.Anthropic({ apiKey: unknownKey(), baseURL: stack.baseURL, maxRetries: 0 });
        await assert.rejects(
          bad.messages.create({ model: 'claude-main', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
          (e) => e instanceof sdk.Anthropic.AuthenticationError && e.status === 401
            && e.error?.error?.code === 'INVALID_API_KEY',
        );
        await assert.rejects(
          client.messages.create({ model: 'claude-off', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
          (e) => e instanceof sdk.Anthropic.NotFoundError && e.error?.error?.type === 'not_found_error',
        );
        await assert.rejects(
          client.messages.create({ model: 'claude-overflow', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
          (e) => e instanceof sdk.Anthropic.BadRequestError && /prompt is too long/.test(e.message),
        );
      });

      /** A request of model (streamed or not) through client c; its result or rejection. */
      function ask(c, model, stream) {
        const body = { model, max_tokens: 5, messages: [{ role: 'user', content: 'upstream trouble' }] };
        if (!stream) return c.messages.create(body);
        return c.messages.stream(body).finalMessage();
      }

      for (const stream of [false, true]) {
        const how = stream ? 'streamed' : 'plain';

        it(`sees a too-long prompt as BadRequestError, uncharged (${how})`, async () => {
          const before = stack.balance(user.id);
          await assert.rejects(ask(client, 'claude-overflow', stream), (e) => {
            assert.ok(e instanceof sdk.Anthropic.BadRequestError, `${e?.constructor?.name}: ${e}`);
            assert.equal(e.status, 400);
            assert.equal(e.error.error.type, 'invalid_request_error');
            assert.match(e.error.error.message, /^prompt is too long: 250000 tokens > 200000 maximum\b/);
            assert.equal(e.error.error.code, 'context_length_exceeded');
            assert.match(e.message, /prompt is too long/);
            return true;
          });
          await stack.billingSettled();
          assert.equal(stack.balance(user.id), before);
        });

        it(`sees an overload as its overloaded error: 529 overloaded_error (${how})`, async () => {
          const before = stack.balance(user.id);
          await assert.rejects(ask(client, 'claude-overloaded', stream), (e) => {
            assert.ok(e instanceof sdk.overloaded, `${e?.constructor?.name}: ${e}`);
            assert.equal(e.status, 529);
            assert.equal(e.error.error.type, 'overloaded_error');
            assert.equal(e.error.error.code, 'server_is_overloaded');
            return true;
          });
          await stack.billingSettled();
          assert.equal(stack.balance(user.id), before);
        });
      }

      it('retries a 529 and is charged only for the answer', async () => {
        const times = [];
        const retrying = new sdk.Anthropic({ apiKey: user.key.secret, baseURL: stack.baseURL,
          maxRetries: 1, fetch: timedFetch(times) });
        const rows = ledgerRows(stack, user.id).length;
        const before = stack.balance(user.id);
        const { data, response } = await retrying.messages.create({
          model: `claude-overloaded-once-${sdk.tag}`, max_tokens: 5,
          messages: [{ role: 'user', content: 'overloaded once' }],
        }).withResponse();
        assert.equal(data.content[0].text, 'mock reply to: overloaded once');
        assert.equal(times.length, 2, 'one 529, then the answer');
        const charged = toMicro(response.headers.get('x-provider-credits'));
        assert.ok(charged > 0n);
        assert.equal(stack.balance(user.id), before - charged);
        assert.deepEqual(ledgerRows(stack, user.id, rows).map((r) => [r.status, r.credits]),
          [['refused', '0'], ['ok', String(charged)]]);
      });

      it('counts tokens', async () => {
        const r = await client.messages.countTokens({
          model: 'claude-main', messages: [{ role: 'user', content: 'how many tokens' }],
        });
        assert.equal(r.input_tokens, mockInputTokens('how many tokens'));
      });

      it('lists the Messages models with models.list(), page by page, and retrieves one', async () => {
        // what the catalog offers to Messages, straight from the server
        const all = await stack.request('GET', '/v1/models?limit=1000',
          { headers: { 'anthropic-version': '2023-06-01' } });
        const want = all.json.data.map((m) => m.id);
        assert.ok(want.includes('claude-main') && !want.includes('claude-off'), all.text);
        const seen = [];
        let pages = 0;
        for await (const page of (await client.models.list({ limit: 3 })).iterPages()) {
          pages++;
          for (const m of page.data) {
            assert.equal(m.type, 'model');
            assert.ok(!Number.isNaN(Date.parse(m.created_at)), JSON.stringify(m));
            seen.push(m.id);
          }
        }
        assert.deepEqual(seen, want);
        assert.equal(pages, Math.ceil(want.length / 3));
        const one = await client.models.retrieve('claude-main');
        assert.equal(one.id, 'claude-main');
        assert.equal(one.type, 'model');
        await assert.rejects(client.models.retrieve('claude-off'), sdk.Anthropic.NotFoundError);
      });
    });
  }
});
