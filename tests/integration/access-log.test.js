// tests/integration/access-log.test.js: what an operator sees of inference
// requests without reading the ledger (docs/operations.md, "Logs"): the access log's
// provider-* notes through docs/operations.md's LogFormat (the key's display prefix
// and never its secret, the model's public id, the credits charged (equal to
// x-provider-credits and the ledger), the tokens, how the hold was taken and
// the ledger status) for a chat answer, a Messages stream, a request refused
// before any hold and one the gateway refused; and mod_provider's section
// of mod_status's /server-status (the server's figures, summed over children).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startStack, HTTPD_MODULES } from './lib/server.js';
import { chatBody, eventually, toMicro } from './lib/helpers.js';
import {
  MESSAGES_UPSTREAMS, seedMessagesCatalog, messages, messagesBody, messagesStream,
} from './lib/messages.js';

// The README's and docs/operations.md's line, as an operator copies it.
const FORMAT = 'LogFormat "%h %t \\"%r\\" %>s %D %{provider-request-id}n %{provider-key}n '
  + '%{provider-model}n %{provider-credits}n %{provider-tokens-in}n %{provider-tokens-out}n '
  + '%{provider-tokens-cache}n %{provider-tokens-reasoning}n %{provider-hold}n '
  + '%{provider-status}n %{provider-error}n" provider';
const FIELDS = ['rid', 'key', 'model', 'credits', 'in', 'out', 'cache', 'reasoning', 'hold',
  'status', 'error'];

describe('access log notes and /server-status', { timeout: 120000 }, () => {
  let stack;
  let user;
  let display;

  before(async () => {
    stack = await startStack({
      models: MESSAGES_UPSTREAMS,
      directives: `${FORMAT}\nCustomLog logs/provider.log provider\n`
        + `LoadModule status_module ${HTTPD_MODULES}/mod_status.so\n`
        + '<Location /server-status>\n  SetHandler server-status\n</Location>\n',
      seed: (s) => {
        seedMessagesCatalog(s);
        user = { id: s.addUser('logs@example.test', 1000) };
        user.key = s.createKey('logs@example.test');
      },
    });
    display = stack.sql(`SELECT display FROM api_keys WHERE id = ${user.key.id}`)[0].display;
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  const logText = () => {
    const f = path.join(stack.dir, 'logs', 'provider.log');
    return fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '';
  };
  // The notes of request rid, by name ('-' where a note is not set).
  const entry = async (rid) => eventually(() => {
    const line = logText().split('\n').find((l) => l.includes(` ${rid} `));
    assert.ok(line, `a log line for ${rid} in ${logText()}`);
    const words = line.trim().split(/\s+/);
    const notes = words.slice(words.length - FIELDS.length);
    return Object.fromEntries(FIELDS.map((f, i) => [f, notes[i]]));
  });
  const ledgerCredits = (rid) => BigInt(stack.ledger(rid).credits);

  it('a chat answer: key, model, credits as charged, tokens, hold, status', async () => {
    const res = await stack.chat(user.key.secret, chatBody('gpt-chat', {
      max_tokens: 100, metadata: { mock_usage: { prompt: 120, completion: 30 } },
    }));
    assert.equal(res.status, 200, res.text);
    const rid = res.headers.get('x-request-id');
    const e = await entry(rid);
    assert.equal(e.key, display);
    assert.equal(e.model, 'gpt-chat');
    assert.equal(toMicro(e.credits), toMicro(res.headers.get('x-provider-credits')));
    assert.equal(toMicro(e.credits), ledgerCredits(rid));
    assert.ok(toMicro(e.credits) > 0n);
    assert.equal(e.in, '120');
    assert.equal(e.out, '30');
    assert.match(e.hold, /^(lease|database)$/);
    assert.equal(e.status, 'ok');
    assert.equal(e.error, '-');
  });

  it('a Messages stream: the charge of its settlement', async () => {
    const res = await messagesStream(stack, user.key.secret, messagesBody('claude-main', {
      max_tokens: 100, metadata: { mock_usage: { prompt: 200, completion: 40 } },
    }));
    assert.equal(res.status, 200, res.text);
    const rid = res.headers.get('x-request-id');
    const e = await entry(rid);
    assert.equal(e.key, display);
    assert.equal(e.model, 'claude-main');
    await eventually(() => assert.equal(stack.ledger(rid).status, 'ok'));
    assert.equal(toMicro(e.credits), ledgerCredits(rid));
    assert.ok(toMicro(e.credits) > 0n);
    assert.equal(e.out, '40');
    assert.match(e.hold, /^(lease|database)$/);
    assert.equal(e.status, 'ok');
  });

  it('refusals: what is known, nothing charged', async () => {
    // refused before any hold: an unknown model
    let res = await stack.chat(user.key.secret, chatBody('no-such-model'));
    assert.equal(res.status, 404, res.text);
    let e = await entry(res.headers.get('x-request-id'));
    assert.equal(e.key, display);
    assert.equal(e.model, '-', 'no model was found');
    assert.equal(e.hold, '-', 'no hold was taken');
    assert.equal(e.credits, '-');
    assert.equal(e.status, '-', 'no ledger row');
    assert.equal(e.error, 'MODEL_NOT_FOUND');
    // refused by the gateway: the hold released
    res = await messages(stack, user.key.secret, messagesBody('claude-429'));
    assert.equal(res.status, 429, res.text);
    const rid = res.headers.get('x-request-id');
    e = await entry(rid);
    assert.equal(e.model, 'claude-429');
    assert.match(e.hold, /^(lease|database)$/);
    assert.equal(toMicro(e.credits), 0n);
    assert.equal(e.status, stack.ledger(rid).status);
    assert.equal(e.status, 'refused');
    assert.notEqual(e.error, '-');
  });

  // The server's counters (shared by its children) saw every request above.
  it('/server-status has the server\'s mod_provider section', async () => {
    const auto = await stack.request('GET', '/server-status?auto');
    assert.equal(auto.status, 200, auto.text);
    const fig = Object.fromEntries(auto.text.split('\n').filter((l) => l.startsWith('Provider'))
      .map((l) => l.split(': ')));
    assert.match(fig.ProviderPid || '', /^\d+$/, auto.text);
    assert.equal(fig.ProviderRequests, '4', 'the four inference requests above');
    assert.equal(Number(fig.ProviderHoldsLease) + Number(fig.ProviderHoldsDatabase), 3,
      'three took a hold (not the unknown model)');
    assert.equal(fig.ProviderRequestsInFlight, '0');
    assert.equal(fig.ProviderStreamsOpen, '0', 'the stream above has ended');
    assert.equal(fig.ProviderBillingWriters, '1');
    const html = await stack.request('GET', '/server-status');
    assert.equal(html.status, 200);
    assert.match(html.text, /<h2>mod_provider \(all children of the server; this page from pid \d+\)<\/h2>/);
    assert.match(html.text, /<td>streams open<\/td><td>0<\/td>/);
  });

  it('/server-status counts a stream while it is open', async () => {
    const figure = async (name) => {
      const res = await stack.request('GET', '/server-status?auto');
      const line = res.text.split('\n').find((l) => l.startsWith(`${name}: `));
      return line && line.slice(name.length + 2);
    };
    // its events 700 ms apart
    const open = messagesStream(stack, user.key.secret, messagesBody('claude-drip',
      { max_tokens: 100 }));
    await eventually(async () => assert.equal(await figure('ProviderStreamsOpen'), '1'));
    const res = await open;
    assert.equal(res.status, 200, res.text);
    // The client has the whole stream before the handler has committed its
    // settlement and left: the count falls a moment later.
    await eventually(async () => assert.equal(await figure('ProviderStreamsOpen'), '0'));
  });

  it('the log holds no key secret', async () => {
    const text = logText();
    assert.ok(text.includes(display), 'the display prefix is there');
    for (const s of stack.secrets) assert.ok(!text.includes(s), 'no secret in the access log');
  });
});
