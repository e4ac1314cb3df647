// tests/integration/lib/openapi.js: the server's answers checked against the
// OpenAPI description it serves at /v1/docs (docs/site/openapi.json), with
// ajv's JSON Schema 2020-12 (OpenAPI 3.1's dialect) and its formats: used by
// docs.test.js (the transports, the catalog) and docs-cabinet.test.js (the
// cabinet API, signed in). And the one list of what the description names
// before main serves it.

import assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

// Documented ahead of the branches that serve them. The lead empties these
// as the branches land: a path or code listed here that main serves (or has
// in its table) fails docs.test.js, so that nothing stays pending by
// mistake; the docs' examples that call a pending path are not run.
export const PENDING_PATHS = [];
export const PENDING_CODES = [];

/**
 * A checker of the server's answers against doc's schemas:
 * check(url, init, status, { template, fetcher, ctype }) fetches url (with
 * fetcher, e.g. a signed-in cookie jar's), asserts the status and validates
 * the JSON body against the response doc gives for template (the documented
 * path, default url) and the method; returns the body (null for none).
 */
export function answerChecker(doc, base) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi');
  const ptr = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');
  return async (url, init, status, { template = url, fetcher = fetch, ctype = 'application/json' } = {}) => {
    const r = await fetcher(`${base}${url}`, init);
    const text = await r.text();
    assert.equal(r.status, status, `${url}: ${text}`);
    const method = (init?.method || 'GET').toLowerCase();
    let at = `/paths/${ptr(template)}/${method}/responses/${status}`;
    let resp = doc.paths[template]?.[method]?.responses[String(status)];
    assert.ok(resp, `${method} ${template} documents no ${status}`);
    if (resp.$ref) {
      at = resp.$ref.slice(1);
      resp = at.split('/').slice(1).reduce((x, k) => x[k.replace(/~1/g, '/')], doc);
    }
    if (!resp.content) {
      assert.equal(text, '', `${method} ${template} ${status} documents no body`);
      return null;
    }
    assert.ok(resp.content[ctype], `${method} ${template} ${status}: no ${ctype}`);
    const body = JSON.parse(text);
    const validate = ajv.getSchema(`openapi#${at}/content/${ptr(ctype)}/schema`);
    assert.ok(validate(body), `${method} ${template} ${status}: ${JSON.stringify(validate.errors)}\n${text}`);
    return body;
  };
}
