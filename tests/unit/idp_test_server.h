/* idp_test_server.h: a tiny HTTP server on 127.0.0.1 for the identity
 * suites: it plays an identity provider (discovery, JWKS, token and
 * userinfo endpoints) from a table of routes the test sets and changes
 * between calls, answers each request on its own connection
 * (Connection: close) and keeps what it was asked (method, target,
 * Authorization header, body) so that a test can check the calls made. */
#ifndef IDP_TEST_SERVER_H
#define IDP_TEST_SERVER_H

#include <pthread.h>
#include "prov_common.h"

#define IDP_TS_ROUTES   16
#define IDP_TS_REQUESTS 64

typedef struct idp_ts_route_t {
    char *path;                  /* the target's path, query left out */
    int status;
    char *body;
    int delay_ms;                /* wait this long before answering */
    int hits;
} idp_ts_route_t;

typedef struct idp_ts_request_t {
    char method[8];
    char target[1024];
    char authorization[1024];
    char body[4096];
} idp_ts_request_t;

typedef struct idp_ts_t {
    int lfd, port;
    pthread_t th;
    pthread_mutex_t mu;
    idp_ts_route_t routes[IDP_TS_ROUTES];
    int nroutes;
    idp_ts_request_t requests[IDP_TS_REQUESTS];
    int nrequests;
} idp_ts_t;

/* Starts the server on a free loopback port. */
void idp_ts_start(idp_ts_t *s);
/* Stops it and frees the routes. */
void idp_ts_stop(idp_ts_t *s);
/* Sets (or replaces) what path answers; body is copied; a printf format. */
void idp_ts_route(idp_ts_t *s, const char *path, int status, int delay_ms,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* How many requests path has had. */
int idp_ts_hits(idp_ts_t *s, const char *path);
/* The last request to path (a copy in p), or NULL. */
idp_ts_request_t *idp_ts_last(idp_ts_t *s, const char *path, apr_pool_t *p);
/* "http://127.0.0.1:PORT" in p. */
const char *idp_ts_url(const idp_ts_t *s, apr_pool_t *p);

#endif
