// web/alerts.js: the low-balance alert's threshold in "Balance and plan"
// (GET/PUT /v1/account/alerts): empty follows the service's default, 0
// turns the alert off, any other amount is the user's own. Read like a
// budget (budget.js): text that is not a number is an error at the field,
// never sent; the answer is said beside the form.
import { $, busy, credits, feedback } from './dom.js';
import { api, ApiError } from './api.js';
import { section } from './section.js';
import { parseBudget, fieldError } from './budget.js';

function alertNote(a) {
  const dflt = a.default_balance_below;
  if (a.balance_below !== null && a.balance_below !== undefined) {
    return Number(a.balance_below) === 0 ? 'No low-balance alert for you.'
      : `The service is told when your balance falls below ${credits(a.balance_below, { precise: true })} credits.`;
  }
  return dflt ? `Empty: the service's default, ${credits(dflt, { precise: true })} credits (0: no alert).`
    : 'Empty: no low-balance alert (the service sets none by default).';
}

export const loadAlerts = section('alert', 'The low-balance alert', async () => {
  const a = await api('GET', '/v1/account/alerts');
  $('alert-balance').value = a.balance_below === null || a.balance_below === undefined ? '' : String(a.balance_below);
  $('alert-note').textContent = alertNote(a);
  $('alert-body').replaceChildren();
});

async function saveAlert(ev) {
  ev.preventDefault();
  const input = $('alert-balance');
  const v = parseBudget(input.value, { allowEmpty: true });
  feedback($('alert-feedback'), '');
  fieldError(input, $('alert-field-error'), v.error && v.error.replace('budget', 'threshold')
    .replace(/To remove the threshold.*$/, ''));
  if (v.error) return;
  await busy($('alert-save'), async () => {
    try {
      const a = await api('PUT', '/v1/account/alerts', { balance_below: v.empty ? null : v.value });
      $('alert-note').textContent = alertNote(a);
      feedback($('alert-feedback'), v.empty ? 'The low-balance alert follows the service\'s default.'
        : `The low-balance alert is set to ${credits(v.value, { precise: true })} credits.`);
    } catch (e) {
      if (e instanceof ApiError) fieldError(input, $('alert-field-error'), e.message);
    }
  });
}

export function startAlerts() {
  $('alert-form').addEventListener('submit', saveAlert);
}
