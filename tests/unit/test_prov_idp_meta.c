/* test_prov_idp_meta.c: unit tests of what core/identity fetches from an
 * OpenID Connect provider (prov_idp_meta.c over prov_idp_http.c), against
 * the local test server: the discovery document fetched once and cached,
 * its issuer compared exactly, endpoints that are not https:// (or loopback
 * http://) refused, the retry pause after a failure, the refetch after an
 * hour with the old copy kept when that fails, the refetch after a failed
 * call (stale), the JWKS and its forced refresh (at most one per
 * PROV_IDP_JWKS_FORCE_MIN seconds), a plain OAuth 2.0 provider's endpoints
 * taken from its configuration, and the HTTP client's failures: timeout,
 * refused connection, an answer too large; single flight (a fetch in
 * flight is neither waited for nor repeated: APR_EBUSY without a copy, the
 * stale copy with one) and a sign-in step's deadline. */
#include <string.h>
#include <unistd.h>
#include "unit_tests.h"
#include "idp_test_server.h"
#include "prov_idp_meta.h"
#include "prov_idp_http.h"

#define T0 APR_INT64_C(1800000000)

typedef struct fx_t {
    apr_pool_t *p;
    idp_ts_t ts;
    prov_idp_t idp;
    const char *base;
} fx_t;

/* A provider whose issuer is the test server, which serves a valid
 * discovery document and a JWKS. */
static void fx_begin(fx_t *f)
{
    apr_pool_create(&f->p, prov_test_pool());
    idp_ts_start(&f->ts);
    f->base = idp_ts_url(&f->ts, f->p);
    memset(&f->idp, 0, sizeof(f->idp));
    f->idp.name = "t";
    f->idp.oidc = 1;
    f->idp.issuer = f->base;
    CU_ASSERT_EQUAL_FATAL(prov_idp_meta_create(&f->idp.cache, f->p), APR_SUCCESS);
    idp_ts_route(&f->ts, "/.well-known/openid-configuration", 200, 0,
                 "{\"issuer\":\"%s\",\"authorization_endpoint\":\"%s/auth\","
                 "\"token_endpoint\":\"%s/token\",\"userinfo_endpoint\":\"%s/me\","
                 "\"jwks_uri\":\"%s/jwks\"}", f->base, f->base, f->base, f->base, f->base);
    idp_ts_route(&f->ts, "/jwks", 200, 0, "{\"keys\":[]}");
}

static void fx_end(fx_t *f)
{
    idp_ts_stop(&f->ts);
    apr_pool_destroy(f->p);
}

static int disco_hits(fx_t *f)
{
    return idp_ts_hits(&f->ts, "/.well-known/openid-configuration");
}

static void test_discovery_cached(void)
{
    fx_t f;
    prov_idp_endpoints_t *ep = NULL;
    fx_begin(&f);
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0, 0, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ep);
    CU_ASSERT_STRING_EQUAL(ep->authorization, apr_pstrcat(f.p, f.base, "/auth", NULL));
    CU_ASSERT_STRING_EQUAL(ep->token, apr_pstrcat(f.p, f.base, "/token", NULL));
    CU_ASSERT_STRING_EQUAL(ep->userinfo, apr_pstrcat(f.p, f.base, "/me", NULL));
    CU_ASSERT_STRING_EQUAL(ep->jwks_uri, apr_pstrcat(f.p, f.base, "/jwks", NULL));
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0 + 100, 0, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(disco_hits(&f), 1);
    /* an hour later it is fetched again; when that fails the copy stays */
    idp_ts_route(&f.ts, "/.well-known/openid-configuration", 500, 0, "{}");
    ep = NULL;
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0 + PROV_IDP_META_TTL, 0, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(disco_hits(&f), 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ep);
    CU_ASSERT_STRING_EQUAL(ep->token, apr_pstrcat(f.p, f.base, "/token", NULL));
    /* a call to the provider failed: the next use fetches again (after the pause) */
    prov_idp_meta_stale(&f.idp);
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0 + PROV_IDP_META_TTL + 1, 0, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(disco_hits(&f), 2);
    idp_ts_route(&f.ts, "/.well-known/openid-configuration", 200, 0,
                 "{\"issuer\":\"%s\",\"authorization_endpoint\":\"%s/auth2\","
                 "\"token_endpoint\":\"%s/token2\",\"jwks_uri\":\"%s/jwks\"}",
                 f.base, f.base, f.base, f.base);
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0 + PROV_IDP_META_TTL + 10, 0, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(disco_hits(&f), 3);
    CU_ASSERT_STRING_EQUAL(ep->token, apr_pstrcat(f.p, f.base, "/token2", NULL));
    CU_ASSERT_PTR_NULL(ep->userinfo);
    fx_end(&f);
}

/* Each bad document is refused and nothing is cached; a retry waits. */
static void test_discovery_refused(void)
{
    fx_t f;
    prov_idp_endpoints_t *ep = NULL;
    apr_int64_t now = T0;
    const char *bad[] = {
        "{\"issuer\":\"%s/\",\"authorization_endpoint\":\"%s/a\",\"token_endpoint\":\"%s/t\","
        "\"jwks_uri\":\"%s/j\"}",
        "{\"issuer\":\"%s\",\"authorization_endpoint\":\"http://example.com%s/a\","
        "\"token_endpoint\":\"%s/t\",\"jwks_uri\":\"%s/j\"}",
        "{\"issuer\":\"%s\",\"authorization_endpoint\":\"%s/a\",\"token_endpoint\":\"%s/t\","
        "\"jwks_uri\":\"http://127.0.0.1/j\",\"userinfo_endpoint\":\"ftp:%s\"}",
        "{\"issuer\":\"%s\",\"authorization_endpoint\":\"%s/a\",\"token_endpoint\":\"%s/t\","
        "\"jwks_uri\":\"%s/j\",}",
        "[\"%s\",\"%s\",\"%s\",\"%s\"]",
    };
    size_t i;
    fx_begin(&f);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int before = disco_hits(&f);
        idp_ts_route(&f.ts, "/.well-known/openid-configuration", 200, 0, bad[i], f.base,
                     f.base, f.base, f.base);
        CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, now, 0, f.p), APR_EGENERAL);
        CU_ASSERT_EQUAL(disco_hits(&f), before + 1);
        /* within the pause no new request is made */
        CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, now + PROV_IDP_META_RETRY - 1, 0, f.p),
                        APR_EGENERAL);
        CU_ASSERT_EQUAL(disco_hits(&f), before + 1);
        now += PROV_IDP_META_RETRY;
    }
    /* an answer other than 200 */
    idp_ts_route(&f.ts, "/.well-known/openid-configuration", 404, 0, "{}");
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, now, 0, f.p), APR_EGENERAL);
    fx_end(&f);
}

/* An endpoint at another origin than the issuer's is refused (the client
 * secret would go there) unless endpoint_origins= names it, or says any. */
static void test_discovery_origins(void)
{
    fx_t f;
    prov_idp_endpoints_t *ep = NULL;
    const char *doc = "{\"issuer\":\"%s\",\"authorization_endpoint\":\"%s/auth\","
                      "\"token_endpoint\":\"http://localhost:1/token\",\"jwks_uri\":\"%s/jwks\"}";
    fx_begin(&f);
    idp_ts_route(&f.ts, "/.well-known/openid-configuration", 200, 0, doc, f.base, f.base,
                 f.base);
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0, 0, f.p), APR_EGENERAL);
    f.idp.endpoint_origins = apr_array_make(f.p, 1, sizeof(const char *));
    APR_ARRAY_PUSH(f.idp.endpoint_origins, const char *) = "http://localhost:2";
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0 + PROV_IDP_META_RETRY, 0, f.p),
                    APR_EGENERAL);
    APR_ARRAY_PUSH(f.idp.endpoint_origins, const char *) = "http://localhost:1";
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0 + 2 * PROV_IDP_META_RETRY, 0, f.p),
                    APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(ep->token, "http://localhost:1/token");
    fx_end(&f);
    fx_begin(&f);
    idp_ts_route(&f.ts, "/.well-known/openid-configuration", 200, 0, doc, f.base, f.base,
                 f.base);
    f.idp.endpoint_origins_any = 1;
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0, 0, f.p), APR_SUCCESS);
    fx_end(&f);
}

static void test_jwks_refresh(void)
{
    fx_t f;
    const char *jwks = NULL;
    int refreshed = -1;
    fx_begin(&f);
    CU_ASSERT_EQUAL(prov_idp_jwks(&jwks, &refreshed, &f.idp, 0, T0, 0, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(refreshed, 1);
    CU_ASSERT_STRING_EQUAL(jwks, "{\"keys\":[]}");
    CU_ASSERT_EQUAL(prov_idp_jwks(&jwks, &refreshed, &f.idp, 0, T0 + 1, 0, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(refreshed, 0);
    CU_ASSERT_EQUAL(idp_ts_hits(&f.ts, "/jwks"), 1);
    /* an unknown key id: fetched again, but not twice within the minimum */
    idp_ts_route(&f.ts, "/jwks", 200, 0, "{\"keys\":[{\"kty\":\"oct\"}]}");
    CU_ASSERT_EQUAL(prov_idp_jwks(&jwks, &refreshed, &f.idp, 1, T0 + 2, 0, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(refreshed, 1);
    CU_ASSERT_STRING_EQUAL(jwks, "{\"keys\":[{\"kty\":\"oct\"}]}");
    CU_ASSERT_EQUAL(prov_idp_jwks(&jwks, &refreshed, &f.idp, 1,
                                  T0 + 2 + PROV_IDP_JWKS_FORCE_MIN - 1, 0, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(refreshed, 0);
    CU_ASSERT_EQUAL(idp_ts_hits(&f.ts, "/jwks"), 2);
    CU_ASSERT_EQUAL(prov_idp_jwks(&jwks, &refreshed, &f.idp, 1,
                                  T0 + 2 + PROV_IDP_JWKS_FORCE_MIN, 0, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(refreshed, 1);
    CU_ASSERT_EQUAL(idp_ts_hits(&f.ts, "/jwks"), 3);
    /* a JWKS that is not one is not taken; the old copy stays */
    idp_ts_route(&f.ts, "/jwks", 200, 0, "{\"kys\":[]}");
    CU_ASSERT_EQUAL(prov_idp_jwks(&jwks, &refreshed, &f.idp, 1, T0 + 100, 0, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(refreshed, 0);
    CU_ASSERT_STRING_EQUAL(jwks, "{\"keys\":[{\"kty\":\"oct\"}]}");
    CU_ASSERT_EQUAL(idp_ts_hits(&f.ts, "/.well-known/openid-configuration"), 1);
    fx_end(&f);
}

static void test_plain_endpoints(void)
{
    apr_pool_t *p;
    prov_idp_t idp;
    prov_idp_endpoints_t *ep = NULL;
    const char *jwks = NULL;
    apr_pool_create(&p, prov_test_pool());
    memset(&idp, 0, sizeof(idp));
    idp.name = "plain";
    idp.authorization_endpoint = "https://code.example/authorize";
    idp.token_endpoint = "https://code.example/token";
    idp.userinfo_endpoint = "https://api.code.example/user";
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &idp, T0, 0, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(ep->authorization, "https://code.example/authorize");
    CU_ASSERT_STRING_EQUAL(ep->token, "https://code.example/token");
    CU_ASSERT_STRING_EQUAL(ep->userinfo, "https://api.code.example/user");
    CU_ASSERT_PTR_NULL(ep->jwks_uri);
    CU_ASSERT_EQUAL(prov_idp_jwks(&jwks, NULL, &idp, 0, T0, 0, p), APR_ENOTIMPL);
    apr_pool_destroy(p);
}

static void test_http_failures(void)
{
    fx_t f;
    prov_idp_http_answer_t *r = NULL;
    const char *why = NULL;
    char *big;
    fx_begin(&f);
    /* a slow answer */
    prov_idp_http_timeouts(1000, 300);
    idp_ts_route(&f.ts, "/slow", 200, 800, "{}");
    CU_ASSERT_EQUAL(prov_idp_http(&r, &why, apr_pstrcat(f.p, f.base, "/slow", NULL), NULL, NULL,
                                  0, f.p), APR_TIMEUP);
    CU_ASSERT_PTR_NOT_NULL(why);
    prov_idp_http_timeouts(5000, 10000);
    /* too large */
    big = apr_palloc(f.p, PROV_IDP_HTTP_MAX + 2);
    memset(big, 'a', PROV_IDP_HTTP_MAX + 1);
    big[PROV_IDP_HTTP_MAX + 1] = '\0';
    idp_ts_route(&f.ts, "/big", 200, 0, "\"%s\"", big);
    CU_ASSERT_EQUAL(prov_idp_http(&r, &why, apr_pstrcat(f.p, f.base, "/big", NULL), NULL, NULL,
                                  0, f.p), APR_ENOSPC);
    /* a POST with its form and Authorization; the answer's status as it is */
    idp_ts_route(&f.ts, "/form", 400, 0, "{\"error\":\"invalid_grant\"}");
    r = NULL;
    CU_ASSERT_EQUAL(prov_idp_http(&r, &why, apr_pstrcat(f.p, f.base, "/form", NULL), "a=1&b=2",
                                  "Basic eDp5", 0, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(r->status, 400);
    CU_ASSERT_STRING_EQUAL(r->body, "{\"error\":\"invalid_grant\"}");
    {
        idp_ts_request_t *q = idp_ts_last(&f.ts, "/form", f.p);
        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        CU_ASSERT_STRING_EQUAL(q->method, "POST");
        CU_ASSERT_STRING_EQUAL(q->body, "a=1&b=2");
        CU_ASSERT_STRING_EQUAL(q->authorization, "Basic eDp5");
    }
    fx_end(&f);
    /* nothing listens there any more */
    CU_ASSERT_EQUAL(prov_idp_http(&r, &why, apr_psprintf(prov_test_pool(), "http://127.0.0.1:%d/",
                                                         f.ts.port), NULL, NULL,
                                  0, prov_test_pool()), APR_ECONNREFUSED);
}

/* A fetch in flight, in a thread of its own. */
typedef struct flight_t {
    fx_t *f;
    apr_int64_t now;
    apr_status_t rv;
    volatile int done;
    pthread_t th;
} flight_t;

static void *flight_run(void *arg)
{
    flight_t *fl = arg;
    prov_idp_endpoints_t *ep = NULL;
    apr_pool_t *p;
    apr_pool_create_unmanaged(&p);
    fl->rv = prov_idp_endpoints(&ep, &fl->f->idp, fl->now, 0, p);
    fl->done = 1;
    apr_pool_destroy(p);
    return NULL;
}

/* Starts a fetch in a thread and returns once the server has it. */
static void flight_start(flight_t *fl, fx_t *f, apr_int64_t now)
{
    int before = disco_hits(f), i;
    fl->f = f;
    fl->now = now;
    fl->done = 0;
    CU_ASSERT_FATAL(pthread_create(&fl->th, NULL, flight_run, fl) == 0);
    for (i = 0; i < 5000 && disco_hits(f) == before; i++)
        usleep(1000);
    CU_ASSERT_EQUAL_FATAL(disco_hits(f), before + 1);
}

/* Single flight: while one fetch is in flight, others neither wait for it
 * nor make their own: no copy at hand is APR_EBUSY at once, a stale copy
 * is served. */
static void test_single_flight(void)
{
    fx_t f;
    flight_t fl;
    prov_idp_endpoints_t *ep = NULL;
    fx_begin(&f);
    idp_ts_route(&f.ts, "/.well-known/openid-configuration", 200, 1500,
                 "{\"issuer\":\"%s\",\"authorization_endpoint\":\"%s/auth\","
                 "\"token_endpoint\":\"%s/token\",\"jwks_uri\":\"%s/jwks\"}",
                 f.base, f.base, f.base, f.base);
    flight_start(&fl, &f, T0);
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0, 0, f.p), APR_EBUSY);
    CU_ASSERT_EQUAL(fl.done, 0);
    CU_ASSERT_EQUAL(disco_hits(&f), 1);
    pthread_join(fl.th, NULL);
    CU_ASSERT_EQUAL(fl.rv, APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0, 0, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(disco_hits(&f), 1);
    /* an hour later: the stale copy serves while the new one is fetched */
    flight_start(&fl, &f, T0 + PROV_IDP_META_TTL);
    ep = NULL;
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0 + PROV_IDP_META_TTL, 0, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(fl.done, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ep);
    CU_ASSERT_STRING_EQUAL(ep->token, apr_pstrcat(f.p, f.base, "/token", NULL));
    CU_ASSERT_EQUAL(disco_hits(&f), 2);
    pthread_join(fl.th, NULL);
    CU_ASSERT_EQUAL(fl.rv, APR_SUCCESS);
    fx_end(&f);
}

/* A deadline cuts a call short, and a call past it is not made. */
static void test_deadline(void)
{
    fx_t f;
    prov_idp_http_answer_t *r = NULL;
    prov_idp_endpoints_t *ep = NULL;
    const char *why = NULL;
    apr_time_t t;
    fx_begin(&f);
    idp_ts_route(&f.ts, "/slow", 200, 3000, "{}");
    t = apr_time_now();
    CU_ASSERT_EQUAL(prov_idp_http(&r, &why, apr_pstrcat(f.p, f.base, "/slow", NULL), NULL, NULL,
                                  t + apr_time_from_msec(300), f.p), APR_TIMEUP);
    CU_ASSERT_PTR_NOT_NULL_FATAL(why);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "timeout="));
    CU_ASSERT_TRUE(apr_time_now() - t < apr_time_from_msec(2900));
    CU_ASSERT_EQUAL(prov_idp_http(&r, &why, apr_pstrcat(f.p, f.base, "/slow", NULL), NULL, NULL,
                                  apr_time_now() - 1, f.p), APR_TIMEUP);
    CU_ASSERT_EQUAL(idp_ts_hits(&f.ts, "/slow"), 1);
    /* the discovery document within a sign-in's deadline */
    CU_ASSERT_EQUAL(prov_idp_endpoints(&ep, &f.idp, T0, apr_time_now() - 1, f.p), APR_TIMEUP);
    CU_ASSERT_EQUAL(disco_hits(&f), 0);
    fx_end(&f);
}

void prov_test_suite_idp_meta(void)
{
    PROV_SUITE("idp_meta",
               PROV_TEST(test_discovery_cached),
               PROV_TEST(test_discovery_refused),
               PROV_TEST(test_discovery_origins),
               PROV_TEST(test_jwks_refresh),
               PROV_TEST(test_plain_endpoints),
               PROV_TEST(test_http_failures),
               PROV_TEST(test_single_flight),
               PROV_TEST(test_deadline));
}
