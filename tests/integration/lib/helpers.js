// tests/integration/lib/helpers.js: what the integration tests assert with,
// beyond node:assert: exact credit arithmetic (decimal text <-> integer
// micro-credits with BigInt, the rate card's per-kind round-up rule of
// README "Pricing"), the OpenAI error shape, the "no secret in any answer" check,
// and reading the credits figure from a body without going through a float.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';

export const MICRO = 1000000n;

/**
 * Exact micro-credits (BigInt) of a decimal credit figure given as text or a
 * number ("0.00096", "12", "1e-6"). Throws when it is not a whole number of
 * micro-credits.
 */
export function toMicro(v) {
  const s = String(v).trim();
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(s);
  if (!m) throw new Error(`not a decimal number: ${JSON.stringify(v)}`);
  const [, sign, int, frac = '', exp = '0'] = m;
  let digits = BigInt(int + frac);
  let scale = frac.length - Number(exp);   // value = digits * 10^-scale
  // micro = digits * 10^(6 - scale)
  let shift = 6 - scale;
  if (shift >= 0) {
    digits *= 10n ** BigInt(shift);
  } else {
    const div = 10n ** BigInt(-shift);
    if (digits % div !== 0n) throw new Error(`${s} is not a whole number of micro-credits`);
    digits /= div;
  }
  return sign === '-' ? -digits : digits;
}

/** Micro-credits as the shortest decimal credit text ("0.00096"). */
export function microToText(micro) {
  const neg = micro < 0n;
  const a = neg ? -micro : micro;
  const int = a / MICRO;
  let frac = (a % MICRO).toString().padStart(6, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${int}${frac ? `.${frac}` : ''}`;
}

function ceilDiv(a, b) {
  return (a + b - 1n) / b;
}

/** Token kinds (README "Pricing") from the gateway's counts. */
export function kinds({ prompt, completion, cached = 0, reasoning = 0 }) {
  return {
    input: BigInt(prompt - cached),
    cache: BigInt(cached),
    output: BigInt(completion - reasoning),
    reasoning: BigInt(reasoning),
  };
}

/**
 * The charge in micro-credits: per kind ceil(tokens * rate_micro / 1e6), cache
 * at the cache rate (input when not configured), reasoning at the reasoning
 * rate (output when not configured). rates are credits per 1M tokens.
 */
export function expectedCharge(rates, t) {
  const r = (x) => (x === null || x === undefined ? null : toMicro(x));
  const input = r(rates.input);
  const output = r(rates.output);
  const cache = r(rates.cache) ?? input;
  const reasoning = r(rates.reasoning) ?? output;
  const part = (tokens, rate) => ceilDiv(tokens * rate, MICRO);
  return part(t.input, input) + part(t.cache, cache) + part(t.output, output)
    + part(t.reasoning, reasoning);
}

/**
 * The hold of a request (docs/internals/billing.md, "What is held"): one
 * input token a byte of the body as sent plus 1,024 at the higher of the input
 * and cache rates, choices × cap output tokens at the higher of the output and
 * reasoning rates, and a micro-credit for each pair with a fraction of a
 * micro-credit a token. body: the object sent (JSON.stringify) or its text.
 */
export function worstHold(rates, body, cap, choices = 1) {
  const r = (x) => (x === null || x === undefined ? null : toMicro(x));
  const input = r(rates.input);
  const output = r(rates.output);
  const cache = r(rates.cache) ?? input;
  const reasoning = r(rates.reasoning) ?? output;
  const bytes = Buffer.byteLength(typeof body === 'string' ? body : JSON.stringify(body));
  const max = (a, b) => (a > b ? a : b);
  const frac = (a, b) => (a % MICRO !== 0n || b % MICRO !== 0n ? 1n : 0n);
  return ceilDiv(BigInt(bytes + 1024) * max(input, cache), MICRO)
    + ceilDiv(BigInt(choices * cap) * max(output, reasoning), MICRO)
    + frac(input, cache) + frac(output, reasoning);
}

/** The number text of usage.credits in a JSON body, read without a float. */
export function rawUsageCredits(text) {
  const at = text.indexOf('"usage"');
  assert.ok(at >= 0, `no "usage" in ${text}`);
  const open = text.indexOf('{', at);
  let depth = 0;
  let end = open;
  let inStr = false;
  for (; end < text.length; end++) {
    const c = text[end];
    if (inStr) {
      if (c === '\\') end++;
      else if (c === '"') inStr = false;
    } else if (c === '"') inStr = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) break;
  }
  const usage = text.slice(open, end + 1);
  const m = /"credits"\s*:\s*(-?[0-9][0-9.eE+-]*)/.exec(usage);
  assert.ok(m, `usage has no numeric credits: ${usage}`);
  return m[1];
}

/** Asserts an OpenAI-shaped error answer; returns the error object. */
export function assertOpenAIError(res, status, code, { param } = {}) {
  const ctx = `${res.status} ${res.text}`;
  assert.equal(res.status, status, `status: ${ctx}`);
  assert.match(res.headers.get('content-type') || '', /^application\/json/, `content-type: ${ctx}`);
  assert.ok(res.json && typeof res.json === 'object', `JSON body: ${ctx}`);
  const e = res.json.error;
  assert.ok(e && typeof e === 'object', `error object: ${ctx}`);
  assert.equal(typeof e.message, 'string', `error.message: ${ctx}`);
  assert.ok(e.message.length > 0, `error.message empty: ${ctx}`);
  assert.equal(typeof e.type, 'string', `error.type: ${ctx}`);
  assert.ok('param' in e, `error.param present: ${ctx}`);
  assert.ok(e.param === null || typeof e.param === 'string', `error.param: ${ctx}`);
  assert.equal(e.code, code, `error.code: ${ctx}`);
  if (param !== undefined) assert.equal(e.param, param, `error.param: ${ctx}`);
  assert.ok(res.headers.get('x-request-id'), `x-request-id on an error: ${ctx}`);
  return e;
}

/**
 * Asserts that no secret (gateway token, API keys, the gateway's address)
 * appears in the answer's body or headers.
 */
export function assertNoSecrets(res, stack, extra = []) {
  const needles = [...stack.secrets, ...extra];
  if (stack.mock) {
    needles.push(`127.0.0.1:${stack.mock.port}`, `localhost:${stack.mock.port}`, `:${stack.mock.port}`);
  }
  if (stack.gatewayURL) needles.push(stack.gatewayURL);
  const where = [['body', res.text]];
  for (const [k, v] of res.headers) where.push([`header ${k}`, `${k}: ${v}`]);
  for (const n of needles) {
    for (const [name, text] of where) {
      assert.ok(!text.includes(n), `${name} reveals a secret (${n.slice(0, 14)}...): ${text}`);
    }
  }
}

/** A well-formed key that the service never issued (sk-prov- + 43 base64url). */
export function unknownKey() {
  return `sk-prov-${crypto.randomBytes(32).toString('base64url')}`;
}

/** A minimal valid chat body. */
export function chatBody(model, extra = {}) {
  return { model, messages: [{ role: 'user', content: 'hello world' }], max_tokens: 16, ...extra };
}

/**
 * Retries fn (which asserts) until it passes or timeoutMs has gone by; then
 * fails with fn's last error. For state that follows a cache TTL.
 */
export async function eventually(fn, timeoutMs = 5000, stepMs = 200) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() >= end) throw e;
      await new Promise((resolve) => setTimeout(resolve, stepMs));
    }
  }
}

/** Events of an SSE body: [{event, data}], data parsed as JSON when it is
 * (else undefined: an event of text, or a cut one). */
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
    let json;
    try { json = JSON.parse(data.join('\n')); } catch { json = undefined; }
    out.push({ event, data: json });
  }
  return out;
}
