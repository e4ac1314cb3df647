// tests/integration/lib/metrics.js: what the metrics tests share
// (metrics.test.js reads the handler, prometheus.test.js reads Debian's
// prometheus server): the stack's directives (the handler mapped and
// protected, a limit of 1 on the public MCP endpoint that the workload
// trips), the users a
// known workload needs, the workload itself (a plain chat answer, a
// Messages stream, a Responses stream, and a refusal by each check), the
// exact series it must leave, and a parser of the Prometheus text format.

import assert from 'node:assert/strict';
import { HTTPD_MODULES } from './server.js';
import { chatBody, unknownKey } from './helpers.js';
import { seedMessagesCatalog, messages, messagesBody, messagesStream } from './messages.js';
import { addPlan, subscribe } from './billing.js';

/** The stack's directives: the handler where the operator maps it, and a
 * location that refuses everyone (the protection is httpd's). */
export function metricsDirectives(base) {
  return [
    `LoadModule authz_host_module ${HTTPD_MODULES}/mod_authz_host.so`,
    `ProviderPublicURL ${base}`,
    'ProviderAnonRateLimit mcp 1 1',
    'KeepAlive Off',
    'CustomLog logs/pids.log "%P %>s %r"',
    '<Location /provider-metrics>',
    '  SetHandler provider-metrics',
    '  Require ip 127.0.0.1',
    '</Location>',
    '<Location /closed-metrics>',
    '  SetHandler provider-metrics',
    '  Require ip 192.0.2.1',
    '</Location>',
  ].join('\n');
}

/** Seeds the catalog and the users of the workload into stack s; returns them. */
export function seedMetricsUsers(s) {
  const u = {};
  const mk = (name, { balance = null, budget = null, plan = null } = {}) => {
    const email = `${name}@metrics.test`;
    const id = s.addUser(email, balance);
    u[name] = { email, id, key: s.createKey(email, { budget }) };
    if (plan) subscribe(s, email, plan, id, null);
  };
  seedMessagesCatalog(s);
  addPlan(s, 'metrics-big', '1000', '1000');
  addPlan(s, 'metrics-tiny', '0.000001', '1000');
  mk('payer', { balance: 1000 });
  mk('planned', { plan: 'metrics-big' });
  mk('blocked', { balance: 1000 });
  s.ctl('user', 'block', 'blocked@metrics.test');
  mk('budget', { balance: 1000, budget: '0.000001' });
  mk('window', { plan: 'metrics-tiny' });
  mk('broke');
  return u;
}

const usage = (prompt, completion) => ({ metadata: { mock_usage: { prompt, completion } } });

/** The known workload; asserts each answer's status. Each request runs
 * inside around(step, fn) (step: its index), which may pick the child. */
export async function runWorkload(stack, u, around = (step, fn) => fn()) {
  const post = (key, model, extra = {}) => stack.chat(key, chatBody(model, extra));
  const mcp = async () => {
    const r = await fetch(`${stack.baseURL}/v1/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    return { status: r.status, text: await r.text() };
  };
  const steps = [
    [200, () => post(u.payer.key.secret, 'gpt-chat', { max_tokens: 100, ...usage(120, 30) })],
    [200, () => messagesStream(stack, u.planned.key.secret,
      messagesBody('claude-main', { max_tokens: 100, ...usage(200, 40) }))],
    [200, () => stack.request('POST', '/v1/responses', { key: u.payer.key.secret,
      body: { model: 'gpt-chat', input: 'stream me please', stream: true } })],
    [401, () => post(unknownKey(), 'gpt-chat')],
    [403, () => post(u.blocked.key.secret, 'gpt-chat')],
    [429, () => post(u.budget.key.secret, 'gpt-chat')],
    [429, () => post(u.window.key.secret, 'gpt-chat')],
    [402, () => post(u.broke.key.secret, 'gpt-chat')],
    [404, () => post(u.payer.key.secret, 'no-such-model')],
    [429, () => messages(stack, u.payer.key.secret, messagesBody('claude-429'))],
    [200, mcp],
    [429, mcp],       // the public MCP endpoint's limit: 1 a minute
  ];
  for (const [i, [status, fn]] of steps.entries()) {
    const res = await around(i, fn);
    assert.equal(res.status, status, `step ${i}: ${res.text}`);
  }
}

/** The series (name{labels} -> value as a Number) the workload must leave,
 * the charges and tokens read back from the ledger. */
export function expectedSeries(stack) {
  const sum = (expr, where = "status = 'ok'") => Number(stack.sql(
    `SELECT CAST(COALESCE(SUM(${expr}), 0) AS TEXT) AS v FROM ledger WHERE ${where}`)[0].v);
  const refused = { key: 1, blocked: 1, budget: 1, window: 1, balance: 1, rate_limit_register: 0,
    rate_limit_token: 0, rate_limit_authorize: 0, rate_limit_signin: 0, rate_limit_mcp: 1 };
  const e = {
    'provider_requests_total{code="2xx",model="gpt-chat",transport="chat"}': 1,
    'provider_requests_total{code="2xx",model="claude-main",transport="messages"}': 1,
    'provider_requests_total{code="2xx",model="gpt-chat",transport="responses"}': 1,
    // the key, the blocked user and the unknown model: no model known
    'provider_requests_total{code="4xx",model="none",transport="chat"}': 3,
    'provider_requests_total{code="4xx",model="gpt-chat",transport="chat"}': 3,
    'provider_requests_total{code="4xx",model="claude-429",transport="messages"}': 1,
    'provider_credits_charged_total{source="plan"}': sum('plan_credits') / 1e6,
    'provider_credits_charged_total{source="balance"}': sum('credits - plan_credits') / 1e6,
    'provider_tokens_total{kind="input"}': sum('input_tokens'),
    'provider_tokens_total{kind="output"}': sum('output_tokens'),
    'provider_tokens_total{kind="cache"}': sum('cache_tokens'),
    'provider_tokens_total{kind="reasoning"}': sum('reasoning_tokens'),
    'provider_inference_requests_started_total': 10,
    'provider_inference_requests_in_flight': 0,
    'provider_holds_in_flight': 0,
    'provider_credits_held_in_flight': 0,
    'provider_streams_open': 0,
    'provider_billing_writers': 2,
    'provider_gateway_request_duration_seconds_count': 4,
    'provider_gateway_request_duration_seconds_bucket{le="+Inf"}': 4,
    'provider_gateway_errors_total{class="rate_limit"}': 1,
    'provider_gateway_errors_total{class="timeout"}': 0,
    'provider_gateway_errors_total{class="unreachable"}': 0,
    'provider_signins_total': 0,
  };
  for (const [check, n] of Object.entries(refused)) e[`provider_refused_total{check="${check}"}`] = n;
  // the three answers and the gateway's refusal took a hold
  e.holds = 4;
  assert.equal(sum('1', "status IN ('ok')"), 3, 'three charged ledger rows');
  assert.ok(e['provider_credits_charged_total{source="plan"}'] > 0, 'the plan paid the stream');
  assert.ok(e['provider_credits_charged_total{source="balance"}'] > 0, 'the balance paid');
  return e;
}

/** Prometheus text -> Map of 'name{sorted labels}' -> Number; asserts that
 * each sample line is well formed and each family has HELP and TYPE. */
export function parseMetrics(text) {
  const out = new Map();
  const typed = new Set();
  for (const line of text.split('\n')) {
    if (!line) continue;
    const meta = line.match(/^# (HELP|TYPE) ([a-z_:][a-z0-9_:]*) (.+)$/);
    if (meta) {
      if (meta[1] === 'TYPE') {
        assert.match(meta[3], /^(counter|gauge|histogram)$/, line);
        typed.add(meta[2]);
      }
      continue;
    }
    const m = line.match(/^([a-z_:][a-z0-9_:]*)(?:\{(.*)\})? (-?[0-9.]+|\+Inf)$/);
    assert.ok(m, `a sample line: ${line}`);
    const family = m[1].replace(/_(bucket|sum|count)$/, '');
    assert.ok(typed.has(m[1]) || typed.has(family), `TYPE before ${line}`);
    const labels = m[2] ? [...m[2].matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)]
      .map((l) => `${l[1]}="${l[2]}"`).sort().join(',') : '';
    out.set(labels ? `${m[1]}{${labels}}` : m[1], Number(m[3]));
  }
  return out;
}

/** Asserts that series (a Map) has every expected value. */
export function assertSeries(series, e) {
  for (const [k, v] of Object.entries(e)) {
    if (k === 'holds') continue;
    assert.ok(series.has(k), `series ${k}`);
    assert.ok(Math.abs(series.get(k) - v) < 1e-9, `${k}: ${series.get(k)}, expected ${v}`);
  }
  assert.equal((series.get('provider_holds_total{from="lease"}') || 0)
    + (series.get('provider_holds_total{from="database"}') || 0), e.holds, 'holds taken');
}
