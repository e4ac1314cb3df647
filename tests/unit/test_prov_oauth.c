/* test_prov_oauth.c: unit tests of core/oauth on the test clock: forms (one
 * value per parameter, strict escapes), the redirect URI rules (https, or
 * loopback http with any port at the request), registration and its
 * refusals, the authorization request's checks, the consent token, and a
 * grant's whole life: a code exchanged once with its verifier (a replay
 * revokes what it gave), 60-second codes, 1-hour access tokens, refresh
 * rotation with reuse detection, revocation, the block, and codes and
 * tokens stored as SHA-256 only. The same tests run on PostgreSQL
 * (prov_test_store_any). */
#include <string.h>
#include "unit_tests.h"
#include "prov_oauth.h"
#include "prov_account.h"
#include "prov_secret.h"
#include "prov_signin_int.h"

#define T0 APR_INT64_C(1800000000)
#define ISSUER "https://api.example"
#define RESOURCE ISSUER "/v1/mcp/account"
#define VERIFIER "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk-verifier"

static void test_form(void)
{
    apr_pool_t *p;
    apr_table_t *t = NULL;
    prov_oauth_err_t err;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_oauth_form(&t, &err, "a=1&b=x+y%2Fz&&c&d=", p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(apr_table_get(t, "a"), "1");
    CU_ASSERT_STRING_EQUAL(apr_table_get(t, "b"), "x y/z");
    CU_ASSERT_STRING_EQUAL(apr_table_get(t, "c"), "");
    CU_ASSERT_STRING_EQUAL(apr_table_get(t, "d"), "");
    CU_ASSERT_EQUAL(prov_oauth_form(&t, &err, "a=1&a=2", p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(err.error, "invalid_request");
    CU_ASSERT_EQUAL(prov_oauth_form(&t, &err, "a=%4", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_oauth_form(&t, &err, "a=%zz", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_oauth_form(&t, &err, "a=%00", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_oauth_form(&t, &err, NULL, p), APR_SUCCESS);
    apr_pool_destroy(p);
}

static void test_redirect_rules(void)
{
    static const char *const ok[] = { "https://app.example/cb", "https://app.example:8443/cb?x=1",
        "http://127.0.0.1/cb", "http://127.0.0.1:5173/callback", "http://[::1]:80/cb",
        "http://localhost:9/cb", NULL };
    static const char *const bad[] = { "http://app.example/cb", "ftp://app.example/cb",
        "myapp://cb", "https://app.example/cb#f", "https://u:p@app.example/cb", "/cb",
        "https:///cb", "https://app.example/c b", "http://127.0.0.1.evil.example/cb", NULL };
    prov_oauth_client_t c;
    apr_pool_t *p;
    int i;
    apr_pool_create(&p, prov_test_pool());
    for (i = 0; ok[i]; i++)
        CU_ASSERT_TRUE(prov_oauth_redirect_uri_ok(ok[i]));
    for (i = 0; bad[i]; i++)
        CU_ASSERT_FALSE(prov_oauth_redirect_uri_ok(bad[i]));
    c.redirect_uris = apr_array_make(p, 2, sizeof(const char *));
    APR_ARRAY_PUSH(c.redirect_uris, const char *) = "http://127.0.0.1:5173/callback";
    APR_ARRAY_PUSH(c.redirect_uris, const char *) = "https://app.example/cb";
    CU_ASSERT_TRUE(prov_oauth_redirect_registered(&c, "http://127.0.0.1:5173/callback"));
    CU_ASSERT_TRUE(prov_oauth_redirect_registered(&c, "http://127.0.0.1:6000/callback"));
    CU_ASSERT_TRUE(prov_oauth_redirect_registered(&c, "http://127.0.0.1/callback"));
    CU_ASSERT_FALSE(prov_oauth_redirect_registered(&c, "http://127.0.0.1:5173/other"));
    CU_ASSERT_FALSE(prov_oauth_redirect_registered(&c, "http://localhost:5173/callback"));
    CU_ASSERT_FALSE(prov_oauth_redirect_registered(&c, "https://app.example:444/cb"));
    CU_ASSERT_FALSE(prov_oauth_redirect_registered(&c, "https://app.example/cb?x"));
    CU_ASSERT_FALSE(prov_oauth_redirect_registered(&c, NULL));
    apr_pool_destroy(p);
}

static prov_oauth_client_t *registered(prov_store_t *s, apr_pool_t *p)
{
    static const char body[] = "{\"client_name\":\"Tool\",\"redirect_uris\":"
        "[\"http://127.0.0.1:5173/callback\"],\"token_endpoint_auth_method\":\"none\","
        "\"grant_types\":[\"authorization_code\",\"refresh_token\"],\"scope\":\"account:read\"}";
    prov_oauth_client_t *c = NULL, *again = NULL;
    prov_oauth_err_t err;
    CU_ASSERT_EQUAL_FATAL(prov_oauth_register(&c, &err, s, body, strlen(body), T0, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_oauth_client_get(&again, s, c->client_id, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(again->name, "Tool");
    CU_ASSERT_EQUAL(again->redirect_uris->nelts, 1);
    return again;
}

static void test_register(void)
{
    static const char *const refused[] = { "{}", "[]", "{\"redirect_uris\":[]}",
        "{\"redirect_uris\":[\"http://app.example/cb\"]}",
        "{\"redirect_uris\":[\"https://a.example/cb\"],\"token_endpoint_auth_method\":"
        "\"client_secret_post\"}",
        "{\"redirect_uris\":[\"https://a.example/cb\"],\"grant_types\":[\"implicit\"]}",
        "{\"redirect_uris\":[\"https://a.example/cb\"],\"response_types\":[\"token\"]}",
        "{\"redirect_uris\":[\"https://a.example/cb\"],\"client_name\":\"\"}", "not json", NULL };
    apr_pool_t *p;
    prov_store_t *s;
    prov_oauth_client_t *c = NULL;
    prov_oauth_err_t err;
    int i;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    c = registered(s, p);
    CU_ASSERT_PTR_NOT_NULL(strstr(prov_oauth_client_json(c, p), "\"token_endpoint_auth_method\":"
                                  "\"none\""));
    for (i = 0; refused[i]; i++) {
        CU_ASSERT_EQUAL(prov_oauth_register(&c, &err, s, refused[i], strlen(refused[i]), T0, p),
                        APR_EINVAL);
        CU_ASSERT_TRUE(!strcmp(err.error, "invalid_redirect_uri")
                       || !strcmp(err.error, "invalid_client_metadata"));
    }
    CU_ASSERT_EQUAL(prov_oauth_client_get(&c, s, "mcp-none", p), APR_NOTFOUND);
    prov_store_close(s);
    apr_pool_destroy(p);
}

static void request(prov_oauth_authz_t *a, const prov_oauth_client_t *c, apr_pool_t *p)
{
    memset(a, 0, sizeof(*a));
    a->response_type = "code";
    a->client_id = c->client_id;
    a->redirect_uri = "http://127.0.0.1:5173/callback";
    a->code_challenge = prov_signin_challenge(VERIFIER, p);
    a->code_challenge_method = "S256";
    a->state = "st";
    a->resource = RESOURCE;
}

static void test_authz_check(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_oauth_client_t *c, *got = NULL;
    prov_oauth_authz_t a;
    prov_oauth_err_t err;
    const char *tok;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    c = registered(s, p);
    request(&a, c, p);
    CU_ASSERT_EQUAL(prov_oauth_authz_client(&got, &err, s, &a, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_oauth_authz_check(&err, &a, RESOURCE), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(a.scope, PROV_OAUTH_SCOPE);
    a.redirect_uri = "http://127.0.0.1:5173/x";
    CU_ASSERT_EQUAL(prov_oauth_authz_client(&got, &err, s, &a, p), APR_EINVAL);
    a.client_id = "mcp-unknown";
    CU_ASSERT_EQUAL(prov_oauth_authz_client(&got, &err, s, &a, p), APR_NOTFOUND);
    request(&a, c, p);
    a.code_challenge_method = "plain";
    CU_ASSERT_EQUAL(prov_oauth_authz_check(&err, &a, RESOURCE), APR_EINVAL);
    request(&a, c, p);
    a.code_challenge = NULL;
    CU_ASSERT_EQUAL(prov_oauth_authz_check(&err, &a, RESOURCE), APR_EINVAL);
    request(&a, c, p);
    a.scope = "account:read account:write";
    CU_ASSERT_EQUAL(prov_oauth_authz_check(&err, &a, RESOURCE), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(err.error, "invalid_scope");
    request(&a, c, p);
    a.resource = ISSUER "/v1/mcp";
    CU_ASSERT_EQUAL(prov_oauth_authz_check(&err, &a, RESOURCE), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(err.error, "invalid_target");
    /* the consent token: stable for one request and key, another for any change */
    request(&a, c, p);
    a.scope = PROV_OAUTH_SCOPE;
    tok = prov_oauth_consent_token("refresh-cookie", &a, p);
    CU_ASSERT_TRUE(prov_oauth_consent_ok(tok, "refresh-cookie", &a, p));
    CU_ASSERT_FALSE(prov_oauth_consent_ok(tok, "another-cookie", &a, p));
    a.state = "other";
    CU_ASSERT_FALSE(prov_oauth_consent_ok(tok, "refresh-cookie", &a, p));
    CU_ASSERT_FALSE(prov_oauth_consent_ok(NULL, "refresh-cookie", &a, p));
    CU_ASSERT_STRING_EQUAL(prov_oauth_redirect("http://127.0.0.1/cb?x=1", "CODE", NULL, "a b",
                                               ISSUER, p),
                           "http://127.0.0.1/cb?x=1&code=CODE&state=a%20b&iss=https%3A%2F%2Fapi.example");
    prov_store_close(s);
    apr_pool_destroy(p);
}

/* The token endpoint's form for a code (or a refresh token when code is NULL). */
static apr_table_t *form(const char *code, const char *refresh, const char *client_id,
                         const char *verifier, apr_pool_t *p)
{
    apr_table_t *t = apr_table_make(p, 8);
    apr_table_setn(t, "grant_type", code ? "authorization_code" : "refresh_token");
    apr_table_setn(t, "client_id", client_id);
    if (code) {
        apr_table_setn(t, "code", code);
        apr_table_setn(t, "redirect_uri", "http://127.0.0.1:5173/callback");
        apr_table_setn(t, "code_verifier", verifier);
    }
    else
        apr_table_setn(t, "refresh_token", refresh);
    return t;
}

static int live(prov_store_t *s, const char *access, apr_int64_t now, apr_pool_t *p)
{
    prov_oauth_access_t *a = NULL;
    return prov_oauth_access_check(&a, s, access, now, p) == APR_SUCCESS;
}

static void test_grant_life(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_oauth_client_t *c;
    prov_oauth_authz_t a;
    prov_oauth_tokens_t t, r;
    prov_oauth_err_t err;
    prov_oauth_access_t *acc = NULL;
    prov_user_t *u = NULL;
    const char *code = NULL, *code2 = NULL, *rows;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    c = registered(s, p);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&u, s, "ann@example.com", NULL, p), APR_SUCCESS);
    request(&a, c, p);
    a.scope = PROV_OAUTH_SCOPE;
    CU_ASSERT_EQUAL_FATAL(prov_oauth_code_issue(&code, s, &a, u->id, T0, p), APR_SUCCESS);
    /* a wrong verifier spends the code */
    CU_ASSERT_EQUAL(prov_oauth_token(&t, &err, s, form(code, NULL, c->client_id,
                    VERIFIER "x", p), T0, p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(err.error, "invalid_grant");
    CU_ASSERT_EQUAL_FATAL(prov_oauth_code_issue(&code, s, &a, u->id, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_oauth_token(&t, &err, s, form(code, NULL, c->client_id, VERIFIER,
                          p), T0 + 59, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(t.expires_in, PROV_OAUTH_ACCESS_TTL);
    CU_ASSERT_EQUAL_FATAL(prov_oauth_access_check(&acc, s, t.access_token, T0 + 60, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(acc->user_id, u->id);
    CU_ASSERT_STRING_EQUAL(acc->resource, RESOURCE);
    CU_ASSERT_TRUE(prov_oauth_scope_has(acc->scope, PROV_OAUTH_SCOPE));
    CU_ASSERT_FALSE(live(s, t.access_token, T0 + 59 + 3600, p));
    CU_ASSERT_FALSE(live(s, t.refresh_token, T0 + 60, p));
    /* only hashes are stored */
    rows = apr_pstrcat(p, prov_test_dump(s, "SELECT * FROM oauth_codes", p),
                       prov_test_dump(s, "SELECT * FROM oauth_tokens", p), NULL);
    CU_ASSERT_PTR_NULL(strstr(rows, code));
    CU_ASSERT_PTR_NULL(strstr(rows, t.access_token));
    CU_ASSERT_PTR_NOT_NULL(strstr(rows, prov_secret_hash(t.access_token, p)));
    /* the code again: refused, and what it gave is revoked */
    CU_ASSERT_EQUAL(prov_oauth_token(&r, &err, s, form(code, NULL, c->client_id, VERIFIER, p),
                    T0 + 61, p), APR_EINVAL);
    CU_ASSERT_TRUE(r.reused);
    CU_ASSERT_FALSE(live(s, t.access_token, T0 + 62, p));
    /* a code past its 60 seconds */
    CU_ASSERT_EQUAL_FATAL(prov_oauth_code_issue(&code2, s, &a, u->id, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_oauth_token(&t, &err, s, form(code2, NULL, c->client_id, VERIFIER, p),
                    T0 + 60, p), APR_EINVAL);
    prov_store_close(s);
    apr_pool_destroy(p);
}

static void test_refresh_and_revoke(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_oauth_client_t *c;
    prov_oauth_authz_t a;
    prov_oauth_tokens_t t, r, r2;
    prov_oauth_err_t err;
    prov_user_t *u = NULL;
    const char *code = NULL;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    c = registered(s, p);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&u, s, "ann@example.com", NULL, p), APR_SUCCESS);
    request(&a, c, p);
    a.scope = PROV_OAUTH_SCOPE;
    CU_ASSERT_EQUAL_FATAL(prov_oauth_code_issue(&code, s, &a, u->id, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_oauth_token(&t, &err, s, form(code, NULL, c->client_id, VERIFIER,
                          p), T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_oauth_token(&r, &err, s, form(NULL, t.refresh_token, c->client_id,
                          NULL, p), T0 + 10, p), APR_SUCCESS);
    CU_ASSERT_STRING_NOT_EQUAL(r.refresh_token, t.refresh_token);
    CU_ASSERT_EQUAL(r.grant_id, t.grant_id);
    CU_ASSERT_TRUE(live(s, r.access_token, T0 + 11, p));
    /* the rotated one again: the grant goes */
    CU_ASSERT_EQUAL(prov_oauth_token(&r2, &err, s, form(NULL, t.refresh_token, c->client_id,
                    NULL, p), T0 + 20, p), APR_EINVAL);
    CU_ASSERT_TRUE(r2.reused);
    CU_ASSERT_FALSE(live(s, r.access_token, T0 + 21, p));
    CU_ASSERT_EQUAL(prov_oauth_token(&r2, &err, s, form(NULL, r.refresh_token, c->client_id,
                    NULL, p), T0 + 22, p), APR_EINVAL);
    /* revocation: an access token alone; a refresh token ends its grant */
    CU_ASSERT_EQUAL_FATAL(prov_oauth_code_issue(&code, s, &a, u->id, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_oauth_token(&t, &err, s, form(code, NULL, c->client_id, VERIFIER,
                          p), T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_oauth_revoke(s, t.access_token, "mcp-other", T0 + 1, p), APR_EACCES);
    CU_ASSERT_EQUAL(prov_oauth_revoke(s, t.access_token, NULL, T0 + 1, p), APR_EACCES);
    CU_ASSERT_TRUE(live(s, t.access_token, T0 + 2, p));
    CU_ASSERT_EQUAL(prov_oauth_revoke(s, t.access_token, c->client_id, T0 + 1, p), APR_SUCCESS);
    CU_ASSERT_FALSE(live(s, t.access_token, T0 + 2, p));
    CU_ASSERT_EQUAL_FATAL(prov_oauth_token(&r, &err, s, form(NULL, t.refresh_token, c->client_id,
                          NULL, p), T0 + 3, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_oauth_revoke(s, r.refresh_token, c->client_id, T0 + 4, p), APR_SUCCESS);
    CU_ASSERT_FALSE(live(s, r.access_token, T0 + 5, p));
    CU_ASSERT_EQUAL(prov_oauth_revoke(s, "garbage", c->client_id, T0 + 4, p), APR_SUCCESS);
    /* a block ends every grant */
    CU_ASSERT_EQUAL_FATAL(prov_oauth_code_issue(&code, s, &a, u->id, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_oauth_token(&t, &err, s, form(code, NULL, c->client_id, VERIFIER,
                          p), T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_user_set_blocked(NULL, s, u->id, 1, p), APR_SUCCESS);
    CU_ASSERT_FALSE(live(s, t.access_token, T0 + 1, p));
    CU_ASSERT_EQUAL(prov_user_set_blocked(NULL, s, u->id, 0, p), APR_SUCCESS);
    CU_ASSERT_FALSE(live(s, t.access_token, T0 + 1, p));
    prov_store_close(s);
    apr_pool_destroy(p);
}

/* Refresh tokens rotate within the grant's absolute life (90 days), never
 * past it: the last ones expire with it, and a grant older than that (one
 * issued before the rule, say) is refused on refresh. */
static void test_grant_absolute_life(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_oauth_client_t *c;
    prov_oauth_authz_t a;
    prov_oauth_tokens_t t, r;
    prov_oauth_err_t err;
    prov_user_t *u = NULL;
    const char *code = NULL;
    const apr_int64_t day = 24 * 3600, end = T0 + PROV_OAUTH_GRANT_TTL;
    int i;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    c = registered(s, p);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&u, s, "ann@example.com", NULL, p), APR_SUCCESS);
    request(&a, c, p);
    a.scope = PROV_OAUTH_SCOPE;
    CU_ASSERT_EQUAL_FATAL(prov_oauth_code_issue(&code, s, &a, u->id, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_oauth_token(&t, &err, s, form(code, NULL, c->client_id, VERIFIER,
                          p), T0, p), APR_SUCCESS);
    /* rotated every 29 days: 29, 58, 87 */
    for (i = 1; i <= 3; i++) {
        CU_ASSERT_EQUAL_FATAL(prov_oauth_token(&r, &err, s, form(NULL, t.refresh_token,
                              c->client_id, NULL, p), T0 + i * 29 * day, p), APR_SUCCESS);
        t = r;
    }
    /* the access token of day 87 dies with the grant, not an hour later */
    CU_ASSERT_EQUAL_FATAL(prov_oauth_token(&r, &err, s, form(NULL, t.refresh_token,
                          c->client_id, NULL, p), end - 60, p), APR_SUCCESS);
    CU_ASSERT_TRUE(live(s, r.access_token, end - 1, p));
    CU_ASSERT_FALSE(live(s, r.access_token, end, p));
    /* its refresh token expires at the end too (not 30 days later) */
    CU_ASSERT_EQUAL(prov_oauth_token(&t, &err, s, form(NULL, r.refresh_token, c->client_id,
                    NULL, p), end, p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(err.error, "invalid_grant");
    /* a grant already older than its life: refused, whatever its token says */
    CU_ASSERT_EQUAL_FATAL(prov_oauth_code_issue(&code, s, &a, u->id, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_oauth_token(&t, &err, s, form(code, NULL, c->client_id, VERIFIER,
                          p), T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_raw(s, apr_psprintf(p, "UPDATE oauth_grants SET created_at = %"
                    APR_INT64_T_FMT " WHERE id = %" APR_INT64_T_FMT, T0 - PROV_OAUTH_GRANT_TTL,
                    t.grant_id), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_oauth_token(&r, &err, s, form(NULL, t.refresh_token, c->client_id,
                    NULL, p), T0 + 10, p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(err.error, "invalid_grant");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.description, "90 days"));
    prov_store_close(s);
    apr_pool_destroy(p);
}

void prov_test_suite_oauth(void)
{
    PROV_SUITE("oauth",
               PROV_TEST(test_form),
               PROV_TEST(test_redirect_rules),
               PROV_TEST(test_register),
               PROV_TEST(test_authz_check),
               PROV_TEST(test_grant_life),
               PROV_TEST(test_refresh_and_revoke),
               PROV_TEST(test_grant_absolute_life));
}
