/* prov_signin_int.h: what the files of core/identity share (core/oauth,
 * above, borrows the encoders and the S256 challenge): the shape of their random tokens, base64url, form encoding,
 * the PKCE S256 challenge, and the seal that keeps a pre-login record's
 * secrets (PKCE verifier, nonce) unreadable to anyone who lacks both the
 * state (in the callback URL) and the browser's binding cookie. */
#ifndef PROV_SIGNIN_INT_H
#define PROV_SIGNIN_INT_H

#include "prov_common.h"

/* Non-zero when t has the shape of a 256-bit token of ours (43 base64url
 * characters): anything else is refused before it is hashed and looked up. */
int prov_signin_token_ok(const char *t);
/* base64url without padding. */
const char *prov_signin_b64url(const unsigned char *buf, apr_size_t n, apr_pool_t *p);
/* application/x-www-form-urlencoded (RFC 3986 unreserved kept, the rest %XX). */
const char *prov_signin_urlencode(const char *s, apr_pool_t *p);
/* The S256 code challenge of a verifier: base64url(SHA-256(verifier)). */
const char *prov_signin_challenge(const char *verifier, apr_pool_t *p);

/* AES-256-GCM of plain under a key derived from state and binding
 * (HMAC-SHA-256, binding as the key), aad authenticated with it;
 * base64url(iv | ciphertext | tag). */
apr_status_t prov_signin_seal(const char **sealed, const char *state, const char *binding,
                              const char *aad, const char *plain, apr_pool_t *p);
/* The reverse; APR_EINVAL when the key or the aad is not the sealing one
 * or the text was changed. */
apr_status_t prov_signin_unseal(const char **plain, const char *state, const char *binding,
                                const char *aad, const char *sealed, apr_pool_t *p);

#endif
