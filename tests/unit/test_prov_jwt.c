/* test_prov_jwt.c: unit tests of id_token verification
 * (core/identity/prov_jwt.c) with tokens the test signs itself
 * (idp_test_jose.c): RS256, PS256, ES256 and ES384 accepted with their
 * keys, with or without a kid; refused: alg none, HS256 keyed with the
 * public key, HS256 with a symmetric key in the JWKS, a signature by
 * another key, a payload changed after signing, an unknown kid (APR_ENOENT,
 * for the caller's one refresh), a key of the wrong type or curve or marked
 * for another use or alg or holding private parts, a crit header, an EC
 * signature of the wrong length, malformed tokens and JWKS (base64
 * segments of impossible lengths: test_prov_fuzz_findings.c). Then every claim rule: iss exactly,
 * aud and azp, exp and iat and nbf with the leeway, the nonce, the sub. */
#include <string.h>
#include "unit_tests.h"
#include "idp_test_jose.h"
#include "prov_jwt.h"
#include "prov_json.h"

#define NOW APR_INT64_C(1800000000)
#define PAYLOAD_BODY "\"iss\":\"https://id.example\",\"sub\":\"u-1\",\"aud\":\"cid\"," \
                     "\"exp\":1800000300,\"iat\":1800000000,\"nonce\":\"n-1\""
#define PAYLOAD "{" PAYLOAD_BODY "}"

/* Verifies tok against jwks; returns the status, *why for a refusal. */
static apr_status_t verify(const char *tok, const char *jwks, const char **why, apr_pool_t *p)
{
    json_object *claims = NULL;
    apr_status_t rv;
    *why = NULL;
    rv = prov_jwt_verify(&claims, why, tok, jwks, p);
    if (rv == APR_SUCCESS) {
        CU_ASSERT_PTR_NOT_NULL(claims);
        CU_ASSERT_STRING_EQUAL(prov_json_get_str(claims, "sub"), "u-1");
    }
    else {
        CU_ASSERT_PTR_NOT_NULL(*why);
    }
    return rv;
}

static void refused_because(const char *tok, const char *jwks, const char *want, apr_pool_t *p)
{
    const char *why = NULL;
    CU_ASSERT_EQUAL(verify(tok, jwks, &why, p), APR_EINVAL);
    if (why && !strstr(why, want))
        fprintf(stderr, "\n  refused for \"%s\", expected \"%s\"\n", why, want);
    CU_ASSERT_PTR_NOT_NULL(why ? strstr(why, want) : NULL);
}

static void test_accepted(void)
{
    apr_pool_t *p;
    const jt_keys_t *k = jt_keys();
    const char *jwks, *why;
    apr_pool_create(&p, prov_test_pool());
    jwks = jt_jwks(p, 3, k->rsa1, k->ec1, k->ec384);
    CU_ASSERT_EQUAL(verify(jt_sign(k->rsa1, "RS256", "rsa-1", NULL, PAYLOAD, p), jwks, &why, p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(verify(jt_sign(k->rsa1, "PS256", "rsa-1", NULL, PAYLOAD, p), jwks, &why, p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(verify(jt_sign(k->rsa1, "RS512", "rsa-1", NULL, PAYLOAD, p), jwks, &why, p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(verify(jt_sign(k->ec1, "ES256", "ec-1", NULL, PAYLOAD, p), jwks, &why, p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(verify(jt_sign(k->ec384, "ES384", "ec-384", NULL, PAYLOAD, p), jwks, &why,
                           p), APR_SUCCESS);
    /* no kid: the keys that fit the alg are tried */
    CU_ASSERT_EQUAL(verify(jt_sign(k->rsa1, "RS256", NULL, NULL, PAYLOAD, p), jwks, &why, p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(verify(jt_sign(k->ec1, "ES256", NULL, NULL, PAYLOAD, p), jwks, &why, p),
                    APR_SUCCESS);
    /* a key that names its use and alg, when they are these */
    jwks = apr_psprintf(p, "{\"keys\":[%s]}",
                        jt_public(k->rsa1, "\"use\":\"sig\",\"alg\":\"RS256\"", p));
    CU_ASSERT_EQUAL(verify(jt_sign(k->rsa1, "RS256", "rsa-1", NULL, PAYLOAD, p), jwks, &why, p),
                    APR_SUCCESS);
    apr_pool_destroy(p);
}

static void test_forgeries(void)
{
    apr_pool_t *p;
    const jt_keys_t *k = jt_keys();
    const char *jwks, *tok, *why, *dot;
    apr_pool_create(&p, prov_test_pool());
    jwks = jt_jwks(p, 2, k->rsa1, k->ec1);
    /* alg none, with and without a signature segment */
    refused_because(jt_raw("{\"alg\":\"none\",\"kid\":\"rsa-1\"}", PAYLOAD, "", p), jwks,
                    "not a signed JWT", p);
    refused_because(jt_raw("{\"alg\":\"none\",\"kid\":\"rsa-1\"}", PAYLOAD, "c2ln", p), jwks,
                    "alg is none", p);
    refused_because(jt_raw("{\"alg\":\"None\"}", PAYLOAD, "c2ln", p), jwks, "not one we take",
                    p);
    refused_because(jt_raw("{\"kid\":\"rsa-1\"}", PAYLOAD, "c2ln", p), jwks, "no alg", p);
    /* HMAC with the RSA public key as its secret */
    refused_because(jt_hmac_with_public(k->rsa1, "rsa-1", PAYLOAD, p), jwks, "HMAC", p);
    /* HMAC with a symmetric key that the JWKS carries */
    {
        cjose_err err;
        cjose_jwk_t *oct = cjose_jwk_create_oct_spec((const uint8_t *)"0123456789abcdef"
                                                     "0123456789abcdef", 32, &err);
        const char *with_oct = apr_psprintf(p, "{\"keys\":[%s,%s]}", jt_public(oct, NULL, p),
                                            jt_public(k->rsa1, NULL, p));
        refused_because(jt_sign(oct, "HS256", NULL, NULL, PAYLOAD, p), with_oct, "HMAC", p);
        cjose_jwk_release(oct);
    }
    /* signed by another key under our kid; a payload changed after signing */
    refused_because(jt_sign(k->rsa2, "RS256", "rsa-1", NULL, PAYLOAD, p), jwks,
                    "does not verify", p);
    refused_because(jt_sign(k->rsa2, "RS256", NULL, NULL, PAYLOAD, p), jwks, "does not verify",
                    p);
    tok = jt_sign(k->rsa1, "RS256", "rsa-1", NULL, PAYLOAD, p);
    dot = strrchr(tok, '.');
    refused_because(apr_pstrcat(p, apr_pstrndup(p, tok, (apr_size_t)(strchr(tok, '.') - tok)),
                                ".", jt_b64("{\"iss\":\"https://id.example\",\"sub\":\"admin\"}",
                                            p), dot, NULL), jwks, "does not verify", p);
    /* an unknown kid: APR_ENOENT, so that the caller fetches the JWKS once */
    CU_ASSERT_EQUAL(verify(jt_sign(k->rsa2, "RS256", "rsa-2", NULL, PAYLOAD, p), jwks, &why, p),
                    APR_ENOENT);
    CU_ASSERT_EQUAL(verify(jt_sign(k->ec384, "ES384", NULL, NULL, PAYLOAD, p), jwks, &why, p),
                    APR_ENOENT);
    CU_ASSERT_EQUAL(verify(jt_sign(k->rsa1, "RS256", "rsa-1", NULL, PAYLOAD, p),
                           "{\"keys\":[]}", &why, p), APR_ENOENT);
    apr_pool_destroy(p);
}

static void test_key_rules(void)
{
    apr_pool_t *p;
    const jt_keys_t *k = jt_keys();
    const char *tok, *ec, *jwks;
    apr_pool_create(&p, prov_test_pool());
    tok = jt_sign(k->rsa1, "RS256", "rsa-1", NULL, PAYLOAD, p);
    /* the key the kid names is for encryption, or for another alg */
    refused_because(tok, apr_psprintf(p, "{\"keys\":[%s]}",
                                      jt_public(k->rsa1, "\"use\":\"enc\"", p)),
                    "does not fit", p);
    refused_because(tok, apr_psprintf(p, "{\"keys\":[%s]}",
                                      jt_public(k->rsa1, "\"alg\":\"RS384\"", p)),
                    "does not fit", p);
    /* an EC token naming an RSA key; a P-384 key for ES256 */
    jwks = jt_jwks(p, 3, k->rsa1, k->ec1, k->ec384);
    refused_because(jt_sign(k->ec1, "ES256", "rsa-1", NULL, PAYLOAD, p), jwks, "does not fit",
                    p);
    refused_because(jt_sign(k->ec1, "ES256", "ec-384", NULL, PAYLOAD, p), jwks, "does not fit",
                    p);
    /* ES384 in the header over an ES256 signature */
    ec = jt_sign(k->ec1, "ES256", "ec-384", NULL, PAYLOAD, p);
    refused_because(apr_pstrcat(p, jt_b64("{\"alg\":\"ES384\",\"kid\":\"ec-384\"}", p),
                                strchr(ec, '.'), NULL), jwks, "wrong length", p);
    /* a key with private parts is not one to trust */
    refused_because(tok, apr_psprintf(p, "{\"keys\":[%s]}",
                                      jt_public(k->rsa1, "\"d\":\"AAAA\"", p)),
                    "does not fit", p);
    /* crit: no extension is understood */
    refused_because(jt_sign(k->rsa1, "RS256", "rsa-1", "[\"exp\"]", PAYLOAD, p), jwks,
                    "crit", p);
    apr_pool_destroy(p);
}

static void test_malformed(void)
{
    apr_pool_t *p;
    const jt_keys_t *k = jt_keys();
    const char *tok, *jwks;
    char *big;
    apr_pool_create(&p, prov_test_pool());
    jwks = jt_jwks(p, 1, k->rsa1);
    tok = jt_sign(k->rsa1, "RS256", "rsa-1", NULL, PAYLOAD, p);
    refused_because("", jwks, "compact", p);
    refused_because("abc.def", jwks, "compact", p);
    refused_because(apr_pstrcat(p, tok, ".x", NULL), jwks, "compact", p);
    refused_because(apr_pstrcat(p, tok, "=", NULL), jwks, "compact", p);
    refused_because(apr_pstrcat(p, jt_b64("not json", p), strchr(tok, '.'), NULL), jwks,
                    "compact", p);
    refused_because(apr_pstrcat(p, jt_b64("[\"RS256\"]", p), strchr(tok, '.'), NULL), jwks,
                    "compact", p);
    big = apr_palloc(p, PROV_JWT_MAX + 2);
    memset(big, 'a', PROV_JWT_MAX + 1);
    big[PROV_JWT_MAX + 1] = '\0';
    refused_because(apr_pstrcat(p, tok, big, NULL), jwks, "compact", p);
    refused_because(apr_pstrcat(p, tok, "AAAA", NULL), jwks, "does not verify", p);
    refused_because(tok, "{\"keys\":{}}", "JWKS", p);
    refused_because(tok, "not json", "JWKS", p);
    /* a payload that is not an object, properly signed */
    refused_because(jt_sign(k->rsa1, "RS256", "rsa-1", NULL, "[1,2]", p), jwks, "payload", p);
    apr_pool_destroy(p);
}

/* The claims of PAYLOAD with members replaced or added (json-c keeps the
 * last member of a name). */
static apr_status_t claims_check(const char *extra, const char *nonce, const char **why,
                                 apr_pool_t *p)
{
    const char *err = NULL;
    const char *js = extra ? apr_psprintf(p, "{%s,%s}", PAYLOAD_BODY, extra) : PAYLOAD;
    json_object *c = prov_json_parse(js, strlen(js), &err, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    *why = NULL;
    return prov_jwt_check_claims(why, c, "https://id.example", "cid", nonce, NOW);
}

static void claim_refused(const char *extra, const char *want, apr_pool_t *p)
{
    const char *why = NULL;
    CU_ASSERT_EQUAL(claims_check(extra, "n-1", &why, p), APR_EINVAL);
    if (!why || !strstr(why, want))
        fprintf(stderr, "\n  claims %s: \"%s\", expected \"%s\"\n", extra, why ? why : "",
                want);
    CU_ASSERT_PTR_NOT_NULL(why ? strstr(why, want) : NULL);
}

static void claim_taken(const char *extra, apr_pool_t *p)
{
    const char *why = NULL;
    CU_ASSERT_EQUAL(claims_check(extra, "n-1", &why, p), APR_SUCCESS);
    if (why)
        fprintf(stderr, "\n  claims %s refused: %s\n", extra ? extra : "", why);
}

static void test_claims(void)
{
    apr_pool_t *p;
    const char *why = NULL;
    apr_pool_create(&p, prov_test_pool());
    claim_taken(NULL, p);
    claim_refused("\"iss\":\"https://id.example/\"", "iss", p);
    claim_refused("\"iss\":\"https://evil.example\"", "iss", p);
    claim_refused("\"iss\":null", "iss", p);
    /* aud and azp */
    claim_refused("\"aud\":\"other\"", "aud", p);
    claim_refused("\"aud\":[\"other\"]", "aud", p);
    claim_refused("\"aud\":7", "aud", p);
    claim_taken("\"aud\":[\"cid\"]", p);
    claim_refused("\"aud\":[\"cid\",\"other\"]", "no azp", p);
    claim_taken("\"aud\":[\"cid\",\"other\"],\"azp\":\"cid\"", p);
    claim_refused("\"aud\":[\"cid\",\"other\"],\"azp\":\"other\"", "azp", p);
    claim_refused("\"azp\":\"other\"", "azp", p);
    claim_refused("\"azp\":null", "azp", p);
    /* times, with 60 s of leeway */
    claim_taken("\"exp\":1799999950", p);
    claim_refused("\"exp\":1799999940", "expired", p);
    claim_refused("\"exp\":\"1800000300\"", "not a number", p);
    claim_taken("\"exp\":1.8000003e9", p);
    claim_taken("\"exp\":1e300", p);
    claim_taken("\"exp\":9223372036854775807", p);
    claim_taken("\"iat\":1800000060", p);
    claim_refused("\"iat\":1800000061", "time to come", p);
    claim_refused("\"nbf\":1800000100", "time to come", p);
    claim_taken("\"nbf\":1800000000", p);
    /* the nonce and the subject */
    claim_refused("\"nonce\":\"n-2\"", "nonce", p);
    claim_refused("\"nonce\":1", "nonce", p);
    CU_ASSERT_EQUAL(claims_check(NULL, NULL, &why, p), APR_EINVAL);
    claim_refused("\"sub\":\"\"", "sub", p);
    claim_refused("\"sub\":42", "sub", p);
    claim_refused(apr_psprintf(p, "\"sub\":\"%0256d\"", 1), "sub", p);
    claim_taken(apr_psprintf(p, "\"sub\":\"%0255d\"", 1), p);
    {
        const char *err = NULL, *js = "{\"iss\":\"https://id.example\",\"aud\":\"cid\","
                                      "\"iat\":1800000000,\"nonce\":\"n-1\",\"sub\":\"s\"}";
        json_object *c = prov_json_parse(js, strlen(js), &err, p);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_EQUAL(prov_jwt_check_claims(&why, c, "https://id.example", "cid", "n-1", NOW),
                        APR_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, "exp"));
    }
    apr_pool_destroy(p);
}

void prov_test_suite_jwt(void)
{
    PROV_SUITE("jwt",
               PROV_TEST(test_accepted),
               PROV_TEST(test_forgeries),
               PROV_TEST(test_key_rules),
               PROV_TEST(test_malformed),
               PROV_TEST(test_claims));
}
