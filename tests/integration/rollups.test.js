// tests/integration/rollups.test.js: the ledger's daily rollups and its
// retention seen from outside (issue 34, item 1; core/store/prov_rollup.c,
// docs/internals/billing.md "Rollups and retention"), on the test clock
// (ProviderClockFile). A user signed in through the kit's identity provider
// makes requests on five days (plain, streamed and refused by the gateway)
// through two keys, three models and two transports; the server's purge thread rolls the
// closed days up as the clock moves on. Every reader (providerctl usage
// report, the cabinet's GET /v1/usage, the MCP account_usage tool) then
// gives exactly the sums of the raw ledger rows, by day, key and model;
// after ProviderLedgerRetention 8 has removed the raw rows of the two oldest
// days, every reader still gives the same figures, the rows of the last
// eight days are all there, and the key's rolling week (its budget) and
// the ledger's status agree with the ledger; a retention under 8 days
// stops apache2 at start-up. Runs on SQLite, and on
// PostgreSQL with PROVIDER_TEST_PGSQL=1.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startStack, seedCatalog, freePort, ROOMY_LIMITS, HTTPD } from './lib/server.js';
import { startIdentityProviders } from './lib/idp.js';
import { chatBody, eventually } from './lib/helpers.js';
import { signedIn, client, authorizeCode, exchange, callAccount } from './lib/oauth.js';

const DAY = 86400;
const TODAY = Math.floor(Date.now() / 1000 / DAY) * DAY;   // the real day: sign-ins need real time
const DAYS = [-10, -9, -3, -1, 0];                           // the days with requests

const dayLabel = (t) => new Date(t * 1000).toISOString().slice(0, 10);
const micro = (credits) => Math.round(Number(credits) * 1e6);

describe('daily usage rollups and ledger retention', { timeout: 300000 }, () => {
  let stack;
  let kit;
  let uid;
  const keys = [];

  before(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    stack = await startStack({
      port, clock: TODAY + DAYS[0] * DAY + 3600, seed: seedCatalog,
      overrides: { ProviderPurgeInterval: '1', ProviderLedgerRetention: '0' },
      directives: `ProviderPublicURL ${base}\n${kit.directives()}\n${ROOMY_LIMITS}`,
    });
    stack.setClock(Math.floor(Date.now() / 1000));
    await signedIn(stack);                     // makes the user
    uid = stack.userId(kit.byName('idp1').users.get('alice').email);
    stack.ctl('balance', 'add', String(uid), '1000', '--reason', 'test');
    keys.push(stack.createKey(uid, { name: 'one', budget: 500 }), stack.createKey(uid, { name: 'two' }));
  });

  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  /** The raw rows' sums for the user, grouped by expr, as the readers label them. */
  function raw(expr, where = '1 = 1') {
    return stack.sql(`SELECT ${expr} AS g, COUNT(*) AS requests,
        CAST(SUM(input_tokens) AS TEXT) AS i, CAST(SUM(output_tokens) AS TEXT) AS o,
        CAST(SUM(cache_tokens) AS TEXT) AS c, CAST(SUM(reasoning_tokens) AS TEXT) AS r,
        CAST(SUM(credits) AS TEXT) AS credits
      FROM ledger WHERE user_id = ${uid} AND status <> 'reserved' AND ${where}
      GROUP BY ${expr} ORDER BY 1`).map((x) => ({
      group: String(x.g), requests: Number(x.requests), input_tokens: Number(x.i),
      output_tokens: Number(x.o), cache_tokens: Number(x.c), reasoning_tokens: Number(x.r),
      credits: Number(x.credits),
    }));
  }

  function truths() {
    const t = {
      day: raw('created_at / 86400 * 86400').map((x) => ({ ...x, group: dayLabel(Number(x.group)) })),
      key: raw('key_id'),
      model: raw("(SELECT public_id FROM models m WHERE m.id = ledger.model_id)"),
    };
    return t;
  }

  /** A reader's rows in the truths' shape (credits in micro-credits). */
  const shape = (rows, by) => rows.map((x) => ({
    group: String(x.group ?? x[by === 'key' ? 'key_id' : by]), requests: Number(x.requests),
    input_tokens: Number(x.input_tokens), output_tokens: Number(x.output_tokens),
    cache_tokens: Number(x.cache_tokens), reasoning_tokens: Number(x.reasoning_tokens),
    credits: micro(x.credits),
  }));

  async function checkReaders(want, what) {
    stack.setClock(Math.floor(Date.now() / 1000));   // an id_token's time is the real one
    const jar = await signedIn(stack);
    const c = await client(stack);
    const t = await exchange(stack, c, await authorizeCode(stack, jar, c));
    const since = dayLabel(TODAY - 29 * DAY);
    for (const by of ['day', 'key', 'model']) {
      const ctl = stack.ctlJSON('usage', 'report', '--user', String(uid), '--since', since, '--by', by);
      assert.deepEqual(shape(ctl.rows, by), want[by], `${what}: providerctl usage report --by ${by}`);
      const cab = await (await jar.fetch(`${stack.baseURL}/v1/usage?days=30&by=${by}`)).json();
      assert.deepEqual(shape(cab.data, by), want[by], `${what}: GET /v1/usage?by=${by}`);
      const mcp = (await callAccount(stack, t.access_token, 'account_usage', { days: 30, by })).structuredContent;
      assert.deepEqual(shape(mcp.data, by), want[by], `${what}: account_usage by ${by}`);
    }
    for (const k of keys) {
      const total = stack.ctlJSON('usage', 'report', '--key', String(k.id), '--since', '2000-01-01').total;
      const r = want.key.find((x) => x.group === String(k.id));
      assert.equal(Number(total.requests), r.requests, `${what}: key ${k.id} requests`);
      assert.equal(micro(total.credits), r.credits, `${what}: key ${k.id} credits`);
    }
  }

  let want;

  it('makes plain, streamed and refused requests on five days', async () => {
    for (const d of DAYS) {
      stack.setClock(TODAY + d * DAY + 3600 + (d === 0 ? 0 : 7200));
      for (const [i, k] of keys.entries()) {
        const model = i ? 'prov-nullrates' : 'prov-main';
        assert.equal((await stack.chat(k.secret, chatBody(model))).status, 200);
        const s = await stack.request('POST', '/v1/responses',
          { key: k.secret, body: { model, input: 'stream me please', stream: true } });
        assert.equal(s.status, 200, s.text);
        assert.match(s.text, /response\.completed/);
        await stack.expectingLog(/PROV\d+:/, async () => {
          const r = await stack.chat(k.secret, chatBody('prov-fault-500'));
          assert.ok(r.status >= 500, r.text);
        });
      }
      await stack.billingSettled();
    }
    const rows = stack.sql(`SELECT status, COUNT(*) AS n FROM ledger WHERE user_id = ${uid} GROUP BY status ORDER BY status`);
    assert.deepEqual(rows.map((x) => x.status), ['ok', 'refused'], JSON.stringify(rows));
    assert.equal(rows.find((x) => x.status === 'refused').n, DAYS.length * keys.length);
  });

  it('rolls the closed days up, and every reader gives the raw rows\' sums', async () => {
    const beforeToday = Number(stack.sql(`SELECT CAST(COALESCE(MAX(id), 0) AS TEXT) AS m FROM ledger
      WHERE created_at < ${TODAY}`)[0].m);
    await eventually(() => assert.ok(Number(stack.sql('SELECT CAST(last_id AS TEXT) AS l FROM ledger_rollup_state')[0].l)
      >= beforeToday, 'the rollups reach today'), 30000);
    const state = stack.ctlJSON('ledger', 'status');
    assert.equal(state.rolled_last_id, beforeToday);
    assert.equal(state.rows_not_rolled, Number(stack.sql(`SELECT COUNT(*) AS n FROM ledger WHERE created_at >= ${TODAY}`)[0].n));
    assert.equal(state.rolled_first_day, dayLabel(TODAY + DAYS[0] * DAY));
    assert.equal(state.rolled_last_day, dayLabel(TODAY - DAY));
    // The rollups hold the closed days' raw rows, refused ones counted apart.
    const [r] = stack.sql(`SELECT CAST(SUM(requests) AS TEXT) AS n, CAST(SUM(refused) AS TEXT) AS refused,
      CAST(SUM(credits) AS TEXT) AS credits FROM ledger_rollup WHERE user_id = ${uid}`);
    const [l] = stack.sql(`SELECT COUNT(*) AS n, CAST(SUM(CASE WHEN status = 'refused' THEN 1 ELSE 0 END) AS TEXT) AS refused,
      CAST(SUM(credits) AS TEXT) AS credits FROM ledger WHERE user_id = ${uid} AND created_at < ${TODAY}`);
    assert.deepEqual([Number(r.n), Number(r.refused), String(r.credits)], [Number(l.n), Number(l.refused), String(l.credits)]);
    want = truths();
    assert.equal(want.day.length, DAYS.length);
    assert.ok(want.key.length === 2 && want.model.length === 3, JSON.stringify(want));
    await checkReaders(want, 'rolled up');
  });

  it('removes the raw rows past ProviderLedgerRetention in batches; the figures, windows and budgets stay', async () => {
    const spentBefore = stack.ctlJSON('key', 'show', String(keys[0].id)).spent_7d;
    assert.ok(spentBefore > 0);
    const cut = TODAY - 8 * DAY;
    const old = Number(stack.sql(`SELECT COUNT(*) AS n FROM ledger WHERE created_at < ${cut}`)[0].n);
    const young = Number(stack.sql(`SELECT COUNT(*) AS n FROM ledger WHERE created_at >= ${cut}`)[0].n);
    assert.ok(old >= 2 * 2 * 3, `old rows: ${old}`);
    await stack.restartHttpd({ overrides: { ...stack.opts.overrides, ProviderLedgerRetention: '8' } });
    await eventually(() => assert.equal(Number(stack.sql(`SELECT COUNT(*) AS n FROM ledger WHERE created_at < ${cut}`)[0].n), 0,
      'the retention removed the old rows'), 30000);
    assert.equal(Number(stack.sql(`SELECT COUNT(*) AS n FROM ledger WHERE created_at >= ${cut}`)[0].n), young,
      'the rows of the last eight days are all kept');
    assert.match(stack.readFile(stack.errorLog), /PROV00902: rolled up \d+ ledger id\(s\) into daily usage and removed \d+ raw ledger row/);
    await checkReaders(want, 'compacted');
    // The key's rolling week and its budget read their own rows, all kept.
    const k = stack.ctlJSON('key', 'show', String(keys[0].id));
    assert.equal(k.spent_7d, spentBefore);
    const [w] = stack.sql(`SELECT CAST(COALESCE(SUM(credits), 0) AS TEXT) AS c FROM ledger
      WHERE key_id = ${keys[0].id} AND created_at > ${stack.clock - 7 * DAY}`);
    assert.equal(micro(k.spent_7d), Number(w.c));
    const st = stack.ctlJSON('ledger', 'status');
    assert.equal(st.rows, Number(stack.sql('SELECT COUNT(*) AS n FROM ledger')[0].n));
    assert.equal(st.oldest, new Date(Number(stack.sql('SELECT MIN(created_at) AS t FROM ledger')[0].t) * 1000)
      .toISOString().replace(/\.000Z$/, 'Z'));
    assert.equal(st.rolled_first_day, dayLabel(TODAY + DAYS[0] * DAY), 'the rollups of removed days stay');
  });

  it('refuses a ProviderLedgerRetention under 8 days at start-up, naming it', () => {
    const check = (value) => {
      const conf = path.join(stack.dir, `retention-${value}.conf`);
      fs.writeFileSync(conf, `${fs.readFileSync(stack.conf, 'utf8')}\nProviderLedgerRetention ${value}\n`);
      return spawnSync(HTTPD, ['-t', '-f', conf], { env: stack.httpdEnv(), encoding: 'utf8' });
    };
    for (const bad of ['7', '1', '-1', 'x']) {
      const r = check(bad);
      assert.notEqual(r.status, 0, `apache2 -t refuses ${bad}`);
      assert.match(r.stderr, /ProviderLedgerRetention/);
    }
    assert.match(check('7').stderr, /7-day window and the weekly budgets/);
    for (const good of ['8', '0', '400']) {
      const r = check(good);
      assert.equal(r.status, 0, `${good} is fine: ${r.stderr}`);
    }
  });
});
