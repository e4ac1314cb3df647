// tests/integration/browser/docs.test.js: the /docs pages in Chromium (Debian's,
// through lib/browser.js, in a loopback-only namespace): each page loads with
// no console error (a Content-Security-Policy violation is one), no failed
// or outside request and its one style sheet applied; every link on it that
// stays on this site leads to a page that loads, with the anchor it names;
// printed, the navigation goes away and the drawing of the windows stays.
// The pages are the same on either database (the catalog's ids in them are
// docs.test.js's, on both), so scripts/test.sh's PostgreSQL run leaves it
// out (run.sh):
// backends: sqlite

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startStack, seedCatalog, SRCDIR } from '../lib/server.js';
import { launchBrowser } from '../lib/browser.js';

const PAGES = fs.readdirSync(path.join(SRCDIR, 'docs', 'site'))
  .filter((f) => /^[a-z0-9][a-z0-9-]*\.html$/.test(f))
  .map((f) => (f === 'index.html' ? '/docs' : `/docs/${f.slice(0, -5)}`));

describe('the documentation in Chromium', { timeout: 180000 }, () => {
  let stack;
  let browser;
  let context;

  before(async () => {
    stack = await startStack({ seed: (s) => seedCatalog(s) });
    browser = await launchBrowser();
    context = await browser.newContext();
  });
  after(async () => {
    if (browser) await browser.close();
    if (stack) await stack.stop();
  });

  /** Opens url; returns the page and what went wrong while it loaded. */
  async function open(url) {
    const page = await context.newPage();
    const problems = [];
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`); });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
    page.on('request', (r) => {
      if (!r.url().startsWith(stack.baseURL)) problems.push(`outside request: ${r.url()}`);
    });
    const res = await page.goto(`${stack.baseURL}${url}`, { waitUntil: 'load' });
    return { page, res, problems };
  }

  it('renders every page with its style sheet and no console error', async () => {
    const links = new Set();
    for (const url of PAGES) {
      const { page, res, problems } = await open(url);
      assert.equal(res.status(), 200, url);
      assert.deepEqual(problems, [], url);
      const styled = await page.evaluate(() => ({
        sheets: document.styleSheets.length,
        main: getComputedStyle(document.querySelector('main')).maxWidth,
        h1: document.querySelectorAll('h1').length,
        text: document.body.innerText.length,
      }));
      assert.equal(styled.sheets, 1, url);
      assert.notEqual(styled.main, 'none', `${url}: style.css is not applied`);
      assert.equal(styled.h1, 1, url);
      assert.ok(styled.text > 500, `${url}: ${styled.text} characters`);
      for (const href of await page.$$eval('a[href]', (as) => as.map((a) => a.href))) {
        if (href.startsWith(stack.baseURL)) links.add(href);
      }
      await page.close();
    }
    assert.ok(links.size > 20, `${links.size} links`);
    for (const href of links) {
      const u = new URL(href);
      if (u.pathname === '/cabinet/' || u.pathname === '/v1/docs') continue; // not /docs pages
      const { page, res, problems } = await open(`${u.pathname}${u.hash}`);
      assert.equal(res.status(), 200, href);
      assert.deepEqual(problems, [], href);
      if (u.hash) {
        assert.equal(await page.$$eval(`[id="${decodeURIComponent(u.hash.slice(1))}"]`, (e) => e.length), 1,
          `${href}: no such anchor`);
      }
      await page.close();
    }
  });

  it('prints without the navigation, with the windows drawing', async () => {
    const { page, problems } = await open('/docs/credits');
    await page.emulateMedia({ media: 'print' });
    const shown = await page.evaluate(() => ({
      nav: getComputedStyle(document.querySelector('nav')).display,
      svg: document.querySelector('figure svg').getBoundingClientRect().height,
    }));
    assert.equal(shown.nav, 'none');
    assert.ok(shown.svg > 100, `the drawing is ${shown.svg}px high`);
    const pdf = await page.pdf();
    assert.ok(pdf.length > 10000, 'a PDF was made');
    assert.deepEqual(problems, []);
    await page.close();
  });
});
