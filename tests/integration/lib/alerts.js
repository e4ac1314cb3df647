// tests/integration/lib/alerts.js: a spend alerts' receiver for the tests
// (docs/reference/alerts.md): a node http server on loopback that verifies each
// POST's X-Provider-Signature with the shared secret exactly as the
// receivers' page shows (verifySignature is that page's snippet), records
// the verified alerts, answers 204, and can be made to answer 503 (down).
// A POST that fails the check is recorded in `bad` and answered 401.

import crypto from 'node:crypto';
import http from 'node:http';

/**
 * The receivers' page's check: header is the X-Provider-Signature value
 * "t=<unix seconds>,v1=<hex>", raw the body's bytes as received. True when
 * v1 is the HMAC-SHA256 of "<t>.<raw>" under secret and t is within
 * toleranceSeconds of now (a replayed old delivery fails).
 */
export function verifySignature(secret, header, raw, toleranceSeconds = 300) {
  const parts = Object.fromEntries(String(header || '').split(',').map((kv) => {
    const i = kv.indexOf('=');
    return [kv.slice(0, i).trim(), kv.slice(i + 1).trim()];
  }));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || !/^[0-9a-f]{64}$/.test(parts.v1 || '')) return false;
  if (Math.abs(Math.floor(Date.now() / 1000) - t) > toleranceSeconds) return false;
  const expected = crypto.createHmac('sha256', secret).update(`${t}.`).update(raw).digest();
  return crypto.timingSafeEqual(expected, Buffer.from(parts.v1, 'hex'));
}

/**
 * Starts a receiver; returns { url, got, bad, refused, down, of(type, subject), stop() }.
 * toleranceSeconds: the signature's age it accepts (a test that moves the
 * server's clock by days widens it).
 */
export async function startReceiver(secret, { toleranceSeconds = 300 } = {}) {
  const r = { got: [], bad: [], refused: 0, down: false };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      if (r.down) {
        r.refused += 1;
        res.writeHead(503);
        res.end();
        return;
      }
      const header = req.headers['x-provider-signature'];
      if (req.method !== 'POST' || !verifySignature(secret, header, raw, toleranceSeconds)) {
        r.bad.push({ method: req.method, header, raw: raw.toString('utf8') });
        res.writeHead(401);
        res.end();
        return;
      }
      r.got.push({ body: JSON.parse(raw.toString('utf8')), raw: raw.toString('utf8'), headers: req.headers });
      res.writeHead(204);
      res.end();
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  r.url = `http://127.0.0.1:${server.address().port}/hook`;
  r.of = (type, subject) => r.got.filter((g) => g.body.type === type
    && (subject === undefined || `${g.body.key ? 'key' : 'user'}:${g.body.key ? g.body.key.id : g.body.user.id}` === subject));
  r.stop = () => new Promise((resolve) => { server.close(resolve); server.closeAllConnections(); });
  return r;
}
