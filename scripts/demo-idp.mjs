// scripts/demo-idp.mjs: the demo's OpenID Provider, started by
// scripts/demo.sh: one provider of the integration kit
// (tests/integration/lib/idp.js: npm oidc-provider with a login form, its
// packages from tests/node_modules) on a loopback port, addressed as
// http://localhost:PORT, with one confidential client whose redirect URI is
// the demo's callback and one user. It writes the client secret file and
// the ProviderIdentityProvider line into DIR, prints "demo-idp listening on
// ISSUER" once it serves, and runs until SIGTERM or SIGINT.
//
//   DEMO_IDP_PASSWORD=... node scripts/demo-idp.mjs DIR PUBLIC_URL NAME LOGIN EMAIL SUBJECT
//
// The password comes from the environment (DEMO_IDP_PASSWORD) rather than
// the command line, where any local user could read it in ps.

import fs from 'node:fs';
import path from 'node:path';
import { OpenIdProvider } from '../tests/integration/lib/idp.js';

const [dir, publicURL, name, login, email, sub] = process.argv.slice(2);
const password = process.env.DEMO_IDP_PASSWORD;
if (!dir || !publicURL || !name || !login || !email || !sub || !password) {
  process.stderr.write('usage: DEMO_IDP_PASSWORD=... node scripts/demo-idp.mjs DIR PUBLIC_URL NAME LOGIN EMAIL SUBJECT\n');
  process.exit(2);
}

fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
const op = new OpenIdProvider({
  name,
  display: 'Demo Identity Provider',
  dir,
  redirectUri: `${publicURL.replace(/\/$/, '')}/v1/auth/${name}/callback`,
  // The demo's email is one the provider vouches for (email_verified: true):
  // only then is it the account's, and the sign-in finds the demo user.
  users: [{ login, password, email, emailVerified: true, name: 'Demo User', sub }],
});
await op.start();
// The kit remembers every request and token for its tests; a demo that
// runs for days keeps only the recent ones.
setInterval(() => {
  op.log.entries.splice(0, Math.max(0, op.log.entries.length - 1000));
  if (op.issued.size > 1000) op.issued.clear();
}, 60000).unref();
fs.writeFileSync(path.join(dir, 'directive.conf'), `${op.directive()}\n`);
process.stdout.write(`demo-idp listening on ${op.issuer}\n`);

const stop = async () => {
  await op.stop();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
