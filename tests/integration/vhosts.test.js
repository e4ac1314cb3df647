// tests/integration/vhosts.test.js: one httpd serving two virtual hosts that
// each have their own database (mod_dbd's DBDriver/DBDParams inside the
// <VirtualHost>). Every request is reserved, charged and recorded in its own
// virtual host's database, also when requests for both arrive together and
// the billing engine groups them into batches; a key of one host is unknown
// to the other, whatever its lookup cache holds.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, seedCatalog, freePort } from './lib/server.js';
import { toMicro } from './lib/helpers.js';

const N = 24;
const BODY = { model: 'prov-main', messages: [{ role: 'user', content: 'hello world' }], max_tokens: 16 };
const START = 1000n * 1000000n;

function dbdLines(stack) {
  return stack.backend === 'pgsql'
    ? ['DBDriver pgsql', `DBDParams "${stack.pg.conninfo(stack.pgDatabase)}"`,
      'DBDMin 1', 'DBDKeep 8', 'DBDMax 8']
    : ['DBDriver sqlite3', `DBDParams "${stack.db}"`,
      'DBDInitSQL "PRAGMA synchronous=NORMAL"', 'DBDInitSQL "PRAGMA busy_timeout=5000"'];
}

async function chatAt(port, key, body) {
  const r = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30000),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, text };
}

describe('two virtual hosts with their own databases', { timeout: 120000 }, () => {
  let a;                  // the httpd under test; its main server uses a's database
  let b;                  // only b's database is used: by a's second virtual host
  let port2;
  const userA = {};
  const userB = {};

  before(async () => {
    b = await startStack({
      seed: (s) => {
        seedCatalog(s);
        // a second user first, so that ids differ between the databases
        s.addUser('other@example.test', 1);
        userB.id = s.addUser('b@example.test', 1000);
        userB.key = s.createKey(userB.id);
      },
    });
    port2 = await freePort();
    a = await startStack({
      threads: 64,
      seed: (s) => {
        seedCatalog(s);
        userA.id = s.addUser('a@example.test', 1000);
        userA.key = s.createKey(userA.id);
      },
      directives: [
        `Listen 127.0.0.1:${port2}`,
        `<VirtualHost 127.0.0.1:${port2}>`,
        ...dbdLines(b),
        '</VirtualHost>',
      ].join('\n'),
    });
  });
  after(async () => {
    if (a) await a.stop();
    if (b) await b.stop();
  });

  it('charges and records each request in its own database', async () => {
    const sends = [];
    for (let i = 0; i < N; i++) {
      sends.push(a.chat(userA.key.secret, BODY).then((r) => ({ host: 'a', r })));
      sends.push(chatAt(port2, userB.key.secret, BODY).then((r) => ({ host: 'b', r })));
    }
    const results = await Promise.all(sends);
    const charged = { a: 0n, b: 0n };
    for (const { host, r } of results) {
      assert.equal(r.status, 200, `${host}: ${r.status} ${r.text}`);
      charged[host] += toMicro(r.headers.get('x-provider-credits'));
    }
    await a.billingSettled();
    await b.billingSettled();
    for (const [stack, user, host] of [[a, userA, 'a'], [b, userB, 'b']]) {
      const rows = stack.sql(`SELECT user_id, status, CAST(credits AS TEXT) AS credits
        FROM ledger ORDER BY id`);
      assert.equal(rows.length, N, `${host}: ${N} ledger rows`);
      for (const row of rows) {
        assert.equal(Number(row.user_id), Number(user.id), `${host}: the row's user`);
        assert.equal(row.status, 'ok');
      }
      const spent = rows.reduce((sum, row) => sum + BigInt(row.credits), 0n);
      assert.equal(spent, charged[host], `${host}: the ledger holds what the answers said`);
      assert.equal(stack.balance(user.id), START - spent, `${host}: the balance`);
    }
  });

  it("refuses one host's key on the other, also while its lookup is cached", async () => {
    // both keys were just used, so both lookups are in their hosts' caches
    const aOnB = await chatAt(port2, userA.key.secret, BODY);
    assert.equal(aOnB.status, 401, aOnB.text);
    assert.equal(JSON.parse(aOnB.text).error.code, 'INVALID_API_KEY');
    const bOnA = await a.chat(userB.key.secret, BODY);
    assert.equal(bOnA.status, 401, bOnA.text);
    assert.equal(b.sql("SELECT COUNT(*) AS n FROM ledger")[0].n, N);
    assert.equal(a.sql("SELECT COUNT(*) AS n FROM ledger")[0].n, N);
  });
});
