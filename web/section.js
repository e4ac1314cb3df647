// web/section.js: how a section of the cabinet loads. Each section NAME has
// #NAME-body (what it shows) and #NAME-error (why it could not): while it
// loads the body is marked busy and says so; a failure says which section
// failed with a Retry button for it (the reason once, at the top, when
// several fail alike: app.js); a 401 is the sign-in view's, not an error.
import { $, el } from './dom.js';
import { SignedOut } from './api.js';

const loaders = new Map();   // name -> the section's loader

/** Registers a section's loader (an async function that fills #NAME-body). */
export function section(name, title, fn) {
  loaders.set(name, { title, fn });
  return () => load(name);
}

/** Loads one section; resolves to null, or the error it failed with. */
export async function load(name) {
  const s = loaders.get(name);
  const body = $(`${name}-body`);
  const out = $(`${name}-error`);
  out.replaceChildren();
  body.setAttribute('aria-busy', 'true');
  if (!body.childElementCount) body.replaceChildren(el('p', { class: 'note loading', text: 'Loading…' }));
  try {
    await s.fn();
    return null;
  } catch (e) {
    if (e instanceof SignedOut) return null;
    body.querySelector(':scope > .loading')?.remove();
    out.replaceChildren(el('span', { text: `${s.title} could not be loaded: ${e.message || e}` }), ' ',
      el('button', { type: 'button', class: 'secondary retry', text: 'Retry', 'aria-label': `Retry: ${s.title}`,
        onclick: () => load(name) }));
    return e;
  } finally {
    body.removeAttribute('aria-busy');
  }
}

/** Loads every section at once; resolves to [{name, title, error}] of those that failed. */
export async function loadAll() {
  const names = [...loaders.keys()];
  const errors = await Promise.all(names.map(load));
  return names.map((name, i) => ({ name, title: loaders.get(name).title, error: errors[i] }))
    .filter((f) => f.error);
}

export const sectionNames = () => [...loaders.keys()];
