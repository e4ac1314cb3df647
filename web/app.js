// web/app.js: the cabinet page's one script (no framework, nothing from
// another site). It asks the JSON API who is signed in and shows either
// the sign-in buttons (GET /v1/auth/providers) or the account: balance and
// plan windows (GET /v1/account), keys with their usage and a 7-day chart
// (GET/POST/PUT/DELETE /v1/keys...), usage by day, key, model or agent
// session (GET /v1/usage), the catalog with favorite stars
// (GET /v1/models, /v1/models/favorites, PUT/DELETE .../favorite) and the
// low-balance alert's threshold (GET/PUT /v1/account/alerts), the
// linked sign-in methods (GET /v1/auth/identities, POST /v1/auth/NAME/link,
// DELETE /v1/auth/identities/NAME), the authorized MCP clients (GET
// /v1/mcp/clients, DELETE /v1/mcp/clients/ID) and the account's security
// activity (GET /v1/account/activity, a page at a time).
// Every request is same-origin with the session's cookies (HttpOnly: this
// script never sees them); a 401 anywhere shows the sign-in view. A new
// key's secret lives only in a local variable and the dialog's DOM, both
// dropped when the dialog closes: never in storage, cookies or the page
// afterwards. The DOM is built with textContent only (no HTML from data).
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const SVG_NS = 'http://www.w3.org/2000/svg';

  /** An element: attrs (class, text, on<event>, or attributes), then children. */
  function el(tag, attrs = {}, ...children) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    e.append(...children.filter((c) => c !== null && c !== undefined));
    return e;
  }

  function svg(tag, attrs = {}, ...children) {
    const e = document.createElementNS(SVG_NS, tag);
    setAttrs(e, attrs);
    e.append(...children);
    return e;
  }

  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.setAttribute('class', v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }

  /* ---- the API ------------------------------------------------------------ */

  class SignedOut extends Error {}

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  /** One JSON request; resolves to the parsed answer (null for 204). */
  async function api(method, path, body) {
    const init = {
      method,
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { Accept: 'application/json' },
    };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let r;
    try {
      r = await fetch(path, init);
    } catch {
      throw new ApiError(0, 'NETWORK', 'The service cannot be reached. Try again.');
    }
    if (r.status === 401) {
      showSignedOut();
      throw new SignedOut('not signed in');
    }
    if (r.status === 204) return null;
    let data = null;
    try {
      data = await r.json();
    } catch {
      data = null;
    }
    if (!r.ok) {
      const e = (data && data.error) || {};
      throw new ApiError(r.status, e.code || null, e.message || `The service answered ${r.status}.`);
    }
    return data;
  }

  /** Runs an action; an error goes to the paragraph errId (a sign-out is the view's). */
  async function guarded(errId, fn) {
    const out = $(errId);
    out.textContent = '';
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof SignedOut)) out.textContent = e.message || String(e);
      return undefined;
    }
  }

  function say(text) {
    $('status').textContent = text;
  }

  /* ---- formatting --------------------------------------------------------- */

  const credits = (n) => (n === null || n === undefined ? '—'
    : Number(n).toLocaleString('en-US', { maximumFractionDigits: 6 }));
  const count = (n) => Number(n || 0).toLocaleString('en-US');
  const tokens = (u) => (u ? (u.input_tokens || 0) + (u.output_tokens || 0)
    + (u.cache_tokens || 0) + (u.reasoning_tokens || 0) : 0);

  function when(iso) {
    if (!iso) return null;
    const d = new Date(iso);
    const text = Number.isNaN(d.getTime()) ? iso
      : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
    return el('time', { datetime: iso, text });
  }

  /** A horizontal bar (share of 0..1; any use at least a sliver) with an accessible label. */
  function bar(share, label) {
    const s = Math.max(0, Math.min(1, Number(share) || 0));
    const w = s > 0 ? Math.max(s * 100, 1) : 0;
    return svg('svg', { class: 'bar', viewBox: '0 0 100 6', preserveAspectRatio: 'none',
      role: 'img', 'aria-label': label },
    svg('rect', { class: 'track', x: 0, y: 0, width: 100, height: 6, rx: 1 }),
    svg('rect', { class: 'fill', x: 0, y: 0, width: w.toFixed(2), height: 6, rx: 1 }));
  }

  /* ---- views -------------------------------------------------------------- */

  let view = null;       // 'in' | 'out'
  let providers = [];    // GET /v1/auth/providers: {name, display, login, link}

  async function loadProviders() {
    const r = await api('GET', '/v1/auth/providers');
    providers = (r && r.data) || [];
    return providers;
  }

  /**
   * A sign-in form's submit (a link's URL, once its POST gave it), as a navigation of the page: the CSP's
   * form-action names each provider's issuer (or authorization endpoint),
   * but a provider may send the browser on to another origin of its own,
   * which a form's redirects could not reach.
   */
  function go(ev) {
    ev.preventDefault();
    location.assign(ev.currentTarget.action);
  }

  function showSignedOut() {
    if (view === 'out') return;
    view = 'out';
    $('session').replaceChildren();
    $('signed-in-view').hidden = true;
    for (const id of ['account-body', 'key-list', 'usage-body', 'catalog-body', 'identity-list', 'link-list', 'mcp-client-list', 'activity-list']) {
      $(id).replaceChildren();
    }
    closeDialogs();
    const list = $('signin-list');
    list.replaceChildren(el('p', { id: 'signed-out', text: 'You are not signed in.' }));
    $('signed-out-view').hidden = false;
    loadProviders().then((ps) => {
      if (view !== 'out') return;
      if (!ps.length) list.append(el('p', { text: 'No sign-in method is configured on this server.' }));
      for (const p of ps) {
        list.append(el('form', { id: `signin-${p.name}`, class: 'signin', method: 'get', action: p.login, onsubmit: go },
          el('button', { type: 'submit', text: `Sign in with ${p.display}` })));
      }
    }).catch((e) => list.append(el('p', { class: 'error', role: 'alert', text: e.message })));
  }

  function showSignedIn(me) {
    view = 'in';
    const who = me.name ? `${me.name} (${me.email || 'no email'})` : (me.email || 'no email');
    $('session').replaceChildren(
      el('p', { id: 'who', text: `Signed in as ${who}` }),
      el('form', { id: 'logout', method: 'post', action: '/v1/auth/logout' },
        el('button', { type: 'submit', class: 'secondary', text: 'Log out' })));
    $('signed-out-view').hidden = true;
    $('signin-list').replaceChildren();
    $('signed-in-view').hidden = false;
    loadProviders().catch(() => []).then(() => {
      loadAccount();
      loadAlerts();
      loadKeys();
      loadUsage();
      loadCatalog();
      loadIdentities();
      loadMcpClients();
      loadActivity();
    });
  }

  /* ---- balance and plan --------------------------------------------------- */

  const WINDOW_NAMES = { '5h': 'Last 5 hours', '7d': 'Last 7 days' };

  function windowView(w) {
    const name = WINDOW_NAMES[w.window] || w.window;
    const share = w.quota > 0 ? w.used / w.quota : 0;
    const pct = Math.round(share * 100);
    const returns = w.returns_at
      ? el('p', { class: 'note' }, 'Capacity returns from ', when(w.returns_at),
        w.full_at ? '; the whole quota by ' : '', w.full_at ? when(w.full_at) : null, '.')
      : el('p', { class: 'note', text: 'Nothing used in this window: the whole quota is free.' });
    return el('div', { class: 'window', id: `window-${w.window}` },
      el('h4', { text: name }),
      bar(share, `${name}: ${pct}% of the quota used`),
      el('p', { text: `${credits(w.used)} of ${credits(w.quota)} credits used, ${credits(w.remaining)} left` }),
      returns);
  }

  function loadAccount() {
    return guarded('account-error', async () => {
      const a = await api('GET', '/v1/account');
      const dl = el('dl', { class: 'figures' },
        el('dt', { text: 'Balance' }), el('dd', { id: 'balance', text: `${credits(a.balance)} credits` }),
        el('dt', { text: 'Held by requests in flight' }), el('dd', { id: 'held', text: `${credits(a.held)} credits` }),
        el('dt', { text: 'Available' }), el('dd', { id: 'available', text: `${credits(a.available)} credits` }));
      const plan = a.plan
        ? el('div', { id: 'plan' }, el('h3', { text: `Plan: ${a.plan.name}` }),
          el('p', { class: 'note', text: 'Both windows apply together to all your keys; capacity comes back as earlier use leaves a window.' }),
          ...(a.plan.windows || []).map(windowView))
        : el('div', { id: 'plan' }, el('h3', { text: 'No plan' }),
          el('p', { class: 'note', text: 'Requests are paid from the balance.' }));
      $('account-body').replaceChildren(dl, plan);
    });
  }

  /* ---- the low-balance alert ------------------------------------------------ */

  function alertNote(a) {
    const dflt = a.default_balance_below;
    if (a.balance_below !== null && a.balance_below !== undefined) {
      return Number(a.balance_below) === 0 ? 'No low-balance alert for you.'
        : `The service is told when your balance falls below ${credits(a.balance_below)} credits.`;
    }
    return dflt ? `Empty: the service's default, ${credits(dflt)} credits (0: no alert).`
      : 'Empty: no low-balance alert (the service sets none by default).';
  }

  function loadAlerts() {
    return guarded('alert-error', async () => {
      const a = await api('GET', '/v1/account/alerts');
      $('alert-balance').value = a.balance_below === null || a.balance_below === undefined ? '' : a.balance_below;
      $('alert-note').textContent = alertNote(a);
    });
  }

  function saveAlert(ev) {
    ev.preventDefault();
    const v = budgetValue($('alert-balance'));
    if (v === undefined) {
      $('alert-error').textContent = 'The threshold must be a number of credits, 0 or more (empty for the default).';
      return;
    }
    guarded('alert-error', async () => {
      const a = await api('PUT', '/v1/account/alerts', { balance_below: v });
      $('alert-note').textContent = alertNote(a);
      say(v === null ? 'The low-balance alert follows the service\'s default.'
        : `The low-balance alert is set to ${credits(v)} credits.`);
    });
  }

  /* ---- keys ----------------------------------------------------------------- */

  function usageTable(k) {
    const row = (label, u) => el('tr', {},
      el('th', { scope: 'row', text: label }),
      el('td', { text: count(u && u.requests) }),
      el('td', { text: count(tokens(u)) }),
      el('td', { text: credits(u ? u.credits : 0) }));
    return el('table', { class: 'usage' },
      el('caption', { text: 'Usage' }),
      el('thead', {}, el('tr', {}, el('td'), ...['Requests', 'Tokens', 'Credits']
        .map((h) => el('th', { scope: 'col', class: 'num', text: h })))),
      el('tbody', {}, row('Today', k.today), row('Last 7 days', k.last_7_days)));
  }

  /** The 7-day chart: a bar of credits per day, the day's initial below. */
  function chart(k) {
    const days = k.daily || [];
    const max = Math.max(0, ...days.map((d) => Number(d.credits) || 0));
    const W = 20;
    const H = 40;
    const summary = days.map((d) => `${d.date}: ${count(d.requests)} requests, ${credits(d.credits)} credits`).join('; ');
    const g = svg('svg', { class: 'chart', viewBox: `0 0 ${days.length * W} ${H + 12}`,
      role: 'img', 'aria-label': `Credits per day, last 7 days. ${summary}` });
    days.forEach((d, i) => {
      const h = max > 0 ? Math.max((Number(d.credits) || 0) / max * H, d.credits > 0 ? 1 : 0) : 0;
      const day = new Date(`${d.date}T00:00:00Z`);
      const label = Number.isNaN(day.getTime()) ? '' : day.toLocaleDateString('en-US', { weekday: 'narrow', timeZone: 'UTC' });
      g.append(
        svg('rect', { class: 'day-track', x: i * W + 3, y: 0, width: W - 6, height: H }),
        svg('rect', { class: 'day', x: i * W + 3, y: (H - h).toFixed(2), width: W - 6, height: h.toFixed(2) },
          svg('title', {}, `${d.date}: ${count(d.requests)} requests, ${count(d.tokens)} tokens, ${credits(d.credits)} credits`)),
        svg('text', { x: i * W + W / 2, y: H + 10, 'text-anchor': 'middle', class: 'day-label' }, label));
    });
    return g;
  }

  function budgetView(k) {
    if (k.weekly_budget === null || k.weekly_budget === undefined) {
      return el('div', { class: 'budget' }, el('p', { text: `No weekly budget (${credits(k.week_used)} credits used in the last 7 days)` }));
    }
    const share = k.weekly_budget > 0 ? k.week_used / k.weekly_budget : 1;
    return el('div', { class: 'budget' },
      el('p', { text: `Weekly budget: ${credits(k.week_used)} of ${credits(k.weekly_budget)} credits used` }),
      bar(share, `Weekly budget of ${k.name}: ${Math.round(share * 100)}% used`));
  }

  /** A budget field's value: null (none), a number >= 0, or undefined (bad). */
  function budgetValue(input) {
    const v = input.value.trim();
    if (v === '') return null;
    const n = Number(v);
    return Number.isFinite(n) && n >= 0 ? n : undefined;
  }

  /* A key's controls (PATCH /v1/keys/{id}): shown in one line, edited in a
   * form whose empty fields clear them. */
  const CONTROLS = [
    ['expires_at', 'Expires (RFC 3339, e.g. 2027-01-31T00:00:00Z)', 'text'],
    ['models', 'Models (ids, comma-separated)', 'text'],
    ['addresses', 'Client addresses (CIDR, comma-separated)', 'text'],
    ['rpm', 'Requests a minute', 'number'],
    ['max_in_flight', 'Requests at once', 'number'],
  ];

  function controlsText(k) {
    const parts = [];
    if (k.expires_at) parts.push(`expires ${k.expires_at}`);
    if (k.models) parts.push(`models: ${k.models.join(', ')}`);
    if (k.addresses) parts.push(`from: ${k.addresses.join(', ')}`);
    if (k.rpm) parts.push(`${count(k.rpm)} requests a minute`);
    if (k.max_in_flight) parts.push(`${count(k.max_in_flight)} at once`);
    return parts.length ? `Limits: ${parts.join(' · ')}` : 'No limits: any model, any address, no expiry.';
  }

  /** The PATCH body of the form's fields (empty clears one), or a string
   * saying which count is not a whole number. */
  function controlsBody(inputs) {
    const body = {};
    for (const [f, label, type] of CONTROLS) {
      const v = inputs[f].value.trim();
      if (v === '') body[f] = null;
      else if (type === 'number' && !/^[1-9][0-9]*$/.test(v)) return `${label} must be a whole number, 1 or more (empty for no limit).`;
      else if (type === 'number') body[f] = Number(v);
      else if (f === 'models' || f === 'addresses') body[f] = v.split(',').map((x) => x.trim()).filter(Boolean);
      else body[f] = v;
    }
    return body;
  }

  function controlsForm(k, errId) {
    const inputs = {};
    const fields = CONTROLS.map(([f, label, type]) => {
      const id = `key-${k.id}-${f}`;
      const v = k[f] === null || k[f] === undefined ? '' : Array.isArray(k[f]) ? k[f].join(', ') : k[f];
      inputs[f] = el('input', type === 'number'
        ? { id, name: f, type: 'text', inputmode: 'numeric', pattern: '[0-9]*', value: v }
        : { id, name: f, type: 'text', spellcheck: 'false', value: v });
      return el('div', { class: 'field' }, el('label', { for: id, text: label }), inputs[f]);
    });
    const submit = (ev) => {
      ev.preventDefault();
      const body = controlsBody(inputs);
      if (typeof body === 'string') {
        $(errId).textContent = body;
        return;
      }
      guarded(errId, async () => {
        await api('PATCH', `/v1/keys/${encodeURIComponent(k.id)}`, body);
        await loadKeys();
        say(`The limits of ${k.name} are saved.`);
      });
    };
    return el('details', { class: 'controls' },
      el('summary', { text: 'Limits: expiry, models, addresses, rate' }),
      el('form', { class: 'inline-form controls-form', onsubmit: submit, novalidate: true },
        ...fields,
        el('button', { type: 'submit', class: 'secondary', text: 'Save limits' })));
  }

  function keyView(k) {
    const errId = `key-${k.id}-error`;
    const budgetId = `key-${k.id}-budget`;
    const budgetInput = el('input', { id: budgetId, type: 'number', min: 0, step: 'any', inputmode: 'decimal',
      value: k.weekly_budget === null || k.weekly_budget === undefined ? '' : k.weekly_budget });
    const setBudget = (ev) => {
      ev.preventDefault();
      const v = budgetValue(budgetInput);
      if (v === undefined) {
        $(errId).textContent = 'The budget must be a number of credits, 0 or more (empty for none).';
        return;
      }
      guarded(errId, async () => {
        await api('PUT', `/v1/keys/${encodeURIComponent(k.id)}/budget`, { weekly_budget: v });
        // The list first, then the status: what the status says is on the page.
        await loadKeys();
        say(`The weekly budget of ${k.name} is ${v === null ? 'removed' : `now ${credits(v)} credits`}.`);
      });
    };
    const reissue = () => confirmAction(`Reissue ${k.name}? Its current secret stops working at once.`, 'Reissue')
      .then((ok) => ok && guarded(errId, async () => {
        const r = await api('POST', `/v1/keys/${encodeURIComponent(k.id)}/reissue`);
        await loadKeys();
        showSecret(k.name, r.secret);
      }));
    const remove = () => confirmAction(`Delete ${k.name}? Requests with it are refused at once.`, 'Delete')
      .then((ok) => ok && guarded(errId, async () => {
        await api('DELETE', `/v1/keys/${encodeURIComponent(k.id)}`);
        await loadKeys();
        say(`${k.name} is deleted.`);
      }));
    return el('li', { class: 'card key', id: `key-${k.id}` },
      el('h3', { text: k.name }),
      el('p', { class: 'note' }, el('code', { class: 'prefix', text: `${k.prefix}…` }), ' · created ', when(k.created_at),
        k.reissued_at ? ' · reissued ' : null, k.reissued_at ? when(k.reissued_at) : null),
      budgetView(k),
      el('p', { class: 'note key-controls', text: controlsText(k) }),
      el('div', { class: 'usage-row' }, usageTable(k), chart(k)),
      el('form', { class: 'inline-form budget-form', onsubmit: setBudget, novalidate: true },
        el('div', { class: 'field' },
          el('label', { for: budgetId, text: 'Weekly budget in credits (empty for none)' }), budgetInput),
        el('button', { type: 'submit', class: 'secondary', text: 'Set budget' })),
      controlsForm(k, errId),
      el('div', { class: 'button-row' },
        el('button', { type: 'button', class: 'secondary reissue', text: 'Reissue', onclick: reissue }),
        el('button', { type: 'button', class: 'danger delete', text: 'Delete', onclick: remove })),
      el('p', { id: errId, class: 'error', role: 'alert' }));
  }

  function loadKeys() {
    return guarded('keys-error', async () => {
      const r = await api('GET', '/v1/keys');
      const keys = (r && r.data) || [];
      $('key-list').replaceChildren(...keys.map(keyView));
      if (!keys.length) $('key-list').append(el('li', { class: 'note', text: 'No keys yet.' }));
    });
  }

  function createKey(ev) {
    ev.preventDefault();
    const name = $('key-name').value.trim();
    const budget = budgetValue($('key-budget'));
    if (!name) {
      $('keys-error').textContent = 'Give the key a name.';
      $('key-name').focus();
      return;
    }
    if (budget === undefined) {
      $('keys-error').textContent = 'The budget must be a number of credits, 0 or more (empty for none).';
      $('key-budget').focus();
      return;
    }
    guarded('keys-error', async () => {
      const body = { name };
      if (budget !== null) body.weekly_budget = budget;
      const r = await api('POST', '/v1/keys', body);
      $('key-create').reset();
      await loadKeys();
      showSecret(name, r.secret);
    });
  }

  /* ---- usage by day, key, model or agent session ------------------------------ */

  const USAGE_GROUPS = { day: 'Day', key: 'Key', model: 'Model' };

  /** The agent sessions (by=session): one row each, the latest first. */
  function sessionTable(data) {
    const rows = data.map((g) => el('tr', { class: 'session-row' },
      el('th', { scope: 'row', title: g.session, text: g.session.length > 13 ? `${g.session.slice(0, 12)}…` : g.session }),
      el('td', { text: g.client }),
      el('td', { text: g.name || `#${g.key}` }),
      el('td', { text: (g.models || []).join(', ') }),
      el('td', {}, when(g.first_request_at)),
      el('td', {}, when(g.last_request_at)),
      el('td', { class: 'num', text: count(g.requests) }),
      el('td', { class: 'num', text: count(tokens(g)) }),
      el('td', { class: 'num', text: credits(g.credits) })));
    return el('table', { class: 'usage-report sessions' },
      el('thead', {}, el('tr', {},
        ...['Session', 'Client', 'Key', 'Models', 'First request', 'Last request']
          .map((h) => el('th', { scope: 'col', text: h })),
        ...['Requests', 'Tokens', 'Credits'].map((h) => el('th', { scope: 'col', class: 'num', text: h })))),
      el('tbody', {}, ...rows));
  }

  function loadUsage() {
    const days = $('usage-days').value;
    const by = $('usage-by').value;
    return guarded('usage-error', async () => {
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
          .map((n) => el('td', { class: 'num', text: count(n) })),
        el('td', { class: 'num', text: credits(g.credits) })));
      if (!rows.length) {
        $('usage-body').replaceChildren(el('p', { class: 'note', text: 'No requests in this period.' }));
        return;
      }
      $('usage-body').replaceChildren(el('table', { class: 'usage-report' },
        el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: USAGE_GROUPS[by] }),
          ...['Requests', 'Input', 'Output', 'Cache', 'Reasoning', 'Credits']
            .map((h) => el('th', { scope: 'col', class: 'num', text: h })))),
        el('tbody', {}, ...rows)));
    });
  }

  /* ---- dialogs -------------------------------------------------------------- */

  /** Shows a new secret once; the dialog's close drops it from the page. */
  function showSecret(keyName, secretValue) {
    let secret = secretValue;
    const dialog = $('secret-dialog');
    const slot = $('secret-slot');
    const code = el('code', { id: 'secret-value', class: 'secret', text: secret });
    const copied = el('span', { id: 'secret-copied', role: 'status' });
    const copy = async () => {
      try {
        await navigator.clipboard.writeText(secret);
        copied.textContent = 'Copied to the clipboard.';
      } catch {
        const range = document.createRange();
        range.selectNodeContents(code);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        copied.textContent = 'Copying is not allowed here: the key is selected, copy it by hand.';
      }
    };
    slot.replaceChildren(
      el('p', { text: `The key ${keyName}:` }), code,
      el('p', { class: 'button-row' }, el('button', { type: 'button', id: 'secret-copy', text: 'Copy', onclick: copy }), copied));
    // Gone at once when the user closes the dialog (Done, Escape), before
    // the dialog's own close event, which comes a task later.
    const forget = () => {
      secret = null;
      getSelection().removeAllRanges();
      slot.replaceChildren();
      $('secret-done').removeEventListener('click', forget);
      dialog.removeEventListener('cancel', forget);
      dialog.removeEventListener('close', forget);
    };
    $('secret-done').addEventListener('click', forget);
    dialog.addEventListener('cancel', forget);
    dialog.addEventListener('close', forget);
    dialog.showModal();
    $('secret-copy').focus();
  }

  let confirmResolve = null;

  /** Asks text with an OK button labelled ok; resolves true when confirmed. */
  function confirmAction(text, ok) {
    const dialog = $('confirm-dialog');
    $('confirm-text').textContent = text;
    $('confirm-ok').textContent = ok;
    dialog.returnValue = '';
    return new Promise((resolve) => {
      confirmResolve = resolve;
      dialog.showModal();
      $('confirm-cancel').focus();
    });
  }

  function closeDialogs() {
    for (const id of ['secret-dialog', 'confirm-dialog']) if ($(id).open) $(id).close();
  }

  /* ---- catalog and favorites ------------------------------------------------ */

  function starButton(m, on) {
    const b = el('button', { type: 'button', class: 'star', 'aria-pressed': on ? 'true' : 'false',
      'aria-label': `Favorite: ${m.display_name}`, 'data-model': m.publicId, text: on ? '★' : '☆' });
    b.addEventListener('click', () => guarded('catalog-error', async () => {
      const now = b.getAttribute('aria-pressed') !== 'true';
      await api(now ? 'PUT' : 'DELETE', `/v1/models/${encodeURIComponent(m.publicId)}/favorite`);
      b.setAttribute('aria-pressed', now ? 'true' : 'false');
      b.textContent = now ? '★' : '☆';
      say(`${m.display_name} is ${now ? 'now a favorite' : 'no longer a favorite'}.`);
    }));
    return b;
  }

  const PRICE_NAMES = { input: 'Input', output: 'Output', cache: 'Cache', reasoning: 'Reasoning' };

  function loadCatalog() {
    return guarded('catalog-error', async () => {
      const [models, favs] = await Promise.all([api('GET', '/v1/models'),
        api('GET', '/v1/models/favorites').catch((e) => {
          if (e instanceof SignedOut) throw e;
          $('catalog-error').textContent = `Favorites: ${e.message}`;
          return null;
        })]);
      const fav = new Set(((favs && favs.data) || []).map((m) => m.publicId || m.id));
      const price = (p, k) => el('td', { class: 'num', 'data-label': PRICE_NAMES[k],
        text: p && p[k] !== null && p[k] !== undefined ? credits(p[k]) : '—' });
      const rows = ((models && models.data) || []).map((m) => el('tr', { id: `model-${m.publicId}` },
        el('td', {}, favs ? starButton(m, fav.has(m.publicId)) : null),
        el('th', { scope: 'row' }, el('span', { text: m.display_name }), el('br'), el('code', { text: m.publicId })),
        price(m.pricing, 'input'), price(m.pricing, 'output'), price(m.pricing, 'cache'), price(m.pricing, 'reasoning'),
        el('td', { class: 'num', 'data-label': 'Max output',
          text: Number.isInteger(m.max_output_tokens) ? m.max_output_tokens.toLocaleString('en') : '—' })));
      $('catalog-body').replaceChildren(el('table', { class: 'catalog' },
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, el('span', { class: 'visually-hidden', text: 'Favorite' })),
          el('th', { scope: 'col', text: 'Model' }),
          ...Object.values(PRICE_NAMES).map((h) => el('th', { scope: 'col', class: 'num', text: h })),
          el('th', { scope: 'col', class: 'num', text: 'Max output', title: 'the most output tokens a request is given' }))),
        el('tbody', {}, ...rows)));
    });
  }

  /* ---- linked identities ---------------------------------------------------- */

  function loadIdentities() {
    return guarded('identities-error', async () => {
      const r = await api('GET', '/v1/auth/identities');
      const ids = (r && (r.data || r.identities)) || [];
      const display = (name) => (providers.find((p) => p.name === name) || { display: name }).display;
      // The last one cannot go (409 LAST_IDENTITY): no button for it.
      const unlink = (i) => confirmAction(`Unlink ${display(i.provider)}? It no longer signs you in here.`, 'Unlink')
        .then((ok) => ok && guarded('identities-error', async () => {
          await api('DELETE', `/v1/auth/identities/${encodeURIComponent(i.provider)}`);
          await loadIdentities();
          say(`${display(i.provider)} is unlinked.`);
        }));
      $('identity-list').replaceChildren(...ids.map((i) => el('li', { 'data-provider': i.provider },
        el('strong', { text: display(i.provider) }), ', linked ', when(i.createdAt),
        ids.length > 1 ? ' ' : null,
        ids.length > 1 ? el('button', { type: 'button', class: 'secondary unlink', text: 'Unlink',
          'aria-label': `Unlink ${display(i.provider)}`, onclick: () => unlink(i) }) : null)));
      const linked = new Set(ids.map((i) => i.provider));
      // A link starts with a same-site POST (another site cannot start one);
      // its answer is the provider's URL, gone to as a navigation (see go).
      const start = (ev, p) => {
        ev.preventDefault();
        return guarded('identities-error', async () => {
          const r = await api('POST', p.link);
          location.assign(r.url);
        });
      };
      $('link-list').replaceChildren(...providers.filter((p) => !linked.has(p.name)).map((p) => el('form',
        { id: `link-${p.name}`, method: 'post', action: p.link, onsubmit: (ev) => start(ev, p) },
        el('button', { type: 'submit', class: 'secondary', text: `Link ${p.display}` }))));
    });
  }

  /* ---- authorized MCP clients ------------------------------------------------ */

  function loadMcpClients() {
    return guarded('mcp-clients-error', async () => {
      const r = await api('GET', '/v1/mcp/clients');
      const list = (r && r.data) || [];
      const revoke = (c) => confirmAction(`Revoke ${c.name || c.client_id}? It can no longer read `
        + 'your account until you allow it again.', 'Revoke')
        .then((ok) => ok && guarded('mcp-clients-error', async () => {
          await api('DELETE', `/v1/mcp/clients/${encodeURIComponent(c.client_id)}`);
          await loadMcpClients();
          say(`${c.name || c.client_id} is revoked.`);
        }));
      $('mcp-client-list').replaceChildren(...(list.length ? list.map((c) => el('li',
        { 'data-client': c.client_id },
        el('strong', { text: c.name || c.client_id }), ` (${c.scope}), allowed `, when(c.authorized_at), ' ',
        el('button', { type: 'button', class: 'secondary revoke', text: 'Revoke',
          'aria-label': `Revoke ${c.name || c.client_id}`, onclick: () => revoke(c) })))
        : [el('li', { text: 'None.' })]));
    });
  }

  /* ---- security activity ---------------------------------------------------- */

  const ACTIONS = {
    signin: 'Signed in', 'signin.refused': 'Sign-in refused', 'key.create': 'Key made',
    'key.reissue': 'Key reissued', 'key.delete': 'Key deleted', 'key.budget': 'Key budget set',
    'identity.link': 'Sign-in method linked', 'identity.unlink': 'Sign-in method unlinked',
    'oauth.authorize': 'Application allowed', 'oauth.revoke': 'Application revoked',
    'session.revoke_all': 'Every session ended', 'user.block': 'Account blocked',
    'user.unblock': 'Account unblocked',
  };

  /** One page of the activity (before: the id to page back from, or null: the newest). */
  function loadActivity(before = null) {
    return guarded('activity-error', async () => {
      const r = await api('GET', `/v1/account/activity${before ? `?before=${encodeURIComponent(before)}` : ''}`);
      const items = ((r && r.data) || []).map((a) => el('li', { 'data-action': a.action },
        el('strong', { text: ACTIONS[a.action] || a.action }),
        a.target_kind === 'key' && a.target_id ? ` (key ${a.target_id})` : null,
        a.target_kind !== 'key' && a.target_id ? ` (${a.target_id})` : null,
        a.actor === 'admin' ? ' by an administrator' : null, ', ', when(a.time),
        a.address ? ` from ${a.address}` : null));
      if (before) $('activity-list').append(...items);
      else $('activity-list').replaceChildren(...(items.length ? items : [el('li', { text: 'Nothing yet.' })]));
      const more = $('activity-more');
      more.hidden = !(r && r.next_before);
      more.onclick = () => loadActivity(r.next_before);
    });
  }

  /* ---- start ---------------------------------------------------------------- */

  function start() {
    $('key-create').addEventListener('submit', createKey);
    $('alert-form').addEventListener('submit', saveAlert);
    $('usage-form').addEventListener('submit', (ev) => { ev.preventDefault(); loadUsage(); });
    $('usage-days').addEventListener('change', loadUsage);
    $('usage-by').addEventListener('change', loadUsage);
    $('confirm-dialog').addEventListener('close', () => {
      const resolve = confirmResolve;
      confirmResolve = null;
      if (resolve) resolve($('confirm-dialog').returnValue === 'ok');
    });
    api('GET', '/v1/auth/session').then(showSignedIn).catch((e) => {
      if (!(e instanceof SignedOut)) say(e.message);
    });
  }

  start();
})();
