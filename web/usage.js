// web/usage.js: the "Usage" section (GET /v1/usage?days=N&by=day|key|model):
// requests, the four token kinds and credits over whole UTC days, by day,
// key or model. Each cell carries its column's name, which a phone's layout
// shows beside the value (one block per row: no column off-screen).
import { $, el, count, credits } from './dom.js';
import { api } from './api.js';
import { section } from './section.js';

const GROUPS = { day: 'Day (UTC)', key: 'Key', model: 'Model' };
const COLUMNS = ['Requests', 'Input', 'Output', 'Cache', 'Reasoning', 'Credits'];

export const loadUsage = section('usage', 'Usage', async () => {
  const days = $('usage-days').value;
  const by = $('usage-by').value;
  const r = await api('GET', `/v1/usage?days=${encodeURIComponent(days)}&by=${encodeURIComponent(by)}`);
  const rows = ((r && r.data) || []).map((g) => el('tr', {},
    el('th', { scope: 'row', text: by === 'key' && g.name ? g.name : g.group }),
    ...[g.requests, g.input_tokens, g.output_tokens, g.cache_tokens, g.reasoning_tokens]
      .map((n, i) => el('td', { class: 'num', 'data-label': COLUMNS[i], text: count(n) })),
    el('td', { class: 'num', 'data-label': 'Credits', text: credits(g.credits) })));
  if (!rows.length) {
    $('usage-body').replaceChildren(el('p', { class: 'note', text: 'No requests in this period.' }));
    return;
  }
  $('usage-body').replaceChildren(el('table', { class: 'usage-report stack' },
    el('caption', { class: 'visually-hidden', text: `Usage by ${by}, ${$('usage-days').selectedOptions[0].textContent}` }),
    el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: GROUPS[by] }),
      ...COLUMNS.map((h) => el('th', { scope: 'col', class: 'num', text: h })))),
    el('tbody', {}, ...rows)));
});

export function startUsage() {
  $('usage-form').addEventListener('submit', (ev) => { ev.preventDefault(); loadUsage(); });
  $('usage-days').addEventListener('change', loadUsage);
  $('usage-by').addEventListener('change', loadUsage);
}
