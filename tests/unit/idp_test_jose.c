/* idp_test_jose.c: the identity suites' own signer (idp_test_jose.h), on
 * cjose. The keys live for the whole run (making RSA keys takes time);
 * every other cjose object is released before returning. */
#include <stdarg.h>
#include <string.h>
#include <CUnit/CUnit.h>
#include "idp_test_jose.h"
#include "prov_signin_int.h"

static jt_keys_t keys;

static cjose_jwk_t *with_kid(cjose_jwk_t *k, const char *kid)
{
    cjose_err err;
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    CU_ASSERT_TRUE_FATAL(cjose_jwk_set_kid(k, kid, strlen(kid), &err));
    return k;
}

const jt_keys_t *jt_keys(void)
{
    cjose_err err;
    if (!keys.rsa1) {
        keys.rsa1 = with_kid(cjose_jwk_create_RSA_random(2048, NULL, 0, &err), "rsa-1");
        keys.rsa2 = with_kid(cjose_jwk_create_RSA_random(2048, NULL, 0, &err), "rsa-2");
        keys.ec1 = with_kid(cjose_jwk_create_EC_random(CJOSE_JWK_EC_P_256, &err), "ec-1");
        keys.ec384 = with_kid(cjose_jwk_create_EC_random(CJOSE_JWK_EC_P_384, &err), "ec-384");
    }
    return &keys;
}

const char *jt_public(const cjose_jwk_t *k, const char *extra, apr_pool_t *p)
{
    cjose_err err;
    char *js = cjose_jwk_to_json(k, false, &err);
    const char *out;
    CU_ASSERT_PTR_NOT_NULL_FATAL(js);
    out = extra ? apr_psprintf(p, "{%s,%s", extra, js + 1) : apr_pstrdup(p, js);
    cjose_get_dealloc()(js);
    return out;
}

const char *jt_jwks(apr_pool_t *p, int n, ...)
{
    const char *out = "{\"keys\":[";
    va_list ap;
    int i;
    va_start(ap, n);
    for (i = 0; i < n; i++)
        out = apr_pstrcat(p, out, i ? "," : "", jt_public(va_arg(ap, const cjose_jwk_t *), NULL,
                                                          p), NULL);
    va_end(ap);
    return apr_pstrcat(p, out, "]}", NULL);
}

const char *jt_sign(const cjose_jwk_t *k, const char *alg, const char *kid, const char *crit,
                    const char *payload, apr_pool_t *p)
{
    cjose_err err;
    cjose_header_t *h = cjose_header_new(&err);
    cjose_jws_t *jws;
    const char *ser = NULL, *out;
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    CU_ASSERT_TRUE_FATAL(cjose_header_set(h, CJOSE_HDR_ALG, alg, &err));
    if (kid)
        CU_ASSERT_TRUE_FATAL(cjose_header_set(h, CJOSE_HDR_KID, kid, &err));
    if (crit)
        CU_ASSERT_TRUE_FATAL(cjose_header_set_raw(h, "crit", crit, &err));
    jws = cjose_jws_sign(k, h, (const uint8_t *)payload, strlen(payload), &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(jws);
    CU_ASSERT_TRUE_FATAL(cjose_jws_export(jws, &ser, &err));
    out = apr_pstrdup(p, ser);
    cjose_jws_release(jws);
    cjose_header_release(h);
    return out;
}

const char *jt_b64(const char *s, apr_pool_t *p)
{
    return prov_signin_b64url((const unsigned char *)s, strlen(s), p);
}

const char *jt_raw(const char *header, const char *payload, const char *sig, apr_pool_t *p)
{
    return apr_pstrcat(p, jt_b64(header, p), ".", jt_b64(payload, p), ".", sig, NULL);
}

const char *jt_hmac_with_public(const cjose_jwk_t *k, const char *kid, const char *payload,
                                apr_pool_t *p)
{
    cjose_err err;
    const char *secret = jt_public(k, NULL, p), *out;
    cjose_jwk_t *oct = cjose_jwk_create_oct_spec((const uint8_t *)secret, strlen(secret), &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(oct);
    out = jt_sign(oct, "HS256", kid, NULL, payload, p);
    cjose_jwk_release(oct);
    return out;
}
