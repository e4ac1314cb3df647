// tests/clients/lib/agents.js: what the coding agents' tests share: the
// check that only loopback is up (the agents run inside `unshare -n`), an
// agent's run with its output, and a recording proxy that sits between the
// agent and httpd, so that a test sees what the client sent (its path,
// headers and parsed body) and the first 64 KiB of what it got back, next to
// what the gateway got.

import { spawn } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';

/** Whether only loopback is up (inside `unshare -n` with lo up). */
export function loopbackOnly() {
  const ifs = os.networkInterfaces();
  return Object.entries(ifs).every(([name, addrs]) => name === 'lo'
    || addrs.every((a) => a.internal));
}

/** Runs bin with args; resolves {code, signal, stdout, stderr}; killed after timeoutMs. */
export function runAgent(bin, args, { env, cwd, timeoutMs = 120000 }) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** A proxy to target that records each request (path, headers, parsed body, answer). */
export function recordingProxy(target) {
  const seen = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body;
      try { body = JSON.parse(raw.toString('utf8')); } catch { body = undefined; }
      const rec = { method: req.method, url: req.url, headers: req.headers, body, answer: '' };
      seen.push(rec);
      const up = http.request(`${target}${req.url}`, { method: req.method, headers: req.headers },
        (ur) => {
          res.writeHead(ur.statusCode, ur.headers);
          ur.on('data', (d) => { if (rec.answer.length < 65536) rec.answer += d; });
          ur.pipe(res);
        });
      up.on('error', () => res.destroy());
      up.end(raw);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    server, seen, url: `http://127.0.0.1:${server.address().port}`,
  })));
}
