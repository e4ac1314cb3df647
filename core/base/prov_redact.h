/* prov_redact.h: text from outside the server (a gateway's error message)
 * made fit for a log line. Secrets are masked, control characters become
 * spaces (no forged log lines) and the length is bounded. Masked are: the
 * literal secrets the caller names (the gateway's URL, the host:port in it,
 * the service token), every URL (scheme://...), the credential after
 * "Bearer" or "Basic", the value after a credential-like name followed by
 * ':' or '=' (Authorization, x-api-key, api_key, token, password, secret...),
 * keys of the "sk-" family, and any long token-like run of characters
 * (32 or more letters, digits, '-', '_', '+', '=' holding both a letter and
 * a digit). The masks read "[redacted]" and, for a URL, "[url]". */
#ifndef PROV_REDACT_H
#define PROV_REDACT_H

#include "prov_common.h"

#define PROV_REDACT_MASK "[redacted]"
#define PROV_REDACT_URL  "[url]"

typedef struct prov_redactor_t prov_redactor_t;

/* A redactor for the NULL-terminated list of literal secrets (NULL: none;
 * entries that are NULL, or shorter than 4 characters, are skipped). For a
 * secret that is a URL, its host[:port] is masked too. Lives in p. */
prov_redactor_t *prov_redactor_create(const char *const *secrets, apr_pool_t *p);

/* text[0, len) with the secrets masked, control characters as spaces, cut
 * to at most max bytes (then ending in "...", never inside a UTF-8
 * character). rd may be NULL: the generic rules only. Never NULL. */
const char *prov_redact(const prov_redactor_t *rd, const char *text, apr_size_t len,
                        apr_size_t max, apr_pool_t *p);

#endif
