/* test_prov_signin_token.c: unit tests of the callback's exchange
 * (core/identity/prov_signin_token.c) against the local test server
 * playing the provider, with id_tokens the test signs: the token request
 * on the wire (grant, code, redirect_uri, code_verifier; the client's
 * credentials as HTTP Basic, form-encoded first, or in the form), the
 * identity from the id_token and, for what it lacks, from userinfo of the
 * same sub only; refusals with the page's reasons (the provider's error,
 * a provider that cannot be reached, a bad id_token, an unknown key id
 * after one JWKS refresh); the callback's deadline (timeout=); the plain
 * OAuth 2.0 path (subject_field a number or a string, userinfo refused, no
 * access token, emails_verified=on for an email not said verified); and no log line
 * holding a code, verifier, secret, token or subject. */
#include <string.h>
#include "unit_tests.h"
#include "idp_test_server.h"
#include "idp_test_jose.h"
#include "prov_signin.h"
#include "prov_idp_meta.h"
#include "prov_idp_http.h"
#include "prov_log.h"

#define NOW APR_INT64_C(1800000000)
#define PUBLIC "https://api.example.com"
#define CODE "c0de/+1"
#define SUBJECT "subject-248289761001"

typedef struct fx_t {
    apr_pool_t *p;
    idp_ts_t ts;
    prov_idp_t idp;
    prov_prelogin_t pl;
    const char *base;
    const char *logs;            /* every log line of the test */
} fx_t;

static fx_t *current;

static void capture(void *baton, prov_log_level_e level, apr_status_t rv, const char *msg)
{
    (void)baton; (void)level; (void)rv;
    if (current)
        current->logs = apr_pstrcat(current->p, current->logs, msg, "\n", NULL);
}

static void quiet(void *baton, prov_log_level_e level, apr_status_t rv, const char *msg)
{
    (void)baton; (void)level; (void)rv; (void)msg;
}

static void fx_begin(fx_t *f, int oidc)
{
    memset(f, 0, sizeof(*f));
    apr_pool_create(&f->p, prov_test_pool());
    f->logs = "";
    current = f;
    prov_log_set(capture, NULL, PROV_LOG_DEBUG);
    idp_ts_start(&f->ts);
    f->base = idp_ts_url(&f->ts, f->p);
    f->idp.name = "corp";
    f->idp.client_id = "cid";
    f->idp.client_secret = "s e/c";
    CU_ASSERT_EQUAL_FATAL(prov_idp_meta_create(&f->idp.cache, f->p), APR_SUCCESS);
    if (oidc) {
        f->idp.oidc = 1;
        f->idp.issuer = f->base;
        idp_ts_route(&f->ts, "/.well-known/openid-configuration", 200, 0,
                     "{\"issuer\":\"%s\",\"authorization_endpoint\":\"%s/auth\","
                     "\"token_endpoint\":\"%s/token\",\"userinfo_endpoint\":\"%s/me\","
                     "\"jwks_uri\":\"%s/jwks\"}", f->base, f->base, f->base, f->base, f->base);
        idp_ts_route(&f->ts, "/jwks", 200, 0, "%s", jt_jwks(f->p, 2, jt_keys()->rsa1,
                                                            jt_keys()->ec1));
    }
    else {
        f->idp.authorization_endpoint = apr_pstrcat(f->p, f->base, "/login/authorize", NULL);
        f->idp.token_endpoint = apr_pstrcat(f->p, f->base, "/login/token", NULL);
        f->idp.userinfo_endpoint = apr_pstrcat(f->p, f->base, "/user", NULL);
        f->idp.subject_field = "id";
    }
    f->pl.provider = "corp";
    f->pl.verifier = "verifier-0123456789-0123456789-0123456789ab";
    f->pl.nonce = "nonce-1";
    f->pl.return_path = "/cabinet/";
}

/* No log line of the test holds a secret or the subject. */
static void fx_end(fx_t *f, const char *more_secret)
{
    const char *secrets[] = { CODE, "c0de", f->pl.verifier, f->idp.client_secret, "at-secret",
                              "eyJ", SUBJECT, more_secret };
    size_t i;
    for (i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
        if (secrets[i] && strstr(f->logs, secrets[i]))
            fprintf(stderr, "\n  a log line holds \"%s\":\n%s", secrets[i], f->logs);
        CU_ASSERT_PTR_NULL(secrets[i] ? strstr(f->logs, secrets[i]) : NULL);
    }
    idp_ts_stop(&f->ts);
    current = NULL;
    prov_log_set(quiet, NULL, PROV_LOG_DEBUG);
    apr_pool_destroy(f->p);
}

/* An id_token for the fixture's provider, claims spliced in after sub. */
static const char *id_token(fx_t *f, const cjose_jwk_t *k, const char *alg, const char *kid,
                            const char *extra)
{
    const char *payload = apr_psprintf(f->p, "{\"iss\":\"%s\",\"aud\":\"cid\",\"exp\":%"
                                       APR_INT64_T_FMT ",\"iat\":%" APR_INT64_T_FMT ","
                                       "\"nonce\":\"nonce-1\",\"sub\":\"" SUBJECT "\"%s%s}",
                                       f->base, NOW + 300, NOW, extra ? "," : "",
                                       extra ? extra : "");
    return jt_sign(k, alg, kid, NULL, payload, f->p);
}

static void token_answer(fx_t *f, const char *id_tok)
{
    idp_ts_route(&f->ts, "/token", 200, 0, "{\"access_token\":\"at-secret\",\"token_type\":"
                 "\"Bearer\",\"expires_in\":3600%s%s%s}", id_tok ? ",\"id_token\":\"" : "",
                 id_tok ? id_tok : "", id_tok ? "\"" : "");
}

static apr_status_t exchange(fx_t *f, prov_claims_t **c, const char **reason)
{
    *c = NULL;
    *reason = NULL;
    return prov_signin_exchange(c, reason, &f->idp, &f->pl, PUBLIC, CODE, NOW, f->p);
}

static void test_oidc_basic(void)
{
    fx_t f;
    prov_claims_t *c;
    const char *reason;
    idp_ts_request_t *q;
    fx_begin(&f, 1);
    token_answer(&f, id_token(&f, jt_keys()->rsa1, "RS256", "rsa-1",
                              "\"email\":\"Ann@Example.com\",\"email_verified\":true,"
                              "\"name\":\"Ann\""));
    CU_ASSERT_EQUAL_FATAL(exchange(&f, &c, &reason), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(reason);
    CU_ASSERT_STRING_EQUAL(c->subject, SUBJECT);
    CU_ASSERT_STRING_EQUAL(c->email, "Ann@Example.com");
    CU_ASSERT_EQUAL(c->email_verified, 1);
    CU_ASSERT_STRING_EQUAL(c->name, "Ann");
    q = idp_ts_last(&f.ts, "/token", f.p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_STRING_EQUAL(q->method, "POST");
    CU_ASSERT_STRING_EQUAL(q->body, "grant_type=authorization_code&code=c0de%2F%2B1"
                           "&redirect_uri=https%3A%2F%2Fapi.example.com%2Fv1%2Fauth%2Fcorp"
                           "%2Fcallback&code_verifier=verifier-0123456789-0123456789-0123456789ab");
    /* base64("cid:s%20e%2Fc") */
    CU_ASSERT_STRING_EQUAL(q->authorization, "Basic Y2lkOnMlMjBlJTJGYw==");
    CU_ASSERT_EQUAL(idp_ts_hits(&f.ts, "/me"), 0);
    fx_end(&f, NULL);
}

static void test_oidc_post_and_userinfo(void)
{
    fx_t f;
    prov_claims_t *c;
    const char *reason;
    idp_ts_request_t *q;
    fx_begin(&f, 1);
    f.idp.auth = PROV_IDP_AUTH_POST;
    /* ES256; no email or name in the id_token: userinfo of the same sub fills them */
    token_answer(&f, id_token(&f, jt_keys()->ec1, "ES256", "ec-1", NULL));
    idp_ts_route(&f.ts, "/me", 200, 0, "{\"sub\":\"" SUBJECT "\",\"email\":\"b@example.org\","
                 "\"email_verified\":false,\"preferred_username\":\"bee\"}");
    CU_ASSERT_EQUAL_FATAL(exchange(&f, &c, &reason), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c->email, "b@example.org");
    CU_ASSERT_EQUAL(c->email_verified, 0);
    CU_ASSERT_STRING_EQUAL(c->name, "bee");
    q = idp_ts_last(&f.ts, "/token", f.p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_STRING_EQUAL(q->authorization, "");
    CU_ASSERT_PTR_NOT_NULL(strstr(q->body, "&client_id=cid&client_secret=s%20e%2Fc"));
    q = idp_ts_last(&f.ts, "/me", f.p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_STRING_EQUAL(q->authorization, "Bearer at-secret");
    /* userinfo about someone else is not used */
    idp_ts_route(&f.ts, "/me", 200, 0, "{\"sub\":\"someone-else\",\"email\":\"x@example.org\"}");
    CU_ASSERT_EQUAL_FATAL(exchange(&f, &c, &reason), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c->subject, SUBJECT);
    CU_ASSERT_PTR_NULL(c->email);
    CU_ASSERT_EQUAL(c->email_verified, -1);
    /* userinfo failing costs only the profile */
    idp_ts_route(&f.ts, "/me", 401, 0, "{\"error\":\"invalid_token\"}");
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_SUCCESS);
    fx_end(&f, NULL);
}

static void test_oidc_refused(void)
{
    fx_t f;
    prov_claims_t *c;
    const char *reason, *good;
    fx_begin(&f, 1);
    good = id_token(&f, jt_keys()->rsa1, "RS256", "rsa-1", NULL);
    /* the provider says no: its own words stay out of the reason */
    idp_ts_route(&f.ts, "/token", 400, 0, "{\"error\":\"invalid_grant\",\"error_description\":"
                 "\"<b>grant expired for user Ann</b>\"}");
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EACCES);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_REFUSED);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.logs, "HTTP 400 (invalid_grant)"));
    CU_ASSERT_PTR_NULL(strstr(f.logs, "grant expired"));
    idp_ts_route(&f.ts, "/token", 500, 0, "{\"error\":\"Evil Text\"}");
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EACCES);
    CU_ASSERT_PTR_NULL(strstr(f.logs, "Evil"));
    /* not JSON; no id_token */
    idp_ts_route(&f.ts, "/token", 200, 0, "access_token=at-secret");
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EGENERAL);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_UNVERIFIED);
    token_answer(&f, NULL);
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_UNVERIFIED);
    /* id_tokens with a defect */
    token_answer(&f, id_token(&f, jt_keys()->rsa1, "RS256", "rsa-1", "\"nonce\":\"other\""));
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_UNVERIFIED);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.logs, "PROV00525: identity provider corp: id_token refused: "
                                  "its nonce"));
    token_answer(&f, id_token(&f, jt_keys()->rsa1, "RS256", "rsa-1", "\"aud\":\"other\""));
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EINVAL);
    token_answer(&f, id_token(&f, jt_keys()->rsa1, "RS256", "rsa-1", "\"iss\":\"https://x\""));
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EINVAL);
    token_answer(&f, id_token(&f, jt_keys()->rsa1, "RS256", "rsa-1", "\"exp\":1799999000"));
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EINVAL);
    token_answer(&f, jt_hmac_with_public(jt_keys()->rsa1, "rsa-1", "{}", f.p));
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EINVAL);
    token_answer(&f, jt_raw("{\"alg\":\"none\"}", "{}", "eA", f.p));
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EINVAL);
    token_answer(&f, id_token(&f, jt_keys()->rsa2, "RS256", "rsa-1", NULL));
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EINVAL);
    /* a code that cannot be one, a record of another provider */
    token_answer(&f, good);
    CU_ASSERT_EQUAL(prov_signin_exchange(&c, &reason, &f.idp, &f.pl, PUBLIC, "", NOW, f.p),
                    APR_EINVAL);
    f.pl.provider = "other";
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EINVAL);
    f.pl.provider = "corp";
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_SUCCESS);
    fx_end(&f, good);
}

static void test_unknown_kid(void)
{
    fx_t f;
    prov_claims_t *c;
    const char *reason;
    fx_begin(&f, 1);
    token_answer(&f, id_token(&f, jt_keys()->rsa2, "RS256", "rsa-2", NULL));
    /* the JWKS is fetched again once, then the token is refused */
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_ENOENT);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_UNVERIFIED);
    CU_ASSERT_EQUAL(idp_ts_hits(&f.ts, "/jwks"), 2);
    /* the provider rotates its keys: within the minimum no fetch, after it one */
    idp_ts_route(&f.ts, "/jwks", 200, 0, "%s", jt_jwks(f.p, 1, jt_keys()->rsa2));
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_ENOENT);
    CU_ASSERT_EQUAL(idp_ts_hits(&f.ts, "/jwks"), 2);
    CU_ASSERT_EQUAL(prov_signin_exchange(&c, &reason, &f.idp, &f.pl, PUBLIC, CODE,
                                         NOW + PROV_IDP_JWKS_FORCE_MIN, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(idp_ts_hits(&f.ts, "/jwks"), 3);
    /* the old key is gone from the new JWKS: a token by it is now unknown */
    token_answer(&f, id_token(&f, jt_keys()->rsa1, "RS256", "rsa-1", NULL));
    CU_ASSERT_EQUAL(prov_signin_exchange(&c, &reason, &f.idp, &f.pl, PUBLIC, CODE,
                                         NOW + PROV_IDP_JWKS_FORCE_MIN + 1, f.p), APR_ENOENT);
    fx_end(&f, NULL);
}

static void test_unreachable(void)
{
    fx_t f;
    prov_claims_t *c;
    const char *reason;
    fx_begin(&f, 1);
    prov_idp_http_timeouts(1000, 300);
    idp_ts_route(&f.ts, "/token", 200, 700, "{}");
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_TIMEUP);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_UNREACHABLE);
    prov_idp_http_timeouts(5000, 10000);
    /* the failed call made the discovery stale: it is fetched again */
    CU_ASSERT_EQUAL(idp_ts_hits(&f.ts, "/.well-known/openid-configuration"), 1);
    token_answer(&f, id_token(&f, jt_keys()->rsa1, "RS256", "rsa-1", NULL));
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_SUCCESS);
    CU_ASSERT_EQUAL(idp_ts_hits(&f.ts, "/.well-known/openid-configuration"), 2);
    fx_end(&f, NULL);
}

/* The callback's calls together end by its deadline (timeout=): a token
 * endpoint slower than what is left is cut short, with the page's reason
 * for a provider out of reach, well before the per-call timeout. */
static void test_deadline(void)
{
    fx_t f;
    prov_claims_t *c;
    const char *reason;
    apr_time_t t;
    fx_begin(&f, 1);
    f.idp.timeout = 1;
    idp_ts_route(&f.ts, "/token", 200, 4000, "{}");
    t = apr_time_now();
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_TIMEUP);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_UNREACHABLE);
    CU_ASSERT_TRUE(apr_time_now() - t < apr_time_from_sec(3));
    CU_ASSERT_PTR_NOT_NULL(strstr(f.logs, "PROV00520"));
    CU_ASSERT_PTR_NOT_NULL(strstr(f.logs, "timeout="));
    fx_end(&f, NULL);
}

static void test_plain(void)
{
    fx_t f;
    prov_claims_t *c;
    const char *reason;
    idp_ts_request_t *q;
    fx_begin(&f, 0);
    idp_ts_route(&f.ts, "/login/token", 200, 0, "{\"access_token\":\"at-secret\","
                 "\"token_type\":\"bearer\",\"scope\":\"read:user\"}");
    idp_ts_route(&f.ts, "/user", 200, 0, "{\"id\":248289761001,\"login\":\"octo\","
                 "\"email\":null,\"name\":null}");
    CU_ASSERT_EQUAL_FATAL(exchange(&f, &c, &reason), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c->subject, "248289761001");
    CU_ASSERT_STRING_EQUAL(c->name, "octo");
    CU_ASSERT_PTR_NULL(c->email);
    q = idp_ts_last(&f.ts, "/user", f.p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_STRING_EQUAL(q->method, "GET");
    CU_ASSERT_STRING_EQUAL(q->authorization, "Bearer at-secret");
    CU_ASSERT_PTR_NOT_NULL(strstr(idp_ts_last(&f.ts, "/login/token", f.p)->body,
                                  "code_verifier="));
    /* a string subject, a profile */
    f.idp.subject_field = "uid";
    idp_ts_route(&f.ts, "/user", 200, 0, "{\"uid\":\"" SUBJECT "\",\"email\":\"o@example.net\","
                 "\"name\":\"Octo Cat\"}");
    CU_ASSERT_EQUAL_FATAL(exchange(&f, &c, &reason), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c->subject, SUBJECT);
    CU_ASSERT_STRING_EQUAL(c->email, "o@example.net");
    CU_ASSERT_EQUAL(c->email_verified, -1);
    CU_ASSERT_STRING_EQUAL(c->name, "Octo Cat");
    /* emails_verified=on: the operator vouches for what the provider leaves
     * unsaid, never against what it says */
    f.idp.emails_verified = 1;
    CU_ASSERT_EQUAL_FATAL(exchange(&f, &c, &reason), APR_SUCCESS);
    CU_ASSERT_EQUAL(c->email_verified, 1);
    idp_ts_route(&f.ts, "/user", 200, 0, "{\"uid\":\"" SUBJECT "\",\"email\":\"o@example.net\","
                 "\"email_verified\":false}");
    CU_ASSERT_EQUAL_FATAL(exchange(&f, &c, &reason), APR_SUCCESS);
    CU_ASSERT_EQUAL(c->email_verified, 0);
    idp_ts_route(&f.ts, "/user", 200, 0, "{\"uid\":\"" SUBJECT "\"}");
    CU_ASSERT_EQUAL_FATAL(exchange(&f, &c, &reason), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(c->email);
    CU_ASSERT_EQUAL(c->email_verified, -1);
    f.idp.emails_verified = 0;
    /* no usable subject: missing, empty, a fraction, an object */
    idp_ts_route(&f.ts, "/user", 200, 0, "{\"id\":1}");
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EGENERAL);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_UNVERIFIED);
    idp_ts_route(&f.ts, "/user", 200, 0, "{\"uid\":\"\"}");
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EGENERAL);
    idp_ts_route(&f.ts, "/user", 200, 0, "{\"uid\":1.5}");
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EGENERAL);
    idp_ts_route(&f.ts, "/user", 200, 0, "{\"uid\":{\"v\":1}}");
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EGENERAL);
    /* userinfo refuses the token; no access token at all */
    idp_ts_route(&f.ts, "/user", 401, 0, "{\"message\":\"Bad credentials\"}");
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EACCES);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_REFUSED);
    idp_ts_route(&f.ts, "/login/token", 200, 0, "{\"error\":\"bad_verification_code\"}");
    CU_ASSERT_EQUAL(exchange(&f, &c, &reason), APR_EGENERAL);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_UNVERIFIED);
    fx_end(&f, NULL);
}

void prov_test_suite_signin_token(void)
{
    PROV_SUITE("signin_token",
               PROV_TEST(test_oidc_basic),
               PROV_TEST(test_deadline),
               PROV_TEST(test_oidc_post_and_userinfo),
               PROV_TEST(test_oidc_refused),
               PROV_TEST(test_unknown_kid),
               PROV_TEST(test_unreachable),
               PROV_TEST(test_plain));
}
