/* gw_test_server.h: the gateway suites' scripted HTTP/1.1 server on
 * 127.0.0.1 (test_prov_gateway.c, test_prov_gateway_conn.c): it answers
 * each request it reads with the next step of a script (a reply written as
 * is, a delay, a half close or a TCP reset), keeps several requests on one
 * connection, and counts the connections it took, the requests it read
 * and the connections it stopped writing on, so that a test can say how
 * the client used them. Also the suites' one POST through the plain
 * client (core/gateway/prov_gateway_http.c). */
#ifndef GW_TEST_SERVER_H
#define GW_TEST_SERVER_H

#include <pthread.h>
#include "prov_gateway_http.h"

#define GW_TS_STEPS 8

/* Each step answers one request: reply is written as is (NULL: read the
 * request and send nothing), then, if close_after, the server stops writing
 * (a FIN) but still reads and counts what arrives on that connection until
 * the client closes it; if reset, the connection is closed with a TCP reset
 * right after the request was read (and reply is not sent); reset 2 does so
 * after reading only the request's head. A step with then writes it too,
 * then_ms after the reply (a gateway that pauses inside its answer). */
typedef struct gw_ts_step_t {
    const char *reply;
    int close_after;
    int delay_ms;
    int reset;
    const char *then;
    int then_ms;
} gw_ts_step_t;

typedef struct gw_ts_t {
    int lfd, port;
    gw_ts_step_t steps[GW_TS_STEPS];
    int nsteps;
    int accepted;                   /* connections taken */
    int seen;                       /* whole requests read, answered or not */
    int closes;                     /* connections the server stopped writing on */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char last_request[4096];
    pthread_t th;
} gw_ts_t;

typedef struct gw_ts_call_t {
    prov_gateway_response_t *resp;
    const char *why;
    apr_status_t rv;
} gw_ts_call_t;

/* Waits until the server stopped writing on n connections. */
void gw_ts_wait_closes(gw_ts_t *s, int n);
/* Stops the server (after its script, or at once) and waits for it. */
void gw_ts_finish(gw_ts_t *s);
/* A server that answers with steps[0..n), and a pool for the test. */
void gw_ts_begin(gw_ts_t *s, apr_pool_t **p, const gw_ts_step_t *steps, int n);
/* One POST of body through the client; gw is the connection-cache identity. */
gw_ts_call_t gw_ts_post_body(gw_ts_t *s, const void *gw, const char *prefix,
                             long timeout_ms, const char *body, apr_size_t len, apr_pool_t *p);
/* The same with a small JSON body. */
gw_ts_call_t gw_ts_post(gw_ts_t *s, const void *gw, const char *prefix, long timeout_ms,
                        apr_pool_t *p);

#endif
