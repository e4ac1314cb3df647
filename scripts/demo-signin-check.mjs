// scripts/demo-signin-check.mjs: signs in to a running demo
// (scripts/demo.sh) as its user would in a browser, with the test kit's
// client (tests/integration/lib/idp-client.js: a cookie jar and the demo
// provider's login form) and checks each step: the cabinet's sign-in
// button, the provider's form, the callback back to /cabinet/, the session
// (the demo user, the one holding the demo credits), the account the
// cabinet page shows, the identities, and a logout. Prints one line per step;
// exits 0 when all pass, 1 at the first failure.
//
//   node scripts/demo-signin-check.mjs BASE_URL PASSWORD
//   (BASE_URL http://127.0.0.1:8080; PASSWORD the one demo.sh printed)

import { CookieJar, signInAtProvider } from '../tests/integration/lib/idp-client.js';

const [base, password] = process.argv.slice(2);
if (!base || !password) {
  process.stderr.write('usage: node scripts/demo-signin-check.mjs BASE_URL PASSWORD\n');
  process.exit(2);
}

function check(ok, what, detail = '') {
  if (!ok) {
    process.stderr.write(`demo-signin-check: FAILED: ${what}${detail ? `: ${detail}` : ''}\n`);
    process.exit(1);
  }
  process.stdout.write(`ok - ${what}\n`);
}

const jar = new CookieJar();
let r = await jar.fetch(`${base}/cabinet/`);
let page = await r.text();
check(r.status === 200 && /<script src="\/cabinet\/app\.js"/.test(page), 'the cabinet page is served', page);
r = await jar.fetch(`${base}/v1/auth/providers`);
const providers = await r.json();
const demo = (providers.data || []).find((p) => p.display === 'Demo Identity Provider');
check(r.status === 200 && demo, 'the cabinet offers "Sign in with Demo Identity Provider"', JSON.stringify(providers));
const form = [null, demo.name, `${demo.login}?return=/cabinet/`];

const flow = await signInAtProvider(new URL(form[2], base).href, { jar, login: 'demo', password });
check(flow.formShown && flow.callback && flow.callback.startsWith(`${base}/v1/auth/${form[1]}/callback?`),
  'the demo provider\'s login form took the demo user back to the callback', flow.body || '');

r = await jar.fetch(flow.callback);
await r.arrayBuffer();
check(r.status === 302 && r.headers.get('location') === '/cabinet/', 'the callback signs in and returns to /cabinet/',
  `${r.status} ${r.headers.get('location')}`);
const cookies = r.headers.getSetCookie();
check(cookies.some((l) => l.startsWith('provider-session=') && /HttpOnly/.test(l) && !/Secure/.test(l)),
  'the session cookie (HttpOnly; plain http on loopback: no Secure)', cookies.join(' | '));

r = await jar.fetch(`${base}/v1/auth/session`);
const who = await r.json();
check(r.status === 200 && who.email === 'demo@example.com' && who.name === 'Demo User',
  'signed in as the demo user (demo@example.com)', JSON.stringify(who));

r = await jar.fetch(`${base}/v1/account`);
const account = await r.json();
check(r.status === 200 && account.email === 'demo@example.com' && account.balance === 100,
  'the cabinet\'s account: the demo user with 100 credits', JSON.stringify(account));

r = await jar.fetch(`${base}/v1/auth/identities`);
const ids = await r.json();
check(r.status === 200 && ids.identities.length === 1 && ids.identities[0].provider === form[1],
  'one identity, at the demo provider', JSON.stringify(ids));

r = await jar.fetch(`${base}/v1/auth/logout`, { method: 'POST', headers: { origin: base } });
check(r.status === 204, 'logout', String(r.status));
r = await jar.fetch(`${base}/v1/auth/session`);
await r.arrayBuffer();
check(r.status === 401, 'signed out');
