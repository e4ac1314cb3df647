/* prov_secret.h: secrets. API keys, session and OAuth tokens are
 * random from OpenSSL, carry a fixed prefix, are shown once and are stored only
 * as SHA-256 hex digests; a short display prefix is all that is ever printed or
 * logged afterwards. */
#ifndef PROV_SECRET_H
#define PROV_SECRET_H

#include "prov_common.h"

#define PROV_SECRET_KEY_PREFIX      "sk-prov-"
#define PROV_SECRET_RANDOM_LEN  43   /* base64url of 32 random bytes */
#define PROV_SECRET_DISPLAY_LEN 12   /* prefix + 4 characters of the random part */

/* Makes a new key: secret (shown once), its hash (stored), its display prefix. */
apr_status_t prov_secret_generate(const char **secret, const char **hash_hex,
                                  const char **display, apr_pool_t *p);
/* Non-zero when s has the shape of one of our keys (prefix, length, alphabet). */
int prov_secret_wellformed(const char *s);
/* Lower-case hex SHA-256 of s (64 characters). */
const char *prov_secret_hash(const char *s, apr_pool_t *p);
/* The display prefix of a secret: safe to print and log. */
const char *prov_secret_display(const char *secret, apr_pool_t *p);
/* The secret's last four characters, shown after the display prefix. */
const char *prov_secret_last4(const char *secret, apr_pool_t *p);
/* Fills buf with n random bytes from OpenSSL; APR_EGENERAL if it fails. */
apr_status_t prov_secret_bytes(unsigned char *buf, apr_size_t n);
/* base64url without padding of n random bytes. */
apr_status_t prov_secret_token(const char **out, apr_size_t n, apr_pool_t *p);
/* A request id: "req_", the time in microseconds as 13 hex digits, then 12
 * random base64url characters. Ids sort by time, so the ledger's unique
 * index on them grows at its end instead of at a random page per request. */
apr_status_t prov_secret_request_id(const char **out, apr_int64_t usec, apr_pool_t *p);

#endif
