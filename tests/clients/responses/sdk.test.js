// tests/clients/responses/sdk.test.js: /v1/responses through the official
// `openai` npm SDK (pinned in this folder's package.json) against the
// integration harness's apache2 + mod_provider + mock gateway:
// responses.create plain (output_text, usage with credits, the charge in
// x-provider-credits), streamed (the raw event stream, and the SDK's own
// stream helper that rebuilds the response from the events and so checks
// their indexes and ids), a function-tool round trip that feeds the SDK's
// own output items back as input, and a refusal as the SDK's error class.
// The model's own upstream conditions keep the codes the SDK acts on: a
// context overflow is error.code context_length_exceeded (plain, and a
// stream refused before its first event), and response.failed carries that
// code when the stream had begun; the gateway's 429 is retried by the SDK
// after its Retry-After, and only the answered request is charged.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startStack, seedCatalog, CATALOG, DEFAULT_UPSTREAMS } from '../../integration/lib/server.js';
import { expectedCharge, kinds, toMicro } from '../../integration/lib/helpers.js';
import { OPENAI_FAULTS, seedFaults, ledgerRows, timedFetch } from '../lib/upstream.js';

describe('the openai SDK on /v1/responses', { timeout: 120000 }, () => {
  let stack;
  let user;
  let client;
  const rates = CATALOG['prov-main'].rates;

  before(async () => {
    stack = await startStack({
      models: [...DEFAULT_UPSTREAMS, ...Object.values(OPENAI_FAULTS)],
      seed: (s) => {
        seedCatalog(s);
        seedFaults(s, OPENAI_FAULTS);
        user = { id: s.addUser('sdk-resp@example.test', 100) };
        user.key = s.createKey('sdk-resp@example.test');
      },
    });
    client = new OpenAI({ apiKey: user.key.secret, baseURL: `${stack.baseURL}/v1`, maxRetries: 0 });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  it('creates a response and exposes its charge', async () => {
    const before = stack.balance(user.id);
    const { data, response } = await client.responses.create({
      model: 'prov-main', input: 'hello world', max_output_tokens: 5,
    }).withResponse();
    assert.equal(data.object, 'response');
    assert.equal(data.status, 'completed');
    assert.equal(data.model, 'prov-main');
    assert.equal(data.output_text, 'mock reply to: hello world');
    assert.equal(data.usage.input_tokens, 12);
    assert.equal(data.usage.output_tokens, 5);
    assert.equal(data.usage.total_tokens, 17);
    const expected = expectedCharge(rates, kinds({ prompt: 12, completion: 5 }));
    assert.equal(toMicro(response.headers.get('x-provider-credits')), expected);
    assert.equal(toMicro(data.usage.credits), expected);
    assert.equal(stack.balance(user.id), before - expected);
  });

  it('streams events with responses.create({stream: true})', async () => {
    const stream = await client.responses.create({
      model: 'prov-main', instructions: 'be brief', input: [
        { role: 'user', content: [{ type: 'input_text', text: 'stream this' }] }],
      stream: true,
    });
    const types = [];
    let text = '';
    let completed = null;
    for await (const ev of stream) {
      types.push(ev.type);
      assert.equal(ev.sequence_number, types.length - 1);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') completed = ev.response;
    }
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.equal(text, 'mock reply to: stream this');
    assert.ok(completed, 'response.completed arrived');
    assert.equal(completed.output[0].content[0].text, text);
    assert.ok(completed.usage.input_tokens > 10);
    assert.equal(typeof completed.usage.credits, 'number');
  });

  it('rebuilds the response with the SDK stream helper', async () => {
    const stream = client.responses.stream({ model: 'prov-main', input: 'helper stream' });
    const deltas = [];
    stream.on('response.output_text.delta', (ev) => deltas.push(ev.delta));
    const final = await stream.finalResponse();
    assert.equal(final.status, 'completed');
    assert.equal(final.output_text, 'mock reply to: helper stream');
    assert.equal(deltas.join(''), final.output_text);
  });

  it('round-trips a function tool', async () => {
    const tools = [{ type: 'function', name: 'get_weather', description: 'Weather of a city',
      strict: false, parameters: { type: 'object', properties: { city: { type: 'string' } },
        required: ['city'] } }];
    const input = [{ role: 'user', content: 'ARGS: {"city":"Oslo"}' }];
    const first = await client.responses.create({ model: 'prov-main', input, tools });
    const call = first.output.find((o) => o.type === 'function_call');
    assert.ok(call, JSON.stringify(first.output));
    assert.equal(call.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.arguments), { city: 'Oslo' });

    const second = await client.responses.create({
      model: 'prov-main', tools,
      input: [...input, ...first.output,
        { type: 'function_call_output', call_id: call.call_id, output: 'snow, -3C' }],
    });
    assert.equal(second.output_text, 'tool said: snow, -3C');
  });

  it('surfaces previous_response_id as BadRequestError (400)', async () => {
    await assert.rejects(
      client.responses.create({ model: 'prov-main', input: 'hi', previous_response_id: 'resp_x' }),
      (err) => {
        assert.ok(err instanceof OpenAI.BadRequestError, `${err?.constructor?.name}: ${err}`);
        assert.equal(err.status, 400);
        assert.equal(err.code, 'INVALID_REQUEST');
        assert.equal(err.param, 'previous_response_id');
        return true;
      },
    );
  });

  /** Asserts err is the SDK's BadRequestError for a context overflow. */
  function contextOverflow(err) {
    assert.ok(err instanceof OpenAI.BadRequestError, `${err?.constructor?.name}: ${err}`);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'context_length_exceeded');
    assert.equal(err.type, 'invalid_request_error');
    assert.match(err.message, /prompt is too long: 250000 tokens > 200000 maximum/);
    return true;
  }

  it('sees a context overflow as error.code context_length_exceeded, uncharged', async () => {
    const before = stack.balance(user.id);
    await assert.rejects(client.responses.create({ model: 'prov-ctx', input: 'too long' }),
      contextOverflow);
    // streamed: refused before the first event, so the SDK throws at create()
    await assert.rejects(client.responses.create({ model: 'prov-ctx', input: 'too long', stream: true }),
      contextOverflow);
    await stack.billingSettled();
    assert.equal(stack.balance(user.id), before);
  });

  it('reads context_length_exceeded in response.failed when the stream had begun', async () => {
    const stream = await client.responses.create({
      model: 'prov-ctx-midstream', input: 'overflows midway', stream: true,
    });
    const types = [];
    let failed = null;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.failed') failed = ev.response;
    }
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.failed', types.join());
    assert.ok(types.includes('response.output_text.delta'), types.join());
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error.code, 'context_length_exceeded');
    assert.match(failed.error.message, /prompt is too long: 250000 tokens > 200000 maximum/);
  });

  it("retries the gateway's 429 after its Retry-After, then is charged once", async () => {
    const times = [];
    const retrying = new OpenAI({ apiKey: user.key.secret, baseURL: `${stack.baseURL}/v1`,
      maxRetries: 2, fetch: timedFetch(times) });
    const rows = ledgerRows(stack, user.id).length;
    const before = stack.balance(user.id);
    const stream = await retrying.responses.create({
      model: 'prov-429-once', input: 'throttled once', stream: true,
    });
    let completed = null;
    for await (const ev of stream) if (ev.type === 'response.completed') completed = ev.response;
    assert.ok(completed, 'the retried stream completed');
    assert.equal(completed.output[0].content[0].text, 'mock reply to: throttled once');
    assert.equal(times.length, 2, 'one 429, then the stream');
    const waited = times[1] - times[0];
    assert.ok(waited >= 1900 && waited < 5000, `the SDK waited ${waited} ms (Retry-After: 2)`);
    const charged = toMicro(completed.usage.credits);
    assert.ok(charged > 0n);
    await stack.billingSettled();
    assert.equal(stack.balance(user.id), before - charged, 'only the answered request is charged');
    const added = ledgerRows(stack, user.id, rows);
    assert.deepEqual(added.map((r) => [r.status, r.credits]), [['refused', '0'], ['ok', String(charged)]]);
  });
});
