// tests/integration/schema.test.js: a module facing a database whose schema is
// missing or older than it needs answers 503 SERVICE_UNAVAILABLE in the
// transport's shape and says why in the error log (run `providerctl db
// migrate`), and serves again once the schema is migrated, without a restart.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, BACKEND } from './lib/server.js';
import { assertOpenAIError } from './lib/helpers.js';
import fs from 'node:fs';

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
});
