// web/app.js: the cabinet page's entry (an ES module; the others are
// imported from here, all from this site). It asks GET /v1/auth/session who
// is signed in and shows either the sign-in buttons (GET /v1/auth/providers)
// or the account's sections, each loading on its own (section.js): balance
// and plan (account.js) with the low-balance alert (alerts.js), keys (keys.js)
// with their limits (keylimits.js), usage (usage.js), recent requests
// (requests.js), models (catalog.js), sign-in methods and authorized
// applications (identities.js), security activity (activity.js). When several sections fail alike, the
// reason is said once at the top with one Retry. A session that ends (a 401
// anywhere) shows the sign-in view with why; the key name and budget being
// typed are kept for this tab (sessionStorage, until the next sign-in) and
// filled in again. Logout says that the identity provider's own session may
// still be live.
import { $, el } from './dom.js';
import { api, SignedOut, whenSignedOut } from './api.js';
import { loadAll, sectionNames } from './section.js';
import { closeDialogs, startDialogs } from './dialogs.js';
import { loadAccount } from './account.js';
import { loadKeys, startKeys } from './keys.js';
import { loadUsage, startUsage } from './usage.js';
import { loadRequests, startRequests } from './requests.js';
import { loadCatalog, startCatalog } from './catalog.js';
import { loadIdentities, loadMcpClients, loadProviders, state } from './identities.js';
import { loadActivity } from './activity.js';
import { loadAlerts, startAlerts } from './alerts.js';
import './keylimits.js';

const DRAFT = 'cabinet-draft';
const REASONS = {
  expired: 'Your session has ended (it expired, or was ended elsewhere), so nothing more was changed. '
    + 'Sign in again to go on; what you were typing in the new key form is kept.',
  logout: 'You are signed out of this service. Your identity provider may still have you signed in: '
    + 'to end that session too, sign out on its site, or close the browser.',
};
let view = null;   // 'in' | 'out'

/**
 * A sign-in form's submit, as a navigation of the page: the CSP's
 * form-action names each provider's issuer, but a provider may send the
 * browser on to another origin of its own, which a form's redirects could
 * not reach.
 */
function go(ev) {
  ev.preventDefault();
  location.assign(ev.currentTarget.action);
}

function keepDraft() {
  const d = { name: $('key-name').value, budget: $('key-budget').value };
  if (d.name || d.budget) sessionStorage.setItem(DRAFT, JSON.stringify(d));
}

function restoreDraft() {
  const d = sessionStorage.getItem(DRAFT);
  sessionStorage.removeItem(DRAFT);
  if (!d) return;
  try {
    const { name, budget } = JSON.parse(d);
    $('key-name').value = name || '';
    $('key-budget').value = budget || '';
  } catch { /* a draft we cannot read is dropped */ }
}

function showSignedOut(reason) {
  if (view === 'out') return;
  // a 401 before anyone was signed in (the first visit) is no ended session
  const why = view === 'in' || reason === 'logout' ? reason : null;
  if (why === 'expired') keepDraft();
  view = 'out';
  $('session').replaceChildren();
  $('signed-in-view').hidden = true;
  $('site-nav').hidden = true;
  $('key-create').reset();
  $('alert-form').reset();
  $('alert-note').textContent = '';
  for (const n of sectionNames()) $(`${n}-body`).replaceChildren();
  closeDialogs();
  $('status').replaceChildren();
  const list = $('signin-list');
  list.replaceChildren(el('p', { id: 'signed-out', text: 'You are not signed in.' }));
  if (REASONS[why]) list.prepend(el('p', { id: 'signed-out-reason', class: 'notice', text: REASONS[why] }));
  $('signed-out-view').hidden = false;
  $('loading').hidden = true;
  loadProviders().then((ps) => {
    if (view !== 'out') return;
    if (!ps.length) list.append(el('p', { text: 'No sign-in method is configured on this server.' }));
    for (const p of ps) {
      list.append(el('form', { id: `signin-${p.name}`, class: 'signin', method: 'get', action: p.login, onsubmit: go },
        el('button', { type: 'submit', text: `Sign in with ${p.display}` })));
    }
    if (why) $('signin-h').focus();
  }).catch((e) => list.append(el('p', { class: 'error', role: 'alert', text: e.message })));
}

async function logout(ev) {
  ev.preventDefault();
  try {
    await api('POST', '/v1/auth/logout');
  } catch (e) {
    if (e instanceof SignedOut) return;
    $('status').replaceChildren(el('span', { class: 'error', text: `Logging out failed: ${e.message}` }));
    return;
  }
  showSignedOut('logout');
}

/** Loads every section; several failing alike say why once, with one Retry. */
async function loadSections() {
  $('status').replaceChildren();
  const failed = await loadAll();
  if (view !== 'in' || failed.length < 2) return;
  const retry = el('button', { type: 'button', id: 'retry-all', text: 'Retry' });
  retry.addEventListener('click', () => loadSections());
  $('status').replaceChildren(el('span', { class: 'error', text: `${failed.length} sections could not be loaded: ${failed[0].error.message}` }), ' ', retry);
  // the reason is said once, at the top: each section only says it is not loaded
  for (const f of failed) {
    if (f.error.message !== failed[0].error.message) continue;
    const line = $(`${f.name}-error`).querySelector('span');
    if (line) line.textContent = `${f.title}: not loaded.`;
  }
}

function showSignedIn(me) {
  view = 'in';
  const who = me.name ? `${me.name} (${me.email || 'no email'})` : (me.email || 'no email');
  $('session').replaceChildren(
    el('p', { id: 'who', text: `Signed in as ${who}` }),
    el('form', { id: 'logout', method: 'post', action: '/v1/auth/logout', onsubmit: logout },
      el('button', { type: 'submit', class: 'secondary', text: 'Log out' })));
  $('signed-out-view').hidden = true;
  $('loading').hidden = true;
  $('signin-list').replaceChildren();
  $('signed-in-view').hidden = false;
  $('site-nav').hidden = false;
  restoreDraft();
  loadProviders().catch(() => state.providers).then(loadSections);
}

function start() {
  startDialogs();
  startKeys();
  startUsage();
  startRequests();
  startCatalog();
  startAlerts();
  whenSignedOut(showSignedOut);
  api('GET', '/v1/auth/session').then(showSignedIn).catch((e) => {
    if (e instanceof SignedOut) return;
    $('loading').hidden = true;
    const retry = el('button', { type: 'button', id: 'retry-all', text: 'Retry' });
    retry.addEventListener('click', () => location.reload());
    $('status').replaceChildren(el('span', { class: 'error', text: e.message }), ' ', retry);
  });
}

// the loaders are registered (section.js) by the imports above
void [loadAccount, loadAlerts, loadKeys, loadUsage, loadRequests, loadCatalog, loadIdentities, loadMcpClients, loadActivity];
start();
