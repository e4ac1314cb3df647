/* test_prov_idp.c: unit tests of the ProviderIdentityProvider arguments
 * (core/identity/prov_idp.c): an OpenID Connect and a plain OAuth 2.0
 * provider read whole, defaults, the client secret read from its file (and
 * relative to the server root), every refusal with a message naming the
 * directive, the provider and the key (unknown key, twice, no value, no
 * client_id, no secret file, unreadable or empty secret, issuer together
 * with or without the plain endpoints, a plain provider short of one, a bad
 * name, auth, scope, emails_verified or timeout, URLs that are neither
 * https:// nor http:// to a loopback host), the list of at most four with
 * unique names, the raw argument line with quotes inside words, and the
 * redirect URI. */
#include <string.h>
#include <unistd.h>
#include "unit_tests.h"
#include "prov_idp.h"

/* A secret file in a fresh directory, removed at the end of the test. */
typedef struct secret_t {
    char dir[64];
    char path[96];
} secret_t;

static void secret_make(secret_t *s, const char *content)
{
    FILE *f;
    strcpy(s->dir, "/tmp/prov-unit-idp-XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(s->dir));
    snprintf(s->path, sizeof(s->path), "%s/secret", s->dir);
    f = fopen(s->path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(content, f);
    fclose(f);
}

static void secret_drop(secret_t *s)
{
    unlink(s->path);
    rmdir(s->dir);
}

/* Parses name + the NULL-terminated arguments; *err on failure. */
static apr_status_t parse(prov_idp_t **idp, const char **err, const char *name,
                          const char *root, apr_pool_t *p, ...)
{
    const char *argv[16];
    int argc = 0;
    va_list ap;
    va_start(ap, p);
    while (argc < 16 && (argv[argc] = va_arg(ap, const char *)) != NULL)
        argc++;
    va_end(ap);
    *err = NULL;
    return prov_idp_parse(idp, err, name, argc, argv, root, p);
}

/* Parsing must fail with a message that holds every one of the words. */
static void refused(const char *want1, const char *want2, apr_status_t rv, const char *err)
{
    CU_ASSERT_NOT_EQUAL(rv, APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "ProviderIdentityProvider"));
    if (want1 && !strstr(err, want1))
        fprintf(stderr, "\n  message \"%s\" lacks \"%s\"\n", err, want1);
    CU_ASSERT_PTR_NOT_NULL(want1 ? strstr(err, want1) : err);
    CU_ASSERT_PTR_NOT_NULL(want2 ? strstr(err, want2) : err);
}

static void test_oidc(void)
{
    apr_pool_t *p;
    prov_idp_t *idp = NULL;
    const char *err;
    secret_t sec;
    apr_pool_create(&p, prov_test_pool());
    secret_make(&sec, "s3cret-value \n\n");
    CU_ASSERT_EQUAL(parse(&idp, &err, "corp-1", NULL, p, "issuer=https://id.example.com",
                          "client_id=abc", apr_pstrcat(p, "client_secret_file=", sec.path, NULL),
                          NULL), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(idp);
    CU_ASSERT_STRING_EQUAL(idp->name, "corp-1");
    CU_ASSERT_STRING_EQUAL(idp->display, "corp-1");
    CU_ASSERT_TRUE(idp->oidc);
    CU_ASSERT_STRING_EQUAL(idp->issuer, "https://id.example.com");
    CU_ASSERT_STRING_EQUAL(idp->client_id, "abc");
    CU_ASSERT_STRING_EQUAL(idp->client_secret, "s3cret-value");
    CU_ASSERT_STRING_EQUAL(idp->scope, PROV_IDP_DEFAULT_OIDC_SCOPE);
    CU_ASSERT_EQUAL(idp->auth, PROV_IDP_AUTH_BASIC);
    CU_ASSERT_PTR_NULL(idp->token_endpoint);

    CU_ASSERT_EQUAL(parse(&idp, &err, "Two", NULL, p, "display=Example Corp",
                          "scope=openid email", "auth=client_secret_post",
                          "issuer=http://localhost:9000/oidc", "client_id=x",
                          apr_pstrcat(p, "client_secret_file=", sec.path, NULL), NULL),
                    APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(idp->display, "Example Corp");
    CU_ASSERT_STRING_EQUAL(idp->scope, "openid email");
    CU_ASSERT_EQUAL(idp->auth, PROV_IDP_AUTH_POST);
    CU_ASSERT_PTR_NULL(idp->endpoint_origins);
    CU_ASSERT_FALSE(idp->endpoint_origins_any);
    CU_ASSERT_EQUAL(parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a",
                          apr_pstrcat(p, "client_secret_file=", sec.path, NULL), "endpoint_origins=https://A.example,https://b.example:8443/",
                          NULL), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(idp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(idp->endpoint_origins);
    CU_ASSERT_EQUAL_FATAL(idp->endpoint_origins->nelts, 2);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(idp->endpoint_origins, 0, const char *),
                           "https://a.example:443");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(idp->endpoint_origins, 1, const char *),
                           "https://b.example:8443");
    CU_ASSERT_FALSE(idp->endpoint_origins_any);
    CU_ASSERT_EQUAL(parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a",
                          apr_pstrcat(p, "client_secret_file=", sec.path, NULL), "endpoint_origins=any", NULL), APR_SUCCESS);
    CU_ASSERT_TRUE(idp->endpoint_origins_any);
    secret_drop(&sec);
    apr_pool_destroy(p);
}

static void test_plain(void)
{
    apr_pool_t *p;
    prov_idp_t *idp = NULL;
    const char *err;
    secret_t sec;
    apr_pool_create(&p, prov_test_pool());
    secret_make(&sec, "plain");
    /* a relative secret file is taken from the root given */
    CU_ASSERT_EQUAL(parse(&idp, &err, "code-host", sec.dir, p,
                          "authorization_endpoint=https://code.example/login/oauth/authorize",
                          "token_endpoint=https://code.example/login/oauth/access_token",
                          "userinfo_endpoint=https://api.code.example/user",
                          "subject_field=id", "client_id=cid", "client_secret_file=secret",
                          "scope=read:user", NULL), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(idp);
    CU_ASSERT_FALSE(idp->oidc);
    CU_ASSERT_PTR_NULL(idp->issuer);
    CU_ASSERT_STRING_EQUAL(idp->subject_field, "id");
    CU_ASSERT_STRING_EQUAL(idp->userinfo_endpoint, "https://api.code.example/user");
    CU_ASSERT_STRING_EQUAL(idp->client_secret, "plain");
    CU_ASSERT_STRING_EQUAL(idp->client_secret_file, sec.path);
    CU_ASSERT_STRING_EQUAL(idp->scope, "read:user");
    /* the defaults: emails not taken as verified, the sign-in step's time */
    CU_ASSERT_EQUAL(idp->emails_verified, 0);
    CU_ASSERT_EQUAL(idp->timeout, PROV_IDP_TIMEOUT_DEFAULT);
    CU_ASSERT_EQUAL(parse(&idp, &err, "code-host", sec.dir, p,
                          "authorization_endpoint=https://code.example/a",
                          "token_endpoint=https://code.example/t",
                          "userinfo_endpoint=https://code.example/u", "subject_field=id",
                          "client_id=cid", "client_secret_file=secret", "emails_verified=on",
                          "timeout=4", NULL), APR_SUCCESS);
    CU_ASSERT_EQUAL(idp->emails_verified, 1);
    CU_ASSERT_EQUAL(idp->timeout, 4);
    CU_ASSERT_EQUAL(parse(&idp, &err, "code-host", sec.dir, p,
                          "authorization_endpoint=https://code.example/a",
                          "token_endpoint=https://code.example/t",
                          "userinfo_endpoint=https://code.example/u", "subject_field=id",
                          "client_id=cid", "client_secret_file=secret", "emails_verified=Off",
                          NULL), APR_SUCCESS);
    CU_ASSERT_EQUAL(idp->emails_verified, 0);
    /* no scope: none is sent */
    CU_ASSERT_EQUAL(parse(&idp, &err, "code-host", sec.dir, p,
                          "authorization_endpoint=https://code.example/a",
                          "token_endpoint=https://code.example/t",
                          "userinfo_endpoint=https://code.example/u",
                          "subject_field=id", "client_id=cid", "client_secret_file=secret",
                          NULL), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(idp->scope);
    secret_drop(&sec);
    apr_pool_destroy(p);
}

static void test_refusals(void)
{
    apr_pool_t *p;
    prov_idp_t *idp = NULL;
    const char *err, *sf;
    secret_t sec;
    apr_status_t rv;
    apr_pool_create(&p, prov_test_pool());
    secret_make(&sec, "x");
    sf = apr_pstrcat(p, "client_secret_file=", sec.path, NULL);

    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "colour=blue", NULL);
    refused("one: unknown key 'colour'", NULL, rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", sf, NULL);
    refused("one: missing client_id", NULL, rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", NULL);
    refused("missing client_secret_file", NULL, rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a",
               "client_id=b", sf, NULL);
    refused("client_id= is given twice", NULL, rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=", "client_id=a", sf, NULL);
    refused("issuer= needs a value", NULL, rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer", NULL);
    refused("'issuer' is not key=value", NULL, rv, err);
    /* both, neither, a plain one short of a key */
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "token_endpoint=https://i.example/token", NULL);
    refused("issuer=", "excludes token_endpoint=", rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "client_id=a", sf, NULL);
    refused("needs issuer=", "subject_field=", rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "authorization_endpoint=https://c.example/a",
               "token_endpoint=https://c.example/t", "subject_field=id", "client_id=a", sf, NULL);
    refused("missing userinfo_endpoint=", NULL, rv, err);
    /* the secret file */
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a",
               "client_secret_file=/nonexistent/prov-secret", NULL);
    refused("cannot read client_secret_file /nonexistent/prov-secret", NULL, rv, err);
    secret_drop(&sec);
    secret_make(&sec, " \n");
    sf = apr_pstrcat(p, "client_secret_file=", sec.path, NULL);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf, NULL);
    refused("is empty", NULL, rv, err);
    secret_drop(&sec);
    secret_make(&sec, "line one\nline two\n");
    sf = apr_pstrcat(p, "client_secret_file=", sec.path, NULL);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf, NULL);
    refused("more than one line", NULL, rv, err);
    CU_ASSERT_PTR_NULL(strstr(err, "line one"));
    /* names, auth, scope, URLs */
    rv = parse(&idp, &err, "bad_name", NULL, p, "issuer=https://i.example", NULL);
    refused("'bad_name'", "letters, digits or '-'", rv, err);
    rv = parse(&idp, &err, "", NULL, p, NULL);
    refused("letters, digits", NULL, rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "auth=private_key_jwt", NULL);
    refused("auth=private_key_jwt", "client_secret_post", rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "scope=email profile", NULL);
    refused("lacks openid", NULL, rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "scope=openid  email", NULL);
    refused("scope=", "single spaces", rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=http://id.example", "client_id=a", sf, NULL);
    refused("issuer=http://id.example is not an https:// URL", NULL, rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example/?x=1", "client_id=a", sf,
               NULL);
    refused("has a query", NULL, rv, err);
    /* emails_verified, timeout */
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "emails_verified=yes", NULL);
    refused("emails_verified=yes", "on or off", rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "timeout=0", NULL);
    refused("timeout=0", "from 1 to 120", rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "timeout=121", NULL);
    refused("timeout=121", NULL, rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "timeout=5s", NULL);
    refused("timeout=5s", NULL, rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "timeout=-3", NULL);
    refused("timeout=-3", NULL, rv, err);
    /* endpoint_origins: any, or origins only */
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "endpoint_origins=https://a.example/path", NULL);
    refused("endpoint_origins=https://a.example/path", "origins", rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "endpoint_origins=http://example.com", NULL);
    refused("endpoint_origins=", NULL, rv, err);
    rv = parse(&idp, &err, "one", NULL, p, "issuer=https://i.example", "client_id=a", sf,
               "endpoint_origins=,", NULL);
    refused("names no origin", NULL, rv, err);
    secret_drop(&sec);
    apr_pool_destroy(p);
}

static void test_url_ok(void)
{
    CU_ASSERT_TRUE(prov_idp_url_ok("https://id.example.com"));
    CU_ASSERT_TRUE(prov_idp_url_ok("https://id.example.com:8443/realms/x"));
    CU_ASSERT_TRUE(prov_idp_url_ok("http://localhost:3000/oidc"));
    CU_ASSERT_TRUE(prov_idp_url_ok("http://LOCALHOST"));
    CU_ASSERT_TRUE(prov_idp_url_ok("http://127.0.0.1:8080/a?b=c"));
    CU_ASSERT_TRUE(prov_idp_url_ok("http://[::1]:8080/"));
    CU_ASSERT_FALSE(prov_idp_url_ok("http://example.com/"));
    CU_ASSERT_FALSE(prov_idp_url_ok("http://localhost.example.com/"));
    CU_ASSERT_FALSE(prov_idp_url_ok("http://127.0.0.1.example.com/"));
    CU_ASSERT_FALSE(prov_idp_url_ok("https://user:pw@id.example.com/"));
    CU_ASSERT_FALSE(prov_idp_url_ok("https://id.example.com/#frag"));
    CU_ASSERT_FALSE(prov_idp_url_ok("https:///path"));
    CU_ASSERT_FALSE(prov_idp_url_ok("ftp://id.example.com/"));
    CU_ASSERT_FALSE(prov_idp_url_ok("https://id.example.com/a b"));
    CU_ASSERT_FALSE(prov_idp_url_ok(NULL));
    /* origins as compared */
    {
        apr_pool_t *p = prov_test_pool();
        CU_ASSERT_STRING_EQUAL(prov_idp_origin("HTTPS://Id.Example.COM/x", p),
                               "https://id.example.com:443");
        CU_ASSERT_STRING_EQUAL(prov_idp_origin("https://id.example.com:8443?q", p),
                               "https://id.example.com:8443");
        CU_ASSERT_STRING_EQUAL(prov_idp_origin("http://127.0.0.1:8080/a?b=c", p),
                               "http://127.0.0.1:8080");
        CU_ASSERT_STRING_EQUAL(prov_idp_origin("http://localhost/a", p), "http://localhost:80");
        CU_ASSERT_STRING_EQUAL(prov_idp_origin("http://[::1]:9/x", p), "http://[::1]:9");
        CU_ASSERT_STRING_EQUAL(prov_idp_origin("http://[::1]/x", p), "http://[::1]:80");
        CU_ASSERT_STRING_EQUAL(prov_idp_origin("https://h.example:/p", p),
                               "https://h.example:443");
        CU_ASSERT_PTR_NULL(prov_idp_origin("ftp://id.example.com/", p));
        CU_ASSERT_PTR_NULL(prov_idp_origin("http://example.com/", p));
    }
}

static void test_list(void)
{
    apr_pool_t *p;
    apr_array_header_t *list;
    prov_idp_t *idp = NULL;
    const char *err = NULL, *sf;
    const char *names[] = { "a", "b", "c", "d", "e" };
    secret_t sec;
    int i;
    apr_pool_create(&p, prov_test_pool());
    secret_make(&sec, "x");
    sf = apr_pstrcat(p, "client_secret_file=", sec.path, NULL);
    list = apr_array_make(p, 4, sizeof(prov_idp_t *));
    for (i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL_FATAL(parse(&idp, &err, names[i], NULL, p, "issuer=https://i.example",
                                    "client_id=a", sf, NULL), APR_SUCCESS);
        CU_ASSERT_EQUAL(prov_idp_add(list, idp, &err, p), i < 4 ? APR_SUCCESS : APR_ENOSPC);
        if (i == 1) {
            CU_ASSERT_EQUAL(prov_idp_add(list, idp, &err, p), APR_EEXIST);
            refused("b: that name is configured already", NULL, APR_EEXIST, err);
        }
    }
    refused("e: at most 4 identity providers", NULL, APR_ENOSPC, err);
    CU_ASSERT_EQUAL(list->nelts, 4);
    CU_ASSERT_PTR_NOT_NULL(prov_idp_find(list, "d"));
    CU_ASSERT_PTR_NULL(prov_idp_find(list, "e"));
    CU_ASSERT_PTR_NULL(prov_idp_find(list, "D"));
    secret_drop(&sec);
    apr_pool_destroy(p);
}

/* The directive's raw line: quotes anywhere in a word, escapes in them. */
static void test_line(void)
{
    apr_pool_t *p;
    prov_idp_t *idp = NULL;
    const char *err = NULL;
    secret_t sec;
    apr_pool_create(&p, prov_test_pool());
    secret_make(&sec, "x");
    CU_ASSERT_EQUAL(prov_idp_parse_line(&idp, &err, apr_psprintf(p, "  corp\tissuer=https://i.example"
                                        " client_id='a b' display=\"Example \\\"Corp\\\" \\\\ One\""
                                        " \"client_secret_file=%s\" scope=\"openid email\"  ",
                                        sec.path), NULL, p), APR_SUCCESS);
    if (err)
        fprintf(stderr, "\n  %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(idp);
    CU_ASSERT_STRING_EQUAL(idp->name, "corp");
    CU_ASSERT_STRING_EQUAL(idp->client_id, "a b");
    CU_ASSERT_STRING_EQUAL(idp->display, "Example \"Corp\" \\ One");
    CU_ASSERT_STRING_EQUAL(idp->scope, "openid email");
    CU_ASSERT_STRING_EQUAL(idp->client_secret, "x");
    CU_ASSERT_EQUAL(prov_idp_parse_line(&idp, &err, "corp display=\"open", NULL, p), APR_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "quote is not closed"));
    CU_ASSERT_EQUAL(prov_idp_parse_line(&idp, &err, "", NULL, p), APR_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "letters, digits"));
    CU_ASSERT_EQUAL(prov_idp_parse_line(&idp, &err, "corp", NULL, p), APR_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "needs issuer="));
    secret_drop(&sec);
    apr_pool_destroy(p);
}

static void test_redirect_uri(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_idp_t idp;
    memset(&idp, 0, sizeof(idp));
    idp.name = "corp";
    CU_ASSERT_STRING_EQUAL(prov_idp_redirect_uri(&idp, "https://api.example.com", p),
                           "https://api.example.com/v1/auth/corp/callback");
    CU_ASSERT_STRING_EQUAL(prov_idp_redirect_uri(&idp, "http://127.0.0.1:8080//", p),
                           "http://127.0.0.1:8080/v1/auth/corp/callback");
}

void prov_test_suite_idp(void)
{
    PROV_SUITE("idp",
               PROV_TEST(test_oidc),
               PROV_TEST(test_plain),
               PROV_TEST(test_refusals),
               PROV_TEST(test_url_ok),
               PROV_TEST(test_list),
               PROV_TEST(test_line),
               PROV_TEST(test_redirect_uri));
}
