// tests/integration/lib/billing.js: what the billing tests share: a model
// whose rates make holds and charges round numbers, the hold rule of the
// engine (a token a byte of the body plus 1,024 input tokens, and the output
// cap of every choice, at the model's rates; docs/internals/billing.md "What
// is held") computed independently, request bodies of a known hold and
// charge (the counts in a USAGE: line of fixed width), plans
// and subscriptions (through providerctl, or SQL while the CLI lacks the
// commands), the test clock's bucket arithmetic, and ledger/bucket sums.

import assert from 'node:assert/strict';
import { MICRO, toMicro, microToText, assertOpenAIError } from './helpers.js';

export const HOUR = 3600;
export const MIN5 = 300;
export const WINDOW_5H = 5 * HOUR;
export const WINDOW_7D = 7 * 24 * HOUR;
export const DAY = 24 * HOUR;
// ProviderDefaultMaxTokens' default: the maximum output of a model without one.
export const DEFAULT_MAX_TOKENS = 32768;
// The hold's input bound: a token a byte of the body, plus this (prov_worst.h).
export const INPUT_SLACK = 1024;
// The least cap a request without one is lowered to.
export const OUTPUT_FLOOR = 1024;

// 800 credits per 1M tokens = 800 micro-credits a token, for every kind: a
// hold or charge of N tokens is N * 800 micro-credits (no rounding).
export const BILL_MODEL = 'bill-flat';
export const BILL_RATE = '800';
export const MICRO_PER_TOKEN = 800n;

/** Adds the flat-rate model (upstream mock-main). */
export function addBillModel(stack) {
  stack.addModel(BILL_MODEL, 'mock-main', {
    name: 'Billing Flat',
    rates: { input: BILL_RATE, output: BILL_RATE, cache: BILL_RATE, reasoning: BILL_RATE },
  });
}

/** The engine's input estimate, which an answer without usage is charged:
 * floor(prompt bytes / 3) + 8 × messages + 16. */
export function inputEstimate(contents) {
  const bytes = contents.reduce((n, c) => n + Buffer.byteLength(c), 0);
  return BigInt(Math.floor(bytes / 3) + 8 * contents.length + 16);
}

/** The bytes of a body as stack.chat sends it. */
export function bodyBytes(body) {
  return Buffer.byteLength(JSON.stringify(body));
}

/** The hold in micro-credits at the flat rate: (body bytes + INPUT_SLACK)
 * input tokens plus choices × the output cap (the body's max_tokens or
 * max_completion_tokens, else cap, else DEFAULT_MAX_TOKENS). */
export function holdOf(body, { cap = null, choices = 1 } = {}) {
  const out = body.max_tokens ?? body.max_completion_tokens ?? cap ?? DEFAULT_MAX_TOKENS;
  return BigInt(bodyBytes(body) + INPUT_SLACK + choices * out) * MICRO_PER_TOKEN;
}

/** A USAGE: line of fixed width (mockgw reports these counts; the body's
 * size, and so its hold, does not depend on them). */
export function usageLine(prompt, completion) {
  const w = (n) => String(n).padStart(7, '0');
  return `USAGE: prompt=${w(prompt)},completion=${w(completion)}`;
}

// The standard request: one message (padding and a USAGE line), max_tokens
// 60, 1250 tokens held (body bytes + 1024 + 60) = 1 credit.
function stdBody(prompt, completion, pad, extra = {}) {
  return {
    model: BILL_MODEL,
    messages: [{ role: 'user', content: `${pad}\n${usageLine(prompt, completion)}` }],
    max_tokens: 60,
    ...extra,
  };
}
const STD_TOKENS = 1250;
const STD_PAD = 'x'.repeat(STD_TOKENS - INPUT_SLACK - 60 - bodyBytes(stdBody(0, 0, '')));
export const STD_CONTENT = stdBody(0, 0, STD_PAD).messages[0].content;
export const HOLD = holdOf(stdBody(0, 0, STD_PAD));
if (HOLD !== MICRO) throw new Error(`the standard hold is ${HOLD}, not 1 credit`);

/** The standard request, charged exactly its hold (1 credit: 1190 + 60 tokens). */
export function fullBody(extra = {}) {
  return stdBody(1190, 60, STD_PAD, extra);
}
export const FULL_CHARGE = 1000000n;

/** The standard request (hold 1 credit) charged 355 + 20 tokens = 0.3 credits. */
export function cheapBody(extra = {}) {
  return stdBody(355, 20, STD_PAD, extra);
}
export const CHEAP_CHARGE = 300000n;

/* ------------------------------------------------------------------------ */
/* plans and subscriptions                                                   */

function cliMissing(e) {
  return /exited 2\b|unknown (command|group|verb)|usage:/i.test(String(e && e.message));
}

/** Adds a plan (quotas in credits, as text); returns its id. */
export function addPlan(stack, name, quota5h, quota7d) {
  try {
    stack.ctl('plan', 'add', name, '--5h', String(quota5h), '--7d', String(quota7d));
  } catch (e) {
    if (!cliMissing(e)) throw e;
    stack.exec(`INSERT INTO plans (name, quota_5h, quota_7d, created_at) VALUES ('${name}',
      ${toMicro(quota5h)}, ${toMicro(quota7d)}, ${Math.floor(Date.now() / 1000)})`);
  }
  const rows = stack.sql(`SELECT id, CAST(quota_5h AS TEXT) AS q5, CAST(quota_7d AS TEXT) AS q7
    FROM plans WHERE name = '${name}'`);
  assert.equal(rows.length, 1, `plan ${name} exists`);
  assert.equal(BigInt(rows[0].q5), toMicro(quota5h), 'plan 5h quota in micro-credits');
  assert.equal(BigInt(rows[0].q7), toMicro(quota7d), 'plan 7d quota in micro-credits');
  return rows[0].id;
}

/** Subscribes a user (email) to a plan from now on (real time: before any test clock). */
export function subscribe(stack, email, planName, userId, planId) {
  try {
    stack.ctl('subscription', 'set', email, planName);
  } catch (e) {
    if (!cliMissing(e)) throw e;
    stack.exec(`INSERT INTO subscriptions (user_id, plan_id, starts_at, until_at, cancelled_at)
      VALUES (${userId}, ${planId}, ${Math.floor(Date.now() / 1000) - 60}, NULL, NULL)`);
  }
}

/* ------------------------------------------------------------------------ */
/* time                                                                      */

/** The first hour boundary at least an hour after t (a clean bucket start). */
export function nextHour(t) {
  return (Math.floor(t / HOUR) + 2) * HOUR;
}

/** The next UTC midnight after t. */
export function nextMidnight(t) {
  return (Math.floor(t / DAY) + 1) * DAY;
}

/** When usage made at t leaves a window: its bucket no longer overlaps it. */
export function leavesAt(t, bucket, window) {
  return t - (t % bucket) + bucket + window;
}

/** Retry-After of an answer as an integer (asserts it is a whole number > 0). */
export function retryAfter(res) {
  const v = res.headers.get('retry-after');
  assert.ok(v !== null, `Retry-After header on ${res.status} ${res.text}`);
  assert.match(v, /^[1-9][0-9]*$/, `Retry-After is a positive integer: ${v}`);
  return Number(v);
}

/* ------------------------------------------------------------------------ */
/* checks                                                                    */

/** A successful charged answer: returns {rid, credits}. */
export function assertCharged(res, expected) {
  assert.equal(res.status, 200, `status: ${res.status} ${res.text}`);
  const rid = res.headers.get('x-request-id');
  assert.ok(rid, 'x-request-id');
  const h = res.headers.get('x-provider-credits');
  assert.ok(h !== null, 'x-provider-credits');
  if (expected !== undefined) assert.equal(toMicro(h), expected, `charged ${h}`);
  return { rid, credits: toMicro(h) };
}

export function assertRefused(res, status, code) {
  return assertOpenAIError(res, status, code);
}

/** Sums over ledger rows matching where (micro-credits as BigInt). */
export function ledgerSums(stack, where) {
  const [r] = stack.sql(`SELECT COUNT(*) AS n,
      COALESCE(SUM(CASE WHEN credits > 0 THEN 1 ELSE 0 END), 0) AS charged,
      CAST(COALESCE(SUM(credits), 0) AS TEXT) AS credits,
      CAST(COALESCE(SUM(CASE WHEN source = 'balance' THEN credits ELSE 0 END), 0) AS TEXT) AS balance_credits,
      CAST(COALESCE(SUM(CASE WHEN source = 'plan' THEN credits ELSE 0 END), 0) AS TEXT) AS plan_credits,
      COALESCE(SUM(CASE WHEN status = 'reserved' THEN 1 ELSE 0 END), 0) AS reserved
    FROM ledger WHERE ${where}`);
  return {
    n: Number(r.n),
    charged: Number(r.charged),
    credits: BigInt(r.credits),
    balanceCredits: BigInt(r.balance_credits),
    planCredits: BigInt(r.plan_credits),
    reserved: Number(r.reserved),
  };
}

/** Sum of usage_buckets credits of a scope ('key:h', 'user:h', 'user:m'). */
export function bucketSum(stack, scope, id, column = 'credits') {
  const [r] = stack.sql(`SELECT CAST(COALESCE(SUM(${column}), 0) AS TEXT) AS s
    FROM usage_buckets WHERE scope = '${scope}' AND scope_id = ${Number(id)}`);
  return BigInt(r.s);
}

/**
 * Seeds a user NAME@DOMAIN with a key (weekly budget when given), an optional
 * plan ({ name, id }) and balance, and records it in users[name] as
 * { email, id, key, balance (micro-credits) }.
 */
export function seedUser(stack, users, domain, name, { balance = null, budget = null, plan = null } = {}) {
  const email = `${name}@${domain}`;
  const id = stack.addUser(email, balance);
  const key = stack.createKey(id, { budget });
  if (plan) subscribe(stack, email, plan.name, id, plan.id);
  users[name] = { email, id, key, balance: balance === null ? 0n : BigInt(balance) * MICRO };
}

export { MICRO, toMicro, microToText };
