// tests/clients/messages/claude-code.test.js: Claude Code itself (npm
// @anthropic-ai/claude-code, its native binary) run non-interactively
// (`claude -p ... --output-format json`) against apache2 + mod_provider +
// mockgw. It must run inside a loopback-only network namespace (run.sh starts
// it under `unshare -n` after `ip link set lo up`) with
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1: the test refuses to start when
// any network interface other than loopback is up. A small recording proxy
// sits between Claude Code and httpd, so the test sees what the client sent
// (cache_control, thinking, its beta headers) next to what the gateway got.
// One plain turn (Bearer via ANTHROPIC_AUTH_TOKEN) and one turn with a tool
// call (Read, chosen through mockgw's "TOOL:" line) and its result
// (x-api-key via ANTHROPIC_API_KEY); each request is in the ledger, charged;
// the content blocks it sent are all of the types the service takes. The
// model's own upstream conditions make Claude Code act as it does against
// Anthropic: "prompt is too long" on a single exchange ends the run with its
// own prompt-too-long result (nothing charged); on a conversation with
// history it compacts the conversation and carries on; a 529
// overloaded_error is retried (CLAUDE_CODE_MAX_RETRIES bounds it here) and
// then reported as an overload.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from '../../integration/lib/server.js';
import { seedMessagesCatalog, MESSAGES_UPSTREAMS, MESSAGES_CATALOG } from '../../integration/lib/messages.js';
import { MESSAGES_FAULTS, seedFaults, ledgerRows } from '../lib/upstream.js';
import { loopbackOnly, recordingProxy, runAgent } from '../lib/agents.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CLAUDE = process.env.PROV_CLAUDE
  || path.join(here, 'node_modules', '@anthropic-ai', 'claude-code-linux-x64', 'claude');
// A model name Claude Code knows, so that it sends its full request shape
// (thinking, cache_control); served by the catalog like any other.
const MODEL = 'claude-sonnet-4-5';

function runClaude(args, env, cwd) {
  return runAgent(CLAUDE, args, { env, cwd });
}

describe('Claude Code against /v1/messages', { timeout: 300000 }, () => {
  let stack;
  let proxy;
  let user;
  let home;

  before(async () => {
    assert.ok(loopbackOnly(), 'run this inside `unshare -n` (see run.sh): only loopback may be up');
    assert.ok(fs.existsSync(CLAUDE), `Claude Code's binary is missing at ${CLAUDE} (npm ci)`);
    stack = await startStack({
      models: [...MESSAGES_UPSTREAMS, ...Object.values(MESSAGES_FAULTS)],
      // Claude Code's requests carry ~60 KB of tool definitions
      overrides: { ProviderMaxBodySize: String(8 * 1024 * 1024), ProviderGatewayTimeout: '60' },
      seed: (s) => {
        seedMessagesCatalog(s, { [MODEL]: { upstream: 'mock-claude', messages: true,
          rates: { input: '3', output: '15', cache: '0.3' } },
        'claude-overflow': MESSAGES_CATALOG['claude-overflow'] });
        seedFaults(s, MESSAGES_FAULTS, 'anthropic');
        user = { id: s.addUser('claude-code@example.test', 100) };
        user.key = s.createKey('claude-code@example.test');
      },
    });
    proxy = await recordingProxy(stack.baseURL);
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-claude-'));
    fs.writeFileSync(path.join(home, 'notes.txt'), 'hello from the notes file\n');
  });
  after(async () => {
    if (proxy) proxy.server.close();
    if (home) fs.rmSync(home, { recursive: true, force: true });
    if (stack) await stack.stop();
  });

  function env(auth) {
    return {
      PATH: process.env.PATH,
      HOME: home,
      CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
      ANTHROPIC_BASE_URL: proxy.url,
      ...(auth === 'bearer' ? { ANTHROPIC_AUTH_TOKEN: user.key.secret }
        : { ANTHROPIC_API_KEY: user.key.secret }),
      ANTHROPIC_MODEL: MODEL,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: MODEL,
      ANTHROPIC_DEFAULT_SONNET_MODEL: MODEL,
      ANTHROPIC_DEFAULT_OPUS_MODEL: MODEL,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    };
  }

  /** Runs one prompt; returns the parsed result and the /v1/messages requests it made. */
  async function turn(prompt, auth, extra = []) {
    const from = proxy.seen.length;
    const before = stack.balance(user.id);
    const r = await runClaude(['-p', prompt, '--output-format', 'json', ...extra], env(auth), home);
    const ctx = `exit ${r.code ?? r.signal}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
    assert.equal(r.code, 0, ctx);
    const out = JSON.parse(r.stdout);
    const { type, subtype, is_error: isError, num_turns: turns, result, stop_reason: stop } = out;
    console.log(`claude -p ${JSON.stringify(prompt)} --output-format json ${extra.join(' ')} printed `
      + `${JSON.stringify({ type, subtype, is_error: isError, num_turns: turns, stop_reason: stop, result })} `
      + `(usage ${JSON.stringify({ input: out.usage?.input_tokens, output: out.usage?.output_tokens })})`);
    const calls = proxy.seen.slice(from).filter((s) => s.method === 'POST'
      && s.url.split('?')[0] === '/v1/messages');
    assert.ok(calls.length >= 1, `no /v1/messages request: ${ctx}`);
    const rows = stack.sql(`SELECT status, CAST(credits AS TEXT) AS credits FROM ledger
      WHERE user_id = ${user.id} ORDER BY id`).slice(-calls.length);
    assert.equal(rows.length, calls.length, 'a ledger row per request');
    let total = 0n;
    for (const row of rows) {
      assert.equal(row.status, 'ok', JSON.stringify(rows));
      assert.ok(BigInt(row.credits) > 0n, JSON.stringify(row));
      total += BigInt(row.credits);
    }
    assert.equal(stack.balance(user.id), before - total, 'the balance paid for every request');
    return { out, calls, ctx };
  }

  it('answers a plain prompt (Bearer), its full request shape normalised on the way', async () => {
    // without tools, mockgw answers in text
    const { out, calls, ctx } = await turn('Say hello.', 'bearer', ['--tools', '']);
    assert.equal(out.is_error, false, ctx);
    assert.equal(out.type, 'result');
    assert.match(out.result, /^mock reply to: /, ctx);
    const c = calls.at(-1);
    assert.equal(c.headers.authorization, `Bearer ${user.key.secret}`);
    assert.match(c.headers['anthropic-version'], /^\d{4}-\d\d-\d\d$/);
    assert.equal(c.body.stream, true);
    assert.equal(c.body.model, MODEL);
    const sent = JSON.stringify(c.body);
    const found = ['cache_control', '"thinking"', '"role":"system"', '"context_management"']
      .filter((m) => sent.includes(m));
    console.log(`Claude Code sent ${found.join(', ')}; anthropic-beta: ${c.headers['anthropic-beta']}`);
    const last = await stack.mock.last();
    const forwarded = JSON.stringify(last.body);
    assert.equal(last.body.model, 'mock-claude');
    for (const marker of ['cache_control', '"thinking"', '"role":"system"']) {
      if (sent.includes(marker)) {
        assert.ok(!forwarded.includes(marker), `${marker} was sent on to the gateway`);
      }
    }
    assert.ok(sent.includes('cache_control'), 'Claude Code marks cache breakpoints');
  });

  it('runs a turn with a tool call and its result (x-api-key)', async () => {
    const file = path.join(home, 'notes.txt');
    const prompt = `Read the notes file.\nTOOL: Read\nARGS: {"file_path":"${file}"}`;
    const { out, calls, ctx } = await turn(prompt, 'x-api-key');
    assert.equal(out.is_error, false, ctx);
    assert.ok(out.num_turns >= 2, ctx);
    assert.equal(calls.at(-1).headers['x-api-key'], user.key.secret);
    // The first call answered a tool_use of Read; Claude Code ran it and sent
    // the file back as a tool_result; the model's reply quotes it.
    const withResult = calls.find((c) => JSON.stringify(c.body.messages).includes('"tool_result"'));
    assert.ok(withResult, 'a request carried the tool_result');
    const use = withResult.body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .find((b) => b.type === 'tool_use');
    assert.equal(use.name, 'Read');
    assert.deepEqual(use.input, { file_path: file });
    assert.match(out.result, /^tool said: /, ctx);
    assert.match(out.result, /hello from the notes file/, ctx);
  });

  it('sends only the content blocks the service takes (docs/internals/messages.md)', () => {
    const inMessages = new Set();
    const inResults = new Set();
    for (const c of proxy.seen) {
      for (const m of (c.body && Array.isArray(c.body.messages) ? c.body.messages : [])) {
        for (const b of (Array.isArray(m.content) ? m.content : [])) {
          inMessages.add(b.type);
          if (b.type === 'tool_result' && Array.isArray(b.content)) {
            for (const r of b.content) inResults.add(r.type);
          }
        }
      }
    }
    console.log(`Claude Code's blocks: in messages ${[...inMessages].join(', ')}; `
      + `in tool results ${[...inResults].join(', ') || '(strings)'}`);
    assert.ok(inMessages.has('tool_use') && inMessages.has('tool_result'), [...inMessages].join());
    const taken = new Set(['text', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking']);
    for (const t of inMessages) assert.ok(taken.has(t), `Claude Code sent a '${t}' block`);
  });

  /**
   * Runs `claude -p prompt` on model (ANTHROPIC_MODEL) with the extra args
   * and env; returns the exit code, the parsed output (json: one object;
   * stream-json: the list of events), the /v1/messages requests it made and
   * the ledger rows they left.
   */
  async function troubled(model, prompt, { args = [], extraEnv = {}, stream = false } = {}) {
    const from = proxy.seen.length;
    const rows = ledgerRows(stack, user.id).length;
    const format = stream ? ['--output-format', 'stream-json', '--verbose'] : ['--output-format', 'json'];
    const r = await runClaude(['-p', prompt, ...format, '--tools', '', ...args],
      { ...env('x-api-key'), ANTHROPIC_MODEL: model, ...extraEnv }, home);
    const ctx = `exit ${r.code ?? r.signal}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
    const out = stream
      ? r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
      : JSON.parse(r.stdout);
    const result = stream ? out.find((e) => e.type === 'result') : out;
    const { is_error: isError, terminal_reason: reason, api_error_status: status } = result ?? {};
    console.log(`claude -p on ${model}: exit ${r.code}, `
      + `${JSON.stringify({ is_error: isError, terminal_reason: reason, api_error_status: status, result: result?.result })}`);
    const calls = proxy.seen.slice(from).filter((c) => c.method === 'POST'
      && c.url.split('?')[0] === '/v1/messages');
    await stack.billingSettled();
    return { code: r.code, out, result, calls, rows: ledgerRows(stack, user.id, rows), ctx };
  }

  /** The text of every block of a request's messages, joined. */
  const textOf = (call) => JSON.stringify(call.body.messages);

  it('ends a single exchange whose prompt is too long with its own result, uncharged', async () => {
    const before = stack.balance(user.id);
    const { code, result, calls, rows, ctx } = await troubled('claude-overflow', 'Say hello.');
    assert.equal(code, 1, ctx);
    assert.equal(result.is_error, true, ctx);
    assert.equal(result.terminal_reason, 'prompt_too_long', ctx);
    assert.equal(result.api_error_status, 400, ctx);
    assert.equal(result.api_error_type, 'invalid_request_error', ctx);
    // it read the counts out of "prompt is too long: N tokens > M maximum"
    assert.match(result.result, /^Prompt is too long · the request is ~250000 tokens \(limit 200000\)/, ctx);
    assert.match(result.result, /A single-exchange conversation cannot be compacted/, ctx);
    assert.equal(calls.length, 1, 'no retry, no compaction');
    assert.deepEqual(rows.map((r) => [r.status, r.credits]), [['refused', '0']]);
    assert.equal(stack.balance(user.id), before);
  });

  it('compacts a conversation whose next request is too long, and carries on', async () => {
    const first = await troubled(MODEL, 'Remember the word apricot.');
    assert.equal(first.code, 0, first.ctx);
    const session = first.result.session_id;
    const before = stack.balance(user.id);
    // resumed on a model whose gateway refuses the first request as too long
    const { code, out, result, calls, rows, ctx } = await troubled('claude-overflow-once',
      'What was the word?', { args: ['--resume', session], stream: true });
    assert.equal(code, 0, ctx);
    assert.equal(result.is_error, false, ctx);
    assert.match(result.result, /^mock reply to: /, ctx);
    const boundary = out.find((e) => e.type === 'system' && e.subtype === 'compact_boundary');
    assert.ok(boundary, `no compact_boundary event\n${ctx}`);
    assert.equal(boundary.compact_metadata.trigger, 'auto');
    // the refused request carried the history; then the summary request(s);
    // then the turn again, on the summary
    assert.ok(calls.length >= 3, `${calls.length} requests`);
    assert.match(textOf(calls[0]), /Remember the word apricot/);
    const summaries = calls.slice(1, -1);
    assert.ok(summaries.length >= 1);
    for (const c of summaries) assert.match(textOf(c), /create a detailed summary of the conversation so far/);
    assert.match(textOf(calls.at(-1)),
      /This session is being continued from a previous conversation that ran out of context/);
    assert.equal(rows.length, calls.length, JSON.stringify(rows));
    assert.deepEqual(rows[0], { ...rows[0], status: 'refused', credits: '0' });
    let paid = 0n;
    for (const r of rows.slice(1)) {
      assert.equal(r.status, 'ok', JSON.stringify(rows));
      paid += BigInt(r.credits);
    }
    assert.equal(stack.balance(user.id), before - paid, 'the refused request cost nothing');
  });

  it('retries an overloaded model and then reports the overload, uncharged', async () => {
    const before = stack.balance(user.id);
    const { code, result, calls, rows, ctx } = await troubled('claude-overloaded', 'Say hello.',
      { extraEnv: { CLAUDE_CODE_MAX_RETRIES: '1' } });
    assert.equal(code, 1, ctx);
    assert.equal(result.is_error, true, ctx);
    assert.equal(result.api_error_status, 529, ctx);
    assert.equal(result.api_error_type, 'overloaded_error', ctx);
    assert.match(result.result, /^API Error: 529 The model is overloaded upstream; retry shortly\./, ctx);
    assert.equal(calls.length, 2, 'the request and one retry (CLAUDE_CODE_MAX_RETRIES=1)');
    assert.deepEqual(rows.map((r) => [r.status, r.credits]), [['refused', '0'], ['refused', '0']]);
    assert.equal(stack.balance(user.id), before);
  });

  it('shows the retry of a 529 and finishes the turn when the model answers', async () => {
    const { code, out, result, calls, ctx } = await troubled('claude-overloaded-once', 'Say hello.',
      { stream: true });
    assert.equal(code, 0, ctx);
    assert.match(result.result, /^mock reply to: /, ctx);
    const retry = out.find((e) => e.type === 'system' && e.subtype === 'api_retry');
    assert.ok(retry, ctx);
    assert.equal(retry.error_status, 529, ctx);
    assert.equal(retry.error, 'overloaded', ctx);
    assert.equal(calls.length, 2);
  });
});
