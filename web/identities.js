// web/identities.js: "Sign-in methods" (GET /v1/auth/identities, POST
// /v1/auth/NAME/link, DELETE /v1/auth/identities/NAME) and "Authorized
// applications" (GET /v1/mcp/clients, DELETE /v1/mcp/clients/ID).
import { $, el, feedback, when } from './dom.js';
import { api, ApiError } from './api.js';
import { section } from './section.js';
import { confirmAction } from './dialogs.js';

export const state = { providers: [] };   // GET /v1/auth/providers: {name, display, login, link}

export async function loadProviders() {
  const r = await api('GET', '/v1/auth/providers');
  state.providers = (r && r.data) || [];
  return state.providers;
}

const display = (name) => (state.providers.find((p) => p.name === name) || { display: name }).display;

/** A same-site action's error in the section's feedback line. */
async function tryIn(out, fn) {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof ApiError) feedback(out, e.message, 'error');
    return undefined;
  }
}

export const loadIdentities = section('identities', 'Sign-in methods', async () => {
  const r = await api('GET', '/v1/auth/identities');
  const ids = (r && (r.data || r.identities)) || [];
  const out = $('identities-feedback');
  // The last one cannot go (409 LAST_IDENTITY): no button for it.
  const unlink = (i) => confirmAction(`Unlink ${display(i.provider)}? It no longer signs you in here.`, 'Unlink')
    .then((ok) => ok && tryIn(out, async () => {
      await api('DELETE', `/v1/auth/identities/${encodeURIComponent(i.provider)}`);
      await loadIdentities();
      feedback($('identities-feedback'), `${display(i.provider)} is unlinked.`);
      $('identities-h').focus();
    }));
  // A link starts with a same-site POST (another site cannot start one);
  // its answer is the provider's URL, gone to as a navigation.
  const start = (ev, p) => {
    ev.preventDefault();
    return tryIn(out, async () => {
      const a = await api('POST', p.link);
      location.assign(a.url);
    });
  };
  const linked = new Set(ids.map((i) => i.provider));
  $('identities-body').replaceChildren(
    el('ul', { id: 'identity-list' }, ...ids.map((i) => el('li', { 'data-provider': i.provider },
      el('strong', { text: display(i.provider) }), ', linked ', when(i.createdAt),
      ids.length > 1 ? ' ' : null,
      ids.length > 1 ? el('button', { type: 'button', class: 'secondary unlink', text: 'Unlink',
        'aria-label': `Unlink ${display(i.provider)}`, onclick: () => unlink(i) }) : null))),
    el('div', { id: 'link-list', class: 'button-row' }, ...state.providers.filter((p) => !linked.has(p.name)).map((p) => el('form',
      { id: `link-${p.name}`, method: 'post', action: p.link, onsubmit: (ev) => start(ev, p) },
      el('button', { type: 'submit', class: 'secondary', text: `Link ${p.display}` })))));
});

export const loadMcpClients = section('mcp-clients', 'Authorized applications', async () => {
  const r = await api('GET', '/v1/mcp/clients');
  const list = (r && r.data) || [];
  const out = $('mcp-clients-feedback');
  const name = (c) => c.name || c.client_id;
  const revoke = (c) => confirmAction(`Revoke ${name(c)}? It can no longer read `
    + 'your account until you allow it again.', 'Revoke')
    .then((ok) => ok && tryIn(out, async () => {
      await api('DELETE', `/v1/mcp/clients/${encodeURIComponent(c.client_id)}`);
      await loadMcpClients();
      feedback($('mcp-clients-feedback'), `${name(c)} is revoked.`);
      $('mcp-clients-h').focus();
    }));
  $('mcp-clients-body').replaceChildren(el('ul', { id: 'mcp-client-list' }, ...(list.length ? list.map((c) => el('li',
    { 'data-client': c.client_id },
    el('strong', { text: name(c) }), ` (${c.scope}), allowed `, when(c.authorized_at), ' ',
    el('button', { type: 'button', class: 'secondary revoke', text: 'Revoke',
      'aria-label': `Revoke ${name(c)}`, onclick: () => revoke(c) })))
    : [el('li', { text: 'None.' })])));
});
