// web/catalog.js: the "Models" section (GET /v1/models with the favorites
// of GET /v1/models/favorites; PUT/DELETE /v1/models/{id}/favorite): prices
// in credits per million tokens, the user's favorites first, and a switch
// to show only them. On a phone each model is one block, each price with
// its name.
import { $, el, credits, count, feedback } from './dom.js';
import { api, ApiError, SignedOut } from './api.js';
import { section } from './section.js';

const PRICE_NAMES = { input: 'Input', output: 'Output', cache: 'Cache', reasoning: 'Reasoning' };
let models = [];
let fav = new Set();
let favsLoaded = false;

function starButton(m) {
  const on = fav.has(m.publicId);
  const b = el('button', { type: 'button', class: 'star', 'aria-pressed': on ? 'true' : 'false',
    'aria-label': `Favorite: ${m.display_name}`, 'data-model': m.publicId, text: on ? '★' : '☆' });
  b.addEventListener('click', async () => {
    const now = b.getAttribute('aria-pressed') !== 'true';
    try {
      await api(now ? 'PUT' : 'DELETE', `/v1/models/${encodeURIComponent(m.publicId)}/favorite`);
    } catch (e) {
      if (e instanceof ApiError) feedback($('catalog-feedback'), e.message, 'error');
      return;
    }
    if (now) fav.add(m.publicId); else fav.delete(m.publicId);
    b.setAttribute('aria-pressed', now ? 'true' : 'false');
    b.textContent = now ? '★' : '☆';
    feedback($('catalog-feedback'), `${m.display_name} is ${now ? 'now a favorite: it comes first in this list' : 'no longer a favorite'}.`);
  });
  return b;
}

function render() {
  const only = $('catalog-only-favorites').checked;
  const shown = models.filter((m) => !only || fav.has(m.publicId))
    .sort((a, b) => Number(fav.has(b.publicId)) - Number(fav.has(a.publicId)));
  const price = (p, k) => el('td', { class: 'num', 'data-label': PRICE_NAMES[k],
    text: p && p[k] !== null && p[k] !== undefined ? credits(p[k], { precise: true }) : '—' });
  const rows = shown.map((m) => el('tr', { id: `model-${m.publicId}`, class: fav.has(m.publicId) ? 'favorite' : null },
    el('td', {}, favsLoaded ? starButton(m) : null),
    el('th', { scope: 'row' }, el('span', { text: m.display_name }), el('br'), el('code', { text: m.publicId })),
    price(m.pricing, 'input'), price(m.pricing, 'output'), price(m.pricing, 'cache'), price(m.pricing, 'reasoning'),
    el('td', { class: 'num', 'data-label': 'Max output',
      text: Number.isInteger(m.max_output_tokens) ? count(m.max_output_tokens) : '—' })));
  if (!rows.length) {
    $('catalog-body').replaceChildren(el('p', { class: 'note', text: only ? 'No favorites yet: star a model.' : 'No models.' }));
    return;
  }
  $('catalog-body').replaceChildren(el('table', { class: 'catalog' },
    el('caption', { class: 'visually-hidden', text: 'Models and their prices in credits per million tokens' }),
    el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, el('span', { class: 'visually-hidden', text: 'Favorite' })),
      el('th', { scope: 'col', text: 'Model' }),
      ...Object.values(PRICE_NAMES).map((h) => el('th', { scope: 'col', class: 'num', text: h })),
      el('th', { scope: 'col', class: 'num', text: 'Max output', title: 'the most output tokens a request is given' }))),
    el('tbody', {}, ...rows)));
}

export const loadCatalog = section('catalog', 'Models', async () => {
  const [ms, favs] = await Promise.all([api('GET', '/v1/models'),
    api('GET', '/v1/models/favorites').catch((e) => {
      if (e instanceof SignedOut) throw e;
      feedback($('catalog-feedback'), `Favorites could not be loaded: ${e.message}`, 'error');
      return null;
    })]);
  models = (ms && ms.data) || [];
  favsLoaded = !!favs;
  fav = new Set(((favs && favs.data) || []).map((m) => m.publicId || m.id));
  render();
});

export function startCatalog() {
  $('catalog-only-favorites').addEventListener('change', render);
}
