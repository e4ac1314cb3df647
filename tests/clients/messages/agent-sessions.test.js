// tests/clients/messages/agent-sessions.test.js: cost per agent session
// with the real agents (issue 35 item 2): two Claude Code sessions (`claude
// -p` twice, each a new session) and one Codex session (`codex exec`, from
// ../responses/node_modules) through one key. A recording proxy shows the
// session ids they send (Claude Code's x-claude-code-session-id, Codex's
// session-id, with their User-Agent); the ledger row of every request
// carries its session and client, and `providerctl usage report --by
// session` lists exactly the three sessions, whose credits add up to the
// ledger's. Runs inside a loopback-only network namespace (run.sh).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from '../../integration/lib/server.js';
import { seedMessagesCatalog, MESSAGES_UPSTREAMS } from '../../integration/lib/messages.js';
import { loopbackOnly, recordingProxy, runAgent } from '../lib/agents.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CLAUDE = process.env.PROV_CLAUDE
  || path.join(here, 'node_modules', '@anthropic-ai', 'claude-code-linux-x64', 'claude');
const CODEX = process.env.PROV_CODEX
  || path.join(here, '..', 'responses', 'node_modules', '.bin', 'codex');
const CLAUDE_MODEL = 'claude-sonnet-4-5';
const CODEX_MODEL = 'gpt-5.5';

describe('agent sessions: two Claude Code sessions and one Codex session on one key', { timeout: 300000 }, () => {
  let stack;
  let proxy;
  let user;
  let dir;

  before(async () => {
    assert.ok(loopbackOnly(), 'run this inside `unshare -n` (see run.sh): only loopback may be up');
    assert.ok(fs.existsSync(CLAUDE), `Claude Code's binary is missing at ${CLAUDE} (npm ci)`);
    assert.ok(fs.existsSync(CODEX), `Codex is missing at ${CODEX} (npm ci in tests/clients/responses)`);
    stack = await startStack({
      models: [...MESSAGES_UPSTREAMS, 'mock-main'],
      overrides: { ProviderMaxBodySize: String(8 * 1024 * 1024), ProviderGatewayTimeout: '60' },
      seed: (s) => {
        seedMessagesCatalog(s, { [CLAUDE_MODEL]: { upstream: 'mock-claude', messages: true,
          rates: { input: '3', output: '15', cache: '0.3' } } });
        s.addModel(CODEX_MODEL, 'mock-main', { rates: { input: '1.5', output: '6' } });
        user = { id: s.addUser('agents@example.test', 100) };
        user.key = s.createKey('agents@example.test', { name: 'agents' });
      },
    });
    proxy = await recordingProxy(stack.baseURL);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-agents-'));
  });
  after(async () => {
    if (proxy) proxy.server.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    if (stack) await stack.stop();
  });

  /** One `claude -p` run: a new session each time. */
  async function claude(prompt) {
    const home = fs.mkdtempSync(path.join(dir, 'claude-'));
    const r = await runAgent(CLAUDE, ['-p', prompt, '--output-format', 'json', '--tools', ''], {
      cwd: home,
      env: {
        PATH: process.env.PATH, HOME: home, CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
        ANTHROPIC_BASE_URL: proxy.url, ANTHROPIC_API_KEY: user.key.secret,
        ANTHROPIC_MODEL: CLAUDE_MODEL, ANTHROPIC_DEFAULT_HAIKU_MODEL: CLAUDE_MODEL,
        ANTHROPIC_DEFAULT_SONNET_MODEL: CLAUDE_MODEL, ANTHROPIC_DEFAULT_OPUS_MODEL: CLAUDE_MODEL,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1',
      },
    });
    assert.equal(r.code, 0, `claude: ${r.stdout}\n${r.stderr}`);
    const out = JSON.parse(r.stdout);
    assert.equal(out.is_error, false, r.stdout);
    return out;
  }

  /** One `codex exec` run: one session. */
  async function codex(prompt) {
    const home = fs.mkdtempSync(path.join(dir, 'codex-home-'));
    const work = fs.mkdtempSync(path.join(dir, 'codex-work-'));
    fs.writeFileSync(path.join(home, 'config.toml'), [
      `model = "${CODEX_MODEL}"`, 'model_provider = "provider"', 'web_search = "disabled"',
      'check_for_update_on_startup = false', '', '[model_providers.provider]',
      'name = "mod_provider"', `base_url = "${proxy.url}/v1"`, 'env_key = "PROVIDER_API_KEY"',
      'wire_api = "responses"', 'request_max_retries = 0', 'stream_max_retries = 0', '',
    ].join('\n'));
    const env = { ...process.env, CODEX_HOME: home, PROVIDER_API_KEY: user.key.secret, NO_COLOR: '1' };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    const r = await runAgent(CODEX, ['exec', '--skip-git-repo-check', '--json', '-C', work, prompt],
      { env, cwd: work, timeoutMs: 180000 });
    assert.equal(r.code, 0, `codex: ${r.stdout}\n${r.stderr}`);
    return r;
  }

  it("records each session's requests and the three sessions' credits add up to the ledger's", async () => {
    await claude('Say hello.');
    await claude('Say goodbye.');
    await codex('Say hello.');
    await stack.billingSettled();

    // What the agents sent: one session id per run, on every inference request.
    const inference = proxy.seen.filter((s) => s.method === 'POST'
      && ['/v1/messages', '/v1/responses'].includes(s.url.split('?')[0]));
    const claudeIds = [...new Set(inference.filter((s) => s.url.startsWith('/v1/messages'))
      .map((s) => s.headers['x-claude-code-session-id']))];
    const codexCalls = inference.filter((s) => s.url.startsWith('/v1/responses'));
    const codexIds = [...new Set(codexCalls.map((s) => s.headers['session-id']))];
    console.log(`Claude Code sent x-claude-code-session-id ${claudeIds.join(', ')} (User-Agent `
      + `${inference[0].headers['user-agent']}); Codex sent session-id ${codexIds.join(', ')} `
      + `(User-Agent ${codexCalls[0]?.headers['user-agent']})`);
    assert.equal(claudeIds.length, 2, 'two Claude Code sessions, each its own id');
    assert.ok(claudeIds.every(Boolean), 'every Claude Code request names its session');
    assert.equal(codexIds.length, 1, 'one Codex session');
    assert.ok(codexIds[0], 'every Codex request names its session');

    // The ledger: every request of the key with its session and client.
    const rows = stack.sql(`SELECT request_id, transport, status, agent_session, agent_client,
        CAST(credits AS TEXT) AS credits FROM ledger WHERE key_id = ${user.key.id} ORDER BY id`);
    assert.equal(rows.length, inference.length, 'a ledger row per inference request');
    for (const r of rows) {
      assert.notEqual(r.status, 'reserved');
      const want = r.transport === 'messages' ? ['claude-code', claudeIds] : ['codex', codexIds];
      assert.equal(r.agent_client, want[0], JSON.stringify(r));
      assert.ok(want[1].includes(r.agent_session), JSON.stringify(r));
    }

    // The report by session: exactly the three, adding up to the ledger.
    const report = stack.ctlJSON('usage', 'report', '--key', String(user.key.id), '--by', 'session');
    assert.deepEqual(report.rows.map((r) => r.session).sort(), [...claudeIds, ...codexIds].sort());
    let sum = 0n;
    const micro = (v) => BigInt(Math.round(Number(v) * 1e6));
    for (const s of report.rows) {
      const own = rows.filter((r) => r.agent_session === s.session);
      const credits = own.reduce((n, r) => n + BigInt(r.credits), 0n);
      assert.equal(s.requests, own.length, `${s.session}: requests`);
      assert.equal(micro(s.credits), credits, `${s.session}: credits`);
      assert.equal(s.client, claudeIds.includes(s.session) ? 'claude-code' : 'codex');
      assert.deepEqual(s.models, [claudeIds.includes(s.session) ? CLAUDE_MODEL : CODEX_MODEL]);
      assert.ok(credits > 0n, `${s.session} cost something`);
      sum += credits;
    }
    const ledgerTotal = rows.reduce((n, r) => n + BigInt(r.credits), 0n);
    assert.equal(sum, ledgerTotal, "the three sessions' credits add up to the ledger's");
    assert.equal(micro(report.total.credits), ledgerTotal);
    console.log(`sessions: ${report.rows.map((r) => `${r.client} ${r.requests} requests ${r.credits} credits`).join('; ')}`);
  });
});
