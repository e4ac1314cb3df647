// web/account.js: the "Balance and plan" section (GET /v1/account): the
// balance, what requests in flight hold and what is available, as amounts
// (and in money when the operator states a credit's worth: the answer's
// credit {value, currency}), where to get more (its top_up_url), and the
// plan's two rolling windows with when capacity returns (UTC).
import { $, el, bar, credits, money, when } from './dom.js';
import { api } from './api.js';
import { section } from './section.js';

const WINDOW_NAMES = { '5h': 'Last 5 hours', '7d': 'Last 7 days' };

export const account = { credit: null, topUp: null };

function windowView(w) {
  const name = WINDOW_NAMES[w.window] || w.window;
  const share = w.quota > 0 ? w.used / w.quota : 0;
  const pct = Math.round(share * 100);
  const full = Number(w.remaining) <= 0 && Number(w.quota) > 0;
  const returns = w.returns_at
    ? el('p', { class: 'note' }, full ? 'Used up: requests are paid from the balance, or refused without one, until ' : 'Capacity returns from ',
      when(w.returns_at), w.full_at ? '; the whole quota by ' : '', w.full_at ? when(w.full_at) : null, '.')
    : el('p', { class: 'note', text: 'Nothing used in this window: the whole quota is free.' });
  return el('div', { class: full ? 'window used-up' : 'window', id: `window-${w.window}` },
    el('h4', { text: name }),
    bar(share, `${name}: ${pct}% of the quota used`, full ? 'over' : ''),
    el('p', { text: `${credits(w.used)} of ${credits(w.quota)} credits used, ${credits(w.remaining)} left` }),
    returns);
}

/** "12.5 credits", with its worth when the operator states one. */
function amount(n) {
  const m = money(n, account.credit);
  return m ? `${credits(n)} credits (${m})` : `${credits(n)} credits`;
}

export function topUpLink(text = 'Top up the balance') {
  return account.topUp ? el('a', { class: 'top-up', href: account.topUp, rel: 'noopener', text }) : null;
}

export const loadAccount = section('account', 'Balance and plan', async () => {
  const a = await api('GET', '/v1/account');
  account.credit = a.credit || null;
  account.topUp = a.top_up_url || null;
  const dl = el('dl', { class: 'figures' },
    el('dt', { text: 'Balance' }), el('dd', { id: 'balance', text: amount(a.balance) }),
    el('dt', { text: 'Held by requests in flight' }), el('dd', { id: 'held', text: amount(a.held) }),
    el('dt', { text: 'Available' }), el('dd', { id: 'available', text: amount(a.available) }));
  const worth = a.credit
    ? el('p', { id: 'credit-value', class: 'note', text: `One credit is worth ${money(1, a.credit) || `${a.credit.value} ${a.credit.currency}`}.` })
    : null;
  const more = a.top_up_url
    ? el('p', { id: 'top-up' }, topUpLink(), el('span', { class: 'note', text: ' (the operator\'s page for adding credits)' }))
    : el('p', { id: 'top-up', class: 'note' }, 'To add credits, ask the operator of this service. ',
      el('a', { href: '/docs/credits', text: 'How credits work' }), '.');
  const plan = a.plan
    ? el('div', { id: 'plan' }, el('h3', { text: `Plan: ${a.plan.name}` }),
      el('p', { class: 'note', text: 'Both windows apply together to all your keys; capacity comes back as earlier use leaves a window.' }),
      ...(a.plan.windows || []).map(windowView))
    : el('div', { id: 'plan' }, el('h3', { text: 'No plan' }),
      el('p', { class: 'note', text: 'Requests are paid from the balance.' }));
  $('account-body').replaceChildren(dl, worth, more, plan);
});
