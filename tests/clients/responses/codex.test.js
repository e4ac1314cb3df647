// tests/clients/responses/codex.test.js: the Codex CLI (npm @openai/codex,
// pinned in this folder's package.json) against mod_provider through the
// mock gateway. Each test runs `codex exec --skip-git-repo-check --json` with
// an isolated CODEX_HOME whose config.toml defines the provider with
// wire_api = "responses" and the key in an environment variable. The model
// id is a GPT-5-family name, so Codex offers apply_patch as a custom
// (freeform) tool; the mock gateway is steered by "TOOL:" and "ARGS:" lines
// in the prompt. The plan's windows reach Codex's own rate-limit view, and an
// exhausted plan is shown as a usage limit. The model's own upstream
// conditions reach Codex under the codes it acts on: a context overflow
// (refused before the stream, or response.failed once it began) is its own
// context-window message, the gateway's 429 is retried after its Retry-After,
// an overload is "at capacity". run.sh starts this file inside a
// loopback-only network namespace, so Codex cannot reach anything beyond
// this machine.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack, seedCatalog, DEFAULT_UPSTREAMS } from '../../integration/lib/server.js';
import { expectedCharge, kinds } from '../../integration/lib/helpers.js';
import { OPENAI_FAULTS, seedFaults, ledgerRows } from '../lib/upstream.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CODEX = path.join(here, 'node_modules', '.bin', 'codex');
const MODEL = 'gpt-5.5';
const RATES = { input: '1.5', output: '6' };

describe('Codex (codex exec) on /v1/responses', { timeout: 300000 }, () => {
  let stack;
  let user;
  let planned;   // on a plan, no balance
  let spent;     // on a plan too small for any request, no balance
  let dir;

  before(async () => {
    stack = await startStack({
      models: [...DEFAULT_UPSTREAMS, ...Object.values(OPENAI_FAULTS)],
      seed: (s) => {
        seedCatalog(s);
        seedFaults(s, OPENAI_FAULTS);
        s.addModel(MODEL, 'mock-main', { name: 'Codex test model', rates: RATES });
        user = { id: s.addUser('codex@example.test', 100) };
        user.key = s.createKey('codex@example.test', { name: 'codex' });
        s.ctl('plan', 'add', 'codex-plan', '--5h', '1', '--7d', '5');
        s.ctl('plan', 'add', 'codex-tiny', '--5h', '0.000001', '--7d', '0.000001');
        planned = { id: s.addUser('codex-plan@example.test') };
        planned.key = s.createKey('codex-plan@example.test');
        s.ctl('subscription', 'set', 'codex-plan@example.test', 'codex-plan');
        spent = { id: s.addUser('codex-spent@example.test') };
        spent.key = s.createKey('codex-spent@example.test');
        s.ctl('subscription', 'set', 'codex-spent@example.test', 'codex-tiny');
      },
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-codex-'));
  });
  after(async () => {
    if (stack) await stack.stop();
    if (dir && process.env.PROV_KEEP_TMP !== '1') fs.rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A fresh CODEX_HOME and work directory; returns their paths. model: the
   * model of config.toml; streamRetries: its stream_max_retries.
   */
  function workspace(name, files = {}, { model = MODEL, streamRetries = 0 } = {}) {
    const home = path.join(dir, `${name}-home`);
    const work = path.join(dir, `${name}-work`);
    fs.mkdirSync(home);
    fs.mkdirSync(work);
    for (const [f, text] of Object.entries(files)) fs.writeFileSync(path.join(work, f), text);
    fs.writeFileSync(path.join(home, 'config.toml'), [
      `model = "${model}"`,
      'model_provider = "provider"',
      'web_search = "disabled"',
      'check_for_update_on_startup = false',
      '',
      '[model_providers.provider]',
      'name = "mod_provider"',
      `base_url = "${stack.baseURL}/v1"`,
      'env_key = "PROVIDER_API_KEY"',
      'wire_api = "responses"',
      'request_max_retries = 0',
      `stream_max_retries = ${streamRetries}`,
      '',
    ].join('\n'));
    return { home, work };
  }

  /** Runs codex exec; resolves {code, events (the --json lines), stderr}. */
  function codexExec(ws, prompt, key = user.key.secret) {
    const args = ['exec', '--skip-git-repo-check', '--json', '-s', 'workspace-write',
      '-C', ws.work, prompt];
    const env = { ...process.env, CODEX_HOME: ws.home, PROVIDER_API_KEY: key, NO_COLOR: '1' };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    return new Promise((resolve, reject) => {
      const child = spawn(CODEX, args, { env, cwd: ws.work, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      const timer = setTimeout(() => child.kill('SIGKILL'), 180000);
      child.stdout.on('data', (d) => { out += d; });
      child.stderr.on('data', (d) => { err += d; });
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        const events = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
        resolve({ code: code ?? signal, events, stderr: err, stdout: out });
      });
    });
  }

  function ledgerSince(before) {
    return stack.sql(`SELECT request_id, transport, status, input_tokens, output_tokens,
        cache_tokens, reasoning_tokens, CAST(credits AS TEXT) AS credits FROM ledger
        WHERE user_id = ${Number(user.id)} ORDER BY id`).slice(before);
  }

  it('edits a file with apply_patch and is charged for each request', async () => {
    const ws = workspace('patch', { 'hello.txt': 'hello\n' });
    const patch = '*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello\n+hello from codex\n*** End Patch\n';
    const prompt = `Change the greeting in hello.txt.\nTOOL: apply_patch\nARGS: ${JSON.stringify({ input: patch })}`;
    const rowsBefore = ledgerSince(0).length;
    const balanceBefore = stack.balance(user.id);

    const r = await codexExec(ws, prompt);
    const ctx = `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
    assert.equal(r.code, 0, ctx);
    assert.equal(fs.readFileSync(path.join(ws.work, 'hello.txt'), 'utf8'), 'hello from codex\n', ctx);
    const change = r.events.find((e) => e.type === 'item.completed' && e.item.type === 'file_change');
    assert.ok(change, ctx);
    assert.equal(change.item.status, 'completed');
    assert.equal(path.basename(change.item.changes[0].path), 'hello.txt');
    const reply = r.events.find((e) => e.type === 'item.completed' && e.item.type === 'agent_message');
    assert.ok(reply, ctx);
    assert.match(reply.item.text, /^tool said: /, 'the second turn saw the patch result');

    // Two requests: the call, then the answer to its output; each charged exactly.
    const rows = ledgerSince(rowsBefore);
    assert.equal(rows.length, 2, JSON.stringify(rows));
    let total = 0n;
    for (const row of rows) {
      assert.equal(row.transport, 'responses');
      assert.equal(row.status, 'ok');
      const t = kinds({ prompt: row.input_tokens + row.cache_tokens,
        completion: row.output_tokens + row.reasoning_tokens });
      assert.equal(BigInt(row.credits), expectedCharge(RATES, t));
      total += BigInt(row.credits);
    }
    assert.equal(stack.balance(user.id), balanceBefore - total);
    const turn = r.events.find((e) => e.type === 'turn.completed');
    assert.equal(turn.usage.input_tokens, rows[0].input_tokens + rows[1].input_tokens,
      'Codex read the usage of response.completed');

    // What the gateway saw last: apply_patch as a function, no hosted tools,
    // the custom call and its output in the history.
    const last = await stack.mock.last();
    const names = last.body.tools.map((t) => t.function.name);
    assert.ok(names.includes('apply_patch'), names.join());
    assert.ok(!names.some((n) => /search/.test(n)), names.join());
    const ap = last.body.tools.find((t) => t.function.name === 'apply_patch').function;
    assert.deepEqual(ap.parameters.required, ['input']);
    const call = last.body.messages.find((m) => m.tool_calls)?.tool_calls[0];
    assert.equal(call.function.name, 'apply_patch');
    assert.deepEqual(JSON.parse(call.function.arguments), { input: patch });
    assert.equal(last.body.messages.at(-1).role, 'tool');
  });

  it('answers a plain turn with text', async () => {
    const ws = workspace('plain');
    const r = await codexExec(ws, 'TOOL: none\nsay hello');
    const ctx = `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
    assert.equal(r.code, 0, ctx);
    const reply = r.events.find((e) => e.type === 'item.completed' && e.item.type === 'agent_message');
    assert.ok(reply, ctx);
    assert.match(reply.item.text, /^mock reply to: /);
    const last = await stack.mock.last();
    assert.equal(last.body.stream, true);
    assert.equal(last.body.model, 'mock-main');
    assert.ok(last.body.messages.some((m) => m.role === 'system'), 'the developer prompt became system');
  });

  it('fails the turn with the service message for an unknown key', async () => {
    const ws = workspace('badkey');
    const seq = (await stack.mock.last()).seq;
    const r = await codexExec(ws, 'TOOL: none\nhi', `sk-prov-${'A'.repeat(43)}`);
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(`${r.stdout}\n${r.stderr}`, /401|Invalid API key|INVALID_API_KEY/);
    assert.equal((await stack.mock.last()).seq, seq, 'the gateway was not called');
  });

  /** The rate_limits Codex recorded in its session files under home. */
  function recordedRateLimits(home) {
    const found = [];
    const walk = (d) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.jsonl')) {
          for (const line of fs.readFileSync(p, 'utf8').split('\n')) {
            if (!line.includes('rate_limits')) continue;
            const rl = JSON.parse(line).payload?.rate_limits;
            if (rl && rl.primary) found.push(rl);
          }
        }
      }
    };
    if (fs.existsSync(path.join(home, 'sessions'))) walk(path.join(home, 'sessions'));
    return found;
  }

  it("records the plan's 5-hour and 7-day windows from the quota headers", async () => {
    const ws = workspace('plan');
    const r = await codexExec(ws, 'TOOL: none\nhow much quota is left?', planned.key.secret);
    const ctx = `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
    assert.equal(r.code, 0, ctx);
    const limits = recordedRateLimits(ws.home);
    assert.ok(limits.length > 0, `no rate_limits in Codex's session files\n${ctx}`);
    const last = limits.at(-1);
    assert.equal(last.primary.window_minutes, 300);
    assert.equal(last.secondary.window_minutes, 10080);
    assert.ok(last.primary.used_percent > 0 && last.primary.used_percent <= 100, JSON.stringify(last));
    assert.ok(last.primary.resets_at > Date.now() / 1000, JSON.stringify(last));
  });

  it('shows an exhausted plan as a usage limit', async () => {
    const ws = workspace('spent');
    const seq = (await stack.mock.last()).seq;
    const r = await codexExec(ws, 'TOOL: none\nhi', spent.key.secret);
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(`${r.stdout}\n${r.stderr}`, /usage limit/i);
    assert.equal((await stack.mock.last()).seq, seq, 'the gateway was not called');
  });

  const OUT_OF_ROOM = "Codex ran out of room in the model's context window. Start a new thread "
    + 'or clear earlier history before retrying.';

  /** The text of Codex's error and turn.failed events. */
  function failure(r) {
    const err = r.events.filter((e) => e.type === 'error').map((e) => e.message);
    const failed = r.events.find((e) => e.type === 'turn.failed');
    return { err, failed: failed?.error?.message };
  }

  it('reports its own context-window message for a context overflow, uncharged', async () => {
    const ws = workspace('ctx', {}, { model: 'prov-ctx' });
    const rows = ledgerRows(stack, user.id).length;
    const balance = stack.balance(user.id);
    const seq = (await stack.mock.last()).seq;
    const r = await codexExec(ws, 'TOOL: none\nhi');
    const ctx = `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
    assert.equal(r.code, 1, ctx);
    assert.deepEqual(failure(r), { err: [OUT_OF_ROOM], failed: OUT_OF_ROOM }, ctx);
    assert.equal((await stack.mock.last()).seq, seq + 1, 'one request, not retried');
    await stack.billingSettled();
    assert.equal(stack.balance(user.id), balance);
    assert.deepEqual(ledgerRows(stack, user.id, rows).map((x) => [x.status, x.credits]),
      [['refused', '0']]);
  });

  it('reports the same message when the overflow came after the stream began', async () => {
    const ws = workspace('ctx-mid', {}, { model: 'prov-ctx-midstream' });
    const r = await codexExec(ws, 'TOOL: none\nhi');
    const ctx = `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
    assert.equal(r.code, 1, ctx);
    assert.deepEqual(failure(r), { err: [OUT_OF_ROOM], failed: OUT_OF_ROOM }, ctx);
  });

  it("retries the gateway's 429 after its Retry-After and finishes the turn", async () => {
    // Codex retries a 429 only when it carries Retry-After, under stream_max_retries.
    const ws = workspace('throttled', {}, { model: 'prov-429-once', streamRetries: 1 });
    const rows = ledgerRows(stack, user.id).length;
    const balance = stack.balance(user.id);
    const r = await codexExec(ws, 'TOOL: none\nthrottled once');
    const ctx = `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
    assert.equal(r.code, 0, ctx);
    const { err } = failure(r);
    assert.equal(err.length, 1, ctx);
    assert.match(err[0], /^Reconnecting\.\.\. 1\/1 \(exceeded retry limit, last status: 429 Too Many Requests\b/);
    const reply = r.events.find((e) => e.type === 'item.completed' && e.item.type === 'agent_message');
    assert.match(reply?.item?.text ?? '', /^mock reply to: /, ctx);
    const added = ledgerRows(stack, user.id, rows);
    assert.deepEqual(added.map((x) => x.status), ['refused', 'ok'], JSON.stringify(added));
    assert.equal(added[0].credits, '0');
    // created_at is in seconds: 2 s apart or more when Codex waited for Retry-After: 2
    assert.ok(Number(added[1].created_at) - Number(added[0].created_at) >= 2,
      `the retry waited for Retry-After: 2 (${JSON.stringify(added)})`);
    assert.equal(stack.balance(user.id), balance - BigInt(added[1].credits),
      'only the answered request is charged');
  });

  it('reports an overload as the model being at capacity', async () => {
    const ws = workspace('overloaded', {}, { model: 'prov-overloaded' });
    const r = await codexExec(ws, 'TOOL: none\nhi');
    const ctx = `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
    assert.equal(r.code, 1, ctx);
    const capacity = 'Selected model is at capacity. Please try a different model.';
    assert.deepEqual(failure(r), { err: [capacity], failed: capacity }, ctx);
  });
});
