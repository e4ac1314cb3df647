/* prov_idp_meta.c: the per-process cache of an OpenID Connect provider's
 * discovery document and JWKS (rules in prov_idp_meta.h). Each document is
 * kept as validated JSON text in malloc'd memory, replaced whole under the
 * provider's mutex and copied out into the caller's pool, so no thread
 * ever holds a pointer into a copy another thread may replace. The fetch
 * itself runs without the mutex, by one thread at a time per document
 * (single flight): a sign-in that comes while it is in flight neither
 * waits for it nor makes its own, but takes the copy at hand, stale or
 * not, or fails at once when there is none, so a provider that hangs ties
 * up one thread per document, not every sign-in's. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "prov_idp_meta.h"
#include "prov_idp_http.h"
#include "prov_json.h"
#include "prov_log.h"

typedef struct entry_t {
    char *text;                  /* validated JSON, malloc'd; NULL: none yet */
    apr_int64_t at;              /* when fetched; 0: stale */
    apr_int64_t failed;          /* when a fetch last failed; 0: never */
    apr_status_t failure;        /* what it failed with */
    int busy;                    /* a fetch is in flight (the mutex is not held by it) */
} entry_t;

struct prov_idp_cache_t {
    pthread_mutex_t mu;
    entry_t discovery;
    entry_t jwks;
    apr_int64_t forced;          /* when an unknown key id last made a fetch */
};

/* Checks a fetched document; *why (for the log) when it is unusable. */
typedef int check_fn(const char **why, const prov_idp_t *idp, json_object *doc,
                     apr_pool_t *p);

static apr_status_t cache_free(void *data)
{
    prov_idp_cache_t *c = data;
    free(c->discovery.text);
    free(c->jwks.text);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return APR_SUCCESS;
}

apr_status_t prov_idp_meta_create(prov_idp_cache_t **cache, apr_pool_t *p)
{
    prov_idp_cache_t *c = calloc(1, sizeof(*c));
    if (!c)
        return APR_ENOMEM;
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return APR_EGENERAL;
    }
    apr_pool_cleanup_register(p, c, cache_free, apr_pool_cleanup_null);
    *cache = c;
    return APR_SUCCESS;
}

static int url_member_ok(const char **why, json_object *doc, const char *name, int required,
                         apr_pool_t *p)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(doc, name, &v) || json_object_is_type(v, json_type_null)) {
        if (required)
            *why = apr_psprintf(p, "it has no %s", name);
        return !required;
    }
    if (!json_object_is_type(v, json_type_string) || !prov_idp_url_ok(json_object_get_string(v))) {
        *why = apr_psprintf(p, "its %s is not an https:// URL (http:// only to a loopback host)",
                            name);
        return 0;
    }
    return 1;
}

/* Whether url is at the issuer's origin or one endpoint_origins= allows:
 * a discovery document may not send the client secret or the browser to a
 * host the operator did not name. */
static int origin_allowed(const prov_idp_t *idp, const char *url, apr_pool_t *p)
{
    const char *o = prov_idp_origin(url, p);
    int i;
    if (idp->endpoint_origins_any)
        return 1;
    if (!o)
        return 0;
    if (!strcmp(o, prov_idp_origin(idp->issuer, p)))
        return 1;
    for (i = 0; idp->endpoint_origins && i < idp->endpoint_origins->nelts; i++) {
        if (!strcmp(o, APR_ARRAY_IDX(idp->endpoint_origins, i, const char *)))
            return 1;
    }
    return 0;
}

static int endpoint_ok(const char **why, const prov_idp_t *idp, json_object *doc,
                       const char *name, int required, apr_pool_t *p)
{
    const char *url;
    if (!url_member_ok(why, doc, name, required, p))
        return 0;
    url = prov_json_get_str(doc, name);
    if (url && !origin_allowed(idp, url, p)) {
        *why = apr_psprintf(p, "its %s (%.200s) is not at the issuer's origin nor one of "
                            "endpoint_origins=", name, url);
        return 0;
    }
    return 1;
}

static int discovery_ok(const char **why, const prov_idp_t *idp, json_object *doc,
                        apr_pool_t *p)
{
    const char *iss = prov_json_get_str(doc, "issuer");
    if (!iss || strcmp(iss, idp->issuer)) {
        /* the issuer it names is the provider's claim, not a secret: it
         * tells the operator which issuer= to configure */
        *why = apr_psprintf(p, "its issuer (%.200s) is not the configured %s",
                            iss ? iss : "none", idp->issuer);
        return 0;
    }
    return endpoint_ok(why, idp, doc, "authorization_endpoint", 1, p)
        && endpoint_ok(why, idp, doc, "token_endpoint", 1, p)
        && endpoint_ok(why, idp, doc, "jwks_uri", 1, p)
        && endpoint_ok(why, idp, doc, "userinfo_endpoint", 0, p);
}

static int jwks_ok(const char **why, const prov_idp_t *idp, json_object *doc, apr_pool_t *p)
{
    if (!prov_json_get(doc, "keys", json_type_array)) {
        *why = "it has no \"keys\" array";
        return 0;
    }
    return 1;
}

/* Fetches url and checks it (no lock held): *copy is the validated JSON
 * text, malloc'd; *why (for the log) when it is unusable. */
static apr_status_t fetch_doc(char **copy, const char **why, prov_idp_t *idp, const char *url,
                              check_fn *check, apr_time_t deadline, apr_pool_t *p)
{
    prov_idp_http_answer_t *r = NULL;
    json_object *doc = NULL;
    apr_status_t rv = prov_idp_http(&r, why, url, NULL, NULL, deadline, p);

    if (rv == APR_SUCCESS && r->status != 200) {
        *why = apr_psprintf(p, "HTTP status %d", r->status);
        rv = APR_EGENERAL;
    }
    if (rv == APR_SUCCESS && !(doc = prov_json_parse(r->body, r->len, why, p)))
        rv = APR_EGENERAL;
    else if (rv == APR_SUCCESS && !json_object_is_type(doc, json_type_object)) {
        *why = "it is not a JSON object";
        rv = APR_EGENERAL;
    }
    else if (rv == APR_SUCCESS && !check(why, idp, doc, p))
        rv = APR_EGENERAL;
    if (rv == APR_SUCCESS && !(*copy = strdup(prov_json_dump(doc, p))))
        rv = APR_ENOMEM;
    return rv;
}

/* Fills e (mutex held on entry and on return) when it has no fresh copy
 * (or force): one caller fetches, with the mutex released meanwhile;
 * another that comes while that fetch is in flight does not wait for it:
 * it gets the copy at hand, stale or not, or APR_EBUSY when there is none
 * (the sign-in fails at once rather than tie a thread to a slow
 * provider). *fetched when this call fetched a new copy. */
static apr_status_t entry_fill(prov_idp_cache_t *c, entry_t *e, int *fetched, prov_idp_t *idp,
                               const char *what, const char *url, check_fn *check, int force,
                               apr_int64_t now, apr_time_t deadline, apr_pool_t *p)
{
    const char *why = NULL;
    char *copy = NULL;
    apr_status_t rv;

    *fetched = 0;
    if (e->text && !force && e->at && now - e->at < PROV_IDP_META_TTL)
        return APR_SUCCESS;
    if (e->failed && now - e->failed < PROV_IDP_META_RETRY && now >= e->failed)
        return e->text ? APR_SUCCESS : e->failure;
    if (e->busy) {
        if (!e->text)
            prov_log(PROV_LOG_INFO, 0, "PROV00502: identity provider %s: its %s is being "
                     "fetched for another request and no copy is at hand: not waiting",
                     idp->name, what);
        return e->text ? APR_SUCCESS : APR_EBUSY;
    }
    e->busy = 1;
    pthread_mutex_unlock(&c->mu);
    rv = fetch_doc(&copy, &why, idp, url, check, deadline, p);
    pthread_mutex_lock(&c->mu);
    e->busy = 0;
    if (rv != APR_SUCCESS) {
        e->failed = now;
        e->failure = rv;
        prov_log(PROV_LOG_WARN, rv == APR_EGENERAL ? 0 : rv, "PROV00501: identity provider "
                 "%s: cannot use its %s%s: %s", idp->name, what,
                 e->text ? " (the copy at hand stays in use)" : "", why ? why : "no answer");
        return e->text ? APR_SUCCESS : rv;
    }
    free(e->text);
    e->text = copy;
    e->at = now;
    e->failed = 0;
    *fetched = 1;
    prov_log(PROV_LOG_INFO, 0, "PROV00500: identity provider %s: %s fetched", idp->name, what);
    return APR_SUCCESS;
}

/* The discovery document (mutex held), parsed in p. */
static apr_status_t discovery(json_object **doc, prov_idp_t *idp, apr_int64_t now,
                              apr_time_t deadline, apr_pool_t *p)
{
    prov_idp_cache_t *c = idp->cache;
    const char *why = NULL;
    int fetched;
    apr_size_t n = strlen(idp->issuer);
    const char *url = apr_psprintf(p, "%.*s/.well-known/openid-configuration",
                                   (int)(n && idp->issuer[n - 1] == '/' ? n - 1 : n),
                                   idp->issuer);
    apr_status_t rv = entry_fill(c, &c->discovery, &fetched, idp, "discovery document", url,
                                 discovery_ok, 0, now, deadline, p);
    if (rv != APR_SUCCESS)
        return rv;
    *doc = prov_json_parse(c->discovery.text, strlen(c->discovery.text), &why, p);
    return *doc ? APR_SUCCESS : APR_EGENERAL;
}

static const char *member_copy(json_object *doc, const char *name, apr_pool_t *p)
{
    const char *v = prov_json_get_str(doc, name);
    return v ? apr_pstrdup(p, v) : NULL;
}

apr_status_t prov_idp_endpoints(prov_idp_endpoints_t **out, prov_idp_t *idp, apr_int64_t now,
                                apr_time_t deadline, apr_pool_t *p)
{
    prov_idp_endpoints_t *ep = apr_pcalloc(p, sizeof(*ep));
    json_object *doc = NULL;
    apr_status_t rv;

    if (!idp->oidc) {
        ep->authorization = idp->authorization_endpoint;
        ep->token = idp->token_endpoint;
        ep->userinfo = idp->userinfo_endpoint;
        *out = ep;
        return APR_SUCCESS;
    }
    pthread_mutex_lock(&idp->cache->mu);
    rv = discovery(&doc, idp, now, deadline, p);
    pthread_mutex_unlock(&idp->cache->mu);
    if (rv != APR_SUCCESS)
        return rv;
    ep->authorization = member_copy(doc, "authorization_endpoint", p);
    ep->token = member_copy(doc, "token_endpoint", p);
    ep->userinfo = member_copy(doc, "userinfo_endpoint", p);
    ep->jwks_uri = member_copy(doc, "jwks_uri", p);
    *out = ep;
    return APR_SUCCESS;
}

apr_status_t prov_idp_jwks(const char **jwks, int *refreshed, prov_idp_t *idp, int force,
                           apr_int64_t now, apr_time_t deadline, apr_pool_t *p)
{
    prov_idp_cache_t *c = idp->cache;
    json_object *doc = NULL;
    int fetched = 0;
    apr_status_t rv;

    if (!idp->oidc)
        return APR_ENOTIMPL;
    pthread_mutex_lock(&c->mu);
    if (force && c->forced && now - c->forced < PROV_IDP_JWKS_FORCE_MIN && now >= c->forced)
        force = 0;
    else if (force)
        c->forced = now;
    rv = discovery(&doc, idp, now, deadline, p);
    if (rv == APR_SUCCESS)
        rv = entry_fill(c, &c->jwks, &fetched, idp, "JWKS", prov_json_get_str(doc, "jwks_uri"),
                        jwks_ok, force, now, deadline, p);
    if (rv == APR_SUCCESS)
        *jwks = apr_pstrdup(p, c->jwks.text);
    pthread_mutex_unlock(&c->mu);
    if (refreshed)
        *refreshed = fetched;
    return rv;
}

void prov_idp_meta_stale(prov_idp_t *idp)
{
    if (!idp->oidc)
        return;
    pthread_mutex_lock(&idp->cache->mu);
    idp->cache->discovery.at = 0;
    pthread_mutex_unlock(&idp->cache->mu);
}
