// tests/clients/messages/picker.test.js: the catalog in Claude Code's own
// model picker. The real Claude Code TUI (the binary npm installs here) is
// started in a pseudo-terminal (../lib/pty-drive.py) with gateway model
// discovery on (CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1, as the setup
// guide sets it), against apache2 + mod_provider + mockgw through a
// recording proxy; `/model` is typed as a person would. The picker must list
// the catalog's Messages models by their display names, and only those; the
// proxy shows that Claude Code read GET /v1/models with its own credentials
// and got Anthropic's list shape. run.sh starts it in a loopback-only
// network namespace.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from '../../integration/lib/server.js';
import { recordingProxy } from '../lib/agents.js';
import { MESSAGES_UPSTREAMS } from '../../integration/lib/messages.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CLAUDE = process.env.PROV_CLAUDE
  || path.join(here, 'node_modules', '@anthropic-ai', 'claude-code-linux-x64', 'claude');
const DRIVE = path.join(here, '..', 'lib', 'pty-drive.py');
const MODEL = 'claude-sonnet-4-5';
const CATALOG = {
  [MODEL]: { upstream: 'mock-claude', messages: true, name: 'Sonnet Through Us',
    rates: { input: '3', output: '15' } },
  'claude-team-coder': { upstream: 'mock-claude-b', messages: true, name: 'Team Coder Large',
    rates: { input: '1', output: '2' } },
  'chat-only-model': { upstream: 'mock-gpt', messages: false, name: 'Chat Only Model',
    rates: { input: '1', output: '2' } },
};

function drive(plan, env, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [DRIVE, '120', '40', '30', JSON.stringify(plan), '--', CLAUDE],
      { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('Claude Code\'s model picker lists the catalog', { timeout: 180000 }, () => {
  let stack;
  let proxy;
  let user;
  let home;

  before(async () => {
    assert.ok(fs.existsSync(CLAUDE), `Claude Code's binary is missing at ${CLAUDE} (npm ci)`);
    stack = await startStack({
      models: MESSAGES_UPSTREAMS,
      seed: (s) => {
        for (const [id, m] of Object.entries(CATALOG)) {
          s.addModel(id, m.upstream, { name: m.name, rates: m.rates, family: 'anthropic' });
          if (m.messages) s.ctl('model', 'set', id, '--messages', 'on');
        }
        user = { id: s.addUser('picker@example.test', 100) };
        user.key = s.createKey('picker@example.test');
      },
    });
    proxy = await recordingProxy(stack.baseURL);
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-picker-'));
    const config = path.join(home, '.claude');
    fs.mkdirSync(config);
    // a user who has been through the first-run screens and trusts the folder
    fs.writeFileSync(path.join(config, '.claude.json'), JSON.stringify({
      hasCompletedOnboarding: true, theme: 'dark', numStartups: 5,
      projects: { [home]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
    }));
  });
  after(async () => {
    if (proxy) proxy.server.close();
    if (home) fs.rmSync(home, { recursive: true, force: true });
    if (stack) await stack.stop();
  });

  it('shows the Messages models by name after /model, read from GET /v1/models', async () => {
    const env = {
      PATH: process.env.PATH,
      HOME: home,
      TERM: 'xterm-256color',
      CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
      ANTHROPIC_BASE_URL: proxy.url,
      ANTHROPIC_AUTH_TOKEN: user.key.secret,
      ANTHROPIC_MODEL: MODEL,
      CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    };
    // /model, Enter on the command; in the picker, down from the current
    // model (6) to the next gateway model (7), Enter; then a prompt
    const r = await drive([['>', '/model'], ['model', '\r'], ['Team Coder Large', '\x1b[B'],
      ['❯\\s*(7\\.\\s*)?Team Coder Large', '\r'], ['Team Coder Large', 'Say hello.'], ['hello\\.', '\r'],
      ['done \\d|Sautéed|for \\d+s', '']], env, home);
    const screen = r.stdout;
    const ctx = `${screen.slice(-4000)}\n${r.stderr}`;
    assert.equal(r.code, 0, ctx);
    const picker = screen.slice(screen.indexOf('Select model'));
    assert.match(picker, /Sonnet Through Us[^]*From gateway/, ctx);
    assert.match(picker, /Team Coder Large\s*From gateway/, ctx);
    assert.ok(!screen.includes('Chat Only Model'), 'a model closed to Messages is not offered');

    // what Claude Code asked and what it got: Anthropic's list, its credentials
    const list = proxy.seen.filter((x) => x.method === 'GET' && x.url.startsWith('/v1/models'));
    assert.ok(list.length >= 1, 'Claude Code read GET /v1/models');
    assert.equal(list[0].headers.authorization, `Bearer ${user.key.secret}`);
    assert.match(list[0].headers['anthropic-version'] || '', /^\d{4}-\d\d-\d\d$/);
    const answer = JSON.parse(list[0].answer);
    assert.deepEqual(answer.data.map((m) => [m.type, m.id, m.display_name]),
      [['model', MODEL, 'Sonnet Through Us'], ['model', 'claude-team-coder', 'Team Coder Large']]);
    assert.equal(answer.has_more, false);

    // the model picked is the one the next turn asks for, and is charged
    const turns = proxy.seen.filter((x) => x.method === 'POST' && x.url.split('?')[0] === '/v1/messages');
    assert.ok(turns.length >= 1, ctx);
    await stack.billingSettled();
    const rows = stack.sql(`SELECT m.public_id AS model, l.status, CAST(l.credits AS TEXT) AS credits
      FROM ledger l JOIN models m ON m.id = l.model_id WHERE l.user_id = ${user.id} ORDER BY l.id`);
    assert.ok(rows.length >= 1, 'the turn is in the ledger');
    const last = rows[rows.length - 1];
    assert.deepEqual([last.model, last.status], ['claude-team-coder', 'ok'], JSON.stringify(rows));
    assert.ok(BigInt(last.credits) > 0n, JSON.stringify(rows));
  });
});
