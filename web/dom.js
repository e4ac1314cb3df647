// web/dom.js: the cabinet's building blocks, shared by every other script
// (ES modules, nothing from another site): elements built with textContent
// only (never HTML from data), numbers and credits in the reader's locale,
// every time in UTC and labelled so (the API's times are UTC, its days UTC
// days), bars, and the feedback line beside a control.

export const $ = (id) => document.getElementById(id);
const SVG_NS = 'http://www.w3.org/2000/svg';

function setAttrs(e, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k === 'class') e.setAttribute('class', v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
}

/** An element: attrs (class, text, on<event>, or attributes), then children. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  setAttrs(e, attrs);
  e.append(...children.filter((c) => c !== null && c !== undefined && c !== false));
  return e;
}

export function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  setAttrs(e, attrs);
  e.append(...children);
  return e;
}

/* ---- numbers: the reader's locale for every figure ---- */

const LOCALE = navigator.language || 'en-US';
const fmt = (opts) => new Intl.NumberFormat(LOCALE, opts);
const whole = fmt({ maximumFractionDigits: 0 });
const big = fmt({ maximumFractionDigits: 2 });
const small = fmt({ maximumSignificantDigits: 3 });
const exact = fmt({ maximumFractionDigits: 6 });

/** A count: 1,234. */
export const count = (n) => whole.format(Number(n || 0));

/**
 * Credits as an amount: two decimals at most from 1 up, three significant
 * digits below (0.00394), "—" for none. exact: every decimal (prices, budgets).
 */
export function credits(n, { precise = false } = {}) {
  if (n === null || n === undefined || n === '') return '—';
  const v = Number(n);
  if (!Number.isFinite(v)) return String(n);
  if (precise) return exact.format(v);
  if (v === 0) return whole.format(0);
  return Math.abs(v) >= 1 ? big.format(v) : small.format(v);
}

/** The credit's worth (GET /v1/account's credit: {value, currency}) of n credits, or null. */
export function money(n, credit) {
  if (!credit || !credit.value || !credit.currency || n === null || n === undefined) return null;
  const v = Number(n) * Number(credit.value);
  if (!Number.isFinite(v)) return null;
  try {
    return new Intl.NumberFormat(LOCALE, { style: 'currency', currency: credit.currency }).format(v);
  } catch {
    return `${exact.format(v)} ${credit.currency}`;
  }
}

export const tokens = (u) => (u ? (u.input_tokens || 0) + (u.output_tokens || 0)
  + (u.cache_tokens || 0) + (u.reasoning_tokens || 0) : 0);

/* ---- times: UTC everywhere, said so ---- */

const dateTime = new Intl.DateTimeFormat(LOCALE, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });
const dayOnly = new Intl.DateTimeFormat(LOCALE, { weekday: 'short', timeZone: 'UTC' });

/** A <time> for an API time ("2026-11-24T07:00:00Z"), shown in UTC and labelled "UTC". */
export function when(iso) {
  if (!iso) return null;
  const d = new Date(iso);
  const text = Number.isNaN(d.getTime()) ? iso : `${dateTime.format(d)} UTC`;
  return el('time', { datetime: iso, text });
}

/** A UTC day ("2026-11-24") as a short label: "Tue" (the date is in the title). */
export function dayLabel(date) {
  const d = new Date(`${date}T00:00:00Z`);
  return Number.isNaN(d.getTime()) ? date : dayOnly.format(d);
}

/* ---- bars ---- */

/** A horizontal bar (share of 0..1; any use at least a sliver) with an accessible label. */
export function bar(share, label, cls = '') {
  const s = Math.max(0, Math.min(1, Number(share) || 0));
  const w = s > 0 ? Math.max(s * 100, 1) : 0;
  return svg('svg', { class: `bar ${cls}`.trim(), viewBox: '0 0 100 6', preserveAspectRatio: 'none',
    role: 'img', 'aria-label': label },
  svg('rect', { class: 'track', x: 0, y: 0, width: 100, height: 6, rx: 1 }),
  svg('rect', { class: 'fill', x: 0, y: 0, width: w.toFixed(2), height: 6, rx: 1 }));
}

/* ---- feedback beside the control ---- */

const timers = new WeakMap();

/**
 * Says text in the feedback line out (a role=status or role=alert paragraph
 * next to the control): kind 'ok' clears itself after a while, 'error' stays
 * until the next action there.
 */
export function feedback(out, text, kind = 'ok') {
  if (!out) return;
  clearTimeout(timers.get(out));
  out.textContent = text || '';
  out.classList.toggle('error', kind === 'error');
  out.classList.toggle('ok', kind === 'ok' && !!text);
  if (text && kind === 'ok') timers.set(out, setTimeout(() => { out.textContent = ''; out.classList.remove('ok'); }, 15000));
}

/** Runs fn with the button disabled (a second click does nothing meanwhile). */
export async function busy(button, fn) {
  if (button.disabled) return undefined;
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    return await fn();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}
