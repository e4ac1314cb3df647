// tests/integration/browser/cabinet.test.js: the cabinet page (web/, served
// at /cabinet/) in Debian's headless chromium (lib/browser.js), inside a
// loopback-only network namespace (tests/integration/run.sh). One user's
// whole visit, step by step in one browser context: the sign-in buttons
// (GET /v1/auth/providers), sign-in through a local OpenID Provider's form,
// balance and plan with both windows, a key made with the keyboard whose
// secret is read from the dialog and used from node for a real
// /v1/chat/completions against the mock gateway, its usage after a reload
// (the key's card and chart, the usage report by day, model, key and agent
// session),
// reissue (the old secret refused, the new one works), a budget (0 refuses
// the next request; cleared again), a low-balance alert's threshold, a favorite star (seen in GET
// /v1/models/favorites), a second provider linked and unlinked, the page
// at phone width, the key deleted, the session revoked elsewhere (the next
// action shows the sign-in buttons), logout. After every step: no key secret
// and no session token is readable from page script (document.cookie,
// localStorage, sessionStorage, IndexedDB, Cache Storage, the DOM and form
// values once the dialog closed), no console error, no CSP violation, text
// contrast at least 4.5:1. Screenshots of each screen go to lib/browser.js's
// outputDir('cabinet') (tests/integration/output/cabinet by default), the
// secret masked.

import { describe, it, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startStack, freePort } from '../lib/server.js';
import { startIdentityProviders } from '../lib/idp.js';
import { launchBrowser, loopbackOnly, fillProviderLogin, outputDir } from '../lib/browser.js';

const COOKIES = ['__Host-provider-session', '__Host-provider-refresh'];

/** What page script can read, as one text: cookies, storages, IndexedDB, caches, the DOM, form values. */
async function readableByScript(page) {
  return page.evaluate(async () => {
    const dump = (s) => JSON.stringify(Object.fromEntries(Array.from({ length: s.length }, (_, i) => [s.key(i), s.getItem(s.key(i))])));
    const dbs = indexedDB.databases ? await indexedDB.databases() : [];
    const cacheNames = typeof caches !== 'undefined' ? await caches.keys() : [];
    const values = [...document.querySelectorAll('input, textarea, select')].map((e) => e.value);
    return {
      cookie: document.cookie,
      localStorage: dump(localStorage),
      sessionStorage: dump(sessionStorage),
      indexedDB: JSON.stringify(dbs),
      caches: JSON.stringify(cacheNames),
      dom: document.documentElement.outerHTML,
      values: JSON.stringify(values),
      selection: String(getSelection()),
    };
  });
}

/**
 * The smallest contrast ratio of visible text on the page against its
 * effective background (the nearest opaque background up the tree), with
 * the element that has it.
 */
async function worstContrast(page) {
  return page.evaluate(() => {
    const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
    const lum = ([r, g, b]) => {
      const f = (v) => { const s = v / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const bgOf = (e) => {
      for (let n = e; n && n.nodeType === 1; n = n.parentElement) {
        const c = rgb(getComputedStyle(n).backgroundColor);
        if (c.length === 3 || (c.length === 4 && c[3] === 1)) return c.slice(0, 3);
      }
      return [255, 255, 255];
    };
    let worst = { ratio: 21, what: '' };
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      const e = t.parentElement;
      if (!t.textContent.trim() || !e || e.closest('svg, [hidden], noscript, .visually-hidden, .skip')) continue;
      const box = e.getBoundingClientRect();
      if (box.width === 0 || box.height === 0 || getComputedStyle(e).visibility === 'hidden') continue;
      if (e.closest('dialog') && !e.closest('dialog').open) continue;
      const [a, b] = [lum(rgb(getComputedStyle(e).color).slice(0, 3)), lum(bgOf(e))];
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < worst.ratio) worst = { ratio, what: `${e.tagName.toLowerCase()}.${e.className}: ${t.textContent.trim().slice(0, 40)}` };
    }
    return worst;
  });
}

describe('the cabinet page in a browser', () => {
  let stack;
  let kit;
  let browser;
  let context;
  let page;
  let base;
  let shots;
  let shot = 0;
  const problems = [];       // console errors, page errors, CSP violations
  const secrets = new Set(); // every key secret and session token seen
  let alice;

  before(async () => {
    assert.ok(loopbackOnly(), 'runs inside a loopback-only network namespace (run.sh does this)');
    shots = outputDir('cabinet');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    kit = await startIdentityProviders({ redirectBase: base, count: 2, plain: 0 });
    stack = await startStack({
      port,
      directives: `ProviderPublicURL ${base}\n${kit.directives()}`,
      seed: (s) => {
        s.addModel('prov-main', 'mock-main', { name: 'Main Model', rates: { input: '1.5', output: '3', cache: '0.25' } });
        s.addModel('prov-second', 'mock-null', { name: 'Second Model', rates: { input: '2.5', output: '7.000001' } });
      },
    });
    alice = kit.byName('idp1').users.get('alice');
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await context.exposeBinding('provCspViolation', (source, v) => problems.push(`CSP violation: ${JSON.stringify(v)}`));
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        window.provCspViolation({ directive: e.violatedDirective, blocked: e.blockedURI, sample: e.sample });
      });
    });
    page = await context.newPage();
    watch(page);
  });

  after(async () => {
    try {
      if (browser) await browser.close();
      if (stack) {
        stack.secrets.push(...kit.secrets(), ...kit.subjects(), ...secrets);
        await stack.stop();
      }
    } finally {
      if (kit) await kit.stop();
    }
  });

  // Our pages' console errors (the identity providers' pages are theirs:
  // chromium reports their missing favicon). The 401s a step expects (of
  // GET /v1/auth/session while signed out) are the one line allowed
  // (chromium reports a failed fetch's status there).
  let allow401 = null;   // the paths whose 401 a step expects
  function watch(p) {
    p.on('console', (m) => {
      if (m.type() !== 'error' || !p.url().startsWith(`${base}/`)) return;
      const at = m.location().url;
      if (allow401 && /status of 401/.test(m.text()) && allow401.some((x) => at === `${base}${x}`)) return;
      problems.push(`console error: ${m.text()} (${at}, page ${p.url()})`);
    });
    p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  }

  async function screenshot(name, p = page, opts = {}) {
    shot += 1;
    const file = path.join(shots, `${String(shot).padStart(2, '0')}-${name}.png`);
    await p.screenshot({ path: file, fullPage: true, mask: [p.locator('#secret-value'), p.locator('#secret-snippet')], ...opts });
    return file;
  }

  async function sessionTokens() {
    for (const c of await context.cookies(base)) if (COOKIES.includes(c.name)) secrets.add(c.value);
  }

  /** After every step: nothing secret readable by page script, no console error or CSP violation, contrast. */
  async function clean(p = page) {
    await sessionTokens();
    const seen = await readableByScript(p);
    assert.equal(seen.cookie, '', 'document.cookie is empty (the cookies are HttpOnly)');
    assert.equal(seen.localStorage, '{}');
    // only the draft of the new-key form a session's end keeps for this tab (app.js)
    assert.match(seen.sessionStorage, /^\{("cabinet-draft":".*")?\}$/);
    assert.equal(seen.indexedDB, '[]');
    assert.equal(seen.caches, '[]');
    for (const s of secrets) {
      for (const [where, text] of Object.entries(seen)) {
        assert.ok(!text.includes(s), `a secret (${s.slice(0, 10)}...) is readable from ${where}`);
      }
    }
    assert.deepEqual(problems.splice(0), []);
    const worst = await worstContrast(p);
    assert.ok(worst.ratio >= 4.5, `contrast ${worst.ratio.toFixed(2)} < 4.5: ${worst.what}`);
  }

  const keyCard = (name) => page.locator('li.key', { has: page.locator('h3', { hasText: name }) });
  /** Opens a key's card (the list shows one compact row per key). */
  async function openCard(name) {
    const b = keyCard(name).locator('button.expand');
    if (await b.getAttribute('aria-expanded') !== 'true') await b.click();
    await keyCard(name).locator('.key-body').waitFor();
  }

  async function chat(secret, headers = {}) {
    return stack.chat(secret, { model: 'prov-main', messages: [{ role: 'user', content: 'Hello from the cabinet test' }], max_tokens: 16 }, { headers });
  }

  /** Reads the secret from the open dialog, checks the warning and the copy button, closes it (Done or Escape). */
  async function takeSecret({ close = 'done' } = {}) {
    const dialog = page.locator('#secret-dialog');
    await dialog.waitFor({ state: 'visible' });
    const secret = (await page.textContent('#secret-value')).trim();
    assert.match(secret, /^sk-prov-/);
    secrets.add(secret);
    assert.match(await page.textContent('#secret-warning'), /only this once/);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'secret-copy', 'focus starts on Copy');
    await page.click('#secret-copy');
    await page.waitForSelector('#secret-copied:text("Copied")');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret, 'the copy button copies the key');
    await page.evaluate(() => navigator.clipboard.writeText(''));
    await screenshot('secret-dialog');
    if (close === 'escape') await page.keyboard.press('Escape');
    else await page.click('#secret-done');
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(await page.locator('#secret-value').count(), 0, 'the secret left the DOM with the dialog');
    assert.equal(await page.locator('#secret-slot').innerHTML(), '');
    return secret;
  }

  it('shows a "Sign in with" button per identity provider, nothing else, and clean', async () => {
    allow401 = ['/v1/auth/session'];
    await page.goto(`${base}/cabinet/`);
    for (const p of kit.all) {
      assert.equal(await page.textContent(`#signin-${p.name} button`), `Sign in with ${p.display}`);
    }
    assert.ok(await page.isVisible('#signed-out'));
    assert.ok(await page.isHidden('#signed-in-view'));
    await screenshot('sign-in');
    await clean();
    allow401 = null;
  });

  it('signs in through provider one\'s form and shows balance and plan with both windows', async () => {
    await Promise.all([page.waitForURL(`${kit.byName('idp1').issuer}/interaction/**`), page.click('text=Sign in with Provider One')]);
    await fillProviderLogin(page, { login: 'alice' });
    await page.waitForURL(`${base}/cabinet/`);
    assert.match(await page.textContent('#who'), new RegExp(`Signed in as .*${alice.email.replace(/\./g, '\\.')}`));
    stack.ctl('balance', 'add', alice.email, '50', '--reason', 'cabinet test');
    stack.ctl('plan', 'add', 'pro', '--5h', '10', '--7d', '40');
    stack.ctl('subscription', 'set', alice.email, 'pro');
    await page.reload();
    await page.waitForSelector('#balance');
    assert.equal(await page.textContent('#balance'), '50 credits');
    assert.equal(await page.textContent('#plan h3'), 'Plan: pro');
    for (const w of ['5h', '7d']) {
      assert.ok(await page.isVisible(`#window-${w} svg.bar[role="img"]`), `the ${w} window's bar`);
      assert.match(await page.textContent(`#window-${w}`), /0 of (10|40) credits used/);
    }
    await screenshot('account');
    await clean();
  });

  let first;
  let keyId;
  it('makes a key with the keyboard; its secret, read from the dialog, works against the mock gateway', async () => {
    await page.focus('#key-name');
    await page.keyboard.type('laptop');
    await page.keyboard.press('Tab');
    await page.keyboard.type('5');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Create key');
    await page.keyboard.press('Enter');
    first = await takeSecret({ close: 'escape' });
    keyId = (await keyCard('laptop').getAttribute('data-key-id'));
    // as Claude Code sends it: the request belongs to an agent session
    const r = await chat(first, { 'x-claude-code-session-id': 'cab-sess-1', 'user-agent': 'claude-cli/2.1.0 (external, cli)' });
    assert.equal(r.status, 200, r.text);
    assert.ok(Number(r.headers.get('x-provider-credits')) > 0);
    await keyCard('laptop').waitFor();
    await openCard('laptop');
    assert.match(await keyCard('laptop').textContent(), /of 5 credits used/);
    await clean();
  });

  it('shows the request in the key\'s usage and its 7-day chart after a reload', async () => {
    await page.reload();
    const card = keyCard('laptop');
    await card.waitFor();
    await openCard('laptop');
    const today = card.locator('table.usage tbody tr').first();
    assert.equal(await today.locator('th').textContent(), 'Today (UTC)');
    assert.equal(await today.locator('td').first().textContent(), '1', 'one request today');
    assert.notEqual(await today.locator('td').last().textContent(), '0', 'credits spent today');
    const week = card.locator('table.usage tbody tr').nth(1);
    assert.equal(await week.locator('td').first().textContent(), '1');
    const bars = await card.locator('svg.chart rect.day').evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('height'))));
    assert.equal(bars.length, 7);
    assert.ok(bars[6] > 0, `today's bar is drawn: ${bars}`);
    assert.deepEqual(bars.slice(0, 6), [0, 0, 0, 0, 0, 0]);
    assert.match(await card.locator('svg.chart').getAttribute('aria-label'), /1 requests/);
    // the plan paid for it: both windows show use and when capacity returns
    for (const w of ['5h', '7d']) {
      assert.match(await page.textContent(`#window-${w}`), /Capacity returns from .*the whole quota by/);
      assert.ok(Number(await page.getAttribute(`#window-${w} rect.fill`, 'width')) > 0, `the ${w} bar is filled`);
    }
    // the usage report: by day (today's row), by model, by key, 30 days
    const report = () => page.locator('#usage-body tbody tr').evaluateAll((rs) => rs.map((r) => [...r.children].map((c) => c.textContent)));
    await page.waitForSelector('#usage-body tbody tr');
    let rows = await report();
    assert.equal(rows.length, 1);
    assert.equal(rows[0][0], new Date().toISOString().slice(0, 10));
    assert.equal(rows[0][1], '1');
    await page.selectOption('#usage-by', 'model');
    await page.waitForSelector('#usage-body tbody th:text-is("prov-main")');
    rows = await report();
    assert.deepEqual(rows.map((r) => [r[0], r[1]]), [['prov-main', '1']]);
    await page.selectOption('#usage-days', '30');
    await page.selectOption('#usage-by', 'key');
    await page.waitForSelector('#usage-body tbody th:text-is("laptop")');
    rows = await report();
    assert.deepEqual(rows.map((r) => [r[0], r[1]]), [['laptop', '1']]);
    assert.equal(rows[0][6], await today.locator('td').last().textContent(), 'the same credits as the key\'s card');
    // by agent session: the session, its client, key, model, one request, the same credits
    await page.selectOption('#usage-by', 'session');
    await page.waitForSelector('#usage-body tbody tr.session-row');
    rows = await report();
    assert.deepEqual(rows.map((r) => [r[0], r[1], r[2], r[3], r[6]]), [['cab-sess-1', 'claude-code', 'laptop', 'prov-main', '1']]);
    assert.equal(rows[0][8], await today.locator('td').last().textContent(), 'the session cost what the key spent');
    await screenshot('usage');
    await clean();
  });

  let second;
  it('reissues the key: a new secret, the old one refused at once, the new one works', async () => {
    await keyCard('laptop').locator('button.reissue').click();
    await page.locator('#confirm-dialog').waitFor({ state: 'visible' });
    assert.match(await page.textContent('#confirm-text'), /Reissue laptop\?/);
    await screenshot('confirm-reissue');
    await page.click('#confirm-ok');
    second = await takeSecret();
    assert.notEqual(second, first);
    const old = await chat(first);
    assert.equal(old.status, 401);
    assert.equal(old.json.error.code, 'INVALID_API_KEY');
    const r = await chat(second);
    assert.equal(r.status, 200, r.text);
    await clean();
  });

  it('sets a budget (0 refuses the next request, the card shows it refused); bad input is an error at the field; removing is its own confirmed action', async () => {
    const card = keyCard('laptop');
    const input = card.locator('input[id$="-budget"]');
    assert.equal(await card.locator(`label[for="${await input.getAttribute('id')}"]`).textContent(), 'Weekly budget of laptop, in credits');
    await input.fill('0');
    await card.locator('button.set-budget').click();
    await page.waitForSelector('li.key p.feedback:text("now 0 credits")');
    assert.equal(await page.evaluate(() => document.activeElement.id), await input.getAttribute('id'), 'focus stays on the field');
    assert.match(await keyCard('laptop').locator('.badge').textContent(), /Budget used up/);
    assert.match(await keyCard('laptop').locator('.refused').textContent(), /Refused: .*429.*raise the budget/);
    const r = await chat(second);
    assert.equal(r.status, 429);
    assert.equal(r.json.error.code, 'API_KEY_CREDIT_BUDGET_EXCEEDED');
    await screenshot('budget-refused');
    // text a number field would turn into "" (no budget): an error here, the budget stays 0
    for (const [text, why] of [['5-', /must be a number/], ['2,5', /dot for decimals: 2\.5/], ['', /Remove budget/], ['-1', /0 or more/], ['1.1234567', /six decimals/]]) {
      await keyCard('laptop').locator('input[id$="-budget"]').fill(text);
      await keyCard('laptop').locator('button.set-budget').click();
      const err = keyCard('laptop').locator('.budget-form .field-error');
      await err.waitFor();
      assert.match(await err.textContent(), why, text);
      assert.equal(await keyCard('laptop').locator('input[id$="-budget"]').getAttribute('aria-invalid'), 'true');
      assert.equal(stack.ctlJSON('key', 'show', keyId).weekly_budget, 0, `${JSON.stringify(text)} left the budget at 0`);
    }
    await screenshot('budget-field-error');
    await keyCard('laptop').locator('button.remove-budget').click();
    assert.match(await page.textContent('#confirm-text'), /Remove the weekly budget of laptop\?/);
    await page.click('#confirm-ok');
    await page.waitForSelector('li.key p.feedback:text("is removed")');
    assert.match(await keyCard('laptop').textContent(), /No weekly budget/);
    assert.equal((await chat(second)).status, 200);
    await clean();
  });

  it('sets a low-balance alert, kept over a reload, and refuses a negative one', async () => {
    assert.equal(await page.locator('label[for="alert-balance"]').count(), 1, 'the field has a label');
    assert.match(await page.textContent('#alert-note'), /Empty: no low-balance alert/);
    await page.fill('#alert-balance', '2.5');
    await page.click('#alert-form button[type="submit"]');
    await page.waitForSelector('#alert-feedback:text("set to 2.5 credits")');
    assert.match(await page.textContent('#alert-note'), /falls below 2\.5 credits/);
    const row = stack.sql(`SELECT CAST(balance_below AS TEXT) AS b FROM alert_settings`);
    assert.deepEqual(row.map((r) => r.b), ['2500000']);
    await page.reload();
    await page.locator('#alert-note:text("falls below 2.5 credits")').waitFor();
    assert.equal(await page.inputValue('#alert-balance'), '2.5');
    await page.fill('#alert-balance', '-1');
    await page.click('#alert-form button[type="submit"]');
    assert.match(await page.textContent('#alert-field-error'), /0 or more/);
    assert.equal(await page.getAttribute('#alert-balance', 'aria-invalid'), 'true');
    await page.fill('#alert-balance', '2,5');
    await page.click('#alert-form button[type="submit"]');
    assert.match(await page.textContent('#alert-field-error'), /dot for decimals/);
    await page.fill('#alert-balance', '');
    await page.click('#alert-form button[type="submit"]');
    await page.waitForSelector('#alert-feedback:text("follows the service")');
    await clean();
  });

  it('sets the key\'s limits on its card (another model refused), shows them, and clears them', async () => {
    const card = keyCard('laptop');
    await openCard('laptop');
    await card.locator('details.controls summary').click();
    for (const f of ['expires_at', 'models', 'addresses', 'rpm', 'max_in_flight']) {
      const input = card.locator(`input[name="${f}"]`);
      assert.equal(await card.locator(`label[for="${await input.getAttribute('id')}"]`).count(), 1, `${f} has a label`);
    }
    await card.locator('input[name="models"]').fill('prov-main');
    await card.locator('input[name="rpm"]').fill('600');
    await card.locator('button', { hasText: 'Save limits' }).click();
    await page.waitForSelector('li.key p.feedback:text("limits of laptop are saved")');
    const text = await keyCard('laptop').locator('.key-controls').textContent();
    assert.match(text, /models: prov-main/);
    assert.match(text, /600 requests a minute/);
    assert.equal((await chat(second)).status, 200);
    const other = await stack.chat(second, { model: 'prov-second', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 });
    assert.equal(other.status, 403);
    assert.equal(other.json.error.code, 'MODEL_NOT_ALLOWED');
    await screenshot('limits');
    // a count that is not a whole number: said on the card, nothing sent
    await keyCard('laptop').locator('details.controls summary').click();
    await keyCard('laptop').locator('input[name="rpm"]').fill('1.5');
    await keyCard('laptop').locator('button', { hasText: 'Save limits' }).click();
    assert.match(await keyCard('laptop').locator('.controls .field-error:not(:empty)').textContent(), /whole number/);
    await keyCard('laptop').locator('input[name="models"]').fill('');
    await keyCard('laptop').locator('input[name="rpm"]').fill('');
    await keyCard('laptop').locator('button', { hasText: 'Save limits' }).click();
    await page.waitForFunction(() => /No limits/.test(document.querySelector('li.key .key-controls')?.textContent || ''));
    assert.equal((await stack.chat(second, { model: 'prov-second', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 })).status, 200);
    await clean();
  });

  it('stars a favorite, which GET /v1/models/favorites then lists, and keeps it over a reload', async () => {
    const star = page.locator('#model-prov-main button.star');
    assert.equal(await star.getAttribute('aria-pressed'), 'false');
    assert.equal(await star.getAttribute('aria-label'), 'Favorite: Main Model');
    assert.match(await page.textContent('#model-prov-main'), /1\.5.*3.*0\.25/s);
    assert.equal(await page.textContent('#model-prov-main td[data-label="Max output"]'), '32,768');
    await star.click();
    await page.waitForSelector('#model-prov-main button.star[aria-pressed="true"]');
    const favs = await context.request.get(`${base}/v1/models/favorites`);
    assert.equal(favs.status(), 200);
    assert.deepEqual((await favs.json()).data.map((m) => m.publicId), ['prov-main']);
    await page.reload();
    await page.waitForSelector('#model-prov-main button.star[aria-pressed="true"]');
    assert.equal(await page.getAttribute('#model-prov-second button.star', 'aria-pressed'), 'false');
    await screenshot('catalog');
    await clean();
  });

  it('links provider two from the cabinet, lists both sign-in methods, unlinks it', async () => {
    assert.deepEqual(await page.locator('#identity-list li').evaluateAll((ls) => ls.map((l) => l.dataset.provider)), ['idp1']);
    await Promise.all([page.waitForURL(`${kit.byName('idp2').issuer}/interaction/**`), page.click('#link-idp2 button')]);
    await fillProviderLogin(page, { login: 'alice' });
    await page.waitForURL(`${base}/cabinet/`);
    await page.waitForSelector('#identity-list li[data-provider="idp2"]');
    assert.deepEqual(await page.locator('#identity-list li').evaluateAll((ls) => ls.map((l) => l.dataset.provider)), ['idp1', 'idp2']);
    assert.equal(await page.locator('#link-list form').count(), 0, 'nothing left to link');
    await screenshot('identities');
    await clean();
    // and unlinks it again (the last one has no button: it cannot go)
    await page.click('#identity-list li[data-provider="idp2"] button.unlink');
    await page.click('#confirm-ok');
    await page.waitForSelector('#link-idp2 button');
    assert.deepEqual(await page.locator('#identity-list li').evaluateAll((ls) => ls.map((l) => l.dataset.provider)), ['idp1']);
    assert.equal(await page.locator('#identity-list button.unlink').count(), 0);
    // the security activity lists the link and the unlink, newest first
    await page.reload();
    await page.waitForSelector('#activity-list li[data-action="identity.unlink"]');
    const acts = await page.locator('#activity-list li').evaluateAll((ls) => ls.map((l) => l.dataset.action));
    assert.ok(acts.indexOf('identity.unlink') < acts.indexOf('identity.link'), acts.join());
    assert.ok(acts.includes('signin'), acts.join());
    await clean();
  });

  it('reads on a phone: one column at 390 px, nothing wider than the screen', async () => {
    const phone = await context.newPage();
    watch(phone);
    try {
      await phone.setViewportSize({ width: 390, height: 844 });
      await phone.goto(`${base}/cabinet/`);
      await phone.waitForSelector('#balance');
      await phone.waitForSelector('#model-prov-main');
      await phone.waitForSelector('li.key');
      const width = await phone.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 390, `the page is ${width} px wide`);
      await screenshot('phone', phone);
      await clean(phone);
    } finally {
      await phone.close();
    }
  });

  it('deletes the key: gone from the page, its secret refused', async () => {
    await openCard('laptop');
    await keyCard('laptop').locator('button.delete').click();
    await page.locator('#confirm-dialog').waitFor({ state: 'visible' });
    await page.click('#confirm-ok');
    await page.waitForSelector('#keys-feedback:text("laptop is deleted")');
    assert.equal(await keyCard('laptop').count(), 0);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'keys-h', 'focus on the keys heading, not <body>');
    const r = await chat(second);
    assert.equal(r.status, 401);
    await clean();
  });

  it('shows the sign-in buttons when the session ends elsewhere, and signs in again', async () => {
    allow401 = ['/v1/auth/session', '/v1/models/prov-second/favorite'];
    await page.fill('#key-name', 'tablet');
    await page.fill('#key-budget', '2.5');
    stack.ctl('user', 'sessions', 'revoke', alice.email);
    await page.click('#model-prov-second button.star');
    await page.waitForSelector('#signed-out');
    assert.match(await page.textContent('#signed-out-reason'), /session has ended.*kept/);
    assert.ok(await page.isHidden('#signed-in-view'));
    assert.equal(await page.locator('#who').count(), 0);
    assert.equal(await page.locator('#keys-body li, #catalog-body tr, #identity-list li').count(), 0, 'the account left the page');
    await screenshot('session-ended');
    await clean();
    // the provider still knows alice: no form this time
    await Promise.all([page.waitForURL(`${base}/cabinet/`), page.click('#signin-idp1 button')]);
    await page.waitForSelector('#who');
    await page.waitForSelector('#model-prov-second button.star[aria-pressed="false"]');
    assert.equal(await page.inputValue('#key-name'), 'tablet', 'what was typed is filled in again');
    assert.equal(await page.inputValue('#key-budget'), '2.5');
    await page.fill('#key-name', '');
    await page.fill('#key-budget', '');
    await clean();
    allow401 = null;
  });

  it('logs out: the sign-in view again, the session cookies gone', async () => {
    allow401 = ['/v1/auth/session'];
    await page.click('#logout button');
    await page.waitForSelector('#signed-out');
    assert.match(await page.textContent('#signed-out-reason'), /identity provider may still have you signed in/);
    const names = (await context.cookies(base)).map((c) => c.name);
    for (const c of COOKIES) assert.ok(!names.includes(c), names.join(','));
    assert.equal(await page.locator('#keys-body li').count(), 0);
    await screenshot('signed-out');
    await clean();
    allow401 = null;
  });

  afterEach(() => {
    assert.deepEqual(problems.splice(0), [], 'no console error, page error or CSP violation');
  });
});
