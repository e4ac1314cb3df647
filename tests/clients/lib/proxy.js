// tests/clients/lib/proxy.js: a recording proxy for the coding-agent tests:
// it sits between a client (Claude Code, Codex) and httpd, so that a test
// sees what the client sent (method, path, headers, the parsed JSON body)
// and the first 64 KiB of what it got back, next to what the gateway got.

import http from 'node:http';

/** A proxy to target; resolves to {server, seen, url}. */
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
