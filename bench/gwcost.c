/* gwcost.c: what one gateway call costs the calling thread, through each
 * backend of core/gateway/: the plain HTTP/1.1 client and libcurl's easy
 * interface, called through their tables (prov_gateway_backend.h) one after
 * the other, ROUNDS times, on one thread with a kept connection each. Each
 * call is the benchmark's chat completion (bench/chat.lua's 105-byte body)
 * answered whole; the CPU time (user + system of this process) and the wall
 * time per call are printed, after a tenth as many calls to warm up. Run it
 * against a mockgw of a build without sanitizers (docs/internals/gateway.md):
 *
 *   mockgw --listen 127.0.0.1:0 --token-file FILE   (prints its port)
 *   bench/gwcost http://127.0.0.1:PORT TOKEN [CALLS [ROUNDS]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <apr_general.h>
#include <apr_time.h>
#include "prov_gateway_backend.h"

static const char body[] = "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\","
                           "\"content\":\"Say hello in five words.\"}],\"max_tokens\":16}";

static double cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6
           + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* calls calls (and a tenth as many before, unmeasured) through b. */
static int measure(const prov_gateway_backend_t *b, const char *url, const char *auth, long calls,
                   apr_pool_t *root)
{
    const void *where = NULL;
    prov_gateway_req_t req;
    apr_pool_t *p;
    double c0 = 0;
    apr_time_t t0 = 0;
    long i, failed = 0;

    apr_pool_create(&p, root);
    if (b->setup(&where, url, root) != APR_SUCCESS) {
        fprintf(stderr, "gwcost: %s does not take %s\n", b->name, url);
        return 1;
    }
    memset(&req, 0, sizeof(req));
    req.owner = b;
    req.where = where;
    req.auth_header = auth;
    req.connect_timeout_ms = 1000;
    req.timeout_ms = 10000;
    req.path = "/v1/chat/completions";
    req.body = body;
    req.len = sizeof(body) - 1;
    for (i = -calls / 10; i < calls; i++) {
        prov_gateway_response_t *r = NULL;
        const char *why = NULL;
        if (i == 0) {
            c0 = cpu_us();
            t0 = apr_time_now();
        }
        if (b->perform(&r, &req, &why, p) != APR_SUCCESS || r->status != 200)
            failed++;
        apr_pool_clear(p);
    }
    printf("gwcost: %-8s %ld calls: %.1f us CPU and %.1f us wall per call, %ld failed\n",
           b->name, calls, (cpu_us() - c0) / (double)calls,
           (double)(apr_time_now() - t0) / (double)calls, failed);
    apr_pool_destroy(p);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    apr_pool_t *root;
    long calls = argc > 3 ? atol(argv[3]) : 20000;
    int rounds = argc > 4 ? atoi(argv[4]) : 5, k, rc = 0;
    const char *auth;

    if (argc < 3 || calls < 1 || rounds < 1) {
        fprintf(stderr, "usage: gwcost http://HOST:PORT TOKEN [CALLS [ROUNDS]]\n");
        return 2;
    }
    apr_initialize();
    apr_pool_create(&root, NULL);
    auth = apr_pstrcat(root, "Authorization: Bearer ", argv[2], NULL);
    if (prov_gateway_curl_backend.init() != APR_SUCCESS)
        return 1;
    for (k = 0; k < rounds; k++) {
        rc |= measure(&prov_gateway_http_backend, argv[1], auth, calls, root);
        rc |= measure(&prov_gateway_curl_backend, argv[1], auth, calls, root);
    }
    apr_terminate();
    return rc;
}
