// tests/integration/lib/messages.js: what the /v1/messages tests share: a
// catalog of messages-family models (seeded through providerctl with the
// messages flag, as an operator does), requests with the Anthropic headers,
// an SSE reader that keeps each event's arrival time (to see that events are
// flushed one by one, not buffered), the Anthropic error shape assertion and
// the token kinds of Anthropic usage (README "Pricing").

import assert from 'node:assert/strict';

export const VERSION = '2023-06-01';

// Upstream ids that the mock gateway gets (faults ride on the name).
export const MESSAGES_UPSTREAMS = [
  'mock-claude', 'mock-claude-b', 'mock-claude-fault-cut', 'mock-claude-fault-500',
  'mock-claude-fault-429', 'mock-claude-fault-overflow', 'mock-claude-fault-malformed',
  'mock-claude-fault-trickle-1600', 'mock-claude-fault-trickle-700',
  'mock-claude-fault-404', 'mock-gpt',
];

// Public models: rates in credits per 1M tokens; messages: served on /v1/messages.
export const MESSAGES_CATALOG = {
  'claude-main': { upstream: 'mock-claude', messages: true,
    rates: { input: '3', output: '15', cache: '0.3' } },
  'claude-nocache': { upstream: 'mock-claude-b', messages: true,
    rates: { input: '1.000001', output: '5.5' } },
  'claude-off': { upstream: 'mock-claude', messages: false,
    rates: { input: '3', output: '15' } },
  'gpt-chat': { upstream: 'mock-gpt', family: 'openai', messages: false,
    rates: { input: '1', output: '1' } },
  'claude-cut': { upstream: 'mock-claude-fault-cut', messages: true,
    rates: { input: '2', output: '10' } },
  'claude-500': { upstream: 'mock-claude-fault-500', messages: true,
    rates: { input: '1', output: '1' } },
  'claude-429': { upstream: 'mock-claude-fault-429', messages: true,
    rates: { input: '1', output: '1' } },
  'claude-overflow': { upstream: 'mock-claude-fault-overflow', messages: true,
    rates: { input: '1', output: '1' } },
  'claude-malformed': { upstream: 'mock-claude-fault-malformed', messages: true,
    rates: { input: '1', output: '1' } },
  'claude-trickle': { upstream: 'mock-claude-fault-trickle-1600', messages: true,
    rates: { input: '3', output: '15', cache: '0.3' } },
  'claude-drip': { upstream: 'mock-claude-fault-trickle-700', messages: true,
    rates: { input: '3', output: '15', cache: '0.3' } },
  'claude-nocount': { upstream: 'mock-claude-fault-404', messages: true,
    rates: { input: '1', output: '1' } },
};

/** Seeds MESSAGES_CATALOG through providerctl. */
export function seedMessagesCatalog(stack, catalog = MESSAGES_CATALOG) {
  for (const [id, m] of Object.entries(catalog)) {
    stack.addModel(id, m.upstream, { rates: m.rates, family: m.family || 'anthropic' });
    if (m.messages) stack.ctl('model', 'set', id, '--messages', 'on');
  }
}

/**
 * POST /v1/messages (or path). auth: 'bearer' | 'x-api-key' | 'both' | null.
 * version: the anthropic-version header (null: none).
 */
export function messages(stack, key, body, {
  auth = 'x-api-key', version = VERSION, headers = {}, path = '/v1/messages', timeout,
} = {}) {
  const h = { ...headers };
  if (version !== null) h['anthropic-version'] = version;
  if (key && (auth === 'x-api-key' || auth === 'both')) h['x-api-key'] = key;
  if (key && (auth === 'bearer' || auth === 'both')) h.authorization = `Bearer ${key}`;
  return stack.request('POST', path, { body, headers: h, timeout });
}

/** A minimal valid messages body. */
export function messagesBody(model, extra = {}) {
  return {
    model, max_tokens: 16, messages: [{ role: 'user', content: 'hello world' }], ...extra,
  };
}

/**
 * A streamed POST: returns {status, headers, events: [{event, data, raw, at}],
 * text}; each event's `at` is ms since the request started. abortAfter: abort
 * the request once this many events arrived (the events so far are returned).
 */
export async function messagesStream(stack, key, body, {
  version = VERSION, headers = {}, abortAfter = 0, path = '/v1/messages',
} = {}) {
  const ctl = new AbortController();
  const t0 = Date.now();
  const res = await fetch(`${stack.baseURL}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': version,
      ...headers,
    },
    body: JSON.stringify({ ...body, stream: true }),
    signal: ctl.signal,
  });
  const out = { status: res.status, headers: res.headers, events: [], text: '' };
  const decoder = new TextDecoder();
  let pending = '';
  try {
    for await (const chunk of res.body) {
      const s = decoder.decode(chunk, { stream: true });
      out.text += s;
      pending += s;
      let at;
      while ((at = pending.indexOf('\n\n')) >= 0) {
        const raw = pending.slice(0, at);
        pending = pending.slice(at + 2);
        const ev = { raw, at: Date.now() - t0, event: null, data: null };
        for (const line of raw.split('\n')) {
          if (line.startsWith('event: ')) ev.event = line.slice(7);
          else if (line.startsWith('data: ')) ev.data = line.slice(6);
        }
        try { ev.json = JSON.parse(ev.data); } catch { ev.json = undefined; }
        out.events.push(ev);
        if (abortAfter && out.events.length >= abortAfter) {
          ctl.abort();
          return out;
        }
      }
    }
  } catch (e) {
    if (!abortAfter) throw e;
  }
  out.pending = pending;
  return out;
}

/** Asserts an Anthropic-shaped error answer; returns the error object. */
export function assertAnthropicError(res, status, type, code) {
  const ctx = `${res.status} ${res.text}`;
  assert.equal(res.status, status, `status: ${ctx}`);
  assert.match(res.headers.get('content-type') || '', /^application\/json/, `content-type: ${ctx}`);
  assert.ok(res.json && typeof res.json === 'object', `JSON body: ${ctx}`);
  assert.equal(res.json.type, 'error', `type: ${ctx}`);
  const e = res.json.error;
  assert.ok(e && typeof e === 'object', `error object: ${ctx}`);
  assert.equal(e.type, type, `error.type: ${ctx}`);
  assert.equal(typeof e.message, 'string', `error.message: ${ctx}`);
  assert.ok(e.message.length > 0, `error.message empty: ${ctx}`);
  assert.equal(e.code, code, `error.code: ${ctx}`);
  assert.ok(res.headers.get('x-request-id'), `x-request-id on an error: ${ctx}`);
  return e;
}

/** Token kinds of Anthropic usage counts (README "Pricing"). */
export function anthropicKinds({ input, output, cacheRead = 0, creation = 0 }) {
  return {
    input: BigInt(input + creation), cache: BigInt(cacheRead), output: BigInt(output),
    reasoning: 0n,
  };
}

/** mockgw's input_tokens: 10 + bytes of system and message text / 4. */
export function mockInputTokens(...texts) {
  const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
  return 10 + Math.floor(bytes / 4);
}
