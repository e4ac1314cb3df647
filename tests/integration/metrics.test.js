// tests/integration/metrics.test.js: the provider-metrics handler (docs/operations.md,
// "Metrics") on a server of two children: a known workload (a chat answer,
// a Messages stream, a Responses stream, a refusal by each check, a
// gateway refusal, a rate-limited MCP call), each request served by one
// child while the other is stopped (SIGSTOP), leaves exact counters that
// either child answers; then a sign-in and an MCP client's OAuth tokens; a
// stream open in one child is seen from the other, and in /server-status's
// section (the same shared counters); the page is Prometheus text 0.0.4
// with HELP and TYPE, carries no key, secret or email, and is served only
// where SetHandler maps it and httpd's Require lets the client in.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startStack, freePort, HTTPD_MODULES } from './lib/server.js';
import { eventually } from './lib/helpers.js';
import { startIdentityProviders } from './lib/idp.js';
import { signedIn, client, authorizeCode, exchange } from './lib/oauth.js';
import { messagesBody, messagesStream } from './lib/messages.js';
import {
  metricsDirectives, seedMetricsUsers, runWorkload, expectedSeries, parseMetrics, assertSeries,
} from './lib/metrics.js';

describe('provider-metrics: the server\'s counters over two children', { timeout: 180000 }, () => {
  let stack;
  let kit;
  let u;

  before(async () => {
    const port = await freePort();
    kit = await startIdentityProviders({ redirectBase: `http://127.0.0.1:${port}`, count: 1, plain: 0 });
    stack = await startStack({
      port, children: 2, threads: 4,
      directives: `${metricsDirectives(`http://127.0.0.1:${port}`)}\n`
        + `ProviderCookieSecure Off\n${kit.directives()}\n`
        + `LoadModule status_module ${HTTPD_MODULES}/mod_status.so\n`
        + '<Location /server-status>\n  SetHandler server-status\n</Location>\n',
      seed: (s) => { u = seedMetricsUsers(s); },
    });
  });
  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  const scrape = async () => {
    const res = await stack.request('GET', '/provider-metrics');
    assert.equal(res.status, 200, res.text);
    return res;
  };

  it('is Prometheus text 0.0.4 with every family, all zero before any request', async () => {
    const res = await scrape();
    assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const s = parseMetrics(res.text);
    for (const family of ['provider_requests_total', 'provider_credits_charged_total',
      'provider_tokens_total', 'provider_holds_in_flight', 'provider_credits_held_in_flight',
      'provider_gateway_request_duration_seconds', 'provider_gateway_errors_total',
      'provider_streams_open', 'provider_refused_total', 'provider_billing_batch_operations',
      'provider_journal_unwritten_records', 'provider_db_connection_wait_seconds',
      'provider_signins_total', 'provider_oauth_tokens_issued_total']) {
      assert.match(res.text, new RegExp(`^# HELP ${family} .+\\n# TYPE ${family} `, 'm'), family);
    }
    assert.equal(s.get('provider_inference_requests_started_total'), 0);
    assert.equal(s.get('provider_billing_writers'), 2, 'a writer in each child');
    assert.equal(s.get('provider_refused_total{check="key"}'), 0);
  });

  // Runs fn with the children pids stopped (SIGSTOP). A child stopped in
  // the middle of a database transaction (its writer's batch, a lease
  // returned) holds its row locks, and a request in another child would
  // wait for them for ever: after 5 s the stopped ones go on (the counters
  // are the server's sums, whichever child served the step).
  const whileStopped = async (pids, fn) => {
    let stopped = true;
    const resume = () => {
      if (!stopped) return;
      stopped = false;
      for (const p of pids) process.kill(p, 'SIGCONT');
    };
    for (const p of pids) process.kill(p, 'SIGSTOP');
    const timer = setTimeout(() => {
      console.log(`# children ${pids} stopped for 5 s: they go on`);
      resume();
    }, 5000);
    try {
      return await fn();
    } finally {
      clearTimeout(timer);
      resume();
    }
  };
  // Runs fn with every child but pid stopped: pid serves it.
  const inChild = (pid, fn) => whileStopped(stack.httpdChildren().filter((p) => p !== pid), fn);
  const pidsServing = (what) => new Set(fs.readFileSync(path.join(stack.dir, 'logs', 'pids.log'),
    'utf8').split('\n').filter((l) => l.includes(what)).map((l) => Number(l.split(' ')[0])));

  it('counts the known workload exactly, its requests split over both children', async () => {
    const children = stack.httpdChildren();
    assert.equal(children.length, 2);
    await runWorkload(stack, u, (step, fn) => inChild(children[step % 2], fn));
    await eventually(() => assert.deepEqual([...pidsServing(' POST /v1/')].sort(),
      [...children].sort(), 'each child served part of the workload'));
    const e = expectedSeries(stack);
    // a request is counted when its pool goes, a moment after its answer
    await eventually(async () => assertSeries(parseMetrics((await scrape()).text), e));
    for (const pid of children) {
      assertSeries(parseMetrics((await inChild(pid, scrape)).text), e);
    }
    const s = parseMetrics((await scrape()).text);
    assert.ok(s.get('provider_gateway_request_duration_seconds_sum') > 0);
    assert.ok(s.get('provider_db_connection_wait_seconds_count') >= 1, 'connections were taken');
    assert.ok(s.get('provider_billing_batch_operations_count') >= 1, 'batches were committed');
    await eventually(async () => assert.equal(
      parseMetrics((await scrape()).text).get('provider_journal_unwritten_records'), 0));
  });

  it('counts a sign-in and the OAuth tokens an MCP client is issued', async () => {
    const jar = await signedIn(stack);
    const c = await client(stack);
    await exchange(stack, c, await authorizeCode(stack, jar, c));
    await eventually(async () => {
      const s = parseMetrics((await scrape()).text);
      assert.equal(s.get('provider_signins_total'), 1);
      assert.equal(s.get('provider_oauth_tokens_issued_total'), 1);
    });
  });

  it('a stream open in one child is seen from the other, and by /server-status', async () => {
    const [a, b] = stack.httpdChildren();
    // claude-drip's events come 700 ms apart; child a takes it (b stopped)
    let stream;
    await whileStopped([b], async () => {
      stream = messagesStream(stack, u.payer.key.secret,
        messagesBody('claude-drip', { max_tokens: 100 }));
      await eventually(async () => assert.equal(
        parseMetrics((await scrape()).text).get('provider_streams_open'), 1), 15000, 100);
    });
    // now child b answers, with a (and its stream) stopped a moment
    await inChild(b, async () => {
      const s = parseMetrics((await scrape()).text);
      assert.equal(s.get('provider_streams_open'), 1);
      assert.equal(s.get('provider_holds_in_flight'), 1);
      assert.ok(s.get('provider_credits_held_in_flight') > 0);
      const status = await stack.request('GET', '/server-status?auto');
      assert.match(status.text, new RegExp(`^ProviderPid: ${b}$`, 'm'));
      assert.match(status.text, /^ProviderStreamsOpen: 1$/m, 'mod_status reads the same counters');
    });
    assert.equal((await stream).status, 200);
    await eventually(async () => {
      const s = parseMetrics((await scrape()).text);
      assert.equal(s.get('provider_streams_open'), 0);
      assert.equal(s.get('provider_holds_in_flight'), 0);
      assert.equal(s.get('provider_credits_held_in_flight'), 0);
      assert.equal(s.get('provider_requests_total{code="2xx",model="claude-drip",transport="messages"}'), 1);
    });
  });

  it('carries no key, secret or email', async () => {
    const { text } = await scrape();
    for (const secret of stack.secrets) assert.ok(!text.includes(secret), 'a secret');
    for (const user of Object.values(u)) {
      assert.ok(!text.includes(user.email), user.email);
      const display = stack.sql(`SELECT display FROM api_keys WHERE id = ${user.key.id}`)[0].display;
      assert.ok(!text.includes(display), `key display ${display}`);
    }
    assert.ok(!text.includes('@'), 'no address of any kind');
  });

  it('is served only where mapped, and httpd\'s Require protects it', async () => {
    const unmapped = await stack.request('GET', '/metrics');
    assert.equal(unmapped.status, 404);
    assert.ok(!unmapped.text.includes('provider_'), 'no counter outside the mapping');
    const closed = await stack.expectingLog(/AH01630: client denied/,
      () => stack.request('GET', '/closed-metrics'));
    assert.equal(closed.status, 403);
    assert.ok(!closed.text.includes('provider_'));
    const post = await stack.request('POST', '/provider-metrics', { body: '{}' });
    assert.equal(post.status, 405);
    const head = await fetch(`${stack.baseURL}/provider-metrics`, { method: 'HEAD' });
    assert.equal(head.status, 200);
  });
});
