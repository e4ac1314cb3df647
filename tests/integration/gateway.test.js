// tests/integration/gateway.test.js: what the client sees when the internal
// gateway fails (DESIGN §4 step 8, §5, §7): 502 GATEWAY_ERROR for a gateway
// that answers 500, answers malformed JSON or cannot be reached, 504
// GATEWAY_TIMEOUT for one slower than ProviderGatewayTimeout; in every case
// nothing is charged (balance unchanged, the ledger row released with 0
// credits), no secret (gateway address, service token, API key) is in the
// answer, and service resumes when the gateway is back.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, seedCatalog, freePort } from './lib/server.js';
import { assertOpenAIError, assertNoSecrets, chatBody, toMicro } from './lib/helpers.js';

// The module may log a gateway failure that a test provokes; it must still
// never log a secret (checked at teardown).
const PROVIDER_LOG = /\[provider:(warn|error)\]/;

describe('gateway failures on POST /v1/chat/completions', { timeout: 120000 }, () => {
  let stack;
  let user;

  before(async () => {
    stack = await startStack({
      seed: (s) => {
        seedCatalog(s);
        user = { id: s.addUser('gw@example.test', 1000) };
        user.key = s.createKey('gw@example.test');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  /** Sends body and checks the failure answer and that nothing was charged. */
  async function failsUncharged(body, status, code) {
    const before = stack.balance(user.id);
    const res = await stack.expectingLog(PROVIDER_LOG, () => stack.chat(user.key.secret, body));
    assertOpenAIError(res, status, code);
    assertNoSecrets(res, stack);
    assert.equal(res.headers.get('x-provider-credits') ?? '0', '0', 'no credits header on a failure');
    assert.equal(stack.balance(user.id), before, 'balance unchanged');
    const row = stack.ledger(res.headers.get('x-request-id'));
    assert.ok(row, `a ledger row for ${res.headers.get('x-request-id')}`);
    assert.equal(row.credits, '0', `ledger credits: ${JSON.stringify(row)}`);
    assert.ok(!['ok', 'reserved'].includes(row.status), `ledger status: ${JSON.stringify(row)}`);
    return res;
  }

  it('502 GATEWAY_ERROR when the gateway answers 500', async () => {
    await failsUncharged(chatBody('prov-fault-500'), 502, 'GATEWAY_ERROR');
  });

  it('502 GATEWAY_ERROR when the gateway answers malformed JSON', async () => {
    await failsUncharged(chatBody('prov-fault-malformed'), 502, 'GATEWAY_ERROR');
  });

  it('504 GATEWAY_TIMEOUT when the gateway is slower than ProviderGatewayTimeout', async () => {
    const t0 = Date.now();
    await failsUncharged(chatBody('prov-slow'), 504, 'GATEWAY_TIMEOUT');
    // ProviderGatewayTimeout 5; the gateway would answer after 8 s
    assert.ok(Date.now() - t0 >= 4000, 'the answer came before the timeout: not a timeout');
  });

  it('502 GATEWAY_ERROR when the gateway is down, and recovery after it returns', async () => {
    await stack.mock.stop();
    await failsUncharged(chatBody('prov-main'), 502, 'GATEWAY_ERROR');
    await failsUncharged(chatBody('prov-main'), 502, 'GATEWAY_ERROR');
    await stack.mock.start();
    const before = stack.balance(user.id);
    const res = await stack.chat(user.key.secret, chatBody('prov-main'));
    assert.equal(res.status, 200, res.text);
    assert.equal(stack.balance(user.id), before - toMicro(res.headers.get('x-provider-credits')));
  });

  it('leaves no reservation open', async () => {
    const open = stack.sql("SELECT request_id FROM ledger WHERE status = 'reserved'");
    assert.deepEqual(open, []);
  });
});

describe('a gateway URL that points at a closed port', { timeout: 60000 }, () => {
  let stack;
  let user;
  let closed;

  before(async () => {
    closed = await freePort();
    stack = await startStack({
      mockgw: false,
      gatewayURL: `http://127.0.0.1:${closed}`,
      seed: (s) => {
        seedCatalog(s);
        user = { id: s.addUser('closed@example.test', 10) };
        user.key = s.createKey('closed@example.test');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  it('answers 502 GATEWAY_ERROR without the address, and charges nothing', async () => {
    const before = stack.balance(user.id);
    const res = await stack.expectingLog(PROVIDER_LOG,
      () => stack.chat(user.key.secret, chatBody('prov-main')));
    assertOpenAIError(res, 502, 'GATEWAY_ERROR');
    assertNoSecrets(res, stack, [`:${closed}`, `127.0.0.1:${closed}`]);
    assert.equal(stack.balance(user.id), before);
  });
});
