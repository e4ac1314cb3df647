// tests/integration/stream-timeout.test.js: ProviderGatewayTimeout on streams
// bounds the gateway's silence, not the stream's length: a streamed answer
// that keeps coming for longer than the timeout is relayed to its end and
// charged, while a gateway that says nothing for longer than the timeout is
// given up (504 in the transport's shape, nothing charged).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './lib/server.js';
import {
  MESSAGES_CATALOG, MESSAGES_UPSTREAMS, seedMessagesCatalog, messagesBody, messagesStream,
  assertAnthropicError, messages,
} from './lib/messages.js';

describe('stream timeouts', { timeout: 120000 }, () => {
  let stack;
  let user;
  before(async () => {
    stack = await startStack({
      models: [...MESSAGES_UPSTREAMS, 'mock-claude-fault-delay-6000'],
      overrides: { ProviderGatewayTimeout: '3', ProviderStreamPingInterval: '1' },
      seed: (s) => {
        seedMessagesCatalog(s, {
          ...MESSAGES_CATALOG,
          'claude-silent': { upstream: 'mock-claude-fault-delay-6000', messages: true,
            rates: { input: '1', output: '1' } },
        });
        user = { id: s.addUser('streams@example.test', 1000) };
        user.key = s.createKey('streams@example.test');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  it('relays a stream that lasts longer than the timeout but is never silent that long', async () => {
    // The gateway sends an event every 1.6 s: about 11 s in all, timeout 3 s.
    const s = await messagesStream(stack, user.key.secret, messagesBody('claude-trickle', {
      messages: [{ role: 'user', content: 'hi' }],
    }));
    assert.equal(s.status, 200);
    const start = s.events.find((e) => e.event === 'message_start');
    const stop = s.events.find((e) => e.event === 'message_stop');
    assert.ok(stop, `no message_stop in ${s.text}`);
    assert.ok(stop.at - start.at > 3000, 'the stream outlasted the timeout');
    const row = stack.sql(`SELECT status, credits FROM ledger WHERE request_id = '${s.headers.get('x-request-id')}'`)[0];
    assert.equal(row.status, 'ok');
    assert.ok(Number(row.credits) > 0, JSON.stringify(row));
  });

  it('gives up on a gateway silent for longer than the timeout, charging nothing', async () => {
    const before = stack.balance(user.id);
    await stack.expectingLog(/PROV00030/, async () => {
      const res = await messages(stack, user.key.secret, messagesBody('claude-silent', {
        stream: true, messages: [{ role: 'user', content: 'hi' }],
      }));
      assertAnthropicError(res, 504, 'timeout_error', 'GATEWAY_TIMEOUT');
    });
    assert.equal(stack.balance(user.id), before);
  });
});
