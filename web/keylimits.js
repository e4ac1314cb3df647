// web/keylimits.js: a key's controls on its card (PATCH /v1/keys/{id}):
// expiry, models, client addresses, requests a minute and at once, shown in
// one line and edited in a disclosure whose empty fields clear them. It
// adds itself to the card through keys.js's cardParts; its messages go to
// the card's feedback line, a count that is not a whole number to its own
// field.
import { $, el, busy, count, feedback } from './dom.js';
import { api, ApiError } from './api.js';
import { cardParts, loadKeys } from './keys.js';

const CONTROLS = [
  ['expires_at', 'Expires (UTC, RFC 3339, e.g. 2027-01-31T00:00:00Z)', 'text'],
  ['models', 'Models (ids, comma-separated)', 'text'],
  ['addresses', 'Client addresses (CIDR, comma-separated)', 'text'],
  ['rpm', 'Requests a minute', 'number'],
  ['max_in_flight', 'Requests at once', 'number'],
];

export function controlsText(k) {
  const parts = [];
  if (k.expires_at) parts.push(`expires ${k.expires_at.replace('T', ' ').replace('Z', ' UTC')}`);
  if (k.models) parts.push(`models: ${k.models.join(', ')}`);
  if (k.addresses) parts.push(`from: ${k.addresses.join(', ')}`);
  if (k.rpm) parts.push(`${count(k.rpm)} requests a minute`);
  if (k.max_in_flight) parts.push(`${count(k.max_in_flight)} at once`);
  return parts.length ? `Limits: ${parts.join(' · ')}` : 'No limits: any model, any address, no expiry.';
}

/** The PATCH body of the fields (empty clears one), or [field, message] for a bad count. */
function controlsBody(inputs) {
  const body = {};
  for (const [f, label, type] of CONTROLS) {
    const v = inputs[f].value.trim();
    if (v === '') body[f] = null;
    else if (type === 'number' && !/^[1-9][0-9]*$/.test(v)) return [f, `${label} must be a whole number, 1 or more (empty for no limit).`];
    else if (type === 'number') body[f] = Number(v);
    else if (f === 'models' || f === 'addresses') body[f] = v.split(',').map((x) => x.trim()).filter(Boolean);
    else body[f] = v;
  }
  return body;
}

function controlsForm(k) {
  const inputs = {};
  const errs = {};
  const fields = CONTROLS.map(([f, label, type]) => {
    const id = `key-${k.id}-${f}`;
    const v = k[f] === null || k[f] === undefined ? '' : Array.isArray(k[f]) ? k[f].join(', ') : k[f];
    errs[f] = el('p', { id: `${id}-error`, class: 'field-error', role: 'alert' });
    inputs[f] = el('input', { id, name: f, type: 'text', spellcheck: 'false', autocomplete: 'off', value: v,
      inputmode: type === 'number' ? 'numeric' : null, 'aria-describedby': `${id}-error` });
    return el('div', { class: 'field' }, el('label', { for: id }, label, el('span', { class: 'visually-hidden', text: ` (${k.name})` })),
      inputs[f], errs[f]);
  });
  const save = el('button', { type: 'submit', class: 'secondary save-limits', text: 'Save limits', 'aria-label': `Save limits of ${k.name}` });
  const submit = (ev) => {
    ev.preventDefault();
    for (const [f] of CONTROLS) {
      errs[f].textContent = '';
      inputs[f].removeAttribute('aria-invalid');
    }
    const fb = $(`key-${k.id}-feedback`);
    feedback(fb, '');
    const body = controlsBody(inputs);
    if (Array.isArray(body)) {
      errs[body[0]].textContent = body[1];
      inputs[body[0]].setAttribute('aria-invalid', 'true');
      inputs[body[0]].focus();
      return;
    }
    busy(save, async () => {
      try {
        await api('PATCH', `/v1/keys/${encodeURIComponent(k.id)}`, body);
      } catch (e) {
        if (e instanceof ApiError) feedback(fb, e.message, 'error');
        return;
      }
      await loadKeys();
      feedback($(`key-${k.id}-feedback`), `The limits of ${k.name} are saved.`);
      $(`key-${k.id}-limits`)?.focus();
    });
  };
  return el('div', { class: 'key-limits' },
    el('p', { id: `key-${k.id}-limits`, class: 'note key-controls', tabindex: '-1', text: controlsText(k) }),
    el('details', { class: 'controls' },
      el('summary', { text: `Limits of ${k.name}: expiry, models, addresses, rate` }),
      el('form', { class: 'inline-form controls-form', onsubmit: submit, novalidate: true }, ...fields, save)));
}

cardParts.push(controlsForm);
