// tests/integration/browser/cabinet-states.test.js: the cabinet (web/, at
// /cabinet/), the OAuth consent page and the /docs pages as a person sees
// them (issue 36), in Debian's headless chromium (lib/browser.js) inside a
// loopback-only namespace. Every state of the page is looked at in 1280 and
// 390 px wide viewports: a screenshot kept (outputDir('cabinet-states')), no
// horizontal overflow (nothing wider than the screen), and axe-core
// (npm, evaluated in the page: the page's own CSP stays on) with no serious or
// critical violation. The states: signed out, loading, a full account
// (several keys, one with its budget used up, a plan, a stated credit value
// and top-up URL, requests some refused by the gateway), a key's card open,
// a budget field's error, the secret dialog, a confirmation, a failed API
// with Retry, a session ended mid-typing, logged out; the consent page; the
// docs pages and the docs 404. And what the issue lists: one key per
// double-click on Create, a duplicate name refused at the field, keys as
// prefix…, a used-up key refused with when requests come back (UTC), the
// recent requests with their x-request-id filtered by key and status, UTC
// labels, the credit's worth and the top-up link, the sections' navigation
// and the links to the docs, the chart's values written out, favorites first.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { startStack, freePort, SRCDIR } from '../lib/server.js';
import { startIdentityProviders } from '../lib/idp.js';
import { launchBrowser, loopbackOnly, fillProviderLogin, outputDir } from '../lib/browser.js';
import { client as oauthClient, authParams, authorizeURL } from '../lib/oauth.js';
import { chatBody, eventually } from '../lib/helpers.js';

const require = createRequire(import.meta.url);
const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const WIDTHS = [1280, 390];
const TOP_UP = 'https://example.test/top-up';
const DOCS = fs.readdirSync(path.join(SRCDIR, 'docs', 'site'))
  .filter((f) => /^[a-z0-9][a-z0-9-]*\.html$/.test(f))
  .map((f) => (f === 'index.html' ? '/docs' : `/docs/${f.slice(0, -5)}`));

describe('the cabinet, the consent page and the docs at 1280 and 390 px', { timeout: 300000 }, () => {
  let stack;
  let kit;
  let browser;
  let context;
  let page;
  let base;
  let shots;
  let uid;
  const problems = [];
  const keys = {};

  before(async () => {
    assert.ok(loopbackOnly(), 'runs inside a loopback-only network namespace');
    shots = outputDir('cabinet-states');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 1, plain: 0 });
    stack = await startStack({
      port,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}\nProviderCreditValue 0.01 USD\nProviderTopUpURL ${TOP_UP}`,
      seed: (s) => {
        s.addModel('prov-main', 'mock-main', { name: 'Main Model', rates: { input: '1.5', output: '3', cache: '0.25' } });
        s.addModel('prov-second', 'mock-null', { name: 'Second Model', rates: { input: '2.5', output: '7' } });
        s.addModel('prov-refusing', 'mock-fault-500', { name: 'Refusing Model', rates: { input: '1', output: '1' } });
      },
    });
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  });

  after(async () => {
    try {
      if (browser) await browser.close();
      if (stack) {
        stack.secrets.push(...kit.secrets(), ...kit.subjects());
        await stack.stop();
      }
    } finally {
      if (kit) await kit.stop();
    }
  });

  /** At each width: the screenshot, no horizontal overflow, no serious or critical axe violation. */
  async function look(name, p = page, { keep = [] } = {}) {
    const was = p.viewportSize();
    for (const width of WIDTHS) {
      await p.setViewportSize({ width, height: width > 500 ? 900 : 844 });
      await p.waitForTimeout(50);
      await p.screenshot({ path: path.join(shots, `${name}-${width}.png`), fullPage: true,
        mask: [p.locator('#secret-value'), p.locator('#secret-snippet')] });
      const over = await p.evaluate(() => {
        const w = document.documentElement.clientWidth;
        const wide = [...document.querySelectorAll('body *')].filter((e) => {
          const r = e.getBoundingClientRect();
          return r.width > 0 && r.right > w + 1 && !e.closest('.scroll, pre, .sections-nav, dialog:not([open])');
        }).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`);
        return { scroll: document.documentElement.scrollWidth, w, wide: wide.slice(0, 5) };
      });
      assert.ok(over.scroll <= over.w, `${name} at ${width}: the page is ${over.scroll} px wide (${over.wide.join(', ')})`);
      assert.deepEqual(over.wide, [], `${name} at ${width}: wider than the screen`);
      if (!(await p.evaluate(() => typeof window.axe === 'object'))) await p.evaluate(AXE);
      const res = await p.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
      const bad = res.violations.filter((v) => ['serious', 'critical'].includes(v.impact) && !keep.includes(v.id))
        .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`);
      assert.deepEqual(bad, [], `${name} at ${width}: axe`);
    }
    await p.setViewportSize(was);
    assert.deepEqual(problems.splice(0), [], 'no page error');
  }

  const card = (name) => page.locator('li.key', { has: page.locator('h3', { hasText: name }) });

  it('signed out: the sign-in buttons, the docs linked', async () => {
    await page.goto(`${base}/cabinet/`);
    await page.waitForSelector('#signin-idp1');
    assert.equal(await page.getAttribute('.help-nav a[href="/docs"]', 'href'), '/docs');
    assert.ok(await page.isHidden('#site-nav'), 'no section links while signed out');
    await look('signed-out');
  });

  it('signed in with keys, a plan, a credit value and refused requests: every part of the account', async () => {
    await Promise.all([page.waitForURL(`${kit.byName('idp1').issuer}/interaction/**`), page.click('#signin-idp1 button')]);
    await fillProviderLogin(page, { login: 'alice' });
    await page.waitForURL(`${base}/cabinet/`);
    uid = stack.userId(kit.byName('idp1').users.get('alice').email);
    stack.ctl('balance', 'add', String(uid), '50', '--reason', 'test');
    stack.ctl('plan', 'add', 'pro', '--5h', '10', '--7d', '40');
    stack.ctl('subscription', 'set', String(uid), 'pro');
    keys.laptop = stack.createKey(uid, { name: 'laptop', budget: 5 });
    keys.ci = stack.createKey(uid, { name: 'ci-runner-with-a-rather-long-name-for-phones', budget: 0 });
    keys.spent = stack.createKey(uid, { name: 'spent' });
    keys.ids = [];
    for (const [k, model] of [[keys.laptop, 'prov-main'], [keys.spent, 'prov-main'], [keys.laptop, 'prov-refusing'], [keys.laptop, 'prov-main']]) {
      const r = await stack.chat(k.secret, chatBody(model));
      keys.ids.push({ id: r.headers.get('x-request-id'), status: r.status });
    }
    // a refusal before the reservation (the used-up key's 429): listed with its code
    const refusal = await stack.chat(keys.ci.secret, chatBody('prov-main'));
    assert.equal(refusal.status, 429);
    keys.refusal = refusal.headers.get('x-request-id');
    await eventually(() => assert.equal(Number(stack.sql(`SELECT COUNT(*) AS n FROM refusals
      WHERE request_id = '${keys.refusal}'`)[0].n), 1));
    stack.ctl('key', 'budget', String(keys.spent.id), '0.000001');
    await stack.billingSettled();
    await page.reload();
    await page.waitForSelector('#balance');
    await page.waitForSelector('#requests-rows tr');
    // the credit's worth and where to get more (GET /v1/account's credit and top_up_url)
    assert.match(await page.textContent('#balance'), /credits \(\$0\.\d\d\)/);
    assert.match(await page.textContent('#credit-value'), /One credit is worth \$0\.01/);
    assert.equal(await page.getAttribute('#top-up a', 'href'), TOP_UP);
    // the sections' navigation: each link's target exists
    for (const href of await page.locator('#site-nav a').evaluateAll((as) => as.map((a) => a.getAttribute('href')))) {
      assert.equal(await page.locator(href).count(), 1, href);
    }
    // keys: a compact row each, prefix…, the refused one says so
    assert.equal(await page.locator('li.key').count(), 3);
    assert.match(await card('laptop').locator('code.prefix').textContent(), /^sk-prov-.{4}….{4}$/);
    assert.equal(await card('laptop').locator('.key-body').isHidden(), true, 'cards start closed');
    const refused = card('ci-runner');
    assert.match(await refused.locator('.badge').textContent(), /Budget used up/);
    assert.match(await refused.locator('.refused').textContent(), /429.*once you raise the budget/);
    const spent = card('spent');
    assert.match(await spent.locator('.refused').textContent(), /accepted again .* from .*UTC, or at once if you raise the budget/);
    // recent requests: the ids the answers carried, the refused ones among them, times in UTC
    const rows = await page.locator('#requests-rows tr').evaluateAll((trs) => trs.map((t) => t.dataset.requestId));
    assert.deepEqual(rows, [keys.refusal, ...keys.ids.map((x) => x.id).reverse()]);
    assert.match(await page.textContent('#requests-rows tr:nth-child(3) .status'), /refused|error|failed/);
    const refusedRow = page.locator(`#requests-rows tr[data-request-id="${keys.refusal}"]`);
    assert.equal(await refusedRow.locator('.status').textContent(), 'refused');
    assert.equal(await refusedRow.locator('.error-code').textContent(), '429 API_KEY_CREDIT_BUDGET_EXCEEDED');
    assert.equal(await refusedRow.locator('td[data-label="Credits"]').textContent(), '—', 'no credits');
    await page.selectOption('#requests-status', '429');
    await eventually(async () => assert.deepEqual(await page.locator('#requests-rows tr').evaluateAll((trs) => trs.map((t) => t.dataset.requestId)), [keys.refusal]));
    await page.selectOption('#requests-status', '');
    await page.waitForSelector('#requests-rows tr:nth-child(5)');
    assert.match(await page.textContent('#requests-rows tr:first-child time'), / UTC$/);
    await page.selectOption('#requests-key', String(keys.spent.id));
    await eventually(async () => assert.deepEqual(await page.locator('#requests-rows tr').evaluateAll((trs) => trs.map((t) => t.dataset.requestId)), [keys.ids[1].id]));
    await page.selectOption('#requests-key', '');
    await page.selectOption('#requests-status', 'ok');
    await eventually(async () => assert.equal(await page.locator('#requests-rows tr').count(), 3));
    await page.selectOption('#requests-status', '');
    await page.waitForSelector('#requests-rows tr:nth-child(4)');
    // usage: UTC days said so
    assert.match(await page.textContent('#usage'), /UTC days/);
    await look('account');
  });

  it('a key\'s card: the chart\'s values written out, controls named with the key', async () => {
    await card('laptop').locator('button.expand').click();
    const body = card('laptop').locator('.key-body');
    await body.waitFor();
    assert.equal(await card('laptop').locator('button.expand').getAttribute('aria-expanded'), 'true');
    assert.equal(await body.locator('ol.days li').count(), 7);
    assert.notEqual(await body.locator('ol.days li:last-child .v').textContent(), '0', 'today\'s credits written out');
    const names = await card('laptop').locator('button, input').evaluateAll((es) => es.map((e) => e.getAttribute('aria-label')
      || (e.labels && e.labels[0] && e.labels[0].textContent) || e.textContent));
    for (const n of names) assert.match(n, /laptop/, `"${n}" names the key`);
    await look('key-card');
  });

  it('a budget field\'s error is at the field; nothing changed', async () => {
    await card('laptop').locator('input[id$="-budget"]').fill('5-');
    await card('laptop').locator('button.set-budget').click();
    await card('laptop').locator('.field-error:not(:empty)').waitFor();
    assert.equal(stack.ctlJSON('key', 'show', keys.laptop.id).weekly_budget, 5);
    await look('budget-error');
  });

  it('Create key: a double-click makes one key; a duplicate name is refused at the field', async () => {
    await page.fill('#key-name', 'twice');
    await page.dblclick('#key-create-button');
    await page.locator('#secret-dialog').waitFor({ state: 'visible' });
    assert.match(await page.textContent('#secret-snippet'), /OPENAI_BASE_URL=http:\/\/127\.0\.0\.1:\d+\/v1/);
    assert.equal(await page.locator('#secret-slot a[href="/docs/claude-code"]').count(), 1);
    stack.secrets.push((await page.textContent('#secret-value')).trim());
    await look('secret-dialog');
    await page.click('#secret-done');
    await page.locator('#secret-dialog').waitFor({ state: 'hidden' });
    const list = (await (await context.request.get(`${base}/v1/keys`)).json()).data;
    assert.equal(list.filter((k) => k.name === 'twice').length, 1, 'one key');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'twice', 'focus on the new key');
    await page.fill('#key-name', 'Twice');
    await page.click('#key-create-button');
    assert.match(await page.textContent('#key-name-error'), /already have a key named Twice/);
    assert.equal(await page.getAttribute('#key-name', 'aria-invalid'), 'true');
    await page.fill('#key-budget', '2,5');
    await page.fill('#key-name', 'other');
    await page.click('#key-create-button');
    assert.match(await page.textContent('#key-budget-error'), /dot for decimals/);
    await page.fill('#key-name', '');
    await page.fill('#key-budget', '');
  });

  it('a confirmation dialog', async () => {
    assert.equal(await card('twice').locator('button.expand').getAttribute('aria-expanded'), 'true', 'a new key\'s card is open');
    await card('twice').locator('button.delete').click();
    await page.locator('#confirm-dialog').waitFor({ state: 'visible' });
    assert.match(await page.textContent('#confirm-text'), /Delete twice\?/);
    await look('confirm');
    await page.click('#confirm-cancel');
  });

  it('favorites come first, and the list can show only them', async () => {
    await page.click('#model-prov-second button.star');
    await page.waitForSelector('#model-prov-second button.star[aria-pressed="true"]');
    await page.reload();
    await page.waitForSelector('#catalog-body tbody tr');
    assert.equal(await page.getAttribute('#catalog-body tbody tr:first-child', 'id'), 'model-prov-second');
    await page.check('#catalog-only-favorites');
    assert.deepEqual(await page.locator('#catalog-body tbody tr').evaluateAll((t) => t.map((r) => r.id)), ['model-prov-second']);
    await page.uncheck('#catalog-only-favorites');
  });

  it('loading: each section says it is loading', async () => {
    let release;
    const held = new Promise((r) => { release = r; });
    await page.route('**/v1/account', async (route) => { await held; await route.continue(); });
    await page.reload();
    await page.waitForSelector('#account-body .loading');
    assert.equal(await page.getAttribute('#account-body', 'aria-busy'), 'true');
    await look('loading');
    release();
    await page.waitForSelector('#balance');
    await page.unroute('**/v1/account');
  });

  it('the API failing: the reason once, a Retry for all and per section; Retry loads it', async () => {
    await page.route('**/v1/**', (route) => (route.request().url().includes('/v1/auth/') ? route.continue() : route.abort()));
    await page.reload();
    await page.waitForSelector('#retry-all');
    assert.match(await page.textContent('#status'), /sections could not be loaded: The service cannot be reached/);
    assert.equal(await page.locator('#account-error button.retry').getAttribute('aria-label'), 'Retry: Balance and plan');
    assert.equal(await page.textContent('#account-error span'), 'Balance and plan: not loaded.', 'the reason once, at the top');
    await look('api-failed');
    await page.unroute('**/v1/**');
    await page.click('#retry-all');
    await page.waitForSelector('#balance');
    await page.waitForSelector('#keys-body li.key');
    assert.equal(await page.textContent('#account-error'), '');
  });

  it('the session ending mid-typing: why, and what was typed comes back after sign-in', async () => {
    await page.fill('#key-name', 'draft-key');
    stack.ctl('user', 'sessions', 'revoke', String(uid));
    await page.click('#key-create-button');
    await page.waitForSelector('#signed-out-reason');
    assert.match(await page.textContent('#signed-out-reason'), /session has ended/);
    await look('session-ended');
    await Promise.all([page.waitForURL(`${base}/cabinet/`), page.click('#signin-idp1 button')]);
    await page.waitForSelector('#who');
    assert.equal(await page.inputValue('#key-name'), 'draft-key');
    assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'the draft is gone from storage');
    await page.fill('#key-name', '');
  });

  it('logged out: the note on the identity provider\'s session', async () => {
    await page.click('#logout button');
    await page.waitForSelector('#signed-out-reason');
    assert.match(await page.textContent('#signed-out-reason'), /identity provider may still have you signed in/);
    await look('logged-out');
  });

  it('the OAuth consent page: this site\'s styles, a phone\'s viewport, big buttons', async () => {
    await Promise.all([page.waitForURL(`${base}/cabinet/`), page.click('#signin-idp1 button')]);
    await page.waitForSelector('#who');
    const c = await oauthClient(stack, { name: 'Phone app' });
    const { params } = authParams(stack, c);
    await page.goto(authorizeURL(stack, params));
    await page.waitForSelector('#allow');
    assert.equal(await page.getAttribute('meta[name="viewport"]', 'content'), 'width=device-width, initial-scale=1');
    assert.equal(await page.evaluate(() => document.styleSheets.length), 1, 'the docs\' style sheet applies');
    await page.setViewportSize({ width: 390, height: 844 });
    const h = await page.evaluate(() => document.getElementById('allow').getBoundingClientRect().height);
    assert.ok(h >= 44, `the Allow button is ${h} px high`);
    await page.setViewportSize({ width: 1280, height: 900 });
    await look('consent');
  });

  it('the docs pages and the docs 404 at both widths', async () => {
    for (const url of [...DOCS, '/docs/no-such-page']) {
      const res = await page.goto(`${base}${url}`);
      assert.equal(res.status(), url.endsWith('no-such-page') ? 404 : 200, url);
      assert.equal(await page.locator('meta[name="viewport"]').count(), 1, url);
      await look(`docs-${url.split('/').pop() || 'index'}`);
    }
  });
});
