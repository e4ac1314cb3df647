// tests/integration/responses.test.js: POST /v1/responses against the real
// apache2 + mod_provider + mock gateway: the response object and its exact
// charge (x-provider-credits, usage.credits, the ledger, the balance), the
// translation the gateway receives (instructions, developer messages, items,
// tools of every kind, hosted tools dropped and named in
// x-provider-dropped-tools), the full response.* stream with sequence numbers
// and its settlement, a function-tool round trip, custom and namespace tools,
// the service's refusals (stateless, no images or files, forced hosted tools)
// in the OpenAI error shape, streams that fail before or after they began,
// and a plan's windows in Codex's rate-limit headers (x-codex-primary-* for 5
// hours, x-codex-secondary-* for 7 days) with exhaustion answered as the
// usage_limit_reached error that Codex shows as a usage limit.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, seedCatalog, CATALOG } from './lib/server.js';
import {
  assertOpenAIError, assertNoSecrets, expectedCharge, kinds, rawUsageCredits, toMicro,
} from './lib/helpers.js';

/** Events of an SSE body: [{event, data}] with data parsed as JSON. */
export function sseEvents(text) {
  const out = [];
  for (const block of text.split('\n\n')) {
    if (!block.trim()) continue;
    let event = null;
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    out.push({ event, data: JSON.parse(data.join('\n')) });
  }
  return out;
}

/** The mock's usage for a request: prompt = 10 + content bytes / 4, completion = min(20, max). */
function mockUsage(contentBytes, maxTokens = null) {
  return { prompt: 10 + Math.floor(contentBytes / 4), completion: maxTokens === null ? 20 : Math.min(20, maxTokens) };
}

describe('POST /v1/responses', { timeout: 180000 }, () => {
  let stack;
  let user;
  let planned;    // a plan (5 h: 0.01 credit, 7 d: 0.1 credit) and no balance
  let spent;      // a plan too small for any request, and no balance
  const rates = CATALOG['prov-main'].rates;

  before(async () => {
    stack = await startStack({
      seed: (s) => {
        seedCatalog(s);
        user = { id: s.addUser('resp@example.test', 1000) };
        user.key = s.createKey('resp@example.test');
        s.ctl('plan', 'add', 'resp-plan', '--5h', '0.01', '--7d', '0.1');
        s.ctl('plan', 'add', 'resp-tiny', '--5h', '0.000001', '--7d', '0.000001');
        planned = { id: s.addUser('planned@example.test') };
        planned.key = s.createKey('planned@example.test');
        s.ctl('subscription', 'set', 'planned@example.test', 'resp-plan');
        spent = { id: s.addUser('spent@example.test') };
        spent.key = s.createKey('spent@example.test');
        s.ctl('subscription', 'set', 'spent@example.test', 'resp-tiny');
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  const post = (body, opts = {}) => stack.request('POST', '/v1/responses',
    { key: user.key.secret, body, ...opts });

  function checkCharge(res, expected, status = 'ok') {
    const rid = res.headers.get('x-request-id');
    assert.ok(rid, 'x-request-id');
    const row = stack.ledger(rid);
    assert.ok(row, `ledger row for ${rid}`);
    assert.equal(row.transport, 'responses');
    assert.equal(row.status, status);
    assert.equal(BigInt(row.credits), expected, 'ledger credits');
    return row;
  }

  it('answers a string input with a response object and charges it exactly', async () => {
    const before = stack.balance(user.id);
    const res = await post({ model: 'prov-main', input: 'hello world', max_output_tokens: 7,
      store: false, include: ['reasoning.encrypted_content'], reasoning: { effort: 'low' },
      prompt_cache_key: 'k1', client_metadata: { a: 'b' }, service_tier: 'auto',
      text: { verbosity: 'low' }, parallel_tool_calls: true });
    assert.equal(res.status, 200, res.text);
    const r = res.json;
    assert.match(r.id, /^resp_/);
    assert.equal(r.object, 'response');
    assert.equal(r.status, 'completed');
    assert.equal(r.model, 'prov-main');
    assert.equal(typeof r.created_at, 'number');
    assert.equal(r.output.length, 1);
    assert.equal(r.output[0].type, 'message');
    assert.equal(r.output[0].role, 'assistant');
    assert.deepEqual(r.output[0].content.map((c) => [c.type, c.text]),
      [['output_text', 'mock reply to: hello world']]);
    const u = mockUsage(11, 7);
    assert.equal(r.usage.input_tokens, u.prompt);
    assert.equal(r.usage.input_tokens_details.cached_tokens, 0);
    assert.equal(r.usage.output_tokens, 7);
    assert.equal(r.usage.output_tokens_details.reasoning_tokens, 0);
    assert.equal(r.usage.total_tokens, u.prompt + 7);
    const expected = expectedCharge(rates, kinds(u));
    assert.equal(toMicro(res.headers.get('x-provider-credits')), expected);
    assert.equal(toMicro(rawUsageCredits(res.text)), expected);
    checkCharge(res, expected);
    assert.equal(stack.balance(user.id), before - expected);
    assert.equal(res.headers.get('x-codex-primary-used-percent'), null, 'no plan, no quota headers');
    assertNoSecrets(res, stack);
    const last = await stack.mock.last();
    assert.equal(last.path, '/v1/chat/completions');
    assert.equal(last.body.model, 'mock-main');
    assert.equal(last.body.max_tokens, 7);
    assert.equal(last.headers.authorization, `Bearer ${stack.token}`);
    for (const f of ['store', 'include', 'reasoning', 'prompt_cache_key', 'client_metadata', 'input']) {
      assert.ok(!(f in last.body), `${f} is not forwarded`);
    }
  });

  it('translates instructions and message items for the gateway', async () => {
    const res = await post({
      model: 'prov-main',
      instructions: 'be brief',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'dev rules' }] },
        { role: 'system', content: 'sys' },
        { type: 'reasoning', summary: [], encrypted_content: 'opaque' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'first' }, { type: 'input_text', text: 'second' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'earlier answer' }] },
        { type: 'message', role: 'user', content: 'TOOL: none\nlast' },
      ],
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.instructions, 'be brief');
    const last = await stack.mock.last();
    assert.deepEqual(last.body.messages, [
      { role: 'system', content: 'be brief' },
      { role: 'system', content: 'dev rules' },
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'first\nsecond' },
      { role: 'assistant', content: 'earlier answer' },
      { role: 'user', content: 'TOOL: none\nlast' },
    ]);
    assert.ok(!JSON.stringify(last.body).includes('opaque'), 'reasoning items are dropped');
    const bytes = ['be brief', 'dev rules', 'sys', 'first\nsecond', 'earlier answer', 'TOOL: none\nlast']
      .reduce((n, s) => n + Buffer.byteLength(s), 0);
    checkCharge(res, expectedCharge(rates, kinds(mockUsage(bytes))));
  });

  it('streams the full response.* sequence and settles it', async () => {
    const before = stack.balance(user.id);
    const res = await post({ model: 'prov-main', input: 'stream me please', stream: true });
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type'), /^text\/event-stream/);
    const evs = sseEvents(res.text);
    const types = evs.map((e) => e.data.type);
    assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress',
      'response.output_item.added', 'response.content_part.added']);
    assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done',
      'response.output_item.done', 'response.completed']);
    evs.forEach((e, i) => {
      assert.equal(e.event, e.data.type, 'event name = data.type');
      assert.equal(e.data.sequence_number, i, 'sequence_number counts from 0');
    });
    const deltas = evs.filter((e) => e.data.type === 'response.output_text.delta');
    assert.ok(deltas.length >= 2, 'several deltas');
    const text = deltas.map((e) => e.data.delta).join('');
    assert.equal(text, 'mock reply to: stream me please');
    const done = evs.find((e) => e.data.type === 'response.output_item.done').data.item;
    assert.equal(done.content[0].text, text);
    const completed = evs.at(-1).data.response;
    assert.equal(completed.status, 'completed');
    assert.equal(completed.id, evs[0].data.response.id);
    assert.equal(completed.output[0].content[0].text, text);
    const u = mockUsage(Buffer.byteLength('stream me please'));
    assert.equal(completed.usage.input_tokens, u.prompt);
    assert.equal(completed.usage.output_tokens, 20);
    const expected = expectedCharge(rates, kinds(u));
    assert.equal(toMicro(completed.usage.credits), expected);
    checkCharge(res, expected);
    assert.equal(stack.balance(user.id), before - expected);
    const last = await stack.mock.last();
    assert.equal(last.body.stream, true);
    assert.deepEqual(last.body.stream_options, { include_usage: true });
  });

  it('round-trips a function tool (plain and streamed)', async () => {
    const tools = [{ type: 'function', name: 'get_weather', description: 'weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
    const ask = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'ARGS: {"city":"Paris"}' }] };
    const res = await post({ model: 'prov-main', input: [ask], tools, tool_choice: 'auto' });
    assert.equal(res.status, 200, res.text);
    const call = res.json.output.find((o) => o.type === 'function_call');
    assert.ok(call, res.text);
    assert.equal(call.name, 'get_weather');
    assert.equal(call.arguments, '{"city":"Paris"}');
    assert.match(call.call_id, /^call_mock_/);
    let last = await stack.mock.last();
    assert.deepEqual(last.body.tools, [{ type: 'function', function: { name: 'get_weather',
      description: 'weather', parameters: tools[0].parameters } }]);
    assert.equal(last.body.tool_choice, 'auto');

    const res2 = await post({ model: 'prov-main', tools, stream: true, input: [ask,
      { type: 'function_call', call_id: call.call_id, name: 'get_weather', arguments: call.arguments },
      { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21C' }] });
    assert.equal(res2.status, 200, res2.text);
    const evs = sseEvents(res2.text);
    assert.equal(evs.at(-1).data.response.output[0].content[0].text, 'tool said: sunny, 21C');
    last = await stack.mock.last();
    assert.deepEqual(last.body.messages.slice(1), [
      { role: 'assistant', content: null, tool_calls: [{ id: call.call_id, type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: call.call_id, content: 'sunny, 21C' },
    ]);

    const res3 = await post({ model: 'prov-main', input: [ask], tools, stream: true });
    const evs3 = sseEvents(res3.text);
    const types = evs3.map((e) => e.data.type);
    assert.ok(types.includes('response.function_call_arguments.delta'), types.join());
    const argsDone = evs3.find((e) => e.data.type === 'response.function_call_arguments.done').data;
    assert.equal(argsDone.arguments, '{"city":"Paris"}');
    const deltas = evs3.filter((e) => e.data.type === 'response.function_call_arguments.delta')
      .map((e) => e.data.delta).join('');
    assert.equal(deltas, '{"city":"Paris"}');
    const itemDone = evs3.find((e) => e.data.type === 'response.output_item.done').data.item;
    assert.equal(itemDone.type, 'function_call');
    assert.equal(itemDone.arguments, '{"city":"Paris"}');
    assert.equal(itemDone.status, 'completed');
    assert.equal(types.at(-1), 'response.completed');
  });

  it('offers custom tools as functions and answers custom_tool_call items', async () => {
    const patch = '*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n';
    const tools = [
      { type: 'function', name: 'exec_command', parameters: { type: 'object', properties: {} } },
      { type: 'custom', name: 'apply_patch', description: 'edit files',
        format: { type: 'grammar', syntax: 'lark', definition: 'start: begin_patch hunk+ end_patch' } },
    ];
    const text = `TOOL: apply_patch\nARGS: ${JSON.stringify({ input: patch })}`;
    const res = await post({ model: 'prov-main', input: text, tools, stream: true });
    assert.equal(res.status, 200, res.text);
    const evs = sseEvents(res.text);
    const item = evs.find((e) => e.data.type === 'response.output_item.done').data.item;
    assert.equal(item.type, 'custom_tool_call');
    assert.equal(item.name, 'apply_patch');
    assert.equal(item.input, patch);
    assert.equal(evs.find((e) => e.data.type === 'response.custom_tool_call_input.done').data.input, patch);
    const last = await stack.mock.last();
    const fn = last.body.tools[1].function;
    assert.equal(fn.name, 'apply_patch');
    assert.deepEqual(fn.parameters.required, ['input']);
    assert.equal(fn.parameters.properties.input.type, 'string');
    assert.match(fn.description, /start: begin_patch hunk\+ end_patch/);

    // The history of a custom call goes back as a call with its input.
    const res2 = await post({ model: 'prov-main', tools, input: [
      { role: 'user', content: text },
      { type: 'custom_tool_call', call_id: item.call_id, name: 'apply_patch', input: patch },
      { type: 'custom_tool_call_output', call_id: item.call_id, output: 'Success' }] });
    assert.equal(res2.status, 200, res2.text);
    assert.equal(res2.json.output[0].content[0].text, 'tool said: Success');
    const last2 = await stack.mock.last();
    assert.deepEqual(JSON.parse(last2.body.messages[1].tool_calls[0].function.arguments), { input: patch });
  });

  it('flattens namespace tools and answers with their namespace', async () => {
    const tools = [{ type: 'namespace', name: 'crm', description: 'customer tools', tools: [
      { type: 'function', name: 'lookup', parameters: { type: 'object', properties: { id: { type: 'integer' } } } },
      { type: 'function', name: 'update' }] }];
    const res = await post({ model: 'prov-main', input: 'TOOL: crm__update\nARGS: {"id":7}', tools });
    assert.equal(res.status, 200, res.text);
    const call = res.json.output[0];
    assert.equal(call.type, 'function_call');
    assert.equal(call.name, 'update');
    assert.equal(call.namespace, 'crm');
    assert.equal(call.arguments, '{"id":7}');
    const last = await stack.mock.last();
    assert.deepEqual(last.body.tools.map((t) => t.function.name), ['crm__lookup', 'crm__update']);

    const res2 = await post({ model: 'prov-main', tools, input: [
      { role: 'user', content: 'go' },
      { type: 'function_call', call_id: 'c9', name: 'update', namespace: 'crm', arguments: '{"id":7}' },
      { type: 'function_call_output', call_id: 'c9', output: 'updated' }] });
    assert.equal(res2.status, 200, res2.text);
    const last2 = await stack.mock.last();
    assert.equal(last2.body.messages[1].tool_calls[0].function.name, 'crm__update');
  });

  it('drops hosted tools, names them in a header, and refuses to force one', async () => {
    const tools = [{ type: 'web_search' }, { type: 'tool_search', execution: 'client' },
      { type: 'function', name: 'f', parameters: { type: 'object', properties: {} } }];
    const res = await post({ model: 'prov-main', input: 'TOOL: none\nhi', tools });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get('x-provider-dropped-tools'), 'web_search,tool_search');
    const last = await stack.mock.last();
    assert.deepEqual(last.body.tools.map((t) => t.function.name), ['f']);

    const seq = (await stack.mock.last()).seq;
    const bad = await post({ model: 'prov-main', input: 'hi', tools, tool_choice: { type: 'web_search' } });
    assertOpenAIError(bad, 400, 'INVALID_REQUEST', { param: 'tool_choice' });
    assert.equal((await stack.mock.last()).seq, seq, 'the gateway was not called');
  });

  it('refuses what a stateless text transport cannot do, in the OpenAI shape', async () => {
    const seq = (await stack.mock.last()).seq;
    const cases = [
      [{ model: 'prov-main', input: 'hi', previous_response_id: 'resp_1' }, 'previous_response_id'],
      [{ model: 'prov-main', input: [{ role: 'user', content: [{ type: 'input_text', text: 'see' },
        { type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] }] }, 'input[0].content[1]'],
      [{ model: 'prov-main', input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-1' }] }] }, 'input[0].content[0]'],
      [{ model: 'prov-main', input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]'],
      [{ model: 'prov-main' }, 'input'],
      [{ input: 'hi' }, 'model'],
      [{ model: 'prov-main', input: 'hi', max_output_tokens: -1 }, 'max_output_tokens'],
    ];
    for (const [body, param] of cases) {
      const res = await post(body);
      assertOpenAIError(res, 400, 'INVALID_REQUEST', { param });
      assertNoSecrets(res, stack);
    }
    assertOpenAIError(await post({ model: 'no-such-model', input: 'hi' }), 404, 'MODEL_NOT_FOUND');
    assertOpenAIError(await stack.request('POST', '/v1/responses', { body: { model: 'prov-main', input: 'hi' } }),
      401, 'INVALID_API_KEY');
    assert.equal((await stack.mock.last()).seq, seq, 'no refusal reached the gateway');
  });

  it('turns an image inside a tool output into a note instead of refusing', async () => {
    const res = await post({ model: 'prov-main', input: [
      { role: 'user', content: 'look at it' },
      { type: 'function_call', call_id: 'v1', name: 'view_image', arguments: '{"path":"a.png"}' },
      { type: 'function_call_output', call_id: 'v1', output: [
        { type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] }] });
    assert.equal(res.status, 200, res.text);
    const last = await stack.mock.last();
    const tool = last.body.messages.find((m) => m.role === 'tool');
    assert.match(tool.content, /image omitted/);
    assert.ok(!JSON.stringify(last.body).includes('base64'), 'the image is not forwarded');
    assert.match(res.json.output[0].content[0].text, /^tool said: \[image omitted/);
  });

  it('answers a gateway failure before any output with an error and no charge', async () => {
    for (const stream of [false, true]) {
      const before = stack.balance(user.id);
      const res = await stack.expectingLog(/PROV00030|gateway/,
        () => post({ model: 'prov-fault-500', input: 'hi', stream }));
      assertOpenAIError(res, 502, 'GATEWAY_ERROR');
      assert.match(res.headers.get('content-type'), /^application\/json/);
      const row = checkCharge(res, 0n, 'refused');
      assert.equal(row.credits, '0');
      assert.equal(stack.balance(user.id), before);
    }
  });

  it('settles a stream the gateway cut short and says so with response.failed', async () => {
    const before = stack.balance(user.id);
    const res = await stack.expectingLog(/PROV00030|PROV00140/,
      () => post({ model: 'prov-fault-cut', input: 'a fairly long question to cut', stream: true }));
    assert.equal(res.status, 200, res.text);
    const evs = sseEvents(res.text);
    assert.equal(evs[0].data.type, 'response.created');
    const last = evs.at(-1).data;
    assert.equal(last.type, 'response.failed');
    assert.equal(last.response.status, 'failed');
    assert.equal(last.response.error.code, 'GATEWAY_ERROR');
    evs.forEach((e, i) => assert.equal(e.data.sequence_number, i));
    const row = stack.ledger(res.headers.get('x-request-id'));
    // No usage arrived: the input estimate and the text relayed, 3 bytes a
    // token rounded up (docs/internals/broken-streams.md), at rates 1 and 1.
    const bytes = evs.filter((e) => e.data.type === 'response.output_text.delta')
      .reduce((n, e) => n + Buffer.byteLength(e.data.delta), 0);
    assert.ok(bytes > 0, 'some text was relayed before the cut');
    const input = Math.floor(Buffer.byteLength('a fairly long question to cut') / 3) + 8 + 16;
    assert.equal(row.status, 'estimated');
    assert.equal(BigInt(row.credits), BigInt(input + Math.ceil(bytes / 3)));
    assert.ok(BigInt(row.credits) < BigInt(row.reserved));
    assert.equal(toMicro(last.response.usage.credits), BigInt(row.credits));
    assert.equal(stack.balance(user.id), before - BigInt(row.credits));
  });

  it('charges a client that leaves mid-stream for what was generated', async () => {
    const ctl = new AbortController();
    const r = await fetch(`${stack.baseURL}/v1/responses`, {
      method: 'POST', signal: ctl.signal,
      headers: { authorization: `Bearer ${user.key.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'prov-trickle', input: 'slow answer please', stream: true }),
    });
    assert.equal(r.status, 200);
    const rid = r.headers.get('x-request-id');
    const reader = r.body.getReader();
    await reader.read();
    ctl.abort();
    await reader.cancel().catch(() => {});
    let row;
    for (let i = 0; i < 60; i++) {
      row = stack.ledger(rid);
      if (row && row.status !== 'reserved') break;
      await new Promise((res) => setTimeout(res, 250));
    }
    assert.ok(row && row.status !== 'reserved', `settled: ${JSON.stringify(row)}`);
    // the gateway reported no usage before the end: the estimate
    assert.equal(row.status, 'estimated');
    assert.ok(BigInt(row.credits) > 0n, 'not free by accident');
    assert.ok(BigInt(row.credits) <= BigInt(row.reserved));
  });

  it("fills Codex's rate-limit headers from the plan's windows", async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const stream of [false, true]) {
      const res = await stack.request('POST', '/v1/responses', { key: planned.key.secret,
        body: { model: 'prov-main', input: 'quota please', max_output_tokens: 5, stream } });
      assert.equal(res.status, 200, res.text);
      const h = (n) => res.headers.get(n);
      assert.equal(h('x-codex-primary-window-minutes'), '300');
      assert.equal(h('x-codex-secondary-window-minutes'), '10080');
      // At reservation time the windows hold what was charged before plus this hold.
      const rows = stack.sql(`SELECT CAST(credits AS TEXT) AS c, CAST(reserved AS TEXT) AS r,
          request_id FROM ledger WHERE user_id = ${planned.id} ORDER BY id`);
      const mine = rows.findIndex((row) => row.request_id === h('x-request-id'));
      assert.ok(mine >= 0);
      const used = rows.slice(0, mine).reduce((n, row) => n + BigInt(row.c), 0n) + BigInt(rows[mine].r);
      const pct = (quota) => {
        const tenths = used * 1000n / quota;
        return tenths % 10n ? `${tenths / 10n}.${tenths % 10n}` : `${tenths / 10n}`;
      };
      assert.equal(h('x-codex-primary-used-percent'), pct(10000n));
      assert.equal(h('x-codex-secondary-used-percent'), pct(100000n));
      assert.notEqual(h('x-codex-primary-used-percent'), '0');
      const r5 = Number(h('x-codex-primary-reset-at')) - now;
      const r7 = Number(h('x-codex-secondary-reset-at')) - now;
      assert.ok(r5 > 0 && r5 <= 5 * 3600 + 600, `primary reset in ${r5} s`);
      assert.ok(r7 > 0 && r7 <= 7 * 86400 + 3600, `secondary reset in ${r7} s`);
    }
  });

  it('answers an exhausted plan with usage_limit_reached and the service code', async () => {
    const seq = (await stack.mock.last()).seq;
    for (const stream of [false, true]) {
      const res = await stack.request('POST', '/v1/responses', { key: spent.key.secret,
        body: { model: 'prov-main', input: 'more please', stream } });
      const e = assertOpenAIError(res, 429, 'SUBSCRIPTION_QUOTA_EXCEEDED');
      assert.equal(e.type, 'usage_limit_reached');
    }
    assert.equal((await stack.mock.last()).seq, seq, 'the gateway was not called');
  });
});
