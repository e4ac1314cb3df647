// tests/clients/lib/upstream.js: what the client tests of the model's own
// upstream conditions share (issue 30: context overflow, throttling and
// overload keep their meaning through the service): the catalog models whose
// upstream names carry mockgw faults (tests/mockgw/README.md "Faults"), the
// ledger rows a test made, and a fetch that records when each attempt left
// (to see how long an SDK waited before it retried).

/** OpenAI-family public models → the mockgw upstream (the fault rides on the name). */
export const OPENAI_FAULTS = {
  'prov-ctx': 'mock-fault-overflow',
  'prov-ctx-midstream': 'mock-fault-error-event-overflow',
  'prov-429': 'mock-fault-429-2',
  'prov-429-once': 'mock-fault-first-1-fault-429-2',
  'prov-overloaded': 'mock-fault-overloaded',
};

/**
 * Messages-family public models → mockgw upstream (the context overflow is
 * MESSAGES_CATALOG's claude-overflow). first-1 counts per upstream name, so
 * each client that sees "once" gets a name of its own.
 */
export const MESSAGES_FAULTS = {
  'claude-overloaded': 'mock-claude-fault-overloaded',
  'claude-overflow-once': 'mock-claude-fault-first-1-fault-overflow',
  'claude-overloaded-once': 'mock-claude-fault-first-1-fault-overloaded',
  'claude-overloaded-once-0': 'mock-claude-0-fault-first-1-fault-overloaded',
  'claude-overloaded-once-1': 'mock-claude-1-fault-first-1-fault-overloaded',
};

/**
 * Seeds faults (public id → upstream) with one rate and returns the upstream
 * ids for startStack's `models` (what mockgw lists). family: 'openai' | 'anthropic'.
 */
export function seedFaults(stack, faults, family = 'openai') {
  for (const [id, upstream] of Object.entries(faults)) {
    stack.addModel(id, upstream, { rates: { input: '1', output: '1' },
      family: family === 'anthropic' ? 'anthropic' : null });
    if (family === 'anthropic') stack.ctl('model', 'set', id, '--messages', 'on');
  }
}

/** The ledger rows of userId, oldest first, from index `from` on. */
export function ledgerRows(stack, userId, from = 0) {
  return stack.sql(`SELECT request_id, transport, status, input_tokens, output_tokens,
      CAST(credits AS TEXT) AS credits, created_at FROM ledger WHERE user_id = ${Number(userId)}
      ORDER BY id`).slice(from);
}

/** A fetch for an SDK's `fetch` option that pushes Date.now() of each attempt onto times. */
export function timedFetch(times) {
  return (url, init) => {
    times.push(Date.now());
    return fetch(url, init);
  };
}
