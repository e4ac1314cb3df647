/* fuzz_id_token.c: libFuzzer harness of what core/identity reads from an
 * identity provider or a browser: id_token verification against a JWKS
 * (core/identity/prov_jwt.c, with cjose), the claims' checks, and the
 * opening of a pre-login record's seal (prov_signin_util.c). The first byte
 * picks the target; the rest is "token\njwks", claims JSON, or
 * "state\nbinding\naad\nsealed". Checked besides memory safety: a verified
 * token's claims are a JSON object; claims that pass name the issuer, the
 * client and the nonce given, and a subject of 1 to 255 bytes; a record
 * opens only with its own state, binding and aad (sealed again here). */
#include "fuzz_common.h"
#include "prov_jwt.h"
#include "prov_signin_int.h"

#define ISSUER "https://id.example"
#define CLIENT "cid"
#define NONCE  "n-1"
#define NOW    APR_INT64_C(1800000000)

/* Splits s at its first n-1 newlines into parts (the last takes the rest). */
static int split(char *s, char **parts, int n)
{
    int i;
    for (i = 0; i < n - 1; i++) {
        char *nl = strchr(s, '\n');
        if (!nl)
            return 0;
        *nl = '\0';
        parts[i] = s;
        s = nl + 1;
    }
    parts[n - 1] = s;
    return 1;
}

static void check_claims(json_object *claims)
{
    const char *why = NULL;
    if (prov_jwt_check_claims(&why, claims, ISSUER, CLIENT, NONCE, NOW) == APR_SUCCESS) {
        const char *sub = prov_json_get_str(claims, "sub");
        FUZZ_CHECK(!strcmp(prov_json_get_str(claims, "iss"), ISSUER));
        FUZZ_CHECK(!strcmp(prov_json_get_str(claims, "nonce"), NONCE));
        FUZZ_CHECK(sub && *sub && strlen(sub) <= PROV_JWT_SUBJECT_MAX);
    }
    else {
        FUZZ_CHECK(why != NULL);
    }
}

static void verify(char *in, apr_pool_t *p)
{
    char *parts[2];
    json_object *claims = NULL;
    const char *why = NULL;
    if (!split(in, parts, 2))
        return;
    if (prov_jwt_verify(&claims, &why, parts[0], parts[1], p) == APR_SUCCESS) {
        FUZZ_CHECK(claims && json_object_is_type(claims, json_type_object));
        check_claims(claims);
    }
    else {
        FUZZ_CHECK(why != NULL);
    }
}

static void unseal(char *in, apr_pool_t *p)
{
    char *parts[4];
    const char *plain = NULL, *sealed = NULL, *again = NULL;
    if (!split(in, parts, 4))
        return;
    if (prov_signin_unseal(&plain, parts[0], parts[1], parts[2], parts[3], p) == APR_SUCCESS)
        FUZZ_CHECK(plain != NULL);
    /* the seal's round trip, with the input's own words */
    if (prov_signin_seal(&sealed, parts[0], parts[1], parts[2], parts[3], p) == APR_SUCCESS) {
        FUZZ_CHECK(prov_signin_unseal(&again, parts[0], parts[1], parts[2], sealed, p)
                   == APR_SUCCESS);
        FUZZ_CHECK(!strcmp(again, parts[3]));
        FUZZ_CHECK(prov_signin_unseal(&again, parts[1], parts[0], parts[2], sealed, p)
                   != APR_SUCCESS || !strcmp(parts[0], parts[1]));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    unsigned mode = fuzz_take(&data, &size) % 3;
    char *in = fuzz_str(data, size, p);
    if (mode == 0) {
        verify(in, p);
    }
    else if (mode == 1) {
        const char *err = NULL;
        json_object *claims = prov_json_parse(in, strlen(in), &err, p);
        if (claims && json_object_is_type(claims, json_type_object))
            check_claims(claims);
    }
    else {
        unseal(in, p);
    }
    apr_pool_destroy(p);
    return 0;
}
