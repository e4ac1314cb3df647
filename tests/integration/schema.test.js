// tests/integration/schema.test.js: a module facing a database whose schema is
// missing or older than it needs answers 503 SERVICE_UNAVAILABLE in the
// transport's shape and says why in the error log (run `providerctl db
// migrate`), and serves again once the schema is migrated, without a restart.
// The migrated ledger takes only the statuses of the status table
// (core/store/prov_ledger.c; migration 011), written or changed.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, BACKEND } from './lib/server.js';
import { assertOpenAIError } from './lib/helpers.js';
import fs from 'node:fs';

// core/store/prov_ledger.c's table, in its order.
const STATUSES = ['reserved', 'ok', 'no_usage', 'estimated', 'client_cut', 'client_gone', 'cut',
  'max_duration', 'timeout', 'error', 'failed', 'refused', 'malformed', 'undelivered', 'expired',
  'released'];

const T0 = 1790000000;

describe('a database without the schema', { timeout: 120000 }, () => {
  let stack;
  before(async () => {
    // SQLite: no database file yet, the start-up warns (PROV00401).
    stack = await startStack({ migrate: false, clock: T0, startupLog: /PROV00401/ });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  it('warns at start-up that the database file does not exist', { skip: BACKEND !== 'sqlite3' }, () => {
    assert.match(fs.readFileSync(stack.errorLog, 'utf8'),
      /\[provider:warn\].*PROV00401: DBDParams .*provider\.db .*no such database file; create it with `providerctl db migrate`/);
  });

  it('answers 503 and logs that the schema must be migrated', async () => {
    await stack.expectingLog(/PROV0010[0-3]|PROV0001\d|PROV0002\d/, async () => {
      const res = await stack.models();
      assert.equal(res.status, 503, res.text);
      assertOpenAIError(res, 503, 'SERVICE_UNAVAILABLE');
      const chat = await stack.request('POST', '/v1/chat/completions', {
        key: 'sk-prov-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
        body: { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
      });
      // The key is looked up first: with no schema that is a 503 too.
      assert.equal(chat.status, 503, chat.text);
    });
    const log = fs.readFileSync(stack.errorLog, 'utf8');
    assert.match(log, /PROV00102: the database has schema version 0, this module needs \d+: run `providerctl db migrate`/);
  });

  it('serves again once migrated, without a restart', async () => {
    stack.ctl('db', 'migrate');
    await stack.expectingLog(/PROV0001\d|PROV0002\d|PROV0010[0-3]/, async () => {
      // The module re-checks a failed schema every few seconds of its clock.
      stack.setClock(T0 + 60);
      let res = await stack.models();
      if (res.status === 503) res = await stack.models();
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.object, 'list');
    });
  });

  it('takes only the ledger statuses of the table, inserted or updated', () => {
    const row = (id, status) => `INSERT INTO ledger (request_id, user_id, key_id, model_id,
      transport, status, created_at) VALUES ('${id}', 1, 1, 1, 'chat', '${status}', ${T0})`;
    stack.exec(STATUSES.map((st, i) => row(`st-${i}`, st)).join(';\n'));
    const got = stack.sql("SELECT status FROM ledger WHERE request_id LIKE 'st-%'");
    assert.deepEqual(got.map((r) => r.status).sort(), [...STATUSES].sort());
    assert.throws(() => stack.exec(row('st-bad', 'bogus')), /CHECK constraint|check constraint/);
    assert.throws(() => stack.exec(row('st-case', 'OK')), /CHECK constraint|check constraint/);
    assert.throws(() => stack.exec("UPDATE ledger SET status = 'settled' WHERE request_id = 'st-1'"),
      /CHECK constraint|check constraint/);
    assert.equal(stack.sql("SELECT status FROM ledger WHERE request_id = 'st-1'")[0].status, 'ok');
    assert.equal(stack.sql("SELECT COUNT(*) AS n FROM ledger WHERE request_id IN ('st-bad', 'st-case')")[0].n, 0);
    stack.exec("DELETE FROM ledger WHERE request_id LIKE 'st-%'");
  });
});
