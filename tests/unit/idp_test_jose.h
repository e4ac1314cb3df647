/* idp_test_jose.h: what the identity suites sign their own tokens with:
 * RSA and EC keys made once per run with cjose, their public JWKS, JWS in
 * compact form with any header, and the forgeries a verifier must refuse
 * (alg none, an HMAC keyed with the RSA public key). */
#ifndef IDP_TEST_JOSE_H
#define IDP_TEST_JOSE_H

#include <cjose/cjose.h>
#include "prov_common.h"

typedef struct jt_keys_t {
    cjose_jwk_t *rsa1;           /* kid "rsa-1", in the usual JWKS */
    cjose_jwk_t *rsa2;           /* kid "rsa-2", not in it */
    cjose_jwk_t *ec1;            /* P-256, kid "ec-1", in it */
    cjose_jwk_t *ec384;          /* P-384, kid "ec-384", in it */
} jt_keys_t;

/* The run's keys, made on first use. */
const jt_keys_t *jt_keys(void);
/* {"keys":[...]} of the given public keys (n of them). */
const char *jt_jwks(apr_pool_t *p, int n, ...);
/* A key's public JWK as JSON, with extra members spliced in (may be NULL:
 * e.g. "\"use\":\"enc\""). */
const char *jt_public(const cjose_jwk_t *k, const char *extra, apr_pool_t *p);
/* payload signed by k with alg; kid NULL: no kid header; crit non-NULL: a
 * crit header with that raw JSON value. */
const char *jt_sign(const cjose_jwk_t *k, const char *alg, const char *kid, const char *crit,
                    const char *payload, apr_pool_t *p);
/* header.payload.signature from raw header JSON, payload and the
 * signature's base64url text (may be ""). */
const char *jt_raw(const char *header, const char *payload, const char *sig, apr_pool_t *p);
/* An HS256 token whose HMAC key is the public JWK text of k. */
const char *jt_hmac_with_public(const cjose_jwk_t *k, const char *kid, const char *payload,
                                apr_pool_t *p);
/* base64url of a string. */
const char *jt_b64(const char *s, apr_pool_t *p);

#endif
