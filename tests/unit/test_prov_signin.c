/* test_prov_signin.c: unit tests of the authorization request and the
 * pre-login records (core/identity/prov_signin.c, prov_signin_util.c): the
 * PKCE S256 challenge (RFC 7636's own example), form encoding, the seal
 * (opens only with the same state, binding and record), the return paths
 * accepted, the authorization URL's parameters for an OpenID Connect and a
 * plain OAuth 2.0 provider, a record stored under its state's SHA-256 with
 * none of the secrets readable in the row, and taking it: once only (a
 * replay fails), not after it expired, not for another provider, not
 * without the browser's binding, not after the row was changed; the purge
 * of expired records; a provider that cannot be reached. */
#include <string.h>
#include "unit_tests.h"
#include "idp_test_server.h"
#include "prov_signin.h"
#include "prov_signin_int.h"
#include "prov_idp_meta.h"
#include "prov_secret.h"

#define T0 APR_INT64_C(1800000000)
#define PUBLIC "https://api.example.com"

/* The query parameters of url, %XX decoded. */
static apr_table_t *query_of(const char *url, apr_pool_t *p)
{
    apr_table_t *t = apr_table_make(p, 8);
    char *q = strchr(apr_pstrdup(p, url), '?'), *pair, *save = NULL;
    if (!q)
        return t;
    for (pair = apr_strtok(q + 1, "&", &save); pair; pair = apr_strtok(NULL, "&", &save)) {
        char *eq = strchr(pair, '='), *r, *w;
        if (!eq)
            continue;
        *eq = '\0';
        for (r = w = eq + 1; *r; r++, w++) {
            if (*r == '%' && r[1] && r[2]) {
                char hex[3] = { r[1], r[2], 0 };
                *w = (char)strtol(hex, NULL, 16);
                r += 2;
            }
            else {
                *w = *r;
            }
        }
        *w = '\0';
        apr_table_set(t, pair, eq + 1);
    }
    return t;
}

static prov_idp_t *plain_idp(apr_pool_t *p)
{
    prov_idp_t *idp = apr_pcalloc(p, sizeof(*idp));
    idp->name = "code-host";
    idp->client_id = "client id/1";
    idp->client_secret = "sec";
    idp->authorization_endpoint = "https://code.example/authorize?prompt=consent";
    idp->token_endpoint = "https://code.example/token";
    idp->userinfo_endpoint = "https://code.example/user";
    idp->subject_field = "id";
    return idp;
}

static void test_encodings(void)
{
    apr_pool_t *p = prov_test_pool();
    const unsigned char bytes[] = { 0xfb, 0xff, 0x00, 'a' };
    CU_ASSERT_STRING_EQUAL(prov_signin_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
                                                 p), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    CU_ASSERT_STRING_EQUAL(prov_signin_urlencode("a b&c=d/é~._-", p),
                           "a%20b%26c%3Dd%2F%C3%A9~._-");
    CU_ASSERT_STRING_EQUAL(prov_signin_b64url(bytes, 4, p), "-_8AYQ");
    CU_ASSERT_STRING_EQUAL(prov_signin_b64url(bytes, 3, p), "-_8A");
    CU_ASSERT_STRING_EQUAL(prov_signin_b64url(bytes, 2, p), "-_8");
    CU_ASSERT_STRING_EQUAL(prov_signin_b64url(bytes, 0, p), "");
}

static void test_seal(void)
{
    apr_pool_t *p;
    const char *sealed = NULL, *plain = NULL;
    char *bad;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(prov_signin_seal(&sealed, "state-1", "binding-1", "aad", "verifier nonce", p),
                    APR_SUCCESS);
    CU_ASSERT_PTR_NULL(strstr(sealed, "verifier"));
    CU_ASSERT_EQUAL(prov_signin_unseal(&plain, "state-1", "binding-1", "aad", sealed, p),
                    APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(plain, "verifier nonce");
    CU_ASSERT_EQUAL(prov_signin_unseal(&plain, "state-2", "binding-1", "aad", sealed, p),
                    APR_EINVAL);
    CU_ASSERT_EQUAL(prov_signin_unseal(&plain, "state-1", "binding-2", "aad", sealed, p),
                    APR_EINVAL);
    CU_ASSERT_EQUAL(prov_signin_unseal(&plain, "state-1", "binding-1", "aad2", sealed, p),
                    APR_EINVAL);
    bad = apr_pstrdup(p, sealed);
    bad[20] = bad[20] == 'A' ? 'B' : 'A';
    CU_ASSERT_EQUAL(prov_signin_unseal(&plain, "state-1", "binding-1", "aad", bad, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_signin_unseal(&plain, "state-1", "binding-1", "aad", "short!", p),
                    APR_EINVAL);
    apr_pool_destroy(p);
}

static void test_return_ok(void)
{
    static const char *const good[] = { "/cabinet/", "/cabinet/keys?x=1#top", "/" };
    static const char *const bad[] = {
        "", "cabinet", "//evil.example/", "/\\evil.example/", "https://evil.example/",
        "/a\\b", "/a b", "/a\nLocation: x", "/\xc3\xa9",
    };
    size_t i;
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        CU_ASSERT_PTR_EQUAL(prov_signin_return_ok(good[i]), good[i]);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (prov_signin_return_ok(bad[i]))
            fprintf(stderr, "\n  return path taken: %s\n", bad[i]);
        CU_ASSERT_PTR_NULL(prov_signin_return_ok(bad[i]));
    }
    CU_ASSERT_PTR_NULL(prov_signin_return_ok(NULL));
}

/* Both halves of a start, as the glue calls them: the endpoints (the
 * network), then the record. */
static apr_status_t begin_for(prov_signin_start_t **st, const char **reason, prov_store_t *s,
                              prov_idp_t *idp, const char *public_url, const char *return_path,
                              apr_int64_t link_session, const char *client, apr_int64_t now,
                              apr_pool_t *p)
{
    prov_idp_endpoints_t *ep = NULL;
    apr_status_t rv = prov_signin_endpoints(&ep, reason, idp, now, p);
    if (rv != APR_SUCCESS)
        return rv;
    return prov_signin_begin(st, reason, s, idp, ep, public_url, return_path, link_session,
                             client, now, p);
}

static apr_status_t begin(prov_signin_start_t **st, const char **reason, prov_store_t *s,
                          prov_idp_t *idp, const char *public_url, const char *return_path,
                          apr_int64_t link_session, apr_int64_t now, apr_pool_t *p)
{
    return begin_for(st, reason, s, idp, public_url, return_path, link_session, NULL, now, p);
}

static void test_begin_plain(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_idp_t *idp;
    prov_signin_start_t *st = NULL;
    prov_prelogin_t *pl = NULL;
    const char *reason = NULL, *state, *row;
    apr_table_t *q;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    idp = plain_idp(p);
    idp->scope = "read:user user:email";
    CU_ASSERT_EQUAL_FATAL(begin(&st, &reason, s, idp, PUBLIC "/", "/cabinet/keys", 0,
                                            T0, p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(reason);
    CU_ASSERT_EQUAL(strncmp(st->url, "https://code.example/authorize?prompt=consent&", 46), 0);
    CU_ASSERT_EQUAL(st->expires, T0 + PROV_SIGNIN_TTL);
    CU_ASSERT_EQUAL(strlen(st->binding), 43);
    q = query_of(st->url, p);
    CU_ASSERT_STRING_EQUAL(apr_table_get(q, "response_type"), "code");
    CU_ASSERT_STRING_EQUAL(apr_table_get(q, "client_id"), "client id/1");
    CU_ASSERT_STRING_EQUAL(apr_table_get(q, "redirect_uri"),
                           PUBLIC "/v1/auth/code-host/callback");
    CU_ASSERT_STRING_EQUAL(apr_table_get(q, "scope"), "read:user user:email");
    CU_ASSERT_STRING_EQUAL(apr_table_get(q, "code_challenge_method"), "S256");
    CU_ASSERT_STRING_EQUAL(apr_table_get(q, "prompt"), "consent");
    CU_ASSERT_PTR_NULL(apr_table_get(q, "nonce"));
    state = apr_table_get(q, "state");
    CU_ASSERT_EQUAL_FATAL(strlen(state), 43);
    CU_ASSERT_EQUAL(strlen(apr_table_get(q, "code_challenge")), 43);
    /* the row: the state's hash, none of the secrets */
    row = prov_test_dump(s, "SELECT * FROM signin_states", p);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, prov_secret_hash(state, p)));
    CU_ASSERT_PTR_NULL(strstr(row, state));
    CU_ASSERT_PTR_NULL(strstr(row, st->binding));
    CU_ASSERT_PTR_NOT_NULL(strstr(row, "|/cabinet/keys|NULL|"));
    /* taken once, with the verifier whose challenge the URL carried */
    CU_ASSERT_EQUAL_FATAL(prov_signin_take(&pl, &reason, s, "code-host", state, st->binding,
                                           T0 + 5, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_signin_challenge(pl->verifier, p),
                           apr_table_get(q, "code_challenge"));
    CU_ASSERT_PTR_NULL(strstr(row, pl->verifier));
    CU_ASSERT_PTR_NULL(strstr(row, pl->nonce));
    CU_ASSERT_STRING_EQUAL(pl->return_path, "/cabinet/keys");
    CU_ASSERT_EQUAL(pl->link_session, 0);
    CU_ASSERT_STRING_EQUAL(pl->provider, "code-host");
    /* a replay finds nothing */
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", state, st->binding, T0 + 6, p),
                    APR_NOTFOUND);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_EXPIRED);
    /* no scope configured: none sent; the default return path */
    idp->scope = NULL;
    CU_ASSERT_EQUAL(begin(&st, &reason, s, idp, PUBLIC, NULL, 7, T0, p),
                    APR_SUCCESS);
    q = query_of(st->url, p);
    CU_ASSERT_PTR_NULL(apr_table_get(q, "scope"));
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", apr_table_get(q, "state"),
                                     st->binding, T0, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(pl->return_path, PROV_SIGNIN_DEFAULT_RETURN);
    CU_ASSERT_EQUAL(pl->link_session, 7);
    /* a return path off this site is refused */
    CU_ASSERT_EQUAL(begin(&st, &reason, s, idp, PUBLIC, "//evil.example", 0, T0, p),
                    APR_EINVAL);
    prov_store_close(s);
    apr_pool_destroy(p);
}

/* Starts a record; returns its state. */
static const char *start(prov_signin_start_t **st, prov_store_t *s, prov_idp_t *idp,
                         apr_int64_t now, apr_pool_t *p)
{
    const char *reason = NULL;
    CU_ASSERT_EQUAL_FATAL(begin(st, &reason, s, idp, PUBLIC, "/x", 3, now, p),
                          APR_SUCCESS);
    return apr_table_get(query_of((*st)->url, p), "state");
}

static int records(prov_store_t *s, apr_pool_t *p)
{
    return atoi(prov_test_dump(s, "SELECT COUNT(*) FROM signin_states", p));
}

/* One client address keeps its newest PROV_SIGNIN_PER_CLIENT records:
 * a flood of starts replaces its own, another address's stay, and the
 * newest still finishes. */
static void test_per_client_cap(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_idp_t *idp;
    prov_signin_start_t *st = NULL, *other = NULL;
    prov_prelogin_t *pl = NULL;
    const char *reason = NULL, *state = NULL, *first = NULL, *kept;
    int i;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    idp = plain_idp(p);
    CU_ASSERT_EQUAL_FATAL(begin_for(&other, &reason, s, idp, PUBLIC, NULL, 0, "198.51.100.9", T0,
                                    p), APR_SUCCESS);
    kept = apr_table_get(query_of(other->url, p), "state");
    for (i = 0; i < 200; i++) {
        CU_ASSERT_EQUAL_FATAL(begin_for(&st, &reason, s, idp, PUBLIC, NULL, 0, "192.0.2.1",
                                        T0 + i, p), APR_SUCCESS);
        state = apr_table_get(query_of(st->url, p), "state");
        if (!first)
            first = state;
    }
    CU_ASSERT_EQUAL(records(s, p), PROV_SIGNIN_PER_CLIENT + 1);
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", state, st->binding,
                                     T0 + 200, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", first, st->binding,
                                     T0 + 200, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", kept, other->binding,
                                     T0 + 200, p), APR_SUCCESS);
    prov_store_close(s);
    apr_pool_destroy(p);
}

static void test_take_refused(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_idp_t *idp;
    prov_signin_start_t *st = NULL;
    prov_prelogin_t *pl = NULL;
    const char *reason = NULL, *state;
    int n = 0;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    idp = plain_idp(p);
    /* expired */
    state = start(&st, s, idp, T0, p);
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", state, st->binding,
                                     T0 + PROV_SIGNIN_TTL, p), APR_NOTFOUND);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_EXPIRED);
    CU_ASSERT_EQUAL(records(s, p), 0);
    /* another browser: the binding is not the one it was started with; the
     * record is spent all the same */
    state = start(&st, s, idp, T0, p);
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", state,
                                     "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", T0, p),
                    APR_EACCES);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_BROWSER);
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", state, st->binding, T0, p),
                    APR_NOTFOUND);
    state = start(&st, s, idp, T0, p);
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", state, NULL, T0, p),
                    APR_EACCES);
    /* another provider's callback */
    state = start(&st, s, idp, T0, p);
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "other", state, st->binding, T0, p),
                    APR_EACCES);
    /* a row changed in the database (where to return) does not open */
    state = start(&st, s, idp, T0, p);
    CU_ASSERT_EQUAL(prov_store_raw(s, "UPDATE signin_states SET return_path = '/elsewhere'", p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", state, st->binding, T0, p),
                    APR_EACCES);
    state = start(&st, s, idp, T0, p);
    CU_ASSERT_EQUAL(prov_store_raw(s, "UPDATE signin_states SET link_session = 99", p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", state, st->binding, T0, p),
                    APR_EACCES);
    /* not a state at all */
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", "x' OR 1=1 --", st->binding,
                                     T0, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "code-host", NULL, st->binding, T0, p),
                    APR_NOTFOUND);
    /* the purge: records past their ten minutes go with the next start */
    CU_ASSERT_EQUAL(records(s, p), 0);
    start(&st, s, idp, T0, p);
    start(&st, s, idp, T0 + 60, p);
    CU_ASSERT_EQUAL(records(s, p), 2);
    start(&st, s, idp, T0 + PROV_SIGNIN_TTL, p);
    CU_ASSERT_EQUAL(records(s, p), 2);
    CU_ASSERT_EQUAL(prov_store_exec(s, &n, "signin_state_purge",
                                    PROV_ARGS(prov_i64(T0 + 2 * PROV_SIGNIN_TTL, p)), p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 2);
    prov_store_close(s);
    apr_pool_destroy(p);
}

static void test_begin_oidc(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_idp_t idp;
    idp_ts_t ts;
    prov_signin_start_t *st = NULL;
    prov_prelogin_t *pl = NULL;
    const char *reason = NULL, *base;
    apr_table_t *q;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    idp_ts_start(&ts);
    base = idp_ts_url(&ts, p);
    memset(&idp, 0, sizeof(idp));
    idp.name = "corp";
    idp.oidc = 1;
    idp.issuer = base;
    idp.client_id = "cid";
    idp.scope = PROV_IDP_DEFAULT_OIDC_SCOPE;
    CU_ASSERT_EQUAL_FATAL(prov_idp_meta_create(&idp.cache, p), APR_SUCCESS);
    /* the provider cannot be reached yet */
    CU_ASSERT_EQUAL(begin(&st, &reason, s, &idp, PUBLIC, NULL, 0, T0, p),
                    APR_EGENERAL);
    CU_ASSERT_STRING_EQUAL(reason, PROV_SIGNIN_R_UNREACHABLE);
    CU_ASSERT_EQUAL(records(s, p), 0);
    idp_ts_route(&ts, "/.well-known/openid-configuration", 200, 0,
                 "{\"issuer\":\"%s\",\"authorization_endpoint\":\"%s/auth\","
                 "\"token_endpoint\":\"%s/token\",\"jwks_uri\":\"%s/jwks\"}",
                 base, base, base, base);
    CU_ASSERT_EQUAL_FATAL(begin(&st, &reason, s, &idp, PUBLIC, NULL, 0,
                                            T0 + PROV_IDP_META_RETRY, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(strncmp(st->url, apr_pstrcat(p, base, "/auth?", NULL), strlen(base) + 6), 0);
    q = query_of(st->url, p);
    CU_ASSERT_STRING_EQUAL(apr_table_get(q, "scope"), "openid email profile");
    CU_ASSERT_EQUAL_FATAL(strlen(apr_table_get(q, "nonce")), 43);
    CU_ASSERT_STRING_NOT_EQUAL(apr_table_get(q, "nonce"), apr_table_get(q, "state"));
    CU_ASSERT_EQUAL(prov_signin_take(&pl, &reason, s, "corp", apr_table_get(q, "state"),
                                     st->binding, T0, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(pl->nonce, apr_table_get(q, "nonce"));
    idp_ts_stop(&ts);
    prov_store_close(s);
    apr_pool_destroy(p);
}

void prov_test_suite_signin(void)
{
    PROV_SUITE("signin",
               PROV_TEST(test_encodings),
               PROV_TEST(test_seal),
               PROV_TEST(test_return_ok),
               PROV_TEST(test_begin_plain),
               PROV_TEST(test_take_refused),
               PROV_TEST(test_per_client_cap),
               PROV_TEST(test_begin_oidc));
}
