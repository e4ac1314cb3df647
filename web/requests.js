// web/requests.js: the "Recent requests" section (GET /v1/requests): the
// user's requests one by one, newest first, filtered by key and status,
// with the request id (the x-request-id a user quotes to support), time in
// UTC, key, model, transport, status, tokens and credits; "Show older"
// pages on with the answer's next. The ledger holds every request that
// reached a reservation; those refused before it (no balance, a used-up
// budget or plan, a key's limit, an unknown model) come from the refusals
// beside it: status "refused" with their HTTP status and error code (and
// how many refusals the row folds), no tokens, no credits.
import { $, el, busy, count, credits, tokens, when } from './dom.js';
import { api } from './api.js';
import { section } from './section.js';
import { keyList, onKeys } from './keys.js';

const STATUSES = [
  ['', 'Any status'], ['ok', 'Completed (ok)'], ['refused', 'Refused, by the service or the model (refused)'],
  ['402', 'Refused: no credits (402)'], ['429', 'Refused: a limit or budget (429)'],
  ['403', 'Refused: not allowed for the key (403)'], ['404', 'Refused: unknown model (404)'],
  ['error', 'Ended with an error (error)'], ['failed', 'Could not reach the model (failed)'],
  ['timeout', 'Timed out (timeout)'], ['cut', 'Cut short (cut)'], ['client_gone', 'You left early (client_gone)'],
  ['estimated', 'Charged by estimate (estimated)'], ['no_usage', 'No usage (no_usage)'], ['reserved', 'In flight (reserved)'],
];
let next = null;

function row(q) {
  return el('tr', { 'data-request-id': q.request_id },
    el('td', { 'data-label': 'Time' }, when(q.created_at)),
    el('td', { 'data-label': 'Key', text: q.key_name || `#${q.key_id}` }),
    el('td', { 'data-label': 'Model' }, el('code', { text: q.model })),
    el('td', { 'data-label': 'API', text: q.transport }),
    el('td', { 'data-label': 'Status' }, el('span', { class: `status status-${q.status}`, title: q.status_text || '', text: q.status }),
      ...(q.error_code ? [' ', el('code', { class: 'error-code', text: `${q.http_status} ${q.error_code}` }),
        ...(q.count > 1 ? [el('span', { class: 'note', text: ` ×${count(q.count)}` })] : [])] : [])),
    el('td', { class: 'num', 'data-label': 'Tokens', text: q.error_code ? '—' : count(tokens(q)) }),
    el('td', { class: 'num', 'data-label': 'Credits', text: q.error_code ? '—' : credits(q.credits) }),
    el('td', { 'data-label': 'Request id' }, el('code', { class: 'request-id', text: q.request_id })));
}

function query() {
  const p = new URLSearchParams({ limit: '25' });
  if ($('requests-key').value) p.set('key', $('requests-key').value);
  if ($('requests-status').value) p.set('status', $('requests-status').value);
  if (next) p.set('before', next);
  return `/v1/requests?${p}`;
}

async function fetchPage(append) {
  if (!append) next = null;
  const r = await api('GET', query());
  const rows = ((r && r.data) || []).map(row);
  next = (r && r.next) || null;
  let tbody = $('requests-rows');
  if (!append || !tbody) {
    if (!rows.length) {
      $('requests-body').replaceChildren(el('p', { class: 'note', text: 'No requests match.' }));
      return;
    }
    tbody = el('tbody', { id: 'requests-rows' });
    $('requests-body').replaceChildren(el('table', { class: 'requests stack' },
      el('caption', { class: 'visually-hidden', text: 'Recent requests, newest first' }),
      el('thead', {}, el('tr', {}, ...['Time (UTC)', 'Key', 'Model', 'API', 'Status', 'Tokens', 'Credits', 'Request id']
        .map((h) => el('th', { scope: 'col', class: h === 'Tokens' || h === 'Credits' ? 'num' : null, text: h })))),
      tbody));
  }
  tbody.append(...rows);
  $('requests-more').hidden = !next;
}

export const loadRequests = section('requests', 'Recent requests', () => fetchPage(false));

function keyOptions(keys) {
  const sel = $('requests-key');
  const was = sel.value;
  sel.replaceChildren(el('option', { value: '', text: 'All keys' }),
    ...keys.map((k) => el('option', { value: k.id, text: k.name })));
  if (keys.some((k) => String(k.id) === was)) sel.value = was;
}

export function startRequests() {
  $('requests-status').replaceChildren(...STATUSES.map(([v, t]) => el('option', { value: v, text: t })));
  keyOptions(keyList);
  onKeys(keyOptions);
  $('requests-key').addEventListener('change', loadRequests);
  $('requests-status').addEventListener('change', loadRequests);
  $('requests-form').addEventListener('submit', (ev) => { ev.preventDefault(); loadRequests(); });
  $('requests-more').addEventListener('click', (ev) => busy(ev.currentTarget, () => fetchPage(true).catch((e) => {
    $('requests-error').textContent = e.message;
  })));
}
