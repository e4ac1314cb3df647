// tests/integration/hardening-money.test.js: money that cannot overflow
// (issue 11, defect 1). An account without credit asks for an output cap no
// reservation could hold (922337203686000000 tokens, or a number beyond 64
// bits that json-c reads as INT64_MAX) on each transport: 400 naming the
// field in the transport's error shape, nothing reaches the gateway, no
// ledger row, the balance unchanged (before the fix the hold overflowed to a
// negative figure treated as 0 and the request was served). The largest cap
// allowed is an ordinary 402 there. A gateway that reports absurd usage
// (counts near INT64_MAX, negative ones, output above the request's cap) is
// charged exactly the hold, with a PROV00300 warning naming the request.
// ProviderDefaultMaxTokens above the cap stops apache2 at start-up.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startStack, seedCatalog, DEFAULT_UPSTREAMS, HTTPD } from './lib/server.js';
import {
  assertOpenAIError, assertNoSecrets, eventually, microToText, toMicro,
} from './lib/helpers.js';
import {
  MESSAGES_UPSTREAMS, seedMessagesCatalog, messages, messagesStream, assertAnthropicError,
} from './lib/messages.js';

const OUTPUT_MAX = 1000000;
const HUGE = '922337203686000000';
const BEYOND_64_BITS = '99999999999999999999999';

const hello = [{ role: 'user', content: 'hello world' }];

/** A body with the cap written raw (a number JSON.stringify could not keep). */
function rawBody(transport, model, cap) {
  if (transport === 'responses') {
    return `{"model":"${model}","input":"hello world","max_output_tokens":${cap}}`;
  }
  return `{"model":"${model}","messages":${JSON.stringify(hello)},"max_tokens":${cap}}`;
}

describe('money that cannot overflow', { timeout: 180000 }, () => {
  let stack;
  let broke;     // no credit at all
  let funded;

  before(async () => {
    stack = await startStack({
      models: [...DEFAULT_UPSTREAMS, ...MESSAGES_UPSTREAMS],
      seed: (s) => {
        seedCatalog(s);
        seedMessagesCatalog(s);
        // 15 credits per 1M output tokens: 922337203686000000 of them pass
        // int64 micro-credits (the case: the hold wrapped negative)
        s.addModel('prov-pricey', 'mock-main', { rates: { input: '3', output: '15' } });
        broke = { id: s.addUser('broke@example.test') };
        broke.key = s.createKey('broke@example.test');
        funded = { id: s.addUser('funded@example.test', 1000) };
        funded.key = s.createKey('funded@example.test');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  async function seq() {
    return (await stack.mock.last().catch(() => ({ seq: 0 }))).seq;
  }

  function ledgerRows(userId) {
    return Number(stack.sql(`SELECT COUNT(*) AS n FROM ledger WHERE user_id = ${userId}`)[0].n);
  }

  function send(transport, key, body) {
    if (transport === 'messages') return messages(stack, key, body);
    const p = transport === 'chat' ? '/v1/chat/completions' : '/v1/responses';
    return stack.request('POST', p, { key, body });
  }

  const MODEL = { chat: 'prov-pricey', messages: 'claude-main', responses: 'prov-pricey' };
  const FIELD = { chat: 'max_tokens', messages: 'max_tokens', responses: 'max_output_tokens' };

  /** Sends body; asserts the gateway saw nothing and nothing was charged. */
  async function refused(transport, body, who = broke) {
    const s0 = await seq();
    const b0 = stack.balance(who.id);
    const rows = ledgerRows(who.id);
    const res = await send(transport, who.key.secret, body);
    assert.equal(await seq(), s0, `${transport}: the gateway was not called`);
    assert.equal(ledgerRows(who.id), rows, `${transport}: no ledger row`);
    assert.equal(stack.balance(who.id), b0, `${transport}: balance unchanged`);
    assertNoSecrets(res, stack);
    return res;
  }

  function assertCapRefused(transport, res, re) {
    if (transport === 'messages') {
      const e = assertAnthropicError(res, 400, 'invalid_request_error', 'INVALID_REQUEST');
      assert.match(e.message, /'max_tokens'/);
      assert.match(e.message, re);
    } else {
      const e = assertOpenAIError(res, 400, 'INVALID_REQUEST', { param: FIELD[transport] });
      assert.match(e.message, new RegExp(`'${FIELD[transport]}'`));
      assert.match(e.message, re);
    }
  }

  for (const transport of ['chat', 'messages', 'responses']) {
    it(`${transport}: an output cap past the maximum is 400 naming ${FIELD[transport]}, with no credit`,
      async () => {
        for (const cap of [HUGE, BEYOND_64_BITS, '18446744073709551615', String(OUTPUT_MAX + 1)]) {
          const res = await refused(transport, rawBody(transport, MODEL[transport], cap));
          assertCapRefused(transport, res, /at most 1000000/);
        }
        assert.equal(stack.balance(broke.id), 0n);
      });

    it(`${transport}: a cap that is not a positive integer keeps its clear 400`, async () => {
      for (const cap of ['0', '-1', '-99999999999999999999', '1.5', '1e3', '"64"', 'true']) {
        const res = await refused(transport, rawBody(transport, MODEL[transport], cap));
        assertCapRefused(transport, res, /positive integer/);
      }
    });

    it(`${transport}: the largest cap allowed is weighed against the balance: 402`, async () => {
      const res = await refused(transport, rawBody(transport, MODEL[transport], String(OUTPUT_MAX)));
      if (transport === 'messages') {
        assertAnthropicError(res, 402, 'billing_error', 'INSUFFICIENT_CREDITS');
      } else {
        assertOpenAIError(res, 402, 'INSUFFICIENT_CREDITS');
      }
    });
  }

  it('chat: max_completion_tokens past the maximum is refused the same way', async () => {
    const res = await refused('chat', `{"model":"prov-pricey","messages":${JSON.stringify(hello)},`
      + `"max_completion_tokens":${BEYOND_64_BITS}}`);
    assertOpenAIError(res, 400, 'INVALID_REQUEST', { param: 'max_completion_tokens' });
  });

  /**
   * Sends a request whose gateway reports absurd usage; asserts it was
   * charged exactly its hold (ledger, header or body, balance) and that the
   * warning names it. Returns the request id.
   */
  async function chargedTheHold(send1, credits) {
    const b0 = stack.balance(funded.id);
    const from = stack.logSize();
    let rid;
    let res;
    await stack.expectingLog(/PROV00300/, async () => {
      res = await send1();
      rid = res.headers.get('x-request-id');
      assert.ok(rid, 'x-request-id');
      await stack.billingSettled();
    });
    assert.equal(res.status, 200, `status: ${res.status} ${res.text}`);
    // A settlement queued behind a running batch commits just after the answer.
    const row = await eventually(() => {
      const r = stack.ledger(rid);
      assert.ok(r, `a ledger row for ${rid}`);
      assert.equal(r.status, 'ok');
      return r;
    });
    assert.ok(BigInt(row.reserved) > 0n, 'a hold was taken');
    assert.equal(row.credits, row.reserved, 'charged exactly the hold');
    for (const k of ['input_tokens', 'output_tokens', 'cache_tokens', 'reasoning_tokens']) {
      assert.ok(Number(row[k]) >= 0 && Number(row[k]) <= 1e9, `${k} kept in range: ${row[k]}`);
    }
    await stack.billingSettled();
    assert.equal(stack.balance(funded.id), b0 - BigInt(row.reserved), 'the balance lost the hold');
    if (credits !== undefined) assert.equal(toMicro(credits(res)), BigInt(row.reserved));
    const log = fs.readFileSync(stack.errorLog, 'utf8').slice(from);
    const line = log.split('\n').find((l) => /PROV00300/.test(l) && l.includes(rid));
    assert.ok(line, `a PROV00300 warning naming ${rid}: ${log}`);
    assert.match(line, /warn/);
    return rid;
  }

  it('chat: usage near INT64_MAX is charged the hold, with a warning', async () => {
    for (const usage of ['prompt=9223372036854775807,completion=1',
      'prompt=5,completion=9223372036854775807,reasoning=9223372036854775806',
      'prompt=5,completion=1000',
      'prompt=1000000000000000000,completion=1']) {
      await chargedTheHold(() => stack.chat(funded.key.secret, {
        model: 'prov-main', max_tokens: 16,
        messages: [{ role: 'user', content: `hello\nUSAGE: ${usage}` }],
      }), (res) => res.headers.get('x-provider-credits'));
    }
  });

  it('chat without max_tokens: output past the largest cap is absurd too', async () => {
    await chargedTheHold(() => stack.chat(funded.key.secret, {
      model: 'prov-main',
      messages: [{ role: 'user', content: `hello\nUSAGE: completion=${OUTPUT_MAX + 1}` }],
    }), (res) => res.headers.get('x-provider-credits'));
  });

  it('messages: absurd usage, plain and streamed, is charged the hold', async () => {
    const body = (usage) => ({
      model: 'claude-main', max_tokens: 16,
      messages: [{ role: 'user', content: `hello\nUSAGE: ${usage}` }],
    });
    await chargedTheHold(() => messages(stack, funded.key.secret,
      body('prompt=10,completion=9223372036854775807')),
    (res) => res.headers.get('x-provider-credits'));
    await chargedTheHold(() => messages(stack, funded.key.secret,
      body('prompt=9223372036854775807,creation=9223372036854775807,completion=2')),
    (res) => res.headers.get('x-provider-credits'));
    await chargedTheHold(async () => {
      const s = await messagesStream(stack, funded.key.secret,
        body('prompt=10,completion=9223372036854775807'));
      assert.equal(s.events.at(-1).event, 'message_stop');
      return { status: s.status, headers: s.headers, text: s.text, events: s.events };
    }, (res) => {
      // The figure the stream tells the client is the one the ledger holds.
      const delta = res.events.find((e) => e.event === 'message_delta');
      assert.ok(delta, `a message_delta event: ${res.text}`);
      return String(JSON.parse(delta.data).usage.credits);
    });
  });

  it('responses: absurd usage, plain and streamed, is charged the hold', async () => {
    const body = (usage, stream = false) => ({
      model: 'prov-main', max_output_tokens: 16, stream, input: `hello\nUSAGE: ${usage}`,
    });
    await chargedTheHold(() => stack.request('POST', '/v1/responses', {
      key: funded.key.secret, body: body('prompt=9223372036854775807,completion=9223372036854775807'),
    }), (res) => res.headers.get('x-provider-credits'));
    await chargedTheHold(() => stack.request('POST', '/v1/responses', {
      key: funded.key.secret, body: body('prompt=7,completion=9223372036854775807', true),
    }), (res) => {
      const done = res.text.split('\n\n').find((b) => b.includes('event: response.completed'));
      assert.ok(done, `a response.completed event: ${res.text}`);
      const m = /"credits":\s*([0-9.]+)/.exec(done);
      assert.ok(m, `credits in response.completed: ${done}`);
      return m[1];
    });
  });

  it('a believable report is still charged its own figure, with no warning', async () => {
    const res = await stack.chat(funded.key.secret, {
      model: 'prov-main', max_tokens: 16,
      messages: [{ role: 'user', content: 'hello\nUSAGE: prompt=12,completion=16' }],
    });
    assert.equal(res.status, 200, res.text);
    const row = await eventually(() => {
      const r = stack.ledger(res.headers.get('x-request-id'));
      assert.equal(r.status, 'ok');
      return r;
    });
    assert.equal(row.output_tokens, 16);
    assert.ok(BigInt(row.credits) < BigInt(row.reserved));
    assert.equal(microToText(BigInt(row.credits)), res.headers.get('x-provider-credits'));
  });

  it('ProviderDefaultMaxTokens above the maximum stops apache2 at start-up, naming it', () => {
    const check = (value) => {
      const conf = path.join(stack.dir, `check-${value}.conf`);
      const text = fs.readFileSync(stack.conf, 'utf8');
      fs.writeFileSync(conf, `${text}\nProviderDefaultMaxTokens ${value}\n`);
      return spawnSync(HTTPD, ['-t', '-f', conf], { env: stack.httpdEnv(), encoding: 'utf8' });
    };
    let r = check(String(OUTPUT_MAX + 1));
    assert.notEqual(r.status, 0, 'apache2 -t refuses the configuration');
    assert.match(r.stderr, /ProviderDefaultMaxTokens/);
    assert.match(r.stderr, /1000000/);
    r = check(HUGE);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /ProviderDefaultMaxTokens/);
    r = check(String(OUTPUT_MAX));
    assert.equal(r.status, 0, `the maximum itself is fine: ${r.stderr}`);
  });

  it('ProviderCreditValue and ProviderTopUpURL: a bad value stops apache2 at start-up, naming it', () => {
    const check = (line) => {
      const conf = path.join(stack.dir, 'check-credit.conf');
      fs.writeFileSync(conf, `${fs.readFileSync(stack.conf, 'utf8')}\n${line}\n`);
      return spawnSync(HTTPD, ['-t', '-f', conf], { env: stack.httpdEnv(), encoding: 'utf8' });
    };
    for (const [line, name] of [['ProviderCreditValue 0 USD', 'ProviderCreditValue'],
      ['ProviderCreditValue 1,5 EUR', 'ProviderCreditValue'], ['ProviderCreditValue 0.01 dollars', 'ProviderCreditValue'],
      ['ProviderCreditValue 0.0000001 USD', 'ProviderCreditValue'],
      ['ProviderTopUpURL javascript:alert(1)', 'ProviderTopUpURL'], ['ProviderTopUpURL http://example.test/', 'ProviderTopUpURL'],
      ['ProviderTopUpURL "https://example.test/<b>"', 'ProviderTopUpURL']]) {
      const r = check(line);
      assert.notEqual(r.status, 0, `${line}: apache2 -t refuses it`);
      assert.match(r.stderr, new RegExp(name), r.stderr);
    }
    for (const line of ['ProviderCreditValue 0.01 USD', 'ProviderCreditValue 12 EUR',
      'ProviderTopUpURL https://example.test/top-up?a=1&b=2', 'ProviderTopUpURL mailto:billing@example.test']) {
      const r = check(line);
      assert.equal(r.status, 0, `${line}: ${r.stderr}`);
    }
  });
});
