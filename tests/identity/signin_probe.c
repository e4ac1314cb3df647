/* signin_probe.c: core/identity driven end to end without httpd, for
 * tests/integration/identity-kit.test.js against real identity providers
 * (lib/idp.js). It is what the sign-in glue will do, in a program:
 *
 *   signin_probe DB PUBLIC_URL 'NAME key=value...' [--wrong-verifier]
 *
 * parses the provider as the ProviderIdentityProvider directive would,
 * begins a sign-in (prints "URL <authorization URL>"), reads the callback
 * URL the browser was sent to from stdin, takes the pre-login record with
 * the binding cookie, exchanges the code (with another verifier when asked:
 * PKCE must then fail), signs the identity in (the user made on first
 * use), makes a session and prints "OK user=... created=... email=...
 * name=... sub=...". A failure prints "FAIL <step> <status> <reason>".
 * Then the lines "replay" and the callback URL again take that state a
 * second time and print "REPLAY <status>". core's log lines go to stderr ("LOG ...") so that the
 * test can check that none holds a secret. DB is "sqlite3:FILE", migrated
 * here; a test reuses it for a second sign-in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include <apr_uri.h>
#include "prov_store.h"
#include "prov_gateway.h"
#include "prov_identity.h"
#include "prov_session.h"
#include "prov_signin.h"
#include "prov_secret.h"
#include "prov_log.h"

static void to_stderr(void *baton, prov_log_level_e level, apr_status_t rv, const char *msg)
{
    (void)baton;
    (void)level;
    (void)rv;
    fprintf(stderr, "LOG %s\n", msg);
}

/* A query parameter, %XX and '+' decoded; NULL when absent. */
static const char *param(const char *query, const char *name, apr_pool_t *p)
{
    char *q = apr_pstrdup(p, query ? query : ""), *tok, *save = NULL;
    apr_size_t n = strlen(name);
    for (tok = apr_strtok(q, "&", &save); tok; tok = apr_strtok(NULL, "&", &save)) {
        char *r, *w;
        if (strncmp(tok, name, n) || tok[n] != '=')
            continue;
        for (r = w = tok + n + 1; *r; r++, w++) {
            if (*r == '%' && r[1] && r[2]) {
                char hex[3] = { r[1], r[2], 0 };
                *w = (char)strtol(hex, NULL, 16);
                r += 2;
            }
            else {
                *w = *r == '+' ? ' ' : *r;
            }
        }
        *w = '\0';
        return tok + n + 1;
    }
    return NULL;
}

static int fail(const char *step, apr_status_t rv, const char *reason)
{
    printf("FAIL %s %d %s\n", step, (int)rv, reason ? reason : "");
    return 0;
}

static prov_store_t *open_db(const char *spec, apr_pool_t *p)
{
    prov_store_t *s = NULL;
    int applied = 0;
    if (prov_store_open(&s, spec, 0, p) != APR_SUCCESS
        || prov_schema_migrate(&applied, s, p) != APR_SUCCESS
        || prov_store_prepare_all(s) != APR_SUCCESS)
        return NULL;
    return s;
}

/* The callback's half: take, exchange, sign in, session. */
static int finish(prov_store_t *s, prov_idp_t *idp, const char *public_url, const char *cb,
                  const char *binding, int wrong_verifier, apr_pool_t *p)
{
    apr_uri_t uri;
    prov_prelogin_t *pl = NULL;
    prov_claims_t *c = NULL;
    prov_user_t *u = NULL;
    prov_session_t *sess = NULL;
    const char *reason = NULL, *active, *refresh, *state;
    int created = 0;
    apr_status_t rv;

    if (apr_uri_parse(p, cb, &uri) != APR_SUCCESS)
        return fail("callback", APR_EINVAL, "not a URL");
    state = param(uri.query, "state", p);
    if ((rv = prov_signin_take(&pl, &reason, s, idp->name, state, binding, prov_now(), p)))
        return fail("take", rv, reason);
    if (wrong_verifier && (rv = prov_secret_token(&pl->verifier, 32, p)) != APR_SUCCESS)
        return fail("verifier", rv, NULL);
    rv = prov_signin_exchange(&c, &reason, idp, pl, public_url, param(uri.query, "code", p),
                              prov_now(), p);
    if (rv)
        return fail("exchange", rv, reason);
    if ((rv = prov_identity_signin(&u, &created, s, idp->name, c, prov_now(), p)))
        return fail("signin", rv, NULL);
    if ((rv = prov_session_create(&sess, &active, &refresh, s, u->id, prov_now(), p)))
        return fail("session", rv, NULL);
    printf("OK user=%" APR_INT64_T_FMT " created=%d email=%s name=%s sub=%s\n", u->id, created,
           u->email, u->name ? u->name : "-", c->subject);
    return 1;
}

int main(int argc, const char *const *argv)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_idp_t *idp = NULL;
    prov_signin_start_t *st = NULL;
    prov_prelogin_t *pl = NULL;
    prov_idp_endpoints_t *ep = NULL;
    const char *err = NULL, *reason = NULL;
    char line[16384];
    apr_status_t rv;

    apr_app_initialize(&argc, &argv, NULL);
    apr_pool_create(&p, NULL);
    if (argc < 4) {
        fprintf(stderr, "usage: signin_probe DB PUBLIC_URL 'NAME key=value...' "
                "[--wrong-verifier]\n");
        return 2;
    }
    prov_gateway_global_init();
    prov_log_set(to_stderr, NULL, PROV_LOG_DEBUG);
    if (!(s = open_db(argv[1], p)))
        return 1;
    if (prov_idp_parse_line(&idp, &err, argv[3], NULL, p) != APR_SUCCESS) {
        printf("FAIL parse 0 %s\n", err);
        return 0;
    }
    rv = prov_signin_endpoints(&ep, &reason, idp, prov_now(), p);
    if (rv == APR_SUCCESS)
        rv = prov_signin_begin(&st, &reason, s, idp, ep, argv[2], NULL, 0, NULL, prov_now(), p);
    if (rv)
        return fail("begin", rv, reason);
    printf("URL %s\n", st->url);
    fflush(stdout);
    if (!fgets(line, sizeof(line), stdin))
        return 1;
    line[strcspn(line, "\r\n")] = '\0';
    if (finish(s, idp, argv[2], line, st->binding, argc > 4 && !strcmp(argv[4],
               "--wrong-verifier"), p)
        && fgets(line, sizeof(line), stdin) && !strncmp(line, "replay", 6)) {
        apr_uri_t uri;
        fflush(stdout);
        if (fgets(line, sizeof(line), stdin) && (line[strcspn(line, "\r\n")] = '\0', 1)
            && apr_uri_parse(p, line, &uri) == APR_SUCCESS) {
            rv = prov_signin_take(&pl, &reason, s, idp->name, param(uri.query, "state", p),
                                  st->binding, prov_now(), p);
            printf("REPLAY %d\n", (int)rv);
        }
    }
    fflush(stdout);
    prov_store_close(s);
    apr_pool_destroy(p);
    apr_terminate();
    return 0;
}
