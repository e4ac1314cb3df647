// tests/integration/agent-sessions.test.js: cost per agent session (issue
// 35 item 2; docs/internals/billing.md "Agent sessions"), on SQLite and
// (PROVIDER_TEST_PGSQL=1) PostgreSQL. Claude Code names its session in
// x-claude-code-session-id, Codex in session-id: the ledger row of every
// request carries the session and the client that sent it, through the
// three transports (chat, Messages, Responses), plain and streamed (chat
// has no streaming), a stream the gateway cuts, and requests drawn from a lease (their rows
// written later by the billing writer). A header that is not 1-128 token
// characters is ignored: the request is answered and its row has no
// session. GET /v1/usage?by=session (the cabinet, signed in) and
// `providerctl usage report --by session` group the rows by session: each
// session's requests, tokens and credits equal its ledger rows', the
// sessions add up to the ledger's, the latest first.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { seedCatalog } from './lib/server.js';
import { startSignIn } from './lib/signin.js';
import { seedMessagesCatalog, VERSION } from './lib/messages.js';
import { assertOpenAIError, chatBody, toMicro } from './lib/helpers.js';
import { BILL_RATE } from './lib/billing.js';

const CLAUDE_UA = 'claude-cli/2.1.0 (external, cli)';
const CODEX_UA = 'codex_exec/0.63.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.63.0)';
const SLOWISH = 'agent-slowish';   // answers after 300 ms: a wave overlaps, the child leases
const WAVE = 24;

describe('agent sessions: the ledger and the usage by session', { timeout: 180000 }, () => {
  let signin;
  let stack;
  let alice;
  let key;

  async function api(method, urlPath, body) {
    const h = { origin: stack.baseURL };
    if (body !== undefined) h['content-type'] = 'application/json';
    const r = await alice.jar.fetch(`${stack.baseURL}${urlPath}`, {
      method, headers: h, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: r.status, headers: r.headers, text, json };
  }

  before(async () => {
    signin = await startSignIn({
      kit: { count: 1, plain: 0 },
      stack: {
        threads: 64,
        directives: 'LogFormat "%{provider-request-id}n %{provider-hold}n" hold\n'
          + 'CustomLog logs/hold.log hold',
        seed: (s) => {
          seedCatalog(s);
          seedMessagesCatalog(s);
          s.addModel(SLOWISH, 'mock-fault-delay-300', {
            rates: { input: BILL_RATE, output: BILL_RATE, cache: BILL_RATE, reasoning: BILL_RATE } });
        },
      },
    });
    stack = signin.stack;
    const { jar } = await signin.signIn('idp1', { login: 'alice' });
    const who = await (await jar.fetch(`${stack.baseURL}/v1/auth/session`)).json();
    alice = { jar, id: who.userId };
    stack.ctl('balance', 'add', String(alice.id), '100000', '--reason', 'test');
    const made = await api('POST', '/v1/keys', { name: 'agent-key' });
    assert.equal(made.status, 201, made.text);
    key = made.json;
    stack.secrets.push(key.secret);
  });

  after(async () => {
    if (signin) await signin.stop();
  });

  // One request of each transport, plain or streamed, with these headers.
  const send = {
    chat: (headers, { stream = false, model = 'prov-main' } = {}) => stack.request('POST',
      '/v1/chat/completions', { key: key.secret, headers,
        body: { ...chatBody(model), ...(stream ? { stream: true } : {}) } }),
    messages: (headers, { stream = false, model = 'claude-main' } = {}) => stack.request('POST',
      '/v1/messages', { headers: { ...headers, 'x-api-key': key.secret, 'anthropic-version': VERSION },
        body: { model, max_tokens: 16, messages: [{ role: 'user', content: 'hello world' }],
          ...(stream ? { stream: true } : {}) } }),
    responses: (headers, { stream = false, model = 'prov-main' } = {}) => stack.request('POST',
      '/v1/responses', { key: key.secret, headers,
        body: { model, input: 'hello world', max_output_tokens: 16, store: false,
          ...(stream ? { stream: true } : {}) } }),
  };

  const rid = (res) => {
    assert.equal(res.status, 200, res.text);
    const id = res.headers.get('x-request-id');
    assert.ok(id, 'x-request-id');
    return id;
  };

  /** The ledger rows of these request ids, once all are settled and written. */
  async function rows(ids) {
    await stack.billingSettled();
    const list = ids.map((i) => `'${i}'`).join(', ');
    for (const until = Date.now() + 10000; ;) {
      const r = stack.sql(`SELECT request_id, transport, status, agent_session, agent_client,
          input_tokens, output_tokens, cache_tokens, reasoning_tokens,
          CAST(credits AS TEXT) AS credits FROM ledger WHERE request_id IN (${list})`);
      if (r.length === ids.length && r.every((x) => x.status !== 'reserved')) {
        return new Map(r.map((x) => [x.request_id, x]));
      }
      if (Date.now() > until) throw new Error(`rows not settled: ${JSON.stringify(r)}`);
      await new Promise((res) => setTimeout(res, 50));
    }
  }

  /** The ledger's own sums of one session of alice's. */
  function ledgerOf(session) {
    const [s] = stack.sql(`SELECT COUNT(*) AS requests, COALESCE(SUM(input_tokens), 0) AS i,
        COALESCE(SUM(output_tokens), 0) AS o, COALESCE(SUM(cache_tokens), 0) AS c,
        COALESCE(SUM(reasoning_tokens), 0) AS r, CAST(COALESCE(SUM(credits), 0) AS TEXT) AS credits
      FROM ledger WHERE user_id = ${alice.id} AND agent_session = '${session}'
        AND status <> 'reserved'`);
    return { requests: Number(s.requests), input_tokens: Number(s.i), output_tokens: Number(s.o),
      cache_tokens: Number(s.c), reasoning_tokens: Number(s.r), credits: BigInt(s.credits) };
  }

  const cc = crypto.randomUUID();
  const cx = crypto.randomUUID();
  const other = 'tool_session.42';

  it('records the session and its client with every transport, plain and streamed, and a cut stream', async () => {
    const expect = new Map();   // request id -> [session, client, transport]
    const ccH = { 'x-claude-code-session-id': cc, 'user-agent': CLAUDE_UA };
    const cxH = { 'session-id': cx, 'user-agent': CODEX_UA };
    for (const t of ['chat', 'messages', 'responses']) {
      for (const stream of t === 'chat' ? [false] : [false, true]) {
        expect.set(rid(await send[t](ccH, { stream })), [cc, 'claude-code', t]);
        expect.set(rid(await send[t](cxH, { stream })), [cx, 'codex', t]);
      }
    }
    expect.set(rid(await send.chat({ 'session-id': other, 'user-agent': 'curl/8.1' })),
      [other, 'other', 'chat']);
    // Claude Code's header wins over session-id
    expect.set(rid(await send.messages({ ...ccH, 'session-id': cx })), [cc, 'claude-code', 'messages']);
    // streams the gateway cuts (its client logs the cut transfer): settled
    // by the estimate of what was relayed, the session kept
    const cutM = rid(await stack.expectingLog(/PROV00030|PROV00140/,
      () => send.messages(ccH, { stream: true, model: 'claude-cut' })));
    expect.set(cutM, [cc, 'claude-code', 'messages']);
    const cutC = rid(await stack.expectingLog(/PROV00030|PROV00140/,
      () => send.responses(cxH, { stream: true, model: 'prov-fault-cut' })));
    expect.set(cutC, [cx, 'codex', 'responses']);
    const got = await rows([...expect.keys()]);
    for (const [id, [session, client, transport]] of expect) {
      const row = got.get(id);
      assert.equal(row.agent_session, session, `${id} (${transport}) session`);
      assert.equal(row.agent_client, client, `${id} client`);
      assert.equal(row.transport, transport);
    }
    assert.equal(got.get(cutM).status, 'estimated');
    assert.equal(got.get(cutC).status, 'estimated');
  });

  it('ignores a session header that is not 1-128 token characters, and answers the request', async () => {
    const bad = ['has space', 'comma,list', 'x'.repeat(129), '', 'quote"d', 'semi;colon'];
    const ids = [];
    for (const v of bad) {
      ids.push(rid(await send.chat({ 'x-claude-code-session-id': v })));
      ids.push(rid(await send.responses({ 'session-id': v, 'user-agent': CODEX_UA }, { stream: true })));
    }
    // the longest kept whole
    const longest = 'L'.repeat(128);
    const ok = rid(await send.chat({ 'x-claude-code-session-id': longest }));
    const got = await rows([...ids, ok]);
    for (const id of ids) {
      assert.equal(got.get(id).agent_session, null, `${id}: no session`);
      assert.equal(got.get(id).agent_client, null, `${id}: no client`);
    }
    assert.equal(got.get(ok).agent_session, longest);
    assert.equal(got.get(ok).agent_client, 'claude-code');
  });

  it('carries the session of requests drawn from a lease into the rows the writer writes', async () => {
    const ls = crypto.randomUUID();
    const h = { 'x-claude-code-session-id': ls, 'user-agent': CLAUDE_UA };
    const results = await Promise.all(Array.from({ length: WAVE },
      () => send.chat(h, { model: SLOWISH })));
    const ids = results.map(rid);
    const streamed = await Promise.all(Array.from({ length: WAVE / 2 },
      () => send.responses(h, { model: SLOWISH, stream: true })));
    ids.push(...streamed.map(rid));
    const got = await rows(ids);
    for (const id of ids) assert.equal(got.get(id).agent_session, ls, `${id}: session`);
    // the access log says how each hold was taken: some drew on a lease
    const log = path.join(stack.dir, 'logs', 'hold.log');
    let holds = new Map();
    for (const until = Date.now() + 3000; Date.now() < until;) {
      holds = new Map(fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => l.split(' ')));
      if (ids.every((i) => holds.has(i))) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(ids.some((i) => holds.get(i) === 'lease'), 'some requests were drawn from a lease');
    assert.deepEqual(ledgerOf(ls).requests, ids.length);
  });

  it('GET /v1/usage?by=session and providerctl usage report --by session add up to the ledger', async () => {
    // One more request of the Codex session, a second later (rows are
    // timed in seconds), so that it is the latest.
    await new Promise((r) => setTimeout(r, 1100));
    rid(await send.responses({ 'session-id': cx, 'user-agent': CODEX_UA }));
    await stack.billingSettled();
    const res = await api('GET', '/v1/usage?by=session&days=1');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.json.by, 'session');
    assert.equal(res.json.days, 1);
    const data = res.json.data;
    assert.equal(data[0].session, cx, 'the latest session first');
    for (let i = 1; i < data.length; i++) {
      assert.ok(data[i - 1].last_request_at >= data[i].last_request_at, 'newest first');
    }
    let sum = 0n;
    for (const g of data) {
      const l = ledgerOf(g.session);
      assert.equal(g.group, g.session);
      assert.equal(g.key, String(key.id));
      assert.equal(g.name, 'agent-key');
      assert.equal(g.requests, l.requests, `${g.session}: requests`);
      for (const k of ['input_tokens', 'output_tokens', 'cache_tokens', 'reasoning_tokens']) {
        assert.equal(g[k], l[k], `${g.session}: ${k}`);
      }
      assert.equal(toMicro(String(g.credits)), l.credits, `${g.session}: credits`);
      assert.ok(g.first_request_at <= g.last_request_at);
      sum += toMicro(String(g.credits));
    }
    const cxRow = data.find((g) => g.session === cx);
    assert.equal(cxRow.client, 'codex');
    assert.deepEqual(cxRow.models, ['claude-main', 'prov-fault-cut', 'prov-main']);
    const ccRow = data.find((g) => g.session === cc);
    assert.equal(ccRow.client, 'claude-code');
    assert.deepEqual(ccRow.models, ['claude-cut', 'claude-main', 'prov-main']);
    assert.equal(data.find((g) => g.session === other).client, 'other');
    const [all] = stack.sql(`SELECT CAST(COALESCE(SUM(credits), 0) AS TEXT) AS c FROM ledger
      WHERE user_id = ${alice.id} AND agent_session IS NOT NULL AND status <> 'reserved'`);
    assert.equal(sum, BigInt(all.c), 'the sessions add up to the ledger');
    assert.ok(sum > 0n);
    // providerctl: the same sessions and sums
    const report = stack.ctlJSON('usage', 'report', '--user', String(alice.id), '--by', 'session');
    assert.equal(report.by, 'session');
    assert.deepEqual(report.rows.map((r) => [r.session, r.client, r.key_id, r.requests,
      toMicro(String(r.credits)), r.models]),
    data.map((g) => [g.session, g.client, Number(key.id), g.requests, toMicro(String(g.credits)), g.models]));
    assert.equal(toMicro(String(report.total.credits)), sum);
    const csv = stack.ctl('usage', 'report', '--user', String(alice.id), '--by', 'session',
      '--format', 'csv').trim().split('\n');
    assert.match(csv[0], /^session,client,user_id,key_id,models,/);
    assert.equal(csv.length, data.length + 2);
    assert.match(stack.ctl('usage', 'report', '--key', String(key.id), '--by', 'session'),
      new RegExp(`${cx}\\s+codex`));
    assertOpenAIError(await api('GET', '/v1/usage?by=sessions'), 400, 'INVALID_REQUEST', { param: 'by' });
  });

  it('charges a request with a session as one without (the header changes nothing but the grouping)', async () => {
    const before = stack.balance(alice.id);
    const a = await send.chat({ 'x-claude-code-session-id': cc, 'user-agent': CLAUDE_UA });
    const b = await send.chat({});
    const ca = toMicro(a.headers.get('x-provider-credits'));
    assert.equal(ca, toMicro(b.headers.get('x-provider-credits')));
    assert.ok(ca > 0n);
    const got = await rows([rid(a), rid(b)]);
    assert.equal(BigInt(got.get(rid(a)).credits), ca);
    assert.equal(got.get(rid(b)).agent_session, null);
    assert.equal(stack.balance(alice.id), before - 2n * ca);
  });
});
