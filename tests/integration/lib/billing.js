// tests/integration/lib/billing.js: what the billing tests share: a model
// whose rates make holds and charges round numbers, the hold rule of the
// engine (input estimate + max output at the model's rates, DESIGN §4 step 6)
// computed independently, request bodies of a known hold and charge, plans
// and subscriptions (through providerctl, or SQL while the CLI lacks the
// commands), the test clock's bucket arithmetic, and ledger/bucket sums.

import assert from 'node:assert/strict';
import { MICRO, toMicro, microToText, assertOpenAIError } from './helpers.js';

export const HOUR = 3600;
export const MIN5 = 300;
export const WINDOW_5H = 5 * HOUR;
export const WINDOW_7D = 7 * 24 * HOUR;
export const DAY = 24 * HOUR;
export const DEFAULT_MAX_TOKENS = 4096;

// 10000 credits per 1M tokens = 0.01 credits = 10000 micro-credits a token,
// for every kind: a hold or charge of N tokens is N * 10000 micro-credits.
export const BILL_MODEL = 'bill-flat';
export const BILL_RATE = '10000';
export const MICRO_PER_TOKEN = 10000n;

/** Adds the flat-rate model (upstream mock-main). */
export function addBillModel(stack) {
  stack.addModel(BILL_MODEL, 'mock-main', {
    name: 'Billing Flat',
    rates: { input: BILL_RATE, output: BILL_RATE, cache: BILL_RATE, reasoning: BILL_RATE },
  });
}

/** The engine's input estimate: floor(prompt bytes / 3) + 8 × messages + 16. */
export function inputEstimate(contents) {
  const bytes = contents.reduce((n, c) => n + Buffer.byteLength(c), 0);
  return BigInt(Math.floor(bytes / 3) + 8 * contents.length + 16);
}

/** The hold in micro-credits at the flat rate (ceil per kind; exact here). */
export function holdOf(contents, maxTokens = null) {
  const out = BigInt(maxTokens === null ? DEFAULT_MAX_TOKENS : maxTokens);
  return inputEstimate(contents) * MICRO_PER_TOKEN + out * MICRO_PER_TOKEN;
}

// The standard request: 48 bytes of content, one message, max_tokens 60:
// estimate 16 + 8 + 16 = 40 input tokens + 60 output = 100 tokens = 1 credit.
export const STD_CONTENT = 'x'.repeat(48);
export const HOLD = holdOf([STD_CONTENT], 60);
if (HOLD !== MICRO) throw new Error(`the standard hold is ${HOLD}, not 1 credit`);

/** The standard request, charged exactly its hold (1 credit). */
export function fullBody(extra = {}) {
  return {
    model: BILL_MODEL,
    messages: [{ role: 'user', content: STD_CONTENT }],
    max_tokens: 60,
    metadata: { mock_usage: { prompt: 40, completion: 60 } },
    ...extra,
  };
}
export const FULL_CHARGE = 1000000n;

/** The standard request (hold 1 credit) charged 10 + 20 tokens = 0.3 credits. */
export function cheapBody(extra = {}) {
  return fullBody({ metadata: { mock_usage: { prompt: 10, completion: 20 } }, ...extra });
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
