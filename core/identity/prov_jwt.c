/* prov_jwt.c: id_token verification (prov_jwt.h). The token's shape and
 * header are looked at before cjose sees it; the algorithm cjose will
 * verify with is read back from cjose's own parse of the header and must be
 * one of the asymmetric ones, with a JWKS key of the matching type, curve
 * and (when the key says) use and alg. Keys are imported one at a time from
 * the JWKS's JSON; symmetric ("oct") keys never are. Every cjose object is
 * released before returning. The claims are read with json-c, strictly. */
#include <string.h>
#include <apr_lib.h>
#include <cjose/cjose.h>
#include "prov_jwt.h"
#include "prov_json.h"

typedef struct alg_t {
    const char *name;
    const char *kty;             /* the key type it needs */
    const char *crv;             /* EC: the curve; else NULL */
    apr_size_t sig_b64;          /* EC: the signature's base64url length; else 0 */
} alg_t;

static const alg_t algs[] = {
    { "RS256", "RSA", NULL, 0 }, { "RS384", "RSA", NULL, 0 }, { "RS512", "RSA", NULL, 0 },
    { "PS256", "RSA", NULL, 0 }, { "PS384", "RSA", NULL, 0 }, { "PS512", "RSA", NULL, 0 },
    { "ES256", "EC", "P-256", 86 }, { "ES384", "EC", "P-384", 128 },
    { "ES512", "EC", "P-521", 176 },
    { NULL, NULL, NULL, 0 }
};

#define TIME_MAX APR_INT64_C(9007199254740992)   /* 2^53: no overflow in arithmetic */

/* Why an algorithm outside the table is refused. */
static const char *alg_refusal(const char *alg)
{
    return !alg ? "it has no alg" : !strcmp(alg, "none") ? "its alg is none"
         : !strncmp(alg, "HS", 2) ? "its alg is an HMAC" : "its alg is not one we take";
}

static const alg_t *alg_find(const char *name)
{
    const alg_t *a;
    for (a = algs; name && a->name; a++) {
        if (!strcmp(a->name, name))
            return a;
    }
    return NULL;
}

/* Three base64url segments (no padding), the signature's not empty, none
 * of a length base64 cannot have (4k+1): cjose's decoder asserts on a
 * '=' that leaves one character over, which would abort the process, and
 * older releases on such a length too. */
static int compact_ok(const char *t, const char **sig)
{
    int dots = 0;
    const char *c, *seg = t;
    if (!t || strlen(t) > PROV_JWT_MAX)
        return 0;
    for (c = t;; c++) {
        if (*c == '.' || *c == '\0') {
            if ((c - seg) % 4 == 1)
                return 0;
            if (!*c)
                break;
            seg = c + 1;
            if (++dots == 2)
                *sig = c + 1;
        }
        else if (!apr_isalnum(*c) && *c != '-' && *c != '_') {
            return 0;
        }
    }
    return dots == 2 && t[0] != '.' && **sig != '\0';
}

/* A key member cjose will decode: base64url without padding, of a length
 * base64 can have (see compact_ok). */
static int b64url_ok(json_object *v)
{
    const char *s, *c;
    if (!json_object_is_type(v, json_type_string))
        return 0;
    s = json_object_get_string(v);
    for (c = s; *c; c++) {
        if (!apr_isalnum(*c) && *c != '-' && *c != '_')
            return 0;
    }
    return (c - s) % 4 != 1;
}

/* A public key whose encoded members cjose can read safely; a JWKS member
 * with private parts is not one to trust either. */
static int key_sane(json_object *key)
{
    static const char *const public_parts[] = { "n", "e", "x", "y", NULL };
    static const char *const private_parts[] = { "d", "p", "q", "dp", "dq", "qi", "k", NULL };
    json_object *v = NULL;
    int i;
    for (i = 0; private_parts[i]; i++) {
        if (json_object_object_get_ex(key, private_parts[i], NULL))
            return 0;
    }
    for (i = 0; public_parts[i]; i++) {
        if (json_object_object_get_ex(key, public_parts[i], &v) && !b64url_ok(v))
            return 0;
    }
    return 1;
}

/* The header as JSON (json-c), before cjose parses it. */
static json_object *header_of(const char *t, apr_pool_t *p)
{
    const char *dot = strchr(t, '.'), *err = NULL;
    uint8_t *raw = NULL;
    size_t n = 0;
    cjose_err cerr;
    json_object *h = NULL;
    if (cjose_base64url_decode(t, (size_t)(dot - t), &raw, &n, &cerr) && raw)
        h = prov_json_parse((const char *)raw, n, &err, p);
    cjose_get_dealloc()(raw);
    return h && json_object_is_type(h, json_type_object) ? h : NULL;
}

/* Whether key (a JWKS member) may verify a token of alg a. */
static int key_fits(json_object *key, const alg_t *a)
{
    const char *use = prov_json_get_str(key, "use"), *kalg = prov_json_get_str(key, "alg");
    const char *kty = prov_json_get_str(key, "kty"), *crv = prov_json_get_str(key, "crv");
    if (!kty || strcmp(kty, a->kty) || (use && strcmp(use, "sig")) || (kalg && strcmp(kalg, a->name)))
        return 0;
    return !a->crv || (crv && !strcmp(crv, a->crv));
}

/* Tries the JWKS's keys for kid (any fitting key when kid is NULL). */
static apr_status_t try_keys(cjose_jws_t *jws, const alg_t *a, const char *kid,
                             json_object *keys, const char **why, apr_pool_t *p)
{
    size_t i, n = json_object_array_length(keys);
    int named = 0, tried = 0;
    for (i = 0; i < n; i++) {
        json_object *k = json_object_array_get_idx(keys, i);
        const char *kkid = prov_json_get_str(k, "kid"), *js;
        cjose_jwk_t *jwk;
        cjose_err cerr;
        int ok;
        if (kid && (!kkid || strcmp(kkid, kid)))
            continue;
        named = 1;
        if (!key_fits(k, a) || !key_sane(k))
            continue;
        js = prov_json_dump(k, p);
        if (!(jwk = cjose_jwk_import(js, strlen(js), &cerr)))
            continue;
        tried = 1;
        ok = cjose_jws_verify(jws, jwk, &cerr);
        cjose_jwk_release(jwk);
        if (ok)
            return APR_SUCCESS;
    }
    if (!named || (!kid && !tried)) {
        *why = kid ? "no key of the JWKS has its kid" : "no key of the JWKS fits its alg";
        return APR_ENOENT;
    }
    *why = tried ? "the signature does not verify" : "the key its kid names does not fit its alg";
    return APR_EINVAL;
}

/* The signature, once the algorithm is known to be one we take. */
static apr_status_t verify_with(json_object **claims, const char **why, cjose_jws_t *jws,
                                const char *jwks, apr_pool_t *p)
{
    cjose_header_t *h = cjose_jws_get_protected(jws);
    cjose_err cerr;
    const char *alg = cjose_header_get(h, CJOSE_HDR_ALG, &cerr), *kid, *err = NULL;
    const alg_t *a = alg_find(alg);
    char *crit = cjose_header_get_raw(h, "crit", &cerr);
    json_object *set, *keys;
    uint8_t *pt = NULL;
    size_t ptlen = 0;
    apr_status_t rv;

    if (crit) {
        cjose_get_dealloc()(crit);
        *why = "it has a crit header";
        return APR_EINVAL;
    }
    if (!a) {
        *why = alg_refusal(alg);
        return APR_EINVAL;
    }
    kid = cjose_header_get(h, CJOSE_HDR_KID, &cerr);
    if (!(set = prov_json_parse(jwks, strlen(jwks), &err, p))
        || !(keys = prov_json_get(set, "keys", json_type_array))) {
        *why = "the JWKS is not one";
        return APR_EINVAL;
    }
    if ((rv = try_keys(jws, a, kid, keys, why, p)) != APR_SUCCESS)
        return rv;
    if (!cjose_jws_get_plaintext(jws, &pt, &ptlen, &cerr)
        || !(*claims = prov_json_parse((const char *)pt, ptlen, &err, p))
        || !json_object_is_type(*claims, json_type_object)) {
        *why = "its payload is not a JSON object";
        return APR_EINVAL;
    }
    return APR_SUCCESS;
}

apr_status_t prov_jwt_verify(json_object **claims, const char **why, const char *compact,
                             const char *jwks, apr_pool_t *p)
{
    const char *sig = NULL;
    json_object *hdr;
    const alg_t *a;
    cjose_jws_t *jws;
    cjose_err cerr;
    apr_status_t rv;

    if (!compact_ok(compact, &sig) || !(hdr = header_of(compact, p))) {
        *why = "it is not a signed JWT in compact form";
        return APR_EINVAL;
    }
    /* our own look first: cjose would take "none" as far as its import */
    a = alg_find(prov_json_get_str(hdr, "alg"));
    if (!a) {
        *why = alg_refusal(prov_json_get_str(hdr, "alg"));
        return APR_EINVAL;
    }
    if (a->sig_b64 && strlen(sig) != a->sig_b64) {
        *why = "its signature has the wrong length for its alg";
        return APR_EINVAL;
    }
    if (!(jws = cjose_jws_import(compact, strlen(compact), &cerr))) {
        *why = "cjose cannot read it";
        return APR_EINVAL;
    }
    rv = verify_with(claims, why, jws, jwks, p);
    cjose_jws_release(jws);
    return rv;
}

/* A NumericDate claim: an integer or a number, held within +-2^53; 0
 * when absent. */
static int numeric(apr_int64_t *out, json_object *claims, const char *name, int required)
{
    json_object *v = NULL;
    double d;
    *out = 0;
    if (!json_object_object_get_ex(claims, name, &v))
        return !required;
    if (json_object_is_type(v, json_type_int)) {
        apr_int64_t i = json_object_get_int64(v);
        *out = i > TIME_MAX ? TIME_MAX : i < -TIME_MAX ? -TIME_MAX : i;
        return 1;
    }
    if (!json_object_is_type(v, json_type_double))
        return 0;
    d = json_object_get_double(v);
    if (d != d)
        return 0;
    *out = d > (double)TIME_MAX ? TIME_MAX : d < -(double)TIME_MAX ? -TIME_MAX : (apr_int64_t)d;
    return 1;
}

static apr_status_t check_aud(const char **why, json_object *claims, const char *client_id)
{
    json_object *aud = NULL;
    const char *azp = NULL;
    int found = 0, n = 1;
    if (!json_object_object_get_ex(claims, "aud", &aud)) {
        *why = "it has no aud";
        return APR_EINVAL;
    }
    if (json_object_is_type(aud, json_type_string)) {
        found = !strcmp(json_object_get_string(aud), client_id);
    }
    else if (json_object_is_type(aud, json_type_array)) {
        size_t i;
        n = (int)json_object_array_length(aud);
        for (i = 0; i < (size_t)n; i++) {
            json_object *e = json_object_array_get_idx(aud, i);
            if (json_object_is_type(e, json_type_string)
                && !strcmp(json_object_get_string(e), client_id))
                found = 1;
        }
    }
    if (!found) {
        *why = "its aud is not our client_id";
        return APR_EINVAL;
    }
    if (json_object_object_get_ex(claims, "azp", NULL)) {
        azp = prov_json_get_str(claims, "azp");
        if (!azp || strcmp(azp, client_id)) {
            *why = "its azp is not our client_id";
            return APR_EINVAL;
        }
    }
    else if (n > 1) {
        *why = "it has several audiences and no azp";
        return APR_EINVAL;
    }
    return APR_SUCCESS;
}

apr_status_t prov_jwt_check_claims(const char **why, json_object *claims, const char *issuer,
                                   const char *client_id, const char *nonce, apr_int64_t now)
{
    const char *iss = prov_json_get_str(claims, "iss");
    const char *sub = prov_json_get_str(claims, "sub");
    const char *got_nonce = prov_json_get_str(claims, "nonce");
    apr_int64_t exp, iat, nbf;

    if (!iss || strcmp(iss, issuer)) {
        *why = "its iss is not the issuer";
        return APR_EINVAL;
    }
    if (check_aud(why, claims, client_id) != APR_SUCCESS)
        return APR_EINVAL;
    if (!numeric(&exp, claims, "exp", 1) || !numeric(&iat, claims, "iat", 1)
        || !numeric(&nbf, claims, "nbf", 0)) {
        *why = "its exp or iat is missing, or a time is not a number";
        return APR_EINVAL;
    }
    if (now >= exp + PROV_JWT_LEEWAY) {
        *why = "it has expired";
        return APR_EINVAL;
    }
    if (iat > now + PROV_JWT_LEEWAY || nbf > now + PROV_JWT_LEEWAY) {
        *why = "it is issued for a time to come";
        return APR_EINVAL;
    }
    if (!nonce || !got_nonce || strcmp(got_nonce, nonce)) {
        *why = "its nonce is not the request's";
        return APR_EINVAL;
    }
    if (!sub || !*sub || strlen(sub) > PROV_JWT_SUBJECT_MAX) {
        *why = "it has no usable sub";
        return APR_EINVAL;
    }
    return APR_SUCCESS;
}
