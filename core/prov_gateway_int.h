/* prov_gateway_int.h: what the two gateway clients share inside libprovider:
 * where a plain http:// gateway is (parsed once from ProviderGatewayURL) and
 * the keep-alive HTTP/1.1 client for answers that are not streamed
 * (prov_gateway_http.c). Not for callers outside core/prov_gateway*.c. */
#ifndef PROV_GATEWAY_INT_H
#define PROV_GATEWAY_INT_H

#include "prov_gateway.h"

typedef struct prov_gw_target_t {
    const char *host;               /* name or address, without brackets */
    const char *port;               /* "80" when the URL names none */
    const char *host_header;        /* the Host header: host[:port] as in the URL */
    const char *prefix;             /* the URL's path, "" or "/base" */
} prov_gw_target_t;

/* Parses "http://host[:port][/prefix]"; APR_ENOTIMPL for other schemes
 * (https:// and the rest go through libcurl), APR_EINVAL when malformed. */
apr_status_t prov_gw_target_parse(prov_gw_target_t *t, const char *url, apr_pool_t *p);

/* One request on this thread's kept connection to gw (the identity of the
 * gateway object), made when there is none. Same results as
 * prov_gateway_request; on failure *why says in a few words what went
 * wrong (for the log; it never names the host or carries the token). */
apr_status_t prov_gw_http_request(prov_gw_response_t **resp, const prov_gw_target_t *t,
                                  const void *gw, const char *auth_header,
                                  long connect_timeout_ms, long timeout_ms, const char *path,
                                  const char *body, apr_size_t len, const apr_table_t *headers,
                                  const char **why, apr_pool_t *p);

#endif
