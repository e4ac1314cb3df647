/* prov_gateway_int.h: what the two gateway clients share inside libprovider:
 * where a plain http:// gateway is (parsed once from ProviderGatewayURL) and
 * the keep-alive HTTP/1.1 client for answers that are not streamed
 * (prov_gateway_http.c). Not for callers outside core/prov_gateway*.c (and
 * the tests). */
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

/* The answer reader of prov_gw_http_request run over bytes in memory, as if
 * the gateway had sent buf, step bytes per read (0: as many as fit), and
 * then closed the connection. APR_SUCCESS with *resp and *keep (whether the
 * connection could carry another request), APR_EOF when the bytes end
 * before an answer's head, APR_EGENERAL when they are not a well-formed
 * HTTP/1.x answer. For the unit tests and tests/fuzz/fuzz_gateway_http.c. */
apr_status_t prov_gw_http_parse(prov_gw_response_t **resp, int *keep, const char *buf,
                                apr_size_t len, apr_size_t step, apr_pool_t *p);

#endif
