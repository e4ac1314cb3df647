// tests/integration/prometheus.test.js: Debian's prometheus server
// (apt package prometheus, scripts/install-deps.sh) scrapes the
// provider-metrics handler every second, as docs/operations.md's scrape
// configuration says; after the known workload of lib/metrics.js its HTTP
// API (/api/v1/query) answers the counters that workload must leave: the
// page is one Prometheus itself reads, not only our parser.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { startStack, freePort } from './lib/server.js';
import { eventually } from './lib/helpers.js';
import {
  metricsDirectives, seedMetricsUsers, runWorkload, expectedSeries,
} from './lib/metrics.js';

const PROMETHEUS = process.env.PROV_PROMETHEUS || '/usr/bin/prometheus';

describe('Debian\'s prometheus scrapes provider-metrics', { timeout: 180000 }, () => {
  let stack;
  let u;
  let prom;
  let promURL;
  let promLog = '';

  before(async () => {
    assert.ok(fs.existsSync(PROMETHEUS), `${PROMETHEUS} (apt install prometheus)`);
    const port = await freePort();
    stack = await startStack({
      port, children: 2, threads: 4,
      directives: metricsDirectives(`http://127.0.0.1:${port}`),
      seed: (s) => { u = seedMetricsUsers(s); },
    });
    const dir = path.join(stack.dir, 'prometheus');
    fs.mkdirSync(path.join(dir, 'data'), { recursive: true });
    // docs/operations.md's scrape configuration, every second
    fs.writeFileSync(path.join(dir, 'prometheus.yml'), [
      'global:',
      '  scrape_interval: 1s',
      'scrape_configs:',
      '  - job_name: provider',
      '    scrape_interval: 1s',
      '    metrics_path: /provider-metrics',
      '    static_configs:',
      `      - targets: ['127.0.0.1:${port}']`,
      '',
    ].join('\n'));
    const webPort = await freePort();
    promURL = `http://127.0.0.1:${webPort}`;
    prom = spawn(PROMETHEUS, [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${webPort}`,
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    prom.stdout.on('data', (d) => { promLog += d; });
    prom.stderr.on('data', (d) => { promLog += d; });
    await eventually(async () => {
      const r = await fetch(`${promURL}/-/ready`);
      assert.equal(r.status, 200);
    }, 30000, 250).catch((e) => { throw new Error(`prometheus not ready: ${e}\n${promLog}`); });
  });
  after(async () => {
    if (prom && prom.exitCode === null) {
      const gone = new Promise((resolve) => prom.once('exit', resolve));
      prom.kill('SIGTERM');
      await gone;
    }
    if (stack) await stack.stop();
  });

  /** The value of an instant query that selects one series (NaN: none). */
  const query = async (q) => {
    const r = await fetch(`${promURL}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = await r.json();
    assert.equal(body.status, 'success', JSON.stringify(body));
    assert.ok(body.data.result.length <= 1, `${q}: ${JSON.stringify(body.data.result)}`);
    return body.data.result.length ? Number(body.data.result[0].value[1]) : NaN;
  };

  it('scrapes the target', async () => {
    await eventually(async () => assert.equal(await query('up{job="provider"}'), 1), 20000, 500);
    assert.equal(await query('provider_inference_requests_started_total'), 0);
  });

  it('has the counters of the known workload', async () => {
    await runWorkload(stack, u);
    const e = expectedSeries(stack);
    const holds = e.holds;
    delete e.holds;
    // the last scrape after the workload's last request has ended
    await eventually(async () => {
      assert.equal(await query('provider_inference_requests_started_total'), 10);
      assert.equal(await query('provider_refused_total{check="rate_limit_mcp"}'), 1);
      assert.equal(await query('provider_inference_requests_in_flight'), 0);
    }, 20000, 500);
    for (const [series, v] of Object.entries(e)) {
      const got = await query(series);
      assert.ok(Math.abs(got - v) < 1e-9, `${series}: prometheus has ${got}, expected ${v}`);
    }
    assert.equal(await query('sum(provider_holds_total)'), holds);
    assert.equal(await query('sum(provider_requests_total{code="4xx"})'), 7);
    // a histogram prometheus can take a quantile of
    assert.ok(await query('histogram_quantile(0.5, provider_gateway_request_duration_seconds_bucket)') > 0);
    const labels = await (await fetch(`${promURL}/api/v1/label/model/values`)).json();
    assert.deepEqual(labels.data.sort(), ['claude-429', 'claude-main', 'gpt-chat', 'none']);
  });

  it('holds no key, secret or email', async () => {
    const r = await fetch(`${promURL}/api/v1/series?match[]=${encodeURIComponent('{job="provider"}')}`);
    const text = await r.text();
    for (const secret of stack.secrets) assert.ok(!text.includes(secret));
    for (const user of Object.values(u)) assert.ok(!text.includes(user.email), user.email);
    assert.ok(JSON.parse(text).data.length > 50, 'the series are there');
  });
});
