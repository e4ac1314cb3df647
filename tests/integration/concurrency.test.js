// tests/integration/concurrency.test.js: the reservation of docs/internals/billing.md
// seen from outside: requests sent at the same time cannot together spend
// more than a key's weekly budget or an account's balance (each is refused
// with its own code instead), every accepted one is charged exactly, and the
// ledger, the balance and the open reservations agree afterwards.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, seedCatalog, CATALOG } from './lib/server.js';
import {
  assertOpenAIError, expectedCharge, kinds, microToText, toMicro, worstHold,
} from './lib/helpers.js';

const N = 12;
// max_tokens 16, billed (a USAGE: line for mockgw) 1000 prompt and 16 completion
// tokens at prov-main's rates: most of its hold (the body a token a byte + 1,024)
const BODY = { model: 'prov-main', max_tokens: 16,
  messages: [{ role: 'user', content: 'hello world\nUSAGE: prompt=1000,completion=16' }] };
const CHARGE = expectedCharge(CATALOG['prov-main'].rates, kinds({ prompt: 1000, completion: 16 }));
// room for the holds of three of these requests, never for all N
const LIMIT = 3n * worstHold(CATALOG['prov-main'].rates, BODY, 16) + 1n;

describe('concurrent requests against one limit', { timeout: 120000 }, () => {
  let stack;
  let budgetUser;
  let balanceUser;

  before(async () => {
    stack = await startStack({
      seed: (s) => {
        seedCatalog(s);
        budgetUser = { id: s.addUser('budget-race@example.test', 1000) };
        budgetUser.key = s.createKey(budgetUser.id, { budget: microToText(LIMIT) });
        balanceUser = { id: s.addUser('balance-race@example.test', microToText(LIMIT)) };
        balanceUser.key = s.createKey(balanceUser.id);
      },
    });
    assert.ok(CHARGE * BigInt(N) > LIMIT && CHARGE < LIMIT, 'the limit must bind');
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  async function race(key) {
    return Promise.all(Array.from({ length: N }, () => stack.chat(key.secret, BODY)));
  }

  function spentBy(column, id) {
    const [{ spent }] = stack.sql(`SELECT CAST(COALESCE(SUM(credits), 0) AS TEXT) AS spent
      FROM ledger WHERE ${column} = ${Number(id)}`);
    return BigInt(spent);
  }

  it('never lets a key spend past its weekly budget', async () => {
    const results = await race(budgetUser.key);
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    for (const r of ok) assert.equal(toMicro(r.headers.get('x-provider-credits')), CHARGE);
    for (const r of refused) assertOpenAIError(r, 429, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    assert.ok(ok.length >= 1, 'the first requests fit the budget');
    assert.ok(refused.length >= 1, 'not all requests fit the budget');
    const spent = spentBy('key_id', budgetUser.key.id);
    assert.equal(spent, CHARGE * BigInt(ok.length), 'the ledger holds exactly the accepted charges');
    assert.ok(spent <= LIMIT, `spent ${spent} > budget ${LIMIT}`);
    assert.equal(stack.balance(budgetUser.id), 1000n * 1000000n - spent);
  });

  it('never lets an account spend past its balance', async () => {
    const results = await race(balanceUser.key);
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    for (const r of ok) assert.equal(toMicro(r.headers.get('x-provider-credits')), CHARGE);
    for (const r of refused) assertOpenAIError(r, 402, 'INSUFFICIENT_CREDITS');
    assert.ok(ok.length >= 1, 'the first requests fit the balance');
    assert.ok(refused.length >= 1, 'not all requests fit the balance');
    const spent = spentBy('user_id', balanceUser.id);
    assert.equal(spent, CHARGE * BigInt(ok.length));
    const balance = stack.balance(balanceUser.id);
    assert.ok(balance >= 0n, `balance went negative: ${balance}`);
    assert.equal(balance, LIMIT - spent);
  });

  it('leaves no reservation open', async () => {
    assert.deepEqual(stack.sql("SELECT request_id FROM ledger WHERE status = 'reserved'"), []);
  });
});
