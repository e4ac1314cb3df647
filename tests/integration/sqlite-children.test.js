// tests/integration/sqlite-children.test.js: SQLite with several httpd
// children, as an operator gets it from a stock apache2 (several processes,
// mod_dbd's own pool sizes, no DBDInitSQL): three children of four threads
// all write one database file under concurrent chat requests, each from a
// key with nothing else in flight, so that every request reserves and
// settles in its own write transaction and the children contend for
// SQLite's write lock all the time. No request may fail, and the books must
// be exact: every 2xx answer has its ledger row (and no row lacks an
// answer), no hold is left, and each balance equals its top-up minus its
// ledger. Then the same while another process (the sqlite3 CLI, as a long
// providerctl run or a maintenance script would) holds the write lock for
// 3.5 s, longer than apr-util's driver retries on its own (16 sleeps of
// 100 ms, twice with the billing engine's one retry of a failed batch) and
// under the module's busy cap (5 s, also retried once) with room for a
// loaded machine: the requests
// wait for it, and none fails. Also the start-up
// warnings about SQLite settings that cannot work well (PROV00400-PROV00409).
//
// KeepAlive is off and there are fewer requests in flight than workers: a
// child whose workers are all busy closes its idle keep-alive connections
// (the event MPM's "All workers are busy" shutdown), and a request sent on
// one at that moment fails whatever the module does (mod_proxy too; see
// bench/REPORT.md). That race is the MPM's, not the database's.
//
// On PostgreSQL (PROVIDER_TEST_PGSQL=1) the same load runs against the
// pgsql stack (the held SQLite lock and the warnings are SQLite's own and
// are skipped there).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startStack, sleep, BACKEND } from './lib/server.js';
import { addBillModel, fullBody, FULL_CHARGE } from './lib/billing.js';

const CHILDREN = 3;
const THREADS = 4;
const USERS = 200;
const REQUESTS = 600;
const CONCURRENCY = CHILDREN * THREADS - 2;
const TOPUP = 100n;           // credits per user: never the limit here

const IS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0;

describe(`SQLite with ${CHILDREN} httpd children of ${THREADS} threads`, { timeout: 300000 }, () => {
  let stack;
  const users = [];

  before(async () => {
    stack = await startStack({
      children: CHILDREN,
      threads: THREADS,
      directives: 'KeepAlive Off',
      seed: (s) => {
        addBillModel(s);
        for (let i = 0; i < USERS; i++) {
          const email = `child${i}@children.test`;
          users.push({ email, id: 0, key: null });
        }
        // Users and their top-ups in SQL, as `balance add` writes them (200
        // providerctl runs would take a while); keys through providerctl.
        const now = Math.floor(Date.now() / 1000);
        const micro = TOPUP * 1000000n;
        s.exec(users.map((u) => `INSERT INTO users (email, balance, created_at)
            VALUES ('${u.email}', ${micro}, ${now});
          INSERT INTO balance_events (user_id, amount, reason, created_at)
            SELECT id, ${micro}, 'test seed', ${now} FROM users WHERE email = '${u.email}'`)
          .join(';\n'));
        const ids = new Map(s.sql("SELECT id, email FROM users").map((r) => [r.email, r.id]));
        for (const u of users) {
          u.id = ids.get(u.email);
          u.key = s.createKey(u.email);
        }
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  it(`starts ${CHILDREN} children`, () => {
    assert.equal(stack.httpdChildren().length, CHILDREN);
  });

  const answered = [];

  /** Sends `count` chat requests, `CONCURRENCY` at a time, from users[first...]. */
  async function load(first, count) {
    const failed = [];
    let next = 0;
    async function worker() {
      while (next < count) {
        const u = users[(first + next++) % USERS];
        try {
          const r = await stack.chat(u.key.secret, fullBody());
          if (r.status === 200) answered.push({ id: r.headers.get('x-request-id'), user: u });
          else failed.push(`${r.status} ${r.text.slice(0, 200)}`);
        } catch (e) {
          failed.push(`no answer: ${e.message} (${e.cause?.code || e.cause?.message || ""})`);
        }
      }
    }
    const t = Date.now();
    // The event MPM counts a worker busy until its connection is closed
    // (KeepAlive Off), while the client already sends its next request on a
    // new one: with 10 clients on 12 workers its once-a-second count may
    // find none idle and log AH00484 (a sizing notice, once per start);
    // what this test holds the module to is that no request fails. The
    // parent logs it at its next check, up to a second after the load.
    await stack.expectingLog(/AH00484/, async () => {
      await Promise.all(Array.from({ length: Math.min(CONCURRENCY, count) }, worker));
      await sleep(600);
    });
    // eslint-disable-next-line no-console
    console.log(`# ${count - failed.length} answered, ${failed.length} failed in ${Date.now() - t} ms`);
    return failed;
  }

  async function checkBooks() {
    await stack.billingSettled(20000);
    const rows = stack.sql("SELECT request_id, user_id, status, CAST(credits AS TEXT) AS credits FROM ledger");
    assert.deepEqual(rows.filter((r) => r.status === 'reserved'), [], 'no hold is left');
    const byId = new Map(rows.map((r) => [r.request_id, r]));
    for (const a of answered) {
      const row = byId.get(a.id);
      assert.ok(row, `request ${a.id} was answered 200 and has a ledger row`);
      assert.equal(row.status, 'ok');
      assert.equal(Number(row.user_id), a.user.id);
      assert.equal(BigInt(row.credits), FULL_CHARGE);
    }
    assert.equal(rows.filter((r) => r.status === 'ok').length, answered.length,
      'no ledger row without an answer');
    const books = stack.sql(`SELECT u.email,
        CAST(u.balance AS TEXT) AS balance,
        CAST((SELECT COALESCE(SUM(amount), 0) FROM balance_events e WHERE e.user_id = u.id) AS TEXT) AS topups,
        CAST((SELECT COALESCE(SUM(credits), 0) FROM ledger l WHERE l.user_id = u.id) AS TEXT) AS spent
      FROM users u WHERE u.email LIKE '%@children.test'`);
    assert.equal(books.length, USERS);
    for (const b of books) {
      assert.equal(BigInt(b.balance), BigInt(b.topups) - BigInt(b.spent),
        `${b.email}: balance = top-ups - ledger`);
    }
    assert.equal(books.reduce((n, b) => n + BigInt(b.spent), 0n),
      BigInt(answered.length) * FULL_CHARGE, 'the ledger holds every charge once');
  }

  it(`${REQUESTS} concurrent chat requests: none fails, every 2xx has its ledger row, balances exact`, async () => {
    assert.deepEqual(await load(0, REQUESTS), [], 'no request failed');
    assert.equal(answered.length, REQUESTS);
    await checkBooks();
  });

  it('another process holds the write lock for 3.5 s: the requests wait, none fails', { skip: BACKEND !== 'sqlite3' }, async () => {
    const holder = spawn('sqlite3', [stack.db], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    holder.stdout.on('data', (d) => { out += d; });
    holder.stderr.on('data', (d) => { out += d; });
    const exited = new Promise((resolve) => holder.once('exit', resolve));
    holder.stdin.write("BEGIN IMMEDIATE;\nUPDATE users SET name = 'held' WHERE email = 'child0@children.test';\nSELECT 'locked';\n");
    for (let i = 0; i < 100 && !/locked/.test(out); i++) await new Promise((r) => setTimeout(r, 20));
    assert.match(out, /locked/, `the sqlite3 CLI took the write lock: ${out}`);
    const released = new Promise((resolve) => setTimeout(() => {
      holder.stdin.end('COMMIT;\n');
      resolve();
    }, 3500));
    // Idle keys (nothing in flight, no lease): every request reserves in
    // its own write transaction, behind the held lock.
    const failed = await load(REQUESTS, 2 * CONCURRENCY);
    await released;
    assert.equal(await exited, 0, `sqlite3 ended cleanly: ${out}`);
    assert.deepEqual(failed, [], 'no request failed while the lock was held');
    await checkBooks();
  });
});

describe('start-up warnings about SQLite settings', { skip: BACKEND !== 'sqlite3', timeout: 120000 }, () => {
  let stack;

  before(async () => {
    stack = await startStack({ seed: (s) => addBillModel(s) });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  function logSince(from) {
    return stack.readFile(stack.errorLog).slice(from);
  }

  it('a clean configuration gets none', () => {
    assert.doesNotMatch(stack.readFile(stack.errorLog), /PROV004\d\d/);
  });

  it('a DBDInitSQL after one that returns a row: PROV00400 names both', async () => {
    const from = stack.logSize();
    await stack.expectingLog(/PROV00400/, () => stack.restartHttpd({
      directives: 'DBDInitSQL "PRAGMA busy_timeout=5000"\nDBDInitSQL "PRAGMA cache_size=-4000"',
    }));
    const log = logSince(from);
    assert.match(log, /\[provider:warn\].*PROV00400: DBDInitSQL at .*httpd\.conf:\d+ returns a row.*httpd\.conf:\d+/);
    assert.equal((log.match(/PROV00400/g) || []).length, 1, 'warned once, not per configuration pass');
  });

  it('DBDKeep above DBDMax: PROV00407 says mod_dbd cannot make its pool', async () => {
    const from = stack.logSize();
    // mod_dbd then fails in every child it starts: back to a working
    // configuration within the same allowance.
    await stack.expectingLog(/PROV00407|AH00633|AH00636|PROV00100|\[dbd:/, async () => {
      await stack.restartHttpd({ directives: 'DBDMax 1' });
      await stack.restartHttpd({ directives: '' });
    });
    assert.match(logSince(from), /\[provider:warn\].*PROV00407: DBDMin 1, DBDKeep 2, DBDMax 1 .*out of order/);
  });

  it('DBDPersist Off: PROV00409', async () => {
    const from = stack.logSize();
    await stack.expectingLog(/PROV00409/, () => stack.restartHttpd({ directives: 'DBDPersist Off' }));
    assert.match(logSince(from), /\[provider:warn\].*PROV00409: DBDPersist Off/);
  });

  it('a database file that does not exist: PROV00401', async () => {
    const from = stack.logSize();
    const missing = path.join(stack.dir, 'db', 'missing.db');
    await stack.expectingLog(/PROV00401/, () => stack.restartHttpd({
      directives: `DBDParams "${missing}"`,
    }));
    assert.match(logSince(from), /\[provider:warn\].*PROV00401: DBDParams .*missing\.db .*no such database file/);
  });

  it('a database the children cannot write: PROV00403', { skip: !IS_ROOT && 'needs root (User www-data)' }, async () => {
    const dir = path.join(stack.dir, 'rootdb');
    fs.mkdirSync(dir, { mode: 0o755 });          // root's: www-data cannot add -wal / -shm
    const file = path.join(dir, 'provider.db');
    fs.copyFileSync(stack.db, file);
    const from = stack.logSize();
    // What the warning foretells follows at once (the billing writer opens
    // the database when the child starts): back to a working configuration
    // within the same allowance.
    await stack.expectingLog(/PROV00403|PROV00404|readonly database/, async () => {
      await stack.restartHttpd({ directives: `DBDParams "${file}"` });
      await stack.restartHttpd({ directives: '' });
    });
    assert.match(logSince(from), /\[provider:warn\].*PROV00403: DBDParams .*rootdb\/provider\.db .* is not writable by www-data/);
  });

  it('back to the clean configuration: no warning, requests served', async () => {
    const from = stack.logSize();
    await stack.restartHttpd({ directives: '' });
    assert.doesNotMatch(logSince(from), /PROV004\d\d/);
    const u = stack.addUser('warn@children.test', '5');
    const k = stack.createKey('warn@children.test');
    const r = await stack.chat(k.secret, fullBody());
    assert.equal(r.status, 200);
    assert.equal(stack.balance(u), 4000000n);
  });
});
