// tests/clients/docs/guides.test.js: the setup guides at
// /docs/claude-code and /docs/codex, as a user follows them. Each guide's
// script is taken from the served page itself (its placeholders checked:
// each once, in the first lines, in no other code block), filled in, and
// pasted into bash and into zsh (on standard input) in a throwaway HOME
// with a stand-in keyring: a `secret-tool` on PATH that keeps its secrets in
// this test process's memory (a server on a Unix socket outside HOME), not
// in a file. Then: no file under HOME holds the key, the script ran twice
// gives the same files, the launcher in ~/.local/bin starts the real client
// (Claude Code, Codex: the binaries tests/clients/messages and
// tests/clients/responses install) against the test server, which completes
// a turn with a tool call and charges it; the key is still in no file; a
// launcher without a keyring asks for the key on the terminal without echo;
// the page's uninstall line removes everything. run.sh starts this file in a
// loopback-only network namespace.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack, seedCatalog, DEFAULT_UPSTREAMS } from '../../integration/lib/server.js';
import { seedMessagesCatalog } from '../../integration/lib/messages.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CLAUDE = process.env.PROV_CLAUDE
  || path.join(here, '..', 'messages', 'node_modules', '@anthropic-ai', 'claude-code-linux-x64', 'claude');
const CODEX = path.join(here, '..', 'responses', 'node_modules', '.bin', 'codex');
const CLAUDE_MODEL = 'claude-sonnet-4-5';
const CODEX_MODEL = 'gpt-5.5';
const SHELLS = ['bash', 'zsh'];

/** The keyring stand-in: secrets in this process's memory, reached over a socket. */
function keyring(dir) {
  const secrets = new Map();
  const sock = path.join(dir, 'keyring.sock');
  const server = net.createServer((c) => {
    let data = '';
    c.on('data', (d) => { data += d; });
    c.on('end', () => {
      const { argv, stdin } = JSON.parse(data);
      const attrs = (list) => {
        const pairs = [];
        for (let i = 0; i + 1 < list.length; i += 2) pairs.push(`${list[i]}=${list[i + 1]}`);
        return pairs.sort().join('&');
      };
      const [verb, ...rest] = argv;
      let out = { code: 0, stdout: '' };
      if (verb === 'store') {
        const args = rest.filter((a) => !a.startsWith('--label'));
        secrets.set(attrs(args), stdin);
      } else if (verb === 'lookup') {
        const v = secrets.get(attrs(rest));
        out = v === undefined ? { code: 1, stdout: '' } : { code: 0, stdout: v };
      } else if (verb === 'clear') {
        secrets.delete(attrs(rest));
      } else {
        out = { code: 2, stdout: '' };
      }
      c.end(JSON.stringify(out));
    });
  });
  const bin = path.join(dir, 'keyring-bin');
  fs.mkdirSync(bin);
  const tool = path.join(bin, 'secret-tool');
  fs.writeFileSync(tool, `#!${process.execPath}
// secret-tool as the guides call it (store, lookup, clear), answered by the
// test's keyring server: nothing is written to disk.
const net = require('net');
const chunks = [];
const argv = process.argv.slice(2);
const send = (stdin) => {
  const c = net.connect(${JSON.stringify(sock)});
  let reply = '';
  c.on('data', (d) => { reply += d; });
  c.on('end', () => { const r = JSON.parse(reply); process.stdout.write(r.stdout); process.exit(r.code); });
  c.end(JSON.stringify({ argv, stdin }));
};
if (argv[0] === 'store') {
  process.stdin.on('data', (d) => chunks.push(d));
  process.stdin.on('end', () => send(Buffer.concat(chunks).toString()));
} else {
  send('');
}
`, { mode: 0o755 });
  return new Promise((resolve) => server.listen(sock, () => resolve({ server, secrets, bin })));
}

/** The text of every <pre><code> block of html, entities decoded, with its id. */
function codeBlocks(html) {
  const un = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'").replace(/&amp;/g, '&');
  return [...html.matchAll(/<pre><code(?: id="([^"]+)")?>([\s\S]*?)<\/code><\/pre>/g)]
    .map((m) => ({ id: m[1] || null, text: un(m[2]) }));
}

/** Every file under dir (recursively), as paths. */
function files(dir) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...files(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

function assertKeyInNoFile(home, key) {
  const found = files(home).filter((f) => fs.readFileSync(f).includes(Buffer.from(key)));
  assert.deepEqual(found, [], 'files under HOME that hold the key');
}

/** Runs cmd with input on stdin, or, with answer, types answer.input once
 * stdout shows answer.after (stdin then stays open until it exits). */
function run(cmd, args, { env, input = '', cwd, timeout = 180000, answer = null } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let typed = false;
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
    child.stdout.on('data', (d) => {
      stdout += d;
      if (answer && !typed && answer.after.test(stdout)) {
        typed = true;
        child.stdin.write(answer.input);
      }
    });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, stdout, stderr });
    });
    if (!answer) child.stdin.end(input);
  });
}

describe('the setup guides, followed as written', { timeout: 600000 }, () => {
  let stack;
  let dir;
  let ring;
  let clients;   // a bin directory with claude and codex
  let user;

  before(async () => {
    assert.ok(fs.existsSync(CLAUDE), `Claude Code is missing at ${CLAUDE} (tests/clients/messages: npm ci)`);
    assert.ok(fs.existsSync(CODEX), `Codex is missing at ${CODEX} (tests/clients/responses: npm ci)`);
    for (const sh of SHELLS) {
      assert.equal(spawnSync(sh, ['-c', 'true']).status, 0, `${sh} is not installed (scripts/install-deps.sh)`);
    }
    stack = await startStack({
      models: [...DEFAULT_UPSTREAMS, 'mock-claude'],
      overrides: { ProviderMaxBodySize: String(8 * 1024 * 1024), ProviderGatewayTimeout: '60' },
      seed: (s) => {
        seedCatalog(s);
        seedMessagesCatalog(s, { [CLAUDE_MODEL]: { upstream: 'mock-claude', messages: true,
          rates: { input: '3', output: '15', cache: '0.3' } } });
        s.addModel(CODEX_MODEL, 'mock-main', { name: 'Codex model', rates: { input: '1.5', output: '6' } });
        user = { id: s.addUser('guides@example.test', 100) };
        user.key = s.createKey('guides@example.test', { name: 'guides' });
      },
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-guides-'));
    ring = await keyring(dir);
    clients = path.join(dir, 'clients');
    fs.mkdirSync(clients);
    fs.symlinkSync(CLAUDE, path.join(clients, 'claude'));
    fs.symlinkSync(path.resolve(CODEX), path.join(clients, 'codex'));
  });
  after(async () => {
    if (ring) ring.server.close();
    if (dir && process.env.PROV_KEEP_TMP !== '1') fs.rmSync(dir, { recursive: true, force: true });
    if (stack) await stack.stop();
  });

  /** The guide's script from the served page, after the placeholder checks. */
  async function script(page) {
    const r = await fetch(`${stack.baseURL}/docs/${page}`);
    assert.equal(r.status, 200);
    const blocks = codeBlocks(await r.text());
    const withPlaceholders = blocks.filter((b) => /PASTE_API_KEY_HERE|PASTE_MODEL_ID_HERE/.test(b.text));
    assert.equal(withPlaceholders.length, 1, 'one code block carries the placeholders');
    const s = withPlaceholders[0];
    assert.equal(s.id, 'setup-script');
    for (const ph of ['PASTE_API_KEY_HERE', 'PASTE_MODEL_ID_HERE']) {
      assert.equal(s.text.split(ph).length - 1, 1, `${ph} appears once`);
      const line = s.text.split('\n').findIndex((l) => l.includes(ph));
      assert.ok(line >= 0 && line < 3, `${ph} is in the first lines (line ${line + 1})`);
    }
    assert.ok(s.text.includes(`'${stack.baseURL}'`), 'the script names this service');
    return s.text;
  }

  function home(name) {
    const h = path.join(dir, name);
    fs.mkdirSync(h);
    return h;
  }

  function env(h, { keyringOn = true } = {}) {
    return {
      HOME: h,
      USER: 'guide-user',
      PATH: [keyringOn ? ring.bin : null, clients, '/usr/local/bin', '/usr/bin', '/bin']
        .filter(Boolean).join(':'),
      LANG: 'C.UTF-8',
    };
  }

  /** Pastes the filled-in script into sh; returns its output. */
  async function paste(sh, text, h, opts) {
    const filled = text.replace('PASTE_API_KEY_HERE', user.key.secret)
      .replace('PASTE_MODEL_ID_HERE', opts.model);
    // The last line shows what the pasting shell still holds afterwards.
    const r = await run(sh, ['-s'], { env: env(h, opts), cwd: h,
      input: `${filled}\necho "left: [\${PROVIDER_API_KEY-}][\${PROVIDER_MODEL-}]"\n` });
    assert.equal(r.code, 0, `${sh}: ${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /left: \[\]\[\]/, 'the script clears its variables');
    assert.doesNotMatch(r.stdout + r.stderr, new RegExp(user.key.secret), 'the key is never printed');
    return r.stdout;
  }

  function snapshot(h) {
    return Object.fromEntries(files(h).map((f) => [path.relative(h, f), fs.readFileSync(f, 'utf8')]));
  }

  function keyFor(name) {
    return ring.secrets.get(`service=${name}&url=${stack.baseURL}`);
  }

  function ledgerCount() {
    return Number(stack.sql(`SELECT COUNT(*) AS n FROM ledger WHERE user_id = ${user.id} AND status = 'ok'`)[0].n);
  }

  for (const sh of SHELLS) {
    it(`Claude Code: the script in ${sh}, then provider-claude runs a turn with a tool call`, async () => {
      const text = await script('claude-code');
      const h = home(`claude-${sh}`);
      ring.secrets.clear();
      const out = await paste(sh, text, h, { model: CLAUDE_MODEL });
      assert.match(out, /Created .*\/\.local\/bin\/provider-claude/);
      assert.match(out, /The API key is in the keyring/);
      assert.match(out, /Uninstall: rm -rf /);
      assert.equal(keyFor('provider-claude'), user.key.secret, 'the key is in the keyring');
      const launcher = path.join(h, '.local', 'bin', 'provider-claude');
      assert.ok(fs.statSync(launcher).mode & 0o100, 'the launcher is executable');
      // /model lists the service's models (tests/clients/messages/picker.test.js)
      assert.match(fs.readFileSync(launcher, 'utf8'), /^export CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1$/m);
      assert.ok(fs.statSync(path.join(h, '.config', 'provider-claude')).isDirectory());
      const first = snapshot(h);
      await paste(sh, text, h, { model: CLAUDE_MODEL });
      assert.deepEqual(snapshot(h), first, 'pasting it again changes nothing');
      assertKeyInNoFile(h, user.key.secret);

      fs.writeFileSync(path.join(h, 'notes.txt'), 'hello from the notes file\n');
      const before = ledgerCount();
      const prompt = `Read the notes file.\nTOOL: Read\nARGS: {"file_path":"${path.join(h, 'notes.txt')}"}`;
      const r = await run(launcher, ['-p', prompt, '--output-format', 'json'], { env: env(h), cwd: h });
      const ctx = `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
      assert.equal(r.code, 0, ctx);
      const result = JSON.parse(r.stdout);
      assert.equal(result.is_error, false, ctx);
      assert.ok(result.num_turns >= 2, ctx);
      assert.match(result.result, /^tool said: /, ctx);
      assert.match(result.result, /hello from the notes file/, ctx);
      assert.ok(ledgerCount() >= before + 2, 'the turns were served and charged');
      const last = stack.sql(`SELECT m.public_id AS model, l.transport FROM ledger l
        JOIN models m ON m.id = l.model_id WHERE l.user_id = ${user.id} ORDER BY l.id DESC LIMIT 1`)[0];
      assert.deepEqual(last, { model: CLAUDE_MODEL, transport: 'messages' });
      assertKeyInNoFile(h, user.key.secret);
    });
  }

  for (const sh of SHELLS) {
    it(`Codex: the script in ${sh}, then provider-codex runs a turn with a tool call`, async () => {
      const text = await script('codex');
      const h = home(`codex-${sh}`);
      ring.secrets.clear();
      const out = await paste(sh, text, h, { model: CODEX_MODEL });
      assert.match(out, /Created .*\/\.local\/bin\/provider-codex/);
      assert.equal(keyFor('provider-codex'), user.key.secret);
      const toml = fs.readFileSync(path.join(h, '.config', 'provider-codex', 'config.toml'), 'utf8');
      assert.match(toml, new RegExp(`^model = "${CODEX_MODEL}"$`, 'm'));
      assert.match(toml, /^wire_api = "responses"$/m);
      assert.match(toml, /^env_key = "PROVIDER_API_KEY"$/m);
      assert.ok(toml.includes(`base_url = "${stack.baseURL}/v1"`));
      const first = snapshot(h);
      await paste(sh, text, h, { model: CODEX_MODEL });
      assert.deepEqual(snapshot(h), first, 'pasting it again changes nothing');
      assertKeyInNoFile(h, user.key.secret);

      const work = path.join(h, 'work');
      fs.mkdirSync(work);
      fs.writeFileSync(path.join(work, 'hello.txt'), 'hello\n');
      const patch = '*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello\n+hello from codex\n*** End Patch\n';
      const prompt = `Change the greeting in hello.txt.\nTOOL: apply_patch\nARGS: ${JSON.stringify({ input: patch })}`;
      const before = ledgerCount();
      const launcher = path.join(h, '.local', 'bin', 'provider-codex');
      const r = await run(launcher, ['exec', '--skip-git-repo-check', '--json', '-s', 'workspace-write',
        '-C', work, prompt], { env: env(h), cwd: work });
      const ctx = `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
      assert.equal(r.code, 0, ctx);
      assert.equal(fs.readFileSync(path.join(work, 'hello.txt'), 'utf8'), 'hello from codex\n', ctx);
      const events = r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
      const reply = events.find((e) => e.type === 'item.completed' && e.item.type === 'agent_message');
      assert.ok(reply, ctx);
      assert.match(reply.item.text, /^tool said: /);
      assert.equal(ledgerCount(), before + 2, 'the call and the answer to its output were charged');
      assertKeyInNoFile(h, user.key.secret);
    });
  }

  it('without a keyring, the launcher asks for the key without echo', async () => {
    const text = await script('codex');
    const h = home('no-keyring');
    const out = await paste('bash', text, h, { model: CODEX_MODEL, keyringOn: false });
    assert.match(out, /no keyring was found, provider-codex asks for the key at each start/);
    assertKeyInNoFile(h, user.key.secret);
    // On a terminal (script(1) gives it one): the key typed, codex answers.
    fs.mkdirSync(path.join(h, 'work'));
    const launcher = path.join(h, '.local', 'bin', 'provider-codex');
    const cmd = `${launcher} exec --skip-git-repo-check -C ${path.join(h, 'work')} 'TOOL: none\nsay hi'`;
    // The key is typed once the prompt shows (echo is off by then).
    const r = await run('script', ['-qec', cmd, '/dev/null'], {
      env: env(h, { keyringOn: false }), cwd: h,
      answer: { after: /\(not shown\): /, input: `${user.key.secret}\n` } });
    const ctx = `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
    assert.equal(r.code, 0, ctx);
    assert.match(r.stdout, /API key for .* \(not shown\): /, ctx);
    assert.doesNotMatch(r.stdout, new RegExp(user.key.secret), 'the typed key was not echoed');
    assert.match(r.stdout, /mock reply to: /, ctx);
    assertKeyInNoFile(h, user.key.secret);
  });

  it('the uninstall line on the page removes the launcher, its settings and the key', async () => {
    const r0 = await fetch(`${stack.baseURL}/docs/claude-code`);
    const block = codeBlocks(await r0.text()).find((b) => b.text.startsWith('rm -rf ~/.local/bin/'));
    assert.ok(block, 'an uninstall line');
    const h = home('uninstall');
    ring.secrets.clear();
    await paste('bash', await script('claude-code'), h, { model: CLAUDE_MODEL });
    assert.ok(keyFor('provider-claude'));
    const r = await run('bash', ['-c', block.text], { env: env(h), cwd: h });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(keyFor('provider-claude'), undefined, 'the key left the keyring');
    assert.deepEqual(files(h), [], 'nothing is left under HOME');
  });
});
