/* prov_idp.c: the ProviderIdentityProvider directive's arguments, checked
 * one by one into a prov_idp_t, the client secret read from its file, and
 * the list of configured providers (unique names, at most PROV_IDP_MAX).
 * Every refusal is a sentence that names the directive, the provider and
 * the key, so that httpd stops at start-up with the reason; no sentence ever
 * holds the secret. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <apr_file_io.h>
#include <apr_lib.h>
#include "prov_idp.h"
#include "prov_idp_meta.h"

#define DISPLAY_MAX  100
#define VALUE_MAX    PROV_IDP_VALUE_MAX
#define SECRET_MAX   4096

typedef struct parse_t {
    prov_idp_t *idp;
    const char *err;
    apr_pool_t *p;
} parse_t;

static apr_status_t fail(parse_t *ps, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static apr_status_t fail(parse_t *ps, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ps->err = apr_psprintf(ps->p, "ProviderIdentityProvider %s: %s", ps->idp->name,
                           apr_pvsprintf(ps->p, fmt, ap));
    va_end(ap);
    return APR_EINVAL;
}

static int name_ok(const char *n)
{
    apr_size_t len = strlen(n), i;
    if (len == 0 || len > PROV_IDP_NAME_MAX)
        return 0;
    for (i = 0; i < len; i++) {
        if (!apr_isalnum(n[i]) && n[i] != '-')
            return 0;
    }
    return 1;
}


/* RFC 6749 3.3: scope tokens of NQCHAR separated by single spaces. */
static int scope_ok(const char *v)
{
    const char *c;
    if (!*v || *v == ' ' || v[strlen(v) - 1] == ' ' || strstr(v, "  "))
        return 0;
    for (c = v; *c; c++) {
        if (*c != ' ' && (*c < 0x21 || *c > 0x7e || *c == '"' || *c == '\\'))
            return 0;
    }
    return 1;
}

static int scope_has(const char *scope, const char *token)
{
    apr_size_t n = strlen(token);
    const char *c = scope;
    while ((c = strstr(c, token)) != NULL) {
        if ((c == scope || c[-1] == ' ') && (c[n] == ' ' || c[n] == '\0'))
            return 1;
        c += n;
    }
    return 0;
}



/* The client secret: the file's first 4 KiB with trailing white space cut,
 * as the gateway token is read. */
static apr_status_t read_secret(parse_t *ps, const char *path, const char *root)
{
    apr_file_t *f = NULL;
    char buf[SECRET_MAX];
    apr_size_t n = sizeof(buf) - 1;
    char *full = NULL, ebuf[120];
    apr_status_t rv;

    rv = apr_filepath_merge(&full, root, path, APR_FILEPATH_TRUENAME, ps->p);
    if (rv != APR_SUCCESS)
        full = apr_pstrdup(ps->p, path);
    ps->idp->client_secret_file = full;
    rv = apr_file_open(&f, full, APR_FOPEN_READ, APR_OS_DEFAULT, ps->p);
    if (rv == APR_SUCCESS) {
        rv = apr_file_read(f, buf, &n);
        apr_file_close(f);
        if (rv == APR_EOF) {
            n = 0;
            rv = APR_SUCCESS;
        }
    }
    if (rv != APR_SUCCESS) {
        fail(ps, "cannot read client_secret_file %s: %s", full,
             apr_strerror(rv, ebuf, sizeof(ebuf)));
        return rv;
    }
    while (n > 0 && apr_isspace(buf[n - 1]))
        n--;
    if (n == 0)
        return fail(ps, "client_secret_file %s is empty", full);
    ps->idp->client_secret = apr_pstrndup(ps->p, buf, n);
    memset(buf, 0, sizeof(buf));
    if (strchr(ps->idp->client_secret, '\n') || !prov_idp_text_ok(ps->idp->client_secret, SECRET_MAX))
        return fail(ps, "client_secret_file %s holds more than one line", full);
    return APR_SUCCESS;
}

/* Whether url (one prov_idp_origin takes) is an origin: no path but "/". */
static int origin_only(const char *url)
{
    const char *rest = strstr(url, "://") + 3, *stop = strpbrk(rest, "/?");
    return !stop || (stop[0] == '/' && stop[1] == '\0');
}

/* endpoint_origins=any, or ORIGIN[,ORIGIN...]: the origins besides the
 * issuer's that its discovery document may name endpoints at. */
static apr_status_t take_origins(parse_t *ps, const char *v)
{
    char *list = apr_pstrdup(ps->p, v), *last = NULL, *one;
    if (!strcmp(v, "any")) {
        ps->idp->endpoint_origins_any = 1;
        return APR_SUCCESS;
    }
    ps->idp->endpoint_origins = apr_array_make(ps->p, 4, sizeof(const char *));
    for (one = apr_strtok(list, ",", &last); one; one = apr_strtok(NULL, ",", &last)) {
        const char *o = prov_idp_origin(one, ps->p);
        if (!o || !origin_only(one))
            return fail(ps, "endpoint_origins=%s: give any, or origins (https://host[:port], "
                        "http:// only to a loopback host) separated by commas", v);
        APR_ARRAY_PUSH(ps->idp->endpoint_origins, const char *) = o;
    }
    if (!ps->idp->endpoint_origins->nelts)
        return fail(ps, "endpoint_origins= names no origin");
    return APR_SUCCESS;
}

/* timeout=SECONDS, 1 to PROV_IDP_TIMEOUT_MAX. */
static apr_status_t take_timeout(parse_t *ps, const char *v)
{
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (!apr_isdigit(*v) || *end || n < 1 || n > PROV_IDP_TIMEOUT_MAX)
        return fail(ps, "timeout=%s: give whole seconds from 1 to %d", v,
                    PROV_IDP_TIMEOUT_MAX);
    ps->idp->timeout = (int)n;
    return APR_SUCCESS;
}

/* Stores one key=value in the provider (the secret file's path in *secret). */
static apr_status_t take(parse_t *ps, const char *key, const char *v, const char **secret)
{
    static const char *const url_keys[] = { "issuer", "authorization_endpoint",
                                            "token_endpoint", "userinfo_endpoint", NULL };
    prov_idp_t *idp = ps->idp;
    const char **slots[] = { &idp->issuer, &idp->authorization_endpoint,
                             &idp->token_endpoint, &idp->userinfo_endpoint };
    int i;

    for (i = 0; url_keys[i]; i++) {
        if (strcmp(key, url_keys[i]))
            continue;
        if (!prov_idp_url_ok(v))
            return fail(ps, "%s=%s is not an https:// URL (http:// only to a loopback "
                        "host)", key, v);
        *slots[i] = v;
        return APR_SUCCESS;
    }
    if (!strcmp(key, "client_id"))
        idp->client_id = v;
    else if (!strcmp(key, "client_secret_file"))
        *secret = v;
    else if (!strcmp(key, "display"))
        idp->display = v;
    else if (!strcmp(key, "scope")) {
        if (!scope_ok(v))
            return fail(ps, "scope=\"%s\" is not a list of scope tokens separated by "
                        "single spaces", v);
        idp->scope = v;
    }
    else if (!strcmp(key, "auth")) {
        if (!strcmp(v, "client_secret_basic"))
            idp->auth = PROV_IDP_AUTH_BASIC;
        else if (!strcmp(v, "client_secret_post"))
            idp->auth = PROV_IDP_AUTH_POST;
        else
            return fail(ps, "auth=%s: use client_secret_basic or client_secret_post", v);
    }
    else if (!strcmp(key, "subject_field"))
        idp->subject_field = v;
    else if (!strcmp(key, "emails_verified")) {
        if (strcasecmp(v, "on") && strcasecmp(v, "off"))
            return fail(ps, "emails_verified=%s: use on or off", v);
        idp->emails_verified = !strcasecmp(v, "on");
    }
    else if (!strcmp(key, "timeout"))
        return take_timeout(ps, v);
    else if (!strcmp(key, "endpoint_origins"))
        return take_origins(ps, v);
    else
        return fail(ps, "unknown key '%s'", key);
    return APR_SUCCESS;
}

/* What the keys must add up to: an issuer, or all four plain OAuth keys. */
static apr_status_t check_kind(parse_t *ps)
{
    prov_idp_t *idp = ps->idp;
    const char *plain[] = { idp->authorization_endpoint, idp->token_endpoint,
                            idp->userinfo_endpoint, idp->subject_field };
    const char *names[] = { "authorization_endpoint", "token_endpoint",
                            "userinfo_endpoint", "subject_field" };
    int i, given = 0;

    for (i = 0; i < 4; i++)
        given += plain[i] != NULL;
    if (idp->issuer && given)
        return fail(ps, "issuer= (OpenID Connect) excludes %s= (plain OAuth 2.0)",
                    names[plain[0] ? 0 : plain[1] ? 1 : plain[2] ? 2 : 3]);
    if (!idp->issuer && !given)
        return fail(ps, "needs issuer= (OpenID Connect) or authorization_endpoint=, "
                    "token_endpoint=, userinfo_endpoint= and subject_field= (plain OAuth 2.0)");
    if (idp->issuer) {
        if (strchr(idp->issuer, '?'))
            return fail(ps, "issuer=%s has a query", idp->issuer);
        idp->oidc = 1;
        if (!idp->scope)
            idp->scope = PROV_IDP_DEFAULT_OIDC_SCOPE;
        else if (!scope_has(idp->scope, "openid"))
            return fail(ps, "scope=\"%s\" lacks openid (an OpenID Connect provider needs it)",
                        idp->scope);
        return APR_SUCCESS;
    }
    for (i = 0; i < 4; i++) {
        if (!plain[i])
            return fail(ps, "missing %s= (a plain OAuth 2.0 provider needs "
                        "authorization_endpoint=, token_endpoint=, userinfo_endpoint= and "
                        "subject_field=)", names[i]);
    }
    return APR_SUCCESS;
}

apr_status_t prov_idp_parse(prov_idp_t **out, const char **err, const char *name, int argc,
                            const char *const *argv, const char *root, apr_pool_t *p)
{
    parse_t ps;
    const char *secret = NULL;
    apr_hash_t *seen = apr_hash_make(p);
    apr_status_t rv;
    int i;

    ps.p = p;
    ps.err = NULL;
    ps.idp = apr_pcalloc(p, sizeof(*ps.idp));
    ps.idp->name = apr_pstrdup(p, name ? name : "");
    ps.idp->timeout = PROV_IDP_TIMEOUT_DEFAULT;
    if (!name_ok(ps.idp->name)) {
        *err = apr_psprintf(p, "ProviderIdentityProvider: the name '%s' must be 1 to %d "
                            "letters, digits or '-'", ps.idp->name, PROV_IDP_NAME_MAX);
        return APR_EINVAL;
    }
    for (i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        const char *key, *v;
        if (!eq || eq == argv[i]) {
            rv = fail(&ps, "'%s' is not key=value", argv[i]);
            goto done;
        }
        key = apr_pstrndup(p, argv[i], (apr_size_t)(eq - argv[i]));
        v = apr_pstrdup(p, eq + 1);
        if (apr_hash_get(seen, key, APR_HASH_KEY_STRING)) {
            rv = fail(&ps, "%s= is given twice", key);
            goto done;
        }
        apr_hash_set(seen, key, APR_HASH_KEY_STRING, key);
        if (!*v || !prov_idp_text_ok(v, VALUE_MAX)) {
            rv = fail(&ps, "%s= needs a value (at most %d characters, no control "
                      "characters)", key, VALUE_MAX);
            goto done;
        }
        if ((rv = take(&ps, key, v, &secret)) != APR_SUCCESS)
            goto done;
    }
    if ((rv = check_kind(&ps)) != APR_SUCCESS)
        goto done;
    if (!ps.idp->client_id) {
        rv = fail(&ps, "missing client_id=");
        goto done;
    }
    if (!secret) {
        rv = fail(&ps, "missing client_secret_file=");
        goto done;
    }
    if (!ps.idp->display)
        ps.idp->display = ps.idp->name;
    else if (!prov_idp_text_ok(ps.idp->display, DISPLAY_MAX)) {
        rv = fail(&ps, "display= is longer than %d characters", DISPLAY_MAX);
        goto done;
    }
    if ((rv = read_secret(&ps, secret, root)) != APR_SUCCESS)
        goto done;
    if ((rv = prov_idp_meta_create(&ps.idp->cache, p)) != APR_SUCCESS)
        ps.err = apr_psprintf(p, "ProviderIdentityProvider %s: out of memory", ps.idp->name);
done:
    if (rv != APR_SUCCESS) {
        *err = ps.err;
        return rv;
    }
    *out = ps.idp;
    return APR_SUCCESS;
}

/* The next word of *line, its quotes taken off: a quoted run (" or ')
 * may start anywhere in a word (display="Shown name"), and a backslash
 * in it escapes that quote or a backslash. NULL at the end of the line;
 * *bad when a quote is not closed. */
static char *next_word(const char **line, int *bad, apr_pool_t *p)
{
    const char *c = *line;
    char *out, *o;
    while (apr_isspace(*c))
        c++;
    if (!*c) {
        *line = c;
        return NULL;
    }
    out = o = apr_palloc(p, strlen(c) + 1);
    while (*c && !apr_isspace(*c)) {
        char q = *c;
        if (q != '"' && q != '\'') {
            *o++ = *c++;
            continue;
        }
        for (c++; *c && *c != q; c++) {
            if (*c == '\\' && (c[1] == q || c[1] == '\\'))
                c++;
            *o++ = *c;
        }
        if (*c != q) {
            *bad = 1;
            return NULL;
        }
        c++;
    }
    *o = '\0';
    *line = c;
    return out;
}

apr_status_t prov_idp_parse_line(prov_idp_t **idp, const char **err, const char *line,
                                 const char *root, apr_pool_t *p)
{
    apr_array_header_t *words = apr_array_make(p, 12, sizeof(const char *));
    const char *name, *c = line ? line : "";
    int bad = 0;
    char *w;

    while ((w = next_word(&c, &bad, p)) != NULL)
        APR_ARRAY_PUSH(words, const char *) = w;
    if (bad) {
        *err = "ProviderIdentityProvider: a quote is not closed";
        return APR_EINVAL;
    }
    name = words->nelts ? APR_ARRAY_IDX(words, 0, const char *) : "";
    return prov_idp_parse(idp, err, name, words->nelts ? words->nelts - 1 : 0,
                          words->nelts > 1 ? &APR_ARRAY_IDX(words, 1, const char *) : NULL,
                          root, p);
}

apr_status_t prov_idp_add(apr_array_header_t *list, prov_idp_t *idp, const char **err,
                          apr_pool_t *p)
{
    if (prov_idp_find(list, idp->name)) {
        *err = apr_psprintf(p, "ProviderIdentityProvider %s: that name is configured "
                            "already", idp->name);
        return APR_EEXIST;
    }
    if (list->nelts >= PROV_IDP_MAX) {
        *err = apr_psprintf(p, "ProviderIdentityProvider %s: at most %d identity providers "
                            "may be configured", idp->name, PROV_IDP_MAX);
        return APR_ENOSPC;
    }
    APR_ARRAY_PUSH(list, prov_idp_t *) = idp;
    return APR_SUCCESS;
}

prov_idp_t *prov_idp_find(const apr_array_header_t *list, const char *name)
{
    int i;
    if (!list || !name)
        return NULL;
    for (i = 0; i < list->nelts; i++) {
        prov_idp_t *idp = APR_ARRAY_IDX(list, i, prov_idp_t *);
        if (!strcmp(idp->name, name))
            return idp;
    }
    return NULL;
}

apr_time_t prov_idp_deadline(const prov_idp_t *idp)
{
    return apr_time_now() + apr_time_from_sec(idp->timeout > 0 ? idp->timeout
                                                               : PROV_IDP_TIMEOUT_DEFAULT);
}

const char *prov_idp_redirect_uri(const prov_idp_t *idp, const char *public_url,
                                  apr_pool_t *p)
{
    apr_size_t n = strlen(public_url);
    while (n > 0 && public_url[n - 1] == '/')
        n--;
    return apr_psprintf(p, "%.*s/v1/auth/%s/callback", (int)n, public_url, idp->name);
}
