// tests/integration/lib/browser.js: a real browser for the browser tests:
// Debian's chromium (/usr/bin/chromium, or $PROV_CHROMIUM), headless, driven
// by npm playwright-core (which downloads no browser of its own). It runs
// only inside a network namespace whose one interface is loopback (`unshare
// -n`, then `ip link set lo up`: tests/integration/run.sh runs the files of
// tests/integration/browser/ so), where the test's own servers (apache2, the
// identity providers of lib/idp.js) are the only things it can reach. The
// helpers read what a page could see of its cookies and storage, and fill in
// the login form of the kit's providers.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { DEFAULT_PASSWORD } from './idp.js';

export const CHROMIUM = process.env.PROV_CHROMIUM || '/usr/bin/chromium';

/** How to run a browser test by hand. */
export const HOW_TO_RUN = "unshare -n sh -c 'ip link set lo up && node --test tests/integration/browser/FILE.test.js' (as root)";

/**
 * True when this process sees one network interface, loopback, and it is up:
 * inside `unshare -n` after `ip link set lo up`. /proc/net/dev is the
 * namespace's own list (/sys/class/net is not: it shows the mount's); the
 * loopback address exists only while lo is up.
 */
export function loopbackOnly() {
  let dev;
  try {
    dev = fs.readFileSync('/proc/net/dev', 'utf8');
  } catch {
    return false;
  }
  const names = dev.split('\n').slice(2).map((l) => l.split(':')[0].trim()).filter(Boolean);
  if (names.length !== 1 || names[0] !== 'lo') return false;
  return (os.networkInterfaces().lo || []).some((a) => a.address === '127.0.0.1');
}

/**
 * The folder (made if needed) where a browser test keeps what it saw, such
 * as screenshots: $PROV_TEST_OUTPUT/NAME, by default
 * tests/integration/output/NAME in the build tree (PROV_BUILDDIR), which a
 * test run leaves in place for CI to keep. Emptied first.
 */
export function outputDir(name) {
  const root = process.env.PROV_TEST_OUTPUT
    || path.join(process.env.PROV_BUILDDIR || path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..', '..'),
      'tests', 'integration', 'output');
  const dir = path.join(root, name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Launches headless chromium (a playwright Browser). Throws, saying how to
 * run the test, outside a loopback-only namespace, and when chromium is not
 * installed. opts go to playwright's chromium.launch (args are added to ours).
 */
export async function launchBrowser(opts = {}) {
  if (!loopbackOnly()) {
    throw new Error(`the browser runs only in a loopback-only network namespace: ${HOW_TO_RUN}`);
  }
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: Debian's chromium package (sh scripts/install-deps.sh)`);
  }
  const { args = [], ...rest } = opts;
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // /dev/shm may be small on a build machine; no first-run dialogs.
    args: ['--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check', ...args],
    timeout: 30000,
    ...rest,
  });
}

/**
 * What scripts of the page see: { cookie (document.cookie), localStorage,
 * sessionStorage (both as plain objects) }.
 */
export async function pageStorage(page) {
  return page.evaluate(() => {
    const dump = (s) => {
      const o = {};
      for (let i = 0; i < s.length; i++) o[s.key(i)] = s.getItem(s.key(i));
      return o;
    };
    return { cookie: document.cookie, localStorage: dump(localStorage), sessionStorage: dump(sessionStorage) };
  });
}

/**
 * Fills in the login form of a kit provider (lib/idp.js) shown by page and
 * submits it; resolves once the form's answer has started loading.
 */
export async function fillProviderLogin(page, { login = 'alice', password = DEFAULT_PASSWORD } = {}) {
  await page.waitForSelector('form#kit-login');
  await page.fill('#login', login);
  await page.fill('#password', password);
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('#submit')]);
}
