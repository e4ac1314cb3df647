// web/api.js: the cabinet's one way to the JSON API. Every request is
// same-origin with the session's cookies (HttpOnly: no script sees them). A
// 401 anywhere means the session ended: the page's handler (app.js) shows
// the sign-in view with the reason, and the action's caller gets SignedOut.
// Errors carry the API's own code and message; a network failure or a 5xx
// is marked retryable, which the sections show with a Retry button.

export class SignedOut extends Error {}

export class ApiError extends Error {
  constructor(status, code, message, param) {
    super(message);
    this.status = status;
    this.code = code;
    this.param = param || null;
    this.retryable = status === 0 || status >= 500;
  }
}

let onSignedOut = () => {};

/** Who hears of a 401 (app.js: the sign-in view, with why). */
export function whenSignedOut(fn) {
  onSignedOut = fn;
}

/** One JSON request; resolves to the parsed answer (null for 204). */
export async function api(method, path, body) {
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
    throw new ApiError(0, 'NETWORK', 'The service cannot be reached: check your connection, then try again.');
  }
  if (r.status === 401) {
    onSignedOut('expired');
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
    const id = r.headers.get('x-request-id');
    const msg = e.message || `The service answered ${r.status}.`;
    throw new ApiError(r.status, e.code || null, r.status >= 500 && id ? `${msg} (request ${id})` : msg, e.param);
  }
  return data;
}
