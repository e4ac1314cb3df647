// web/usage.js: the "Usage" section (GET /v1/usage?days=N&by=...): requests,
// the four token kinds and credits over whole UTC days, by day, key or
// model, or the latest agent sessions (a Claude Code or Codex session with
// its client, key, models, first and last request). Each cell carries its
// column's name, which a phone's layout shows beside the value (one block
// per row: no column off-screen).
import { $, el, count, credits, tokens, when } from './dom.js';
import { api } from './api.js';
import { section } from './section.js';

const GROUPS = { day: 'Day (UTC)', key: 'Key', model: 'Model' };
const COLUMNS = ['Requests', 'Input', 'Output', 'Cache', 'Reasoning', 'Credits'];
const SESSION_COLUMNS = ['Client', 'Key', 'Models', 'First request', 'Last request',
  'Requests', 'Tokens', 'Credits'];

/** The agent sessions (by=session): one row each, the latest first. */
function sessionTable(data) {
  const cell = (i, attrs, ...children) => el('td', { 'data-label': SESSION_COLUMNS[i], ...attrs },
    ...children);
  const rows = data.map((g) => el('tr', { class: 'session-row' },
    el('th', { scope: 'row', title: g.session,
      text: g.session.length > 13 ? `${g.session.slice(0, 12)}…` : g.session }),
    cell(0, { text: g.client }),
    cell(1, { text: g.name || `#${g.key}` }),
    cell(2, { text: (g.models || []).join(', ') }),
    cell(3, {}, when(g.first_request_at)),
    cell(4, {}, when(g.last_request_at)),
    cell(5, { class: 'num', text: count(g.requests) }),
    cell(6, { class: 'num', text: count(tokens(g)) }),
    cell(7, { class: 'num', text: credits(g.credits) })));
  return el('table', { class: 'usage-report stack sessions' },
    el('caption', { class: 'visually-hidden', text: 'Usage by agent session' }),
    el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'Session' }),
      ...SESSION_COLUMNS.map((h, i) => el('th', { scope: 'col', class: i >= 5 ? 'num' : undefined, text: h })))),
    el('tbody', {}, ...rows));
}

export const loadUsage = section('usage', 'Usage', async () => {
  const days = $('usage-days').value;
  const by = $('usage-by').value;
  const r = await api('GET', `/v1/usage?days=${encodeURIComponent(days)}&by=${encodeURIComponent(by)}`);
  if (by === 'session') {
    const data = (r && r.data) || [];
    $('usage-body').replaceChildren(data.length ? sessionTable(data)
      : el('p', { class: 'note', text: 'No agent sessions in this period (Claude Code and Codex name theirs).' }));
    return;
  }
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
