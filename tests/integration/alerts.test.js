// tests/integration/alerts.test.js: spend alerts (docs/reference/alerts.md,
// docs/internals/alerts.md) delivered to a local receiver (lib/alerts.js)
// that verifies every POST's signature with the shared secret. One node on
// this run's database: a key passing 80 % and 100 % of its weekly budget, a
// plan's 5-hour window passing 90 %, a balance falling below the operator's
// threshold (once, re-armed by a top-up) and below a threshold the user set
// in the cabinet (GET/PUT /v1/account/alerts), `providerctl user block`; a
// webhook that is down (503) keeps its alerts pending in the database
// (providerctl alerts list) and gets them once it is up. Two nodes on one
// PostgreSQL database (the run's cluster under PROVIDER_TEST_PGSQL=1, else
// a throwaway one of this file's own): one alert per crossing, not one per
// node. On the test clock (ProviderClockFile), nine days on with
// ProviderLedgerRetention 8: the purge thread removes the old delivered
// alerts, keeps a pending one and recent ones, and a crossing whose row
// went is not alerted again. Neither the secret nor a key's secret is ever
// in a body or the log.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, freePort, sleep } from './lib/server.js';
import { PgCluster, PG_MODE } from './lib/pg.js';
import { startIdentityProviders } from './lib/idp.js';
import { signInUser } from './lib/signin.js';
import { eventually } from './lib/helpers.js';
import { addBillModel, addPlan, subscribe, fullBody } from './lib/billing.js';
import { startReceiver, verifySignature } from './lib/alerts.js';

/** A secret in a file of its own (what ProviderAlertSecretFile names). */
function secretFile() {
  const secret = crypto.randomBytes(24).toString('hex');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-alerts-'));
  const file = path.join(dir, 'alert.secret');
  fs.writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return { secret, file, dir };
}

function alertDirectives(receiver, file) {
  return [`ProviderAlertWebhook ${receiver.url}`, `ProviderAlertSecretFile ${file}`,
    'ProviderAlertBalanceBelow 5', 'ProviderAlertInterval 1'].join('\n');
}

/** Requests of 1 credit each with key, through the stacks in turn. */
async function spend(stacks, key, n) {
  for (let i = 0; i < n; i += 1) {
    const s = stacks[i % stacks.length];
    const res = await s.chat(key, fullBody());
    assert.equal(res.status, 200, res.text);
  }
}

/** Every delivered alert's signature, id header and body hold no secret. */
function assertClean(receiver, secrets) {
  assert.deepEqual(receiver.bad, [], 'every POST verified');
  const ids = receiver.got.map((g) => g.body.id);
  assert.equal(new Set(ids).size, ids.length, 'no alert delivered twice');
  for (const g of receiver.got) {
    assert.match(g.body.id, /^alrt_[0-9a-f]{24}$/);
    assert.equal(g.headers['x-provider-alert-id'], g.body.id);
    assert.equal(g.headers['content-type'], 'application/json');
    for (const s of secrets) assert.ok(!g.raw.includes(s), 'no secret in a body');
  }
}

describe('spend alerts on one node', { timeout: 240000 }, () => {
  let stack;
  let kit;
  let receiver;
  let sec;

  before(async () => {
    sec = secretFile();
    receiver = await startReceiver(sec.secret);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    stack = await startStack({
      port,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}\n${alertDirectives(receiver, sec.file)}`,
      seed: (s) => addBillModel(s),
    });
    stack.secrets.push(sec.secret);
  });

  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      await stack.stop();
    }
    if (kit) await kit.stop();
    if (receiver) await receiver.stop();
    if (sec) fs.rmSync(sec.dir, { recursive: true, force: true });
  });

  it('signs what the receivers\' check accepts, and only that', () => {
    const raw = Buffer.from('{"id":"alrt_0"}');
    const t = Math.floor(Date.now() / 1000);
    const v1 = crypto.createHmac('sha256', sec.secret).update(`${t}.`).update(raw).digest('hex');
    assert.equal(verifySignature(sec.secret, `t=${t},v1=${v1}`, raw), true);
    assert.equal(verifySignature('another secret of 32 characters', `t=${t},v1=${v1}`, raw), false);
    assert.equal(verifySignature(sec.secret, `t=${t},v1=${v1}`, Buffer.from('{"id":"alrt_1"}')), false);
    assert.equal(verifySignature(sec.secret, `t=${t - 3600},v1=${v1}`, raw), false, 'too old');
  });

  it('sends a key\'s 80 % and 100 % of its weekly budget once each', async () => {
    const user = stack.addUser('budget@alerts.test', 100);
    const key = stack.createKey(user, { name: 'ci', budget: 10 });
    const subject = `key:${key.id}`;
    await spend([stack], key.secret, 7);
    await sleep(2500);
    assert.equal(receiver.of('budget_80', subject).length, 0, 'not at 70 %');
    await spend([stack], key.secret, 1);
    await eventually(() => assert.equal(receiver.of('budget_80', subject).length, 1), 15000);
    const a = receiver.of('budget_80', subject)[0].body;
    assert.equal(a.user.id, user);
    assert.equal(a.user.email, 'budget@alerts.test');
    assert.equal(a.key.id, key.id);
    assert.equal(a.key.name, 'ci');
    assert.ok(key.secret.startsWith(a.key.display) && a.key.display.length <= 16,
      `the display prefix, not the secret: ${a.key.display}`);
    assert.equal(a.threshold_percent, 80);
    assert.equal(Number(a.limit), 10);
    assert.ok(Number(a.used) >= 8 && Number(a.used) < 10, `used ${a.used}`);
    assert.equal(receiver.of('budget_100', subject).length, 0);
    await spend([stack], key.secret, 2);
    await eventually(() => assert.equal(receiver.of('budget_100', subject).length, 1), 15000);
    await sleep(2500);
    assert.equal(receiver.of('budget_80', subject).length, 1, 'once per week');
    assert.equal(receiver.of('budget_100', subject).length, 1, 'once per week');
    const rows = stack.sql(`SELECT kind, sent_at FROM alerts WHERE subject = '${subject}' ORDER BY kind`);
    assert.deepEqual(rows.map((r) => r.kind), ['budget_100', 'budget_80']);
    assert.ok(rows.every((r) => r.sent_at > 0), 'marked sent');
  });

  it('sends a plan\'s 5-hour window passing 90 % once', async () => {
    const plan = addPlan(stack, 'alerts-plan', 10, 1000);
    const user = stack.addUser('plan@alerts.test');
    subscribe(stack, 'plan@alerts.test', 'alerts-plan', user, plan);
    const key = stack.createKey(user);
    await spend([stack], key.secret, 8);
    await sleep(2500);
    assert.equal(receiver.of('plan_5h_90', `user:${user}`).length, 0, 'not at 80 %');
    await spend([stack], key.secret, 1);
    await eventually(() => assert.equal(receiver.of('plan_5h_90', `user:${user}`).length, 1), 15000);
    const a = receiver.of('plan_5h_90', `user:${user}`)[0].body;
    assert.equal(a.threshold_percent, 90);
    assert.equal(Number(a.limit), 10);
    assert.equal(Number(a.used), 9);
    assert.equal(receiver.of('plan_7d_90', `user:${user}`).length, 0, '9 of 1000 in the week');
  });

  it('sends a balance falling below the operator\'s threshold once, again after a top-up', async () => {
    const user = stack.addUser('balance@alerts.test', 7);
    const key = stack.createKey(user);
    const armed = () => assert.ok(stack.sql(`SELECT armed_at FROM alert_settings
      WHERE user_id = ${user} AND armed_at IS NOT NULL`).length === 1, 'armed');
    await eventually(armed, 15000);
    await spend([stack], key.secret, 2);
    await sleep(2500);
    assert.equal(receiver.of('balance_below', `user:${user}`).length, 0, '5 is not below 5');
    await spend([stack], key.secret, 1);
    await eventually(() => assert.equal(receiver.of('balance_below', `user:${user}`).length, 1), 15000);
    const a = receiver.of('balance_below', `user:${user}`)[0].body;
    assert.equal(Number(a.balance), 4);
    assert.equal(Number(a.balance_below), 5);
    await spend([stack], key.secret, 1);
    await sleep(2500);
    assert.equal(receiver.of('balance_below', `user:${user}`).length, 1, 'once until it is back above');
    stack.ctl('balance', 'add', 'balance@alerts.test', '10', '--reason', 'top-up');
    await eventually(armed, 15000);
    await spend([stack], key.secret, 9);
    await eventually(() => assert.equal(receiver.of('balance_below', `user:${user}`).length, 2), 15000);
    const [first, second] = receiver.of('balance_below', `user:${user}`).map((g) => g.body);
    assert.notEqual(first.window_start, second.window_start);
  });

  it('takes a user\'s own threshold from the cabinet and alerts on it', async () => {
    const { jar, id: userId } = await signInUser(stack, 'alice', { status: null });
    const api = async (method, body) => {
      const r = await jar.fetch(`${stack.baseURL}/v1/account/alerts`, {
        method,
        headers: { origin: stack.baseURL, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)),
      });
      const text = await r.text();
      return { status: r.status, json: text ? JSON.parse(text) : null };
    };
    let r = await api('GET');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { balance_below: null, default_balance_below: 5 });
    for (const bad of [{ balance_below: -1 }, { balance_below: 'ten' }, { other: 1 }, {}, '[', { balance_below: 1.1234567 }]) {
      r = await api('PUT', bad);
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.equal(r.json.error.code, 'INVALID_REQUEST', JSON.stringify(r.json));
      assert.equal(r.json.error.param, 'balance_below');
    }
    r = await jar.fetch(`${stack.baseURL}/v1/account/alerts`, { method: 'PUT', body: '{"balance_below":1}',
      headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 403, 'a change from another site (no Origin) is refused');
    await r.arrayBuffer();
    r = await api('PUT', { balance_below: 20 });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { balance_below: 20, default_balance_below: 5 });
    assert.deepEqual((await api('GET')).json, { balance_below: 20, default_balance_below: 5 });
    stack.ctl('balance', 'add', String(userId), '22', '--reason', 'test');
    const key = stack.createKey(userId);
    await eventually(() => assert.equal(stack.sql(`SELECT armed_at FROM alert_settings
      WHERE user_id = ${userId} AND armed_at IS NOT NULL`).length, 1), 15000);
    await spend([stack], key.secret, 3);
    await eventually(() => assert.equal(receiver.of('balance_below', `user:${userId}`).length, 1), 15000);
    const a = receiver.of('balance_below', `user:${userId}`)[0].body;
    assert.equal(Number(a.balance), 19);
    assert.equal(Number(a.balance_below), 20);
    r = await api('PUT', { balance_below: null });
    assert.deepEqual(r.json, { balance_below: null, default_balance_below: 5 });
  });

  it('sends a block once (providerctl user block)', async () => {
    const user = stack.addUser('blocked@alerts.test', 1);
    stack.ctl('user', 'block', 'blocked@alerts.test');
    stack.ctl('user', 'block', 'blocked@alerts.test');
    await eventually(() => assert.equal(receiver.of('user_blocked', `user:${user}`).length, 1), 15000);
    await sleep(2000);
    assert.equal(receiver.of('user_blocked', `user:${user}`).length, 1, 'a second block of a blocked user is none');
  });

  it('keeps what a webhook that is down did not take, visible, and delivers it once it is up', async () => {
    const user = stack.addUser('down@alerts.test', 1);
    await stack.expectingLog(/PROV01103/, async () => {
      receiver.down = true;
      stack.ctl('user', 'block', 'down@alerts.test');
      await eventually(() => {
        const pending = stack.ctlJSON('alerts', 'list', '--pending');
        const row = pending.find((x) => x.subject === `user:${user}`);
        assert.ok(row, 'pending');
        assert.equal(row.state, 'pending');
        assert.ok(row.attempts >= 2, `attempts ${row.attempts}`);
        assert.equal(row.last_error, 'HTTP 503');
        assert.ok(receiver.refused >= 2, `refused ${receiver.refused}`);
      }, 20000);
      assert.equal(receiver.of('user_blocked', `user:${user}`).length, 0);
      const text = stack.ctl('alerts', 'list');
      assert.match(text, /user_blocked +user:\d+ .* pending +\d+ +HTTP 503/);
      assert.match(text, /\d+ pending, \d+ sent/);
    });
    receiver.down = false;
    await eventually(() => assert.equal(receiver.of('user_blocked', `user:${user}`).length, 1), 30000);
    const all = stack.ctlJSON('alerts', 'list');
    assert.equal(all.find((x) => x.subject === `user:${user}`).state, 'sent');
    assert.deepEqual(stack.ctlJSON('alerts', 'list', '--pending'), []);
    assertClean(receiver, [sec.secret, ...stack.secrets]);
    assert.ok(!fs.readFileSync(stack.errorLog, 'utf8').includes(sec.secret), 'no secret in the log');
  });
});

describe('the outbox past ProviderLedgerRetention', { timeout: 240000 }, () => {
  const DAY = 86400;
  let stack;
  let receiver;
  let sec;
  let offset = 0;           // the test clock: real time plus offset
  let ticker = null;

  before(async () => {
    sec = secretFile();
    receiver = await startReceiver(sec.secret, { toleranceSeconds: 30 * DAY });
    stack = await startStack({
      clock: Math.floor(Date.now() / 1000), directives: alertDirectives(receiver, sec.file),
      overrides: { ProviderPurgeInterval: '1', ProviderLedgerRetention: '8' },
      seed: (s) => addBillModel(s),
    });
    stack.secrets.push(sec.secret);
    // The scan and the delivery need a clock that moves; providerctl reads it too.
    ticker = setInterval(() => stack.setClock(Math.floor(Date.now() / 1000) + offset), 250);
    process.env.PROVIDERCTL_CLOCK_FILE = stack.clockFile;
  });

  after(async () => {
    if (ticker) clearInterval(ticker);
    delete process.env.PROVIDERCTL_CLOCK_FILE;
    if (stack) await stack.stop();
    if (receiver) await receiver.stop();
    if (sec) fs.rmSync(sec.dir, { recursive: true, force: true });
  });

  const rowsOf = (user) => stack.sql(`SELECT kind, created_at, sent_at FROM alerts
    WHERE user_id = ${user} ORDER BY created_at`);

  it('removes old delivered alerts, keeps pending and recent ones, and never alerts a crossing twice', async () => {
    // Today: a balance alert (the balance stays below: no re-arming), a
    // block, both delivered; a block the webhook (down) does not take.
    const bal = stack.addUser('purge-balance@alerts.test', 7);
    const key = stack.createKey(bal);
    await eventually(() => assert.equal(stack.sql(`SELECT armed_at FROM alert_settings
      WHERE user_id = ${bal} AND armed_at IS NOT NULL`).length, 1, 'armed'), 15000);
    await spend([stack], key.secret, 3);
    await eventually(() => assert.equal(receiver.of('balance_below', `user:${bal}`).length, 1), 15000);
    const blk = stack.addUser('purge-block@alerts.test', 1);
    stack.ctl('user', 'block', 'purge-block@alerts.test');
    await eventually(() => assert.equal(receiver.of('user_blocked', `user:${blk}`).length, 1), 15000);
    const pend = stack.addUser('purge-pending@alerts.test', 1);
    await stack.expectingLog(/PROV01103/, async () => {
      receiver.down = true;
      stack.ctl('user', 'block', 'purge-pending@alerts.test');
      await eventually(() => assert.ok(receiver.refused >= 1, 'tried'), 15000);
    });
    // Nine days later: past the retention (8 days).
    offset = 9 * DAY;
    await sleep(600);
    const cut = stack.clock - 8 * DAY;
    await eventually(() => assert.equal(Number(stack.sql(`SELECT COUNT(*) AS n FROM alerts
      WHERE created_at < ${cut} AND sent_at IS NOT NULL`)[0].n), 0, 'old delivered alerts removed'), 20000);
    assert.deepEqual(rowsOf(bal), [], 'the balance alert is gone');
    assert.deepEqual(rowsOf(blk), [], 'the block alert is gone');
    const p = rowsOf(pend);
    assert.equal(p.length, 1, 'the pending alert stays');
    assert.equal(p[0].sent_at, null);
    assert.ok(p[0].created_at < cut);
    assert.match(stack.readFile(stack.errorLog), /PROV00980: purged \d+ delivered spend alert\(s\) past ProviderLedgerRetention/);
    // The webhook is back: the old pending alert is delivered, and kept for
    // the retention from its delivery; a new block is delivered and kept.
    receiver.down = false;
    await eventually(() => assert.equal(receiver.of('user_blocked', `user:${pend}`).length, 1), 30000);
    const fresh = stack.addUser('purge-fresh@alerts.test', 1);
    stack.ctl('user', 'block', 'purge-fresh@alerts.test');
    await eventually(() => assert.equal(receiver.of('user_blocked', `user:${fresh}`).length, 1), 15000);
    await sleep(4000);      // several purge rounds and scans
    assert.equal(rowsOf(pend).length, 1, 'delivered late: kept');
    assert.ok(rowsOf(pend)[0].sent_at >= cut);
    assert.equal(rowsOf(fresh).length, 1, 'recent: kept');
    // The balance is still below its threshold, its alert's row is gone:
    // no second alert (it stays disarmed until a top-up).
    assert.equal(Number(stack.ctlJSON('user', 'show', String(bal)).balance), 4);
    assert.equal(receiver.of('balance_below', `user:${bal}`).length, 1, 'one alert per crossing');
    assert.equal(receiver.of('user_blocked', `user:${blk}`).length, 1);
    assert.deepEqual(rowsOf(bal), []);
    // providerctl: nothing left before the default 400 days; a date within
    // the last 8 days is refused.
    assert.equal(stack.ctlJSON('alerts', 'purge').removed, 0);
    assert.throws(() => stack.ctl('alerts', 'purge', '--before', new Date((stack.clock - DAY) * 1000)
      .toISOString().slice(0, 10)), /within the last 8 days/);
    assertClean(receiver, [sec.secret, key.secret]);
  });
});

describe('the alert directives at start-up', { timeout: 60000 }, () => {
  it('refuses a webhook without a secret, or with a short one, and names the directive', async () => {
    const url = 'ProviderAlertWebhook http://127.0.0.1:9/hook';
    await assert.rejects(startStack({ directives: url }), (e) => {
      assert.match(e.message, /PROV01100: ProviderAlertWebhook needs ProviderAlertSecretFile/);
      return true;
    });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-alerts-'));
    const short = path.join(dir, 'short.secret');
    fs.writeFileSync(short, 'tooshort\n');
    try {
      await assert.rejects(startStack({ directives: `${url}\nProviderAlertSecretFile ${short}` }), (e) => {
        assert.match(e.message, /PROV01100: ProviderAlertSecretFile \S+ must hold one line of at least 16 characters/);
        assert.ok(!e.message.includes('tooshort'), 'the secret is not in the message');
        return true;
      });
      await assert.rejects(startStack({ directives: `${url}\nProviderAlertSecretFile ${dir}/none` }), /PROV01100: cannot read ProviderAlertSecretFile/);
      await assert.rejects(startStack({ directives: 'ProviderAlertWebhook ftp://127.0.0.1/hook' }), /ProviderAlertWebhook: not an http:\/\/ or https:\/\/ URL/);
      await assert.rejects(startStack({ directives: 'ProviderAlertBalanceBelow five' }), /ProviderAlertBalanceBelow: 'five' is not an amount of credits/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('spend alerts on two nodes sharing one PostgreSQL database', { timeout: 240000 }, () => {
  let cluster = null;
  let a;
  let b;
  let receiver;
  let sec;

  before(async () => {
    sec = secretFile();
    receiver = await startReceiver(sec.secret);
    if (!PG_MODE) cluster = PgCluster.start();
    const directives = alertDirectives(receiver, sec.file);
    a = await startStack({ backend: 'pgsql', pgCluster: cluster || undefined, directives,
      seed: (s) => addBillModel(s) });
    b = await startStack({ peer: a, directives });
    for (const s of [a, b]) s.secrets.push(sec.secret);
  });

  after(async () => {
    const errors = [];
    for (const s of [b, a]) if (s) await s.stop().catch((e) => errors.push(e));
    if (cluster) cluster.stop();
    if (receiver) await receiver.stop();
    if (sec) fs.rmSync(sec.dir, { recursive: true, force: true });
    if (errors.length) throw errors[0];
  });

  it('sends one alert per crossing, not one per node', async () => {
    assert.equal(a.pgDatabase, b.pgDatabase);
    const user = a.addUser('nodes@alerts.test', 100);
    const key = a.createKey(user, { budget: 10 });
    const subject = `key:${key.id}`;
    await spend([a, b], key.secret, 8);
    await eventually(() => assert.equal(receiver.of('budget_80', subject).length, 1), 15000);
    await spend([b, a], key.secret, 2);
    await eventually(() => assert.equal(receiver.of('budget_100', subject).length, 1), 15000);
    a.ctl('user', 'block', 'nodes@alerts.test');
    await eventually(() => assert.equal(receiver.of('user_blocked', `user:${user}`).length, 1), 15000);
    await sleep(4000);   // several scans and delivery rounds of both nodes
    assert.equal(receiver.of('budget_80', subject).length, 1);
    assert.equal(receiver.of('budget_100', subject).length, 1);
    assert.equal(receiver.of('user_blocked', `user:${user}`).length, 1);
    assert.equal(receiver.got.length, 3, receiver.got.map((g) => g.body.type).join(', '));
    assert.equal(Number(a.sql('SELECT COUNT(*) AS n FROM alerts')[0].n), 3);
    assertClean(receiver, [sec.secret, key.secret]);
  });
});
