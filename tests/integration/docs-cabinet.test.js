// tests/integration/docs-cabinet.test.js: /v1/docs against what the cabinet's
// paths really answer, signed in through the kit's OpenID Provider
// (lib/idp.js) as a browser is (lib/idp-client.js's cookie jar): the session
// and identities, the account and its low-balance alert, keys (made, listed, reissued, budgeted,
// deleted), usage, favorites, and their errors (401 NOT_SIGNED_IN, 403
// CROSS_SITE_REQUEST, 404 KEY_NOT_FOUND and MODEL_NOT_FOUND, 400, 409
// LAST_IDENTITY), each validated against the schema the description gives
// for that path, method and status (lib/openapi.js).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, freePort, seedCatalog } from './lib/server.js';
import { startIdentityProviders } from './lib/idp.js';
import { signInUser } from './lib/signin.js';
import { answerChecker } from './lib/openapi.js';

describe('/v1/docs describes the cabinet\'s answers', { timeout: 120000 }, () => {
  let stack;
  let kit;
  let jar;
  let check;

  before(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    stack = await startStack({
      port,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}`,
      seed: (s) => seedCatalog(s),
    });
    ({ jar } = await signInUser(stack, 'alice', { status: null, whoami: false }));
    const res = await fetch(`${stack.baseURL}/v1/docs`);
    // With ProviderPublicURL the base URL shown is the configured one: a
    // shared cache may keep the description (without it, "private").
    assert.equal(res.headers.get('cache-control'), 'max-age=300');
    const doc = await res.json();
    check = answerChecker(doc, stack.baseURL);
  });

  after(async () => {
    if (stack) {
      stack.secrets.push(...kit.secrets(), ...kit.subjects());
      for (const c of jar?.cookies || []) if (c.value) stack.secrets.push(c.value);
      await stack.stop();
    }
    if (kit) await kit.stop();
  });

  it('validates every cabinet answer against its documented schema', async () => {
    const signed = { fetcher: (u, i) => jar.fetch(u, i) };
    const write = (method, body) => ({ method, headers: { origin: stack.baseURL,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body) });

    const providers = await check('/v1/auth/providers', undefined, 200);
    assert.deepEqual(providers.data.map((p) => p.name), ['idp1']);
    const who = await check('/v1/auth/session', undefined, 200, signed);
    stack.ctl('balance', 'add', String(who.userId), '10', '--reason', 'docs');
    await check('/v1/auth/identities', undefined, 200, signed);
    await check('/v1/account', undefined, 200, signed);
    await check('/v1/account', undefined, 401);
    await check('/v1/account/alerts', undefined, 200, signed);
    await check('/v1/account/alerts', write('PUT', { balance_below: 2.5 }), 200, signed);
    await check('/v1/account/alerts', write('PUT', { balance_below: -1 }), 400, signed);
    await check('/v1/account/alerts', undefined, 401);

    const made = await check('/v1/keys', write('POST', { name: 'docs', weekly_budget: 5 }), 201, signed);
    stack.secrets.push(made.secret);
    await check('/v1/keys', write('POST', { name: '' }), 400, signed);
    await check('/v1/keys', { method: 'POST', headers: { origin: 'https://elsewhere.example' } }, 403, signed);
    await check('/v1/keys', undefined, 200, signed);
    const id = made.id;
    const again = await check(`/v1/keys/${id}/reissue`, write('POST'), 200,
      { ...signed, template: '/v1/keys/{id}/reissue' });
    stack.secrets.push(again.secret);
    // one request of an agent session, for the usage by session below
    const agent = await stack.request('POST', '/v1/chat/completions', { key: again.secret,
      headers: { 'x-claude-code-session-id': 'docs-session-1' },
      body: { model: 'prov-main', messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(agent.status, 200, agent.text);
    await stack.requestSettled(agent);
    await stack.billingSettled();
    const recent = await check(`/v1/requests?key=${id}`, undefined, 200, { ...signed, template: '/v1/requests' });
    assert.equal(recent.data.length, 1);
    await check('/v1/requests?limit=0', undefined, 400, { ...signed, template: '/v1/requests' });
    await check('/v1/requests', undefined, 401, { template: '/v1/requests' });
    await check(`/v1/keys/${id}/budget`, write('PUT', { weekly_budget: null }), 200,
      { ...signed, template: '/v1/keys/{id}/budget' });
    await check(`/v1/keys/${id}/budget`, write('PUT', { weekly_budget: -1 }), 400,
      { ...signed, template: '/v1/keys/{id}/budget' });
    await check(`/v1/keys/${id}`, write('DELETE'), 204, { ...signed, template: '/v1/keys/{id}' });
    await check(`/v1/keys/${id}`, write('DELETE'), 404, { ...signed, template: '/v1/keys/{id}' });

    for (const by of ['day', 'key', 'model', 'session']) {
      const u = await check(`/v1/usage?days=3&by=${by}`, undefined, 200, { ...signed, template: '/v1/usage' });
      if (by === 'session') assert.deepEqual(u.data.map((g) => [g.session, g.client]), [['docs-session-1', 'claude-code']]);
    }
    await check('/v1/usage?days=99', undefined, 400, { ...signed, template: '/v1/usage' });

    const fav = { ...signed, template: '/v1/models/{publicId}/favorite' };
    await check('/v1/models/prov-main/favorite', write('PUT'), 204, fav);
    await check('/v1/models/no-such-model/favorite', write('PUT'), 404, fav);
    const favorites = await check('/v1/models/favorites', undefined, 200, signed);
    assert.deepEqual(favorites.data.map((m) => m.publicId), ['prov-main']);
    await check('/v1/models/prov-main/favorite', write('DELETE'), 204, fav);

    await check('/v1/auth/identities/idp1', write('DELETE'), 409,
      { ...signed, template: '/v1/auth/identities/{provider}' });
    await check('/v1/auth/logout', write('POST'), 204, signed);
    await check('/v1/auth/session', undefined, 401, signed);
  });
});
