/* prov_jwt.h: an OpenID Connect id_token checked in full. The signature
 * (a JWS in compact form) against a JWKS with cjose: only the asymmetric
 * algorithms RS256/384/512, PS256/384/512 and ES256/384/512 are taken, each
 * with a key of its own type (and curve), so "alg":"none" and an HMAC made
 * with a public key as its secret are refused; a "crit" header is refused.
 * Then the claims (OpenID Connect Core 3.1.3.7): iss exactly the issuer,
 * aud holding the client id, azp the client id where present and required
 * with several audiences, exp and iat (and nbf) within PROV_JWT_LEEWAY
 * seconds, the nonce of the request, a subject. cjose's and jansson's types
 * stay in prov_jwt.c; the claims come back as json-c. Refusals come with a
 * short reason for the log that never quotes the token. */
#ifndef PROV_JWT_H
#define PROV_JWT_H

#include "prov_common.h"
#include <json-c/json.h>

#define PROV_JWT_LEEWAY     60        /* seconds of clock difference allowed */
#define PROV_JWT_MAX        16384     /* longest token looked at */
#define PROV_JWT_SUBJECT_MAX 255

/* Verifies compact's signature with a key of jwks (JWKS JSON text). On
 * success *claims is the payload, a JSON object owned by p. APR_ENOENT when
 * jwks has no key that the token names (its kid; with no kid, none of the
 * algorithm's type): the caller may fetch the JWKS again once. APR_EINVAL
 * with *why for every other refusal. */
apr_status_t prov_jwt_verify(json_object **claims, const char **why, const char *compact,
                             const char *jwks, apr_pool_t *p);

/* The claims' checks; APR_EINVAL with *why on the first that fails. */
apr_status_t prov_jwt_check_claims(const char **why, json_object *claims, const char *issuer,
                                   const char *client_id, const char *nonce, apr_int64_t now);

#endif
