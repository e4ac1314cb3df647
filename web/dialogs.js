// web/dialogs.js: the two modal dialogs. A new key's secret is shown once,
// with ready-to-paste setup lines and links to the setup guides; it lives
// only in a local variable and the dialog's DOM, both dropped the moment
// the dialog closes (never in storage, cookies or the page afterwards).
// confirmAction asks before anything that cannot be undone.
import { $, el } from './dom.js';

/** Copies text; when the browser refuses, selects node so the user can copy it by hand. */
async function copyText(text, node, out) {
  try {
    await navigator.clipboard.writeText(text);
    out.textContent = 'Copied to the clipboard.';
  } catch {
    const range = document.createRange();
    range.selectNodeContents(node);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    out.textContent = 'Copying is not allowed here: the text is selected, copy it by hand.';
  }
}

/** Shows a new secret once; resolves after the dialog closed (the secret gone from the page). */
export function showSecret(keyName, secretValue) {
  let secret = secretValue;
  const dialog = $('secret-dialog');
  const slot = $('secret-slot');
  const base = `${location.origin}/v1`;
  const code = el('code', { id: 'secret-value', class: 'secret', text: secret });
  const copied = el('span', { id: 'secret-copied', role: 'status' });
  const snippet = el('pre', { id: 'secret-snippet', class: 'snippet' },
    el('code', { text: `export OPENAI_BASE_URL=${base}\nexport OPENAI_API_KEY=${secret}\n`
      + `export ANTHROPIC_BASE_URL=${location.origin}\nexport ANTHROPIC_AUTH_TOKEN=${secret}` }));
  const snippetCopied = el('span', { id: 'snippet-copied', role: 'status' });
  slot.replaceChildren(
    el('p', { text: `The key ${keyName}:` }), code,
    el('p', { class: 'button-row' },
      el('button', { type: 'button', id: 'secret-copy', text: 'Copy the key', onclick: () => copyText(secret, code, copied) }),
      copied),
    el('h3', { text: 'Use it' }),
    el('p', { class: 'note', text: 'For OpenAI-style clients and Codex (first two lines), or Claude Code (last two):' }),
    snippet,
    el('p', { class: 'button-row' },
      el('button', { type: 'button', class: 'secondary', id: 'snippet-copy', text: 'Copy these lines',
        onclick: () => copyText(snippet.textContent, snippet, snippetCopied) }), snippetCopied),
    el('p', {}, 'Setup guides: ', el('a', { href: '/docs/claude-code', text: 'Claude Code' }), ', ',
      el('a', { href: '/docs/codex', text: 'Codex' }), ', ', el('a', { href: '/docs/chat', text: 'the Chat Completions API' }), '.'));
  return new Promise((resolve) => {
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
    // resolved once closed: the dialog has given focus back by then, and
    // the caller may move it on
    dialog.addEventListener('close', () => resolve(), { once: true });
    $('secret-done').addEventListener('click', forget);
    dialog.addEventListener('cancel', forget);
    dialog.addEventListener('close', forget);
    dialog.showModal();
    $('secret-copy').focus();
  });
}

let confirmResolve = null;

/** Asks text with an OK button labelled ok; resolves true when confirmed. */
export function confirmAction(text, ok) {
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

export function closeDialogs() {
  for (const id of ['secret-dialog', 'confirm-dialog']) if ($(id).open) $(id).close();
}

export function startDialogs() {
  $('confirm-dialog').addEventListener('close', () => {
    const resolve = confirmResolve;
    confirmResolve = null;
    if (resolve) resolve($('confirm-dialog').returnValue === 'ok');
  });
}
