/* unit_tests.c: the CUnit runner for libprovider's unit tests: sets up APR,
 * registers every suite, runs them (or the one named on the command line) and
 * exits non-zero on any failure; also the shared fixtures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <CUnit/Basic.h>
#include <apr_general.h>
#include "unit_tests.h"
#include "prov_gateway.h"
#include "prov_log.h"
#include "prov_store_sqlite.h"

static apr_pool_t *root_pool;

/* Expected failures log too; keep the run's output readable unless asked. */
static void quiet_log(void *baton, prov_log_level_e level, apr_status_t rv, const char *msg)
{
    (void)baton;
    (void)level;
    (void)rv;
    (void)msg;
}

apr_pool_t *prov_test_pool(void)
{
    return root_pool;
}

prov_store_t *prov_test_store(apr_pool_t *p)
{
    prov_store_t *s = NULL;
    int applied = 0;
    if (prov_store_open(&s, "sqlite3::memory:", 0, p) != APR_SUCCESS
        || prov_schema_migrate(&applied, s, p) != APR_SUCCESS
        || prov_store_prepare_all(s) != APR_SUCCESS) {
        fprintf(stderr, "unit: cannot make the test database\n");
        abort();
    }
    return s;
}

/* A connection to PostgreSQL using schema (made first when create). */
static prov_store_t *pg_store(const char *pg, const char *schema, int create, apr_pool_t *p)
{
    prov_store_t *s = NULL;
    int applied = 0;
    if (prov_store_open(&s, apr_pstrcat(p, "pgsql:", pg, NULL), 0, p) != APR_SUCCESS
        || (create && prov_store_raw(s, apr_psprintf(p, "CREATE SCHEMA %s", schema), p)
                      != APR_SUCCESS)
        || prov_store_raw(s, apr_psprintf(p, "SET search_path TO %s", schema), p) != APR_SUCCESS
        || (create && prov_schema_migrate(&applied, s, p) != APR_SUCCESS)
        || prov_store_prepare_all(s) != APR_SUCCESS) {
        fprintf(stderr, "unit: cannot use a test schema in PostgreSQL (%s)\n", pg);
        abort();
    }
    return s;
}

static const char *pg_schema(apr_pool_t *p)
{
    static int n;
    return apr_psprintf(p, "unit_%ld_%d", (long)getpid(), ++n);
}

prov_store_t *prov_test_store_any(apr_pool_t *p)
{
    const char *pg = getenv("PROV_UNIT_PGSQL");
    if (!pg || !*pg)
        return prov_test_store(p);
    return pg_store(pg, pg_schema(p), 1, p);
}

static apr_status_t unlink_db(void *data)
{
    const char *f = data;
    char side[512];
    unlink(f);
    snprintf(side, sizeof(side), "%s-wal", f);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", f);
    unlink(side);
    return APR_SUCCESS;
}

void prov_test_store_shared(prov_store_t **stores, int n, apr_pool_t *p)
{
    static int k;
    const char *pg = getenv("PROV_UNIT_PGSQL"), *schema, *file;
    apr_pool_t *own;
    int i, applied = 0;
    /* each connection in a pool of its own, as each request has: a store
     * copies the values it reads into its pool, which is not thread-safe */
    if (pg && *pg) {
        schema = pg_schema(p);
        for (i = 0; i < n; i++) {
            apr_pool_create(&own, p);
            stores[i] = pg_store(pg, schema, i == 0, own);
        }
        return;
    }
    file = apr_psprintf(p, "/tmp/prov-unit-shared-%ld-%d.db", (long)getpid(), ++k);
    apr_pool_cleanup_register(p, file, unlink_db, apr_pool_cleanup_null);
    for (i = 0; i < n; i++) {
        apr_pool_create(&own, p);
        if (prov_store_open(&stores[i], apr_pstrcat(own, "sqlite3:", file, NULL), 0, own)
            != APR_SUCCESS
            || (i == 0 && prov_schema_migrate(&applied, stores[i], p) != APR_SUCCESS)
            || prov_store_prepare_all(stores[i]) != APR_SUCCESS) {
            fprintf(stderr, "unit: cannot make the shared test database %s\n", file);
            abort();
        }
    }
}

int prov_test_listen(int backlog, int rcvbuf, int *port)
{
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
    CU_ASSERT_FATAL(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CU_ASSERT_FATAL(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    CU_ASSERT_FATAL(listen(fd, backlog) == 0);
    CU_ASSERT_FATAL(getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    *port = ntohs(a.sin_port);
    return fd;
}

const char *prov_test_dump(prov_store_t *s, const char *sql, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    const char *all = "";
    int i;
    if (apr_dbd_select(s->driver, p, s->handle, &res, sql, 1) != 0)
        return NULL;
    while (apr_dbd_get_row(s->driver, p, res, &row, -1) == 0) {
        for (i = 0; i < apr_dbd_num_cols(s->driver, res); i++) {
            const char *v = prov_store_get(s, row, i);
            all = apr_pstrcat(p, all, v ? v : "NULL", "|", NULL);
        }
        all = apr_pstrcat(p, all, "\n", NULL);
    }
    return all;
}

int main(int argc, char **argv)
{
    unsigned failures;
    apr_app_initialize(&argc, (const char *const **)&argv, NULL);
    apr_pool_create(&root_pool, NULL);
    prov_gateway_global_init();
    prov_sqlite_global_init();       /* as the module does, before any database */
    if (!getenv("PROV_TEST_VERBOSE"))
        prov_log_set(quiet_log, NULL, PROV_LOG_DEBUG);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    prov_test_suite_money();
    prov_test_suite_secret();
    prov_test_suite_error();
    prov_test_suite_store();
    prov_test_suite_store_sqlite();
    prov_test_suite_store_billing();
    prov_test_suite_account();
    prov_test_suite_models();
    prov_test_suite_window();
    prov_test_suite_billing();
    prov_test_suite_billing_lease();
    prov_test_suite_lease_clock();
    prov_test_suite_lease_budget();
    prov_test_suite_lease_burst();
    prov_test_suite_billing_journal();
    prov_test_suite_billing_progress();
    prov_test_suite_journal();
    prov_test_suite_plans();
    prov_test_suite_audit();
    prov_test_suite_alert();
    prov_test_suite_usage();
    prov_test_suite_rollup();
    prov_test_suite_agent();
    prov_test_suite_chat();
    prov_test_suite_chat_fast();
    prov_test_suite_fields();
    prov_test_suite_catalog();
    prov_test_suite_credit();
    prov_test_suite_sse();
    prov_test_suite_cache();
    prov_test_suite_ratelimit();
    prov_test_suite_metrics();
    prov_test_suite_key_controls();
    prov_test_suite_messages();
    prov_test_suite_messages_relay();
    prov_test_suite_messages_fast();
    prov_test_suite_responses();
    prov_test_suite_responses_fast();
    prov_test_suite_responses_request();
    prov_test_suite_jwrite();
    prov_test_suite_gateway();
    prov_test_suite_gateway_conn();
    prov_test_suite_redact();
    prov_test_suite_header();
    prov_test_suite_estimate();
    prov_test_suite_ending();
    prov_test_suite_usage_strict();
    prov_test_suite_worst();
    prov_test_suite_json();
    prov_test_suite_json_scan();
    prov_test_suite_fuzz_findings();
    prov_test_suite_idp();
    prov_test_suite_idp_meta();
    prov_test_suite_signin();
    prov_test_suite_jwt();
    prov_test_suite_signin_token();
    prov_test_suite_session();
    prov_test_suite_identity();
    prov_test_suite_cabinet();
    prov_test_suite_cabinet_requests();
    prov_test_suite_refusal();
    prov_test_suite_docs();
    prov_test_suite_mcp();
    prov_test_suite_oauth();
    CU_basic_set_mode(CU_BRM_NORMAL);
    if (argc > 1) {
        CU_pSuite s = CU_get_suite(argv[1]);
        if (!s) {
            fprintf(stderr, "unit: no suite named %s\n", argv[1]);
            return 2;
        }
        CU_basic_run_suite(s);
    }
    else {
        CU_basic_run_tests();
    }
    failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    apr_pool_destroy(root_pool);
    apr_terminate();
    return failures ? 1 : 0;
}
