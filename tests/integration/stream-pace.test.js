// tests/integration/stream-pace.test.js: each event of a stream reaches the
// client before the gateway produces the next (issue 17: no batching a
// person would see as stutter). mockgw's lockstep fault makes the gateway
// wait, after each text piece it sends, until the client says it has that
// piece (GET /v1/_ack?n=N, sent by this test as each text delta arrives); a
// module that held an event back until the next one came would never let
// the gateway go on, and mockgw would count the piece as missed after its
// 10-second wait. No timing is asserted: only mockgw's count of pieces the
// client acknowledged and of pieces missed, for a relayed stream
// (/v1/messages) and a translated one (/v1/responses from the gateway's chat
// stream), each charged as usual. And the other side of the pace: an
// answer that the gateway sent whole at once leaves in one write, the 200,
// its events and its end together (mod_proxy's pace; it was one write for
// the events and one for the last chunk): httpd's writes to the client's
// connection counted by strace(1) attached to the children.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startStack } from './lib/server.js';

const VERSION = '2023-06-01';

describe('stream pace: each event flushed before the next is produced', { timeout: 120000 }, () => {
  let stack;
  let key;

  before(async () => {
    stack = await startStack({
      models: ['mock-claude-fault-lockstep', 'mock-gpt-fault-lockstep', 'mock-claude-whole',
        'mock-gpt-whole'],
      seed: (s) => {
        s.addModel('claude-lockstep', 'mock-claude-fault-lockstep',
          { family: 'anthropic', rates: { input: '1', output: '1' } });
        s.ctl('model', 'set', 'claude-lockstep', '--messages', 'on');
        s.addModel('gpt-lockstep', 'mock-gpt-fault-lockstep', { rates: { input: '1', output: '1' } });
        s.addModel('claude-whole', 'mock-claude-whole',
          { family: 'anthropic', rates: { input: '1', output: '1' } });
        s.ctl('model', 'set', 'claude-whole', '--messages', 'on');
        s.addModel('gpt-whole', 'mock-gpt-whole', { rates: { input: '1', output: '1' } });
        s.addUser('pace@example.test', 1000);
        key = s.createKey('pace@example.test').secret;
      },
    });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  /** GET one of mockgw's own endpoints with the service token. */
  async function gateway(path) {
    const r = await fetch(`${stack.mock.url}${path}`, {
      headers: { authorization: `Bearer ${stack.token}` },
    });
    assert.equal(r.status, 200, `mockgw ${path}`);
    return r.json();
  }

  /**
   * Streams body to path, acknowledging each text delta (isDelta) to the
   * gateway as it arrives; returns the stream's status, events and request id.
   */
  async function lockstep(path, headers, body, isDelta) {
    const res = await fetch(`${stack.baseURL}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const out = { status: res.status, id: res.headers.get('x-request-id'), events: [], deltas: 0 };
    const decoder = new TextDecoder();
    let pending = '';
    for await (const chunk of res.body) {
      pending += decoder.decode(chunk, { stream: true });
      let at;
      while ((at = pending.indexOf('\n\n')) >= 0) {
        const raw = pending.slice(0, at);
        pending = pending.slice(at + 2);
        const data = raw.split('\n').find((l) => l.startsWith('data: '));
        const ev = data && data !== 'data: [DONE]' ? JSON.parse(data.slice(6)) : null;
        out.events.push(ev);
        if (ev && isDelta(ev)) {
          out.deltas += 1;
          await gateway(`/v1/_ack?n=${out.deltas}`);
        }
      }
    }
    return out;
  }

  async function check(path, headers, body, isDelta, lastType) {
    const before = await gateway('/v1/_lockstep');
    const s = await lockstep(path, headers, body, isDelta);
    const after = await gateway('/v1/_lockstep');
    assert.equal(s.status, 200);
    assert.equal(s.events.filter(Boolean).at(-1).type, lastType);
    // "mock reply to: hi" in pieces of 8 bytes: 3 text pieces
    assert.equal(s.deltas, 3);
    assert.deepEqual(after, {
      streams: before.streams + 1, acked: before.acked + s.deltas, missed: before.missed,
    });
    const row = stack.sql(`SELECT status FROM ledger WHERE request_id = '${s.id}'`)[0];
    assert.equal(row.status, 'ok');
  }

  /**
   * POSTs body to path over a raw HTTP/1.1 socket and resolves, once the
   * answer has ended (its last chunk, or its Content-Length), with the text
   * and the socket's local port.
   */
  function rawPost(path, headers, body) {
    const url = new URL(stack.baseURL);
    const json = JSON.stringify(body);
    const ended = (all) => {
      const head = all.indexOf('\r\n\r\n');
      if (head < 0) return false;
      const length = /\r\ncontent-length: *(\d+)/i.exec(all.slice(0, head));
      return length ? all.length - head - 4 >= Number(length[1]) : all.endsWith('\r\n0\r\n\r\n');
    };
    return new Promise((resolve, reject) => {
      let all = '';
      const sock = net.connect(Number(url.port), url.hostname, () => {
        sock.write(`POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\n`
          + Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
          + `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}`
          + `\r\n\r\n${json}`);
      });
      sock.on('data', (d) => {
        all += d.toString('latin1');
        if (ended(all)) {
          const port = sock.localPort;
          sock.destroy();
          resolve({ all, port });
        }
      });
      sock.on('error', reject);
      sock.on('close', () => reject(new Error(`${path}: closed before the answer ended: ${all.slice(-200)}`)));
    });
  }

  /**
   * strace(1) on every thread of httpd's children, recording their writes
   * (write, writev, sendmsg, sendto, sendfile) with each descriptor's socket
   * addresses (-yy) into a file; resolves once every child is attached, with
   * stop(), which ends the trace and returns its lines.
   */
  async function traceWrites() {
    const pids = stack.httpdChildren();
    assert.ok(pids.length > 0, 'httpd has children');
    const out = join(stack.dir, `strace-${Date.now()}.txt`);
    const proc = spawn('strace', ['-f', '-yy', '-s', '0', '-e', 'trace=write,writev,sendmsg,sendto,sendfile',
      '-o', out, ...pids.flatMap((pid) => ['-p', String(pid)])], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    await new Promise((resolve, reject) => {
      proc.on('error', reject);
      proc.on('exit', (code) => reject(new Error(`strace ended (${code}): ${err}`)));
      proc.stderr.on('data', (d) => {
        err += d;
        // one line a process: "Process N attached with T threads"
        if ((err.match(/ attached/g) || []).length >= pids.length) resolve();
      });
    });
    const gone = new Promise((resolve) => proc.on('exit', resolve));
    let lines;
    return {
      async stop() {
        if (!lines) {
          proc.kill('SIGINT');
          await gone;
          lines = readFileSync(out, 'utf8').split('\n');
        }
        return lines;
      },
    };
  }

  it('sends an answer the gateway sent whole in one write: its 200, events and end', async () => {
    for (const [path, headers, body, last] of [
      ['/v1/messages', { 'x-api-key': key, 'anthropic-version': VERSION },
        { model: 'claude-whole', max_tokens: 16, stream: true,
          messages: [{ role: 'user', content: 'hi' }] }, 'event: message_stop'],
      ['/v1/responses', { authorization: `Bearer ${key}` },
        { model: 'gpt-whole', max_output_tokens: 16, stream: true, input: 'hi' },
        'event: response.completed'],
    ]) {
      const trace = await traceWrites();
      const answer = await rawPost(path, headers, body).finally(() => trace.stop());
      const lines = await trace.stop();
      assert.match(answer.all, /^HTTP\/1\.1 200 /, path);
      assert.ok(answer.all.includes(last), `${path}: ${last}`);
      assert.match(answer.all, /\r\ncontent-type: text\/event-stream/i, `${path}: a stream`);
      const client = `->127.0.0.1:${answer.port}]`;
      const writes = lines.filter((l) => l.includes(client) && !/ = -1 /.test(l));
      assert.equal(writes.length, 1, `${path}: httpd's writes to the client:\n${writes.join('\n')}`);
      const rid = /\r\nx-request-id: *([A-Za-z0-9_-]+)/i.exec(answer.all)[1];
      await stack.requestSettled({ headers: { get: () => rid } });
      const [row] = stack.sql(`SELECT status FROM ledger WHERE request_id = '${rid}'`);
      assert.equal(row.status, 'ok', `${path}: charged`);
    }
  });

  it('relays each Messages event before the gateway sends the next', async () => {
    await check('/v1/messages', { 'x-api-key': key, 'anthropic-version': VERSION },
      { model: 'claude-lockstep', max_tokens: 16, stream: true,
        messages: [{ role: 'user', content: 'hi' }] },
      (ev) => ev.type === 'content_block_delta', 'message_stop');
  });

  it('translates and sends each Responses delta before the gateway sends the next', async () => {
    await check('/v1/responses', { authorization: `Bearer ${key}` },
      { model: 'gpt-lockstep', max_output_tokens: 16, stream: true, input: 'hi' },
      (ev) => ev.type === 'response.output_text.delta', 'response.completed');
  });
});
