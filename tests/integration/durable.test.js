// tests/integration/durable.test.js: what a child killed with SIGKILL leaves
// behind, on SQLite and (PROVIDER_TEST_PGSQL=1) PostgreSQL. A request it
// died under is charged with no request at all: the next child's billing
// writer looks every second, replays the dead child's journal and charges
// the hold its floor (the input estimate; docs/internals/broken-streams.md
// "A killed child"); a stream it died under is charged what its last
// progress record said was delivered, at least what the client had received
// by then, at most its hold; a stream drawn from a lease (no row yet) that
// it died under in its first second is charged its floor from the journal,
// and what its first write that delivered output was. And
// the requests it answered from a lease while their rows could not be
// written (the database held by another transaction) are in the ledger all
// the same, charged once, with the balance equal to the top-ups minus the
// ledger: each settlement was journaled before its answer went out, and the
// next child replays the dead child's journal and returns its lease.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startStack, sleep } from './lib/server.js';
import {
  addBillModel, seedUser, fullBody, BILL_RATE, nextHour, ledgerSums, bucketSum, toMicro, FULL_CHARGE,
  inputEstimate, STD_CONTENT, MICRO_PER_TOKEN,
} from './lib/billing.js';

const HOLD_TIMEOUT = 60;
const SLOW_MODEL = 'bill-slow';   // the gateway answers after 8 s
const STREAM_MODEL = 'bill-trickle';   // an 18 s stream: 60 text pieces 300 ms apart
// The charge of the standard request's input estimate (a hold's floor).
const FLOOR = inputEstimate([STD_CONTENT]) * MICRO_PER_TOKEN;
const CLIENTS = 16;
// What a kill and its aftermath may log: the parent's report, the writer's
// failed batch on a held database (on SQLite, past the busy cap: PROV00405),
// expiries, the journal's replay.
const KILL_LOG = /PROV0005[0-7]|PROV0038[0-9]|PROV00405|released \d+ (hold|lease)/;

/** Polls fn until it returns a truthy value; throws after ms (soft: returns it). */
async function until(what, fn, ms = 30000, { soft = false } = {}) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || (soft && Date.now() >= end)) return v;
    if (Date.now() >= end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * Reads the SSE events of a response body's reader, each event's data
 * parsed, until onEvent returns true (resolves true) or the body ends
 * (false).
 */
async function readEvents(reader, onEvent) {
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return false;
    buf += dec.decode(value, { stream: true });
    let at;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const data = buf.slice(0, at).split('\n').filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6)).join('\n');
      buf = buf.slice(at + 2);
      if (onEvent(data ? JSON.parse(data) : {})) return true;
    }
  }
}

/**
 * Holds the database in a transaction of another process, so that nothing
 * can be written (SQLite: BEGIN IMMEDIATE; PostgreSQL: the ledger locked
 * against writes). Resolves once the lock is held; release() ends it.
 */
async function holdDatabase(stack) {
  const args = stack.backend === 'pgsql'
    ? ['psql', [...stack.pg.psqlArgs(stack.pgDatabase), '-At']]
    : ['sqlite3', ['-cmd', '.timeout 10000', stack.db]];
  const proc = spawn(args[0], args[1], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d.toString(); });
  proc.stdin.write(stack.backend === 'pgsql'
    ? "BEGIN; LOCK TABLE ledger IN EXCLUSIVE MODE; SELECT 'locked';\n"
    : "BEGIN IMMEDIATE;\nSELECT 'locked';\n");
  await until('the database lock', () => out.includes('locked'), 15000);
  return {
    release: () => new Promise((resolve) => {
      proc.once('exit', resolve);
      proc.stdin.end('COMMIT;\n');
    }),
  };
}

describe('a child killed with SIGKILL', { timeout: 240000 }, () => {
  let stack;
  let t0;
  const u = {};

  before(async () => {
    t0 = nextHour(Math.floor(Date.now() / 1000)) + 60;
    stack = await startStack({
      clock: t0,
      threads: 64,
      overrides: { ProviderHoldTimeout: String(HOLD_TIMEOUT) },
      seed: (s) => {
        addBillModel(s);
        s.addModel(SLOW_MODEL, 'mock-fault-delay-8000',
          { rates: { input: BILL_RATE, output: BILL_RATE, cache: BILL_RATE, reasoning: BILL_RATE } });
        s.addModel(STREAM_MODEL, 'mock-fault-trickle-300,pieces-60',
          { rates: { input: BILL_RATE, output: BILL_RATE, cache: BILL_RATE, reasoning: BILL_RATE } });
        seedUser(s, u, 'durable.test', 'stale', { balance: 2 });
        seedUser(s, u, 'durable.test', 'stream', { balance: 10 });
        seedUser(s, u, 'durable.test', 'journal', { balance: 100000 });
        seedUser(s, u, 'durable.test', 'first', { balance: 100000 });
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  const leases = (user) => Number(stack.sql(
    `SELECT COUNT(*) AS n FROM billing_leases WHERE user_id = ${user.id}`)[0].n);
  const killChildren = () => {
    const children = stack.httpdChildren();
    assert.ok(children.length >= 1, 'httpd has a child');
    for (const pid of children) process.kill(pid, 'SIGKILL');
  };

  it('charges a request it died under its input estimate once its journal is replayed, with no request sent', async () => {
    const user = u.stale;
    const row = (rid) => stack.sql(`SELECT status, CAST(credits AS TEXT) AS credits,
      CAST(floor_credits AS TEXT) AS floor, owner FROM ledger WHERE request_id = '${rid}'`)[0];
    await stack.expectingCrash(KILL_LOG, async () => {
      const pending = stack.chat(user.key.secret, fullBody({ model: SLOW_MODEL })).catch((e) => e);
      const rid = await until('the hold', () => {
        const rows = stack.sql(`SELECT request_id FROM ledger
          WHERE user_id = ${user.id} AND status = 'reserved'`);
        return rows.length ? rows[0].request_id : null;
      }, 5000);
      assert.ok(row(rid).owner, 'the hold names its child\'s journal');
      assert.equal(BigInt(row(rid).floor), FLOOR, 'and the charge of its input estimate');
      killChildren();
      const res = await pending;
      assert.ok(res instanceof Error || res.status !== 200, 'the killed request got no answer');
      // The next child's writer replays the dead journal within a second or
      // so: no record names the request, so its hold is charged its floor.
      await until('the replay', () => row(rid).status !== 'reserved', 15000);
      assert.equal(row(rid).status, 'estimated');
      assert.equal(BigInt(row(rid).credits), FLOOR, 'charged its input estimate');
      assert.equal(stack.balance(user.id), toMicro('2') - FLOOR, 'the hold came back, the floor went');
      assert.equal(bucketSum(stack, 'key:h', user.key.id), FLOOR, 'the buckets carry the floor');

      // The sweep (the clock past the hold timeout) leaves it alone.
      stack.setClock(t0 + HOLD_TIMEOUT + 1);
      await sleep(2500);
      assert.equal(row(rid).status, 'estimated');
      assert.equal(stack.balance(user.id), toMicro('2') - FLOOR, 'charged once');
    });
  });

  it('charges a stream it died under at least what it delivered before its last progress record, at most its hold', async () => {
    const user = u.stream;
    const body = { model: STREAM_MODEL, input: 'Tell me a long story.', stream: true,
      max_output_tokens: 400 };
    const row = () => stack.sql(`SELECT request_id, status, CAST(credits AS TEXT) AS credits,
      CAST(reserved AS TEXT) AS reserved, CAST(floor_credits AS TEXT) AS floor FROM ledger
      WHERE user_id = ${user.id}`);
    const got = [];   // [ms since the first output, output bytes received so far]
    let bytes = 0;
    let first = 0;
    await stack.expectingCrash(KILL_LOG, async () => {
      const res = await fetch(`${stack.baseURL}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 200);
      const reading = readEvents(res.body.getReader(), (ev) => {
        if (ev.type === 'response.output_text.delta') {
          if (!first) first = Date.now();
          bytes += Buffer.byteLength(ev.delta);
          got.push([Date.now() - first, bytes]);
        }
        return false;
      }).catch((e) => e);
      // Twelve seconds of an eighteen-second stream: progress records at its
      // first tick, then every 5 s.
      await until('12 s of output', () => first && Date.now() - first >= 12000, 30000);
      const killedAt = Date.now() - first;
      killChildren();
      await reading;
      await stack.waitServing();
      await until('the replay', () => row().length === 1 && row()[0].status !== 'reserved', 15000);
      const [r] = row();
      // The last progress record was written at most ~6 s before the kill
      // (a tick a second, a record every 5 s): by then the module had sent
      // at least what the client had received 7 s before the kill.
      const before = got.filter(([ms]) => ms <= killedAt - 7000);
      const early = before.length ? before[before.length - 1][1] : 0;
      const least = BigInt(r.floor) + BigInt(Math.ceil(early / 3)) * MICRO_PER_TOKEN;
      assert.ok(early > 0, 'output had been received 7 s before the kill');
      assert.equal(r.status, 'estimated');
      assert.ok(BigInt(r.credits) >= least,
        `charged ${r.credits}, at least ${least} (floor ${r.floor} + ${early} bytes)`);
      assert.ok(BigInt(r.credits) > BigInt(r.floor), 'more than the floor');
      assert.ok(BigInt(r.credits) <= BigInt(r.reserved), `at most the hold (${r.reserved})`);
      assert.ok(BigInt(r.credits) <= BigInt(r.floor)
        + BigInt(Math.ceil(bytes / 3)) * MICRO_PER_TOKEN, 'no more than what was delivered');
      assert.equal(stack.balance(user.id), user.balance - BigInt(r.credits), 'the balance carries it');
      assert.equal(bucketSum(stack, 'key:h', user.key.id), BigInt(r.credits), 'and the key\'s buckets');
      assert.equal(leases(user), 0, 'no lease is left');
    });
  });

  /**
   * A Responses stream of STREAM_MODEL for user: resolves once the first
   * event that `stop` accepts has arrived, with the request id, the ms
   * since it was sent, the output bytes received, and `done` (the rest read
   * until the connection ends).
   */
  async function streamUntil(user, stop) {
    const sent = Date.now();
    const res = await fetch(`${stack.baseURL}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: STREAM_MODEL, input: 'Tell me a long story.', stream: true,
        max_output_tokens: 400 }),
    });
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    const s = { rid: res.headers.get('x-request-id'), bytes: 0, ms: 0 };
    await readEvents(reader, (ev) => {
      if (ev.type === 'response.output_text.delta') s.bytes += Buffer.byteLength(ev.delta);
      return stop(ev);
    });
    s.ms = Date.now() - sent;
    s.done = (async () => { while (!(await reader.read()).done); })().catch((e) => e);
    return s;
  }

  it('charges a stream drawn from a lease that it died under in its first second', async () => {
    const user = u.first;
    const row = (rid) => stack.sql(`SELECT status, CAST(credits AS TEXT) AS credits,
      CAST(reserved AS TEXT) AS reserved, input_tokens, output_tokens FROM ledger
      WHERE request_id = '${rid}'`)[0];
    const rows = () => stack.sql(`SELECT request_id, status FROM ledger WHERE user_id = ${user.id}`);
    const killed = [];
    // Twice: killed once the stream has started with no output yet, and
    // once its first output reached the client, each well within its first
    // second, beside streams of the same key and model that keep a lease
    // open, so that it is drawn from the lease (no row in its first second).
    for (const first of [(ev) => ev.type === 'response.created',
      (ev) => ev.type === 'response.output_text.delta']) {
      await stack.expectingCrash(KILL_LOG, async () => {
        const beside = [];
        for (let i = 0; i < 3; i++) {
          beside.push(await streamUntil(user, (ev) => ev.type === 'response.created'));
        }
        await until('a lease', () => leases(user) > 0, 10000);
        const s = await streamUntil(user, first);
        assert.ok(!row(s.rid), 'drawn from the lease: no row yet');
        killChildren();
        assert.ok(s.ms < 1000, `killed within its first second (${s.ms} ms)`);
        await Promise.all([s, ...beside].map((b) => b.done));
        await stack.waitServing();
        killed.push(s, ...beside);
        await until('the replay', () => killed.every((k) => row(k.rid)
          && row(k.rid).status !== 'reserved') && leases(user) === 0, 15000);
      });
    }
    const [none, some] = [row(killed[0].rid), row(killed[4].rid)];
    assert.equal(killed[0].bytes, 0, 'the first had no output');
    assert.ok(killed[4].bytes > 0, 'the second had output');
    // The first: its floor (the input estimate's charge, no tokens), as a
    // hold's row with no record is charged.
    assert.equal(none.status, 'estimated');
    assert.ok(Number(some.input_tokens) > 0);
    assert.equal(BigInt(none.credits), BigInt(some.input_tokens) * MICRO_PER_TOKEN,
      'charged its floor');
    assert.equal(Number(none.input_tokens) + Number(none.output_tokens), 0);
    // The second: its input estimate and the output of its first write.
    assert.equal(some.status, 'estimated');
    assert.ok(Number(some.output_tokens) >= 1, 'its first output was journaled');
    assert.ok(Number(some.output_tokens) <= Math.ceil(killed[4].bytes / 3) + 1,
      `no more output than delivered (${some.output_tokens} tokens, ${killed[4].bytes} bytes)`);
    assert.equal(BigInt(some.credits), (BigInt(some.input_tokens) + BigInt(some.output_tokens))
      * MICRO_PER_TOKEN);
    for (const k of killed) {
      const r = row(k.rid);
      assert.ok(BigInt(r.credits) > 0n && BigInt(r.credits) <= BigInt(r.reserved),
        `${k.rid} charged ${r.credits}, at most its hold`);
    }
    assert.equal(rows().length, killed.length, 'every request has its row');
    const sums = ledgerSums(stack, `user_id = ${user.id}`);
    assert.equal(sums.reserved, 0, 'nothing left reserved');
    assert.equal(stack.balance(user.id), user.balance - sums.credits, 'the balance carries them');
    assert.equal(bucketSum(stack, 'key:h', user.key.id), sums.credits, 'and the key\'s buckets');
    assert.equal(leases(user), 0, 'no lease is left');
  });

  it('keeps every request it answered from a lease in the ledger, charged once', async () => {
    const user = u.journal;
    const answered = new Set();
    let running = true;
    let held = false;
    let whileHeld = 0;
    const client = async () => {
      while (running) {
        const r = await stack.chat(user.key.secret, fullBody(), { timeout: 20000 })
          .catch((e) => e);
        if (!(r instanceof Error) && r.status === 200) {
          answered.add(r.headers.get('x-request-id'));
          if (held) whileHeld++;
        }
      }
    };
    await stack.expectingCrash(KILL_LOG, async () => {
      const clients = Array.from({ length: CLIENTS }, client);
      await until('a lease', () => leases(user) > 0, 10000);
      const lock = await holdDatabase(stack);
      held = true;
      let released = false;
      try {
        // Answered while nothing can be written: their rows exist only in
        // the child's memory and its journal.
        await until('answers while the database is held', () => whileHeld >= 20, 10000);
        killChildren();
        running = false;
        await Promise.all(clients);
        await lock.release();
        released = true;
      } finally {
        running = false;
        if (!released) await lock.release();
      }
      await stack.waitServing();
      const ids = () => new Set(stack.sql(
        `SELECT request_id FROM ledger WHERE user_id = ${user.id} AND status = 'ok'`)
        .map((r) => r.request_id));
      // (Soft: what is missing is shown by the assertions below.)
      await until('the dead child\'s rows', () => {
        const have = ids();
        return [...answered].every((id) => have.has(id)) && leases(user) === 0;
      }, 20000, { soft: true });
      // Holds of requests in flight at the kill, if any, are charged their
      // floor by the replay (or expire).
      stack.setClock(t0 + 3 * HOLD_TIMEOUT);
      await until('no hold left', () => ledgerSums(stack, `user_id = ${user.id}`).reserved === 0);
    });
    const have = new Set(stack.sql(
      `SELECT request_id FROM ledger WHERE user_id = ${user.id} AND status = 'ok'`)
      .map((r) => r.request_id));
    const missing = [...answered].filter((id) => !have.has(id));
    assert.equal(missing.length, 0, `every answered request has its ledger row (${missing.length} `
      + `of ${answered.size} have none, ${whileHeld} answered while the database was held)`);
    const extra = [...have].filter((id) => !answered.has(id));
    assert.ok(extra.length <= CLIENTS,
      `rows without a received answer (${extra.length}) are at most the requests in flight`);
    assert.ok(whileHeld >= 20, 'requests were answered while their rows could not be written');
    // Requests in flight at the kill are charged their floor (their input
    // estimate): a hold's from its row, a drawn one's from its journal.
    const floors = stack.sql(`SELECT CAST(credits AS TEXT) AS credits FROM ledger
      WHERE user_id = ${user.id} AND status = 'estimated'`);
    assert.ok(floors.length <= CLIENTS, 'floors only for requests in flight');
    for (const f of floors) assert.equal(BigInt(f.credits), FLOOR, 'a floor is the input estimate');
    const sums = ledgerSums(stack, `user_id = ${user.id}`);
    assert.equal(sums.credits, BigInt(have.size) * FULL_CHARGE + BigInt(floors.length) * FLOOR,
      'each row charged once');
    assert.equal(stack.balance(user.id), user.balance - sums.credits,
      'the balance is the top-up minus the ledger');
    assert.equal(bucketSum(stack, 'key:h', user.key.id), sums.credits, 'key buckets = ledger');
    assert.equal(bucketSum(stack, 'user:h', user.id), sums.credits, 'user buckets = ledger');
    assert.equal(leases(user), 0, 'no lease is left');
  });
});
