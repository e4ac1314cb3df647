// web/budget.js: reading a budget field, which must never fail open. The
// field is text (an <input type=number> gives "" for what it cannot parse,
// and "" would mean "no budget"): empty is "no budget" only where the form
// says so (creating a key); removing a key's budget is its own confirmed
// action (keys.js). Decimals take a dot: "2,5" is an error, never 25 or 2.5
// read silently; at most six decimals (the API's precision).

/** {value: number} | {empty: true} | {error: text} for a budget field's text. */
export function parseBudget(text, { allowEmpty = false } = {}) {
  const t = String(text || '').trim();
  if (!t) {
    return allowEmpty ? { empty: true }
      : { error: 'Enter a number of credits, such as 5 or 2.5. To remove the budget, use “Remove budget”.' };
  }
  if (/^[0-9]*,[0-9]+$/.test(t)) return { error: `Use a dot for decimals: ${t.replace(',', '.')}, not ${t}.` };
  const m = /^([0-9]+)(?:\.([0-9]+))?$/.exec(t) || /^()\.([0-9]+)$/.exec(t);
  if (!m) return { error: 'The budget must be a number of credits, 0 or more, such as 5 or 2.5.' };
  if (m[2] && m[2].length > 6) return { error: 'A budget has at most six decimals.' };
  if ((m[1] || '').replace(/^0+/, '').length > 12) return { error: 'That budget is too large.' };
  return { value: Number(t) };
}

/** Shows msg as input's error (its own line, tied by aria-describedby), or clears it. */
export function fieldError(input, out, msg) {
  out.textContent = msg || '';
  if (msg) {
    input.setAttribute('aria-invalid', 'true');
    input.focus();
  } else {
    input.removeAttribute('aria-invalid');
  }
}
