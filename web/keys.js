// web/keys.js: the "API keys" section (GET/POST/PUT/DELETE /v1/keys...): a
// compact list, one row per key (name, prefix…last 4, its state), each
// opening into its card (budget, usage and chart, actions, and what
// cardParts adds). A key whose weekly budget is used up says so on its
// row, with when requests are accepted again and the control to raise it.
// Feedback goes beside the card or form it is about; focus moves somewhere
// sensible after each action; every control's accessible name carries the
// key's name.
import { $, el, svg, bar, busy, count, credits, dayLabel, feedback, tokens, when } from './dom.js';
import { api, ApiError } from './api.js';
import { section } from './section.js';
import { confirmAction, showSecret } from './dialogs.js';
import { parseBudget, fieldError } from './budget.js';

/** The keys as last loaded (the requests filter and the duplicate-name check read them). */
export let keyList = [];
const open = new Set();      // ids of the cards the user opened
const listeners = [];        // called with keyList after each load

/**
 * Parts other sections add to a key's card (key controls, sessions, ...):
 * functions (key) => an element or null, appended in order.
 */
export const cardParts = [];

export function onKeys(fn) {
  listeners.push(fn);
}

/** "sk-prov-ab12…wxyz" (prefix…last 4 when the API gives them). */
export const keyLabel = (k) => `${k.prefix}…${k.last4 || ''}`;

/** The key's budget is used up: every request with it is refused (429). */
const exhausted = (k) => k.weekly_budget !== null && k.weekly_budget !== undefined
  && Number(k.week_used) >= Number(k.weekly_budget);

function usageTable(k) {
  const row = (label, u) => el('tr', {},
    el('th', { scope: 'row', text: label }),
    el('td', { text: count(u && u.requests) }),
    el('td', { text: count(tokens(u)) }),
    el('td', { text: credits(u ? u.credits : 0) }));
  return el('table', { class: 'usage' },
    el('caption', { text: `Usage of ${k.name}` }),
    el('thead', {}, el('tr', {}, el('td'), el('th', { scope: 'col', text: 'Requests' }),
      el('th', { scope: 'col', text: 'Tokens' }), el('th', { scope: 'col', text: 'Credits' }))),
    el('tbody', {}, row('Today (UTC)', k.today), row('Last 7 days', k.last_7_days)));
}

/** The last seven UTC days: bars, and each day's figures written out below them. */
function chart(k) {
  const days = k.daily || [];
  const max = Math.max(0, ...days.map((d) => Number(d.credits) || 0));
  const W = 20;
  const H = 40;
  const total = days.reduce((n, d) => n + d.requests, 0);
  const g = svg('svg', { class: 'chart', viewBox: `0 0 ${W * days.length} ${H}`, role: 'img', preserveAspectRatio: 'none',
    'aria-label': `${k.name}, credits per UTC day over the last 7 days: ${count(total)} requests` });
  days.forEach((d, i) => {
    const h = max > 0 ? Math.max((Number(d.credits) / max) * H, Number(d.credits) > 0 ? 1 : 0) : 0;
    g.append(svg('rect', { class: 'day-track', x: i * W + 3, y: 0, width: W - 6, height: H }),
      svg('rect', { class: 'day', x: i * W + 3, y: (H - h).toFixed(2), width: W - 6, height: h.toFixed(2) }));
  });
  const list = el('ol', { class: 'days', 'aria-label': `${k.name}: each UTC day` }, ...days.map((d) => el('li', {},
    el('span', { class: 'd', text: dayLabel(d.date) }),
    el('span', { class: 'v', text: credits(d.credits), title: `${d.date} (UTC): ${count(d.requests)} requests, ${count(d.tokens)} tokens, ${credits(d.credits, { precise: true })} credits` }))));
  return el('figure', { class: 'chart-box' }, g, list,
    el('figcaption', { class: 'note', text: 'Credits per day (UTC days)' }));
}

function budgetView(k) {
  if (k.weekly_budget === null || k.weekly_budget === undefined) {
    return el('div', { class: 'budget' }, el('p', { text: `No weekly budget (${credits(k.week_used)} credits used in the last 7 days)` }));
  }
  const share = k.weekly_budget > 0 ? k.week_used / k.weekly_budget : 1;
  return el('div', { class: 'budget' },
    el('p', { text: `Weekly budget: ${credits(k.week_used)} of ${credits(k.weekly_budget, { precise: true })} credits used` }),
    bar(share, `Weekly budget of ${k.name}: ${Math.round(share * 100)}% used`, exhausted(k) ? 'over' : ''));
}

/** The refused state on the key's row: why, until when, and the control to raise the budget. */
function refusedView(k, raise) {
  if (!exhausted(k)) return null;
  const again = Number(k.weekly_budget) > 0 && k.budget_returns_at
    ? [' Requests are accepted again as this spend leaves the 7-day window, from ', when(k.budget_returns_at),
      ', or at once if you raise the budget.']
    : [' Requests are accepted again once you raise the budget.'];
  return el('div', { class: 'refused', id: `key-${k.id}-refused`, role: 'note' },
    el('p', {}, el('strong', { text: 'Refused: ' }),
      `the weekly budget is used up (${credits(k.week_used)} of ${credits(k.weekly_budget, { precise: true })} credits); every request with this key gets 429.`,
      ...again),
    el('button', { type: 'button', class: 'secondary raise', text: 'Raise the budget',
      'aria-label': `Raise the budget of ${k.name}`, onclick: raise }));
}

function budgetForm(k, fb) {
  const id = `key-${k.id}-budget`;
  const input = el('input', { id, type: 'text', inputmode: 'decimal', autocomplete: 'off', spellcheck: 'false',
    'aria-describedby': `${id}-error ${id}-hint`,
    value: k.weekly_budget === null || k.weekly_budget === undefined ? '' : String(k.weekly_budget) });
  const err = el('p', { id: `${id}-error`, class: 'field-error', role: 'alert' });
  const set = el('button', { type: 'submit', class: 'secondary set-budget', text: 'Set budget', 'aria-label': `Set budget for ${k.name}` });
  const submit = (ev) => {
    ev.preventDefault();
    const b = parseBudget(input.value);
    fieldError(input, err, b.error);
    if (b.error) return;
    busy(set, () => act(k, fb, async () => {
      await api('PUT', `/v1/keys/${encodeURIComponent(k.id)}/budget`, { weekly_budget: b.value });
      return `The weekly budget of ${k.name} is now ${credits(b.value, { precise: true })} credits.`;
    }, `key-${k.id}-budget`));
  };
  const remove = () => confirmAction(`Remove the weekly budget of ${k.name}? Its spending is then limited only by your balance and plan.`, 'Remove budget')
    .then((ok) => (ok ? act(k, fb, async () => {
      await api('PUT', `/v1/keys/${encodeURIComponent(k.id)}/budget`, { weekly_budget: null });
      return `The weekly budget of ${k.name} is removed.`;
    }, `key-${k.id}-budget`) : input.focus()));
  const has = k.weekly_budget !== null && k.weekly_budget !== undefined;
  return el('form', { class: 'inline-form budget-form', onsubmit: submit, novalidate: true },
    el('div', { class: 'field' },
      el('label', { for: id, text: `Weekly budget of ${k.name}, in credits` }), input,
      el('p', { id: `${id}-hint`, class: 'hint', text: 'A number such as 5 or 2.5 (a dot for decimals).' }), err),
    set,
    has ? el('button', { type: 'button', class: 'secondary remove-budget', text: 'Remove budget',
      'aria-label': `Remove budget for ${k.name}`, onclick: remove }) : null);
}

/**
 * Runs a key's action: the list reloaded after it, then its message in the
 * card's feedback line and focus on focusId (or the card's name); an error
 * in the same line.
 */
async function act(k, fb, fn, focusId) {
  feedback(fb, '');
  try {
    const msg = await fn();
    await loadKeys();
    const card = $(`key-${k.id}`);
    if (card) {
      feedback($(`key-${k.id}-feedback`), msg);
      ($(focusId) || $(`key-${k.id}-name`)).focus();
    }
  } catch (e) {
    if (e instanceof ApiError) feedback(fb, e.message, 'error');
    else throw e;
  }
}

function keyView(k) {
  const fb = el('p', { id: `key-${k.id}-feedback`, class: 'feedback', role: 'status' });
  const bodyId = `key-${k.id}-body`;
  const isOpen = open.has(k.id);
  const toggle = el('button', { type: 'button', class: 'secondary expand', 'aria-expanded': isOpen ? 'true' : 'false',
    'aria-controls': bodyId, text: isOpen ? 'Hide details' : 'Details', 'aria-label': `${isOpen ? 'Hide details' : 'Details'} of ${k.name}` });
  const body = el('div', { id: bodyId, class: 'key-body', hidden: !isOpen });
  const show = (yes) => {
    if (yes) open.add(k.id); else open.delete(k.id);
    body.hidden = !yes;
    toggle.setAttribute('aria-expanded', yes ? 'true' : 'false');
    toggle.textContent = yes ? 'Hide details' : 'Details';
    toggle.setAttribute('aria-label', `${toggle.textContent} of ${k.name}`);
  };
  toggle.addEventListener('click', () => show(body.hidden));
  const raise = () => {
    show(true);
    $(`key-${k.id}-budget`).focus();
  };
  const reissue = () => confirmAction(`Reissue ${k.name}? Its current secret stops working at once.`, 'Reissue')
    .then(async (ok) => {
      if (!ok) return;
      let r;
      await act(k, fb, async () => {
        r = await api('POST', `/v1/keys/${encodeURIComponent(k.id)}/reissue`);
        return null;
      });
      if (r) {
        await showSecret(k.name, r.secret);
        feedback($(`key-${k.id}-feedback`), `${k.name} is reissued: its old secret no longer works.`);
        $(`key-${k.id}-name`)?.focus();
      }
    });
  const remove = () => confirmAction(`Delete ${k.name}? Requests with it are refused at once.`, 'Delete')
    .then(async (ok) => {
      if (!ok) return;
      const next = keyList[keyList.findIndex((x) => x.id === k.id) + 1]
        || keyList[keyList.findIndex((x) => x.id === k.id) - 1];
      try {
        await api('DELETE', `/v1/keys/${encodeURIComponent(k.id)}`);
      } catch (e) {
        if (e instanceof ApiError) feedback(fb, e.message, 'error');
        return;
      }
      open.delete(k.id);
      await loadKeys();
      feedback($('keys-feedback'), `${k.name} is deleted.`);
      ($(next ? `key-${next.id}-name` : 'keys-h')).focus();
    });
  const state = exhausted(k) ? el('span', { class: 'badge refused-badge', text: 'Budget used up' })
    : el('span', { class: 'badge', text: k.weekly_budget === null || k.weekly_budget === undefined
      ? 'No budget' : `${credits(k.week_used)} of ${credits(k.weekly_budget, { precise: true })} this week` });
  body.append(budgetView(k), el('div', { class: 'usage-row' }, usageTable(k), chart(k)),
    budgetForm(k, fb),
    el('p', { class: 'note' }, 'Created ', when(k.created_at), k.reissued_at ? ' · reissued ' : null,
      k.reissued_at ? when(k.reissued_at) : null),
    ...cardParts.map((f) => f(k)).filter(Boolean),
    el('div', { class: 'button-row' },
      el('button', { type: 'button', class: 'secondary reissue', text: 'Reissue', 'aria-label': `Reissue ${k.name}`, onclick: reissue }),
      el('button', { type: 'button', class: 'danger delete', text: 'Delete', 'aria-label': `Delete ${k.name}`, onclick: remove })));
  return el('li', { class: exhausted(k) ? 'key card exhausted' : 'key card', id: `key-${k.id}`, 'data-key-id': k.id },
    el('div', { class: 'key-head' },
      el('h3', { id: `key-${k.id}-name`, tabindex: '-1', text: k.name }),
      el('code', { class: 'prefix', text: keyLabel(k), title: 'the start and end of the key' }),
      state, toggle),
    refusedView(k, raise), fb, body);
}

export const loadKeys = section('keys', 'API keys', async () => {
  const r = await api('GET', '/v1/keys');
  keyList = (r && r.data) || [];
  $('keys-body').replaceChildren(...keyList.map(keyView));
  if (!keyList.length) $('keys-body').append(el('li', { class: 'note', text: 'No keys yet: make one above.' }));
  for (const f of listeners) f(keyList);
});

/** POST /v1/keys from the form: one key per press (the button is off meanwhile), no duplicate name. */
async function createKey(ev) {
  ev.preventDefault();
  const button = $('key-create-button');
  const nameIn = $('key-name');
  const budgetIn = $('key-budget');
  const name = nameIn.value.trim();
  fieldError(nameIn, $('key-name-error'), '');
  fieldError(budgetIn, $('key-budget-error'), '');
  feedback($('keys-feedback'), '');
  if (!name) return fieldError(nameIn, $('key-name-error'), 'Give the key a name, such as the application that will use it.');
  if (keyList.some((k) => (k.name || '').trim().toLowerCase() === name.toLowerCase())) {
    return fieldError(nameIn, $('key-name-error'), `You already have a key named ${name}: choose another name, so the two can be told apart.`);
  }
  const b = parseBudget(budgetIn.value, { allowEmpty: true });
  if (b.error) return fieldError(budgetIn, $('key-budget-error'), b.error);
  return busy(button, async () => {
    let r;
    try {
      const body = { name };
      if (!b.empty) body.weekly_budget = b.value;
      r = await api('POST', '/v1/keys', body);
    } catch (e) {
      if (!(e instanceof ApiError)) return;
      if (e.param === 'weekly_budget') fieldError(budgetIn, $('key-budget-error'), e.message);
      else if (e.param === 'name') fieldError(nameIn, $('key-name-error'), e.message);
      else feedback($('keys-feedback'), e.message, 'error');
      return;
    }
    $('key-create').reset();
    open.add(r.id);
    await loadKeys();
    await showSecret(name, r.secret);
    feedback($(`key-${r.id}-feedback`) || $('keys-feedback'), `${name} is created.`);
    ($(`key-${r.id}-name`) || nameIn).focus();
  });
}

export function startKeys() {
  $('key-create').addEventListener('submit', createKey);
}
