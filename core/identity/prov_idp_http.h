/* prov_idp_http.h: identity's own small HTTP client (libcurl), for the
 * few calls a sign-in makes to an identity provider: the discovery
 * document, the JWKS, the token endpoint and the userinfo endpoint. One
 * easy handle per call (sign-ins are rare: no connection is kept), http
 * and https only, no redirect followed, connect and total timeouts (cut
 * to the sign-in step's deadline), an
 * answer of at most PROV_IDP_HTTP_MAX bytes. Nothing it logs or returns
 * holds a request's secrets (the form, the Authorization header). */
#ifndef PROV_IDP_HTTP_H
#define PROV_IDP_HTTP_H

#include "prov_common.h"

#define PROV_IDP_HTTP_MAX (1024 * 1024)
/* The longest URL or configuration value identity accepts. */
#define PROV_IDP_VALUE_MAX 2048

/* Whether v is at most max bytes of text (no control character). */
int prov_idp_text_ok(const char *v, apr_size_t max);
/* Non-zero when url is one the service will call or send a browser to:
 * https://, or http:// to a loopback host (localhost, 127.0.0.0/8, [::1]),
 * with a host, no user:password@ and no fragment. */
int prov_idp_url_ok(const char *url);
/* The origin of such a URL, as compared: "scheme://host:port", scheme and
 * host in lower case, the port always written (443 or 80 when absent);
 * NULL when url is not one prov_idp_url_ok takes. */
const char *prov_idp_origin(const char *url, apr_pool_t *p);

typedef struct prov_idp_http_answer_t {
    int status;
    const char *body;            /* NUL-terminated, in p */
    apr_size_t len;
} prov_idp_http_answer_t;

/* GET url, or POST form (application/x-www-form-urlencoded) when form is
 * not NULL; authorization is the whole Authorization header value or NULL.
 * deadline (apr_time_now()'s clock; 0: none) cuts the call's timeouts to
 * what is left of a sign-in step's time: with less than 100 ms left the
 * call is not made (APR_TIMEUP). Asks for JSON. APR_SUCCESS with whatever
 * status was answered; APR_TIMEUP,
 * APR_ECONNREFUSED (no connection), APR_ENOSPC (answer too large) or
 * APR_EGENERAL (another transport failure: *why, for a log line, names
 * libcurl's error only, never the URL's query or the form). */
apr_status_t prov_idp_http(prov_idp_http_answer_t **answer, const char **why, const char *url,
                           const char *form, const char *authorization, apr_time_t deadline,
                           apr_pool_t *p);

/* Process-wide timeouts in milliseconds (defaults 5000 and 10000); tests
 * shorten them. */
void prov_idp_http_timeouts(long connect_ms, long total_ms);

#endif
