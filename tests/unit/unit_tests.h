/* unit_tests.h: what the CUnit suites of tests/unit share: each test_prov_<area>.c
 * registers its suite with a prov_test_suite_<area>() function, and the
 * fixtures (a pool per test, an in-memory SQLite store with the schema). */
#ifndef UNIT_TESTS_H
#define UNIT_TESTS_H

#include <stdio.h>
#include <stdlib.h>
#include <CUnit/CUnit.h>
#include "prov_common.h"
#include "prov_store.h"

/* A pool that lives for the whole run (children per test are advised). */
apr_pool_t *prov_test_pool(void);
/* A fresh in-memory SQLite database with every migration applied, prepared. */
prov_store_t *prov_test_store(apr_pool_t *p);
/* The same, or, when PROV_UNIT_PGSQL holds a libpq connection string, a
 * fresh schema of that PostgreSQL database (left for the throwaway cluster
 * to take away): suites that use it run on both dialects
 * (tests/integration/identity-pgsql.test.js runs them on PostgreSQL). */
prov_store_t *prov_test_store_any(apr_pool_t *p);
/* n connections to one fresh database, as several processes or nodes
 * have: an SQLite file (removed when p is cleared) or, with
 * PROV_UNIT_PGSQL, a fresh PostgreSQL schema. Each is in a subpool of p
 * of its own, so that n threads may use them at once. */
void prov_test_store_shared(prov_store_t **stores, int n, apr_pool_t *p);
/* A socket listening on 127.0.0.1 at a free port (*port), for the suites'
 * servers; rcvbuf > 0 sets its receive buffer (accepted sockets inherit
 * it). A failure is fatal to the test. */
int prov_test_listen(int backlog, int rcvbuf, int *port);
/* The rows of a query as text: each column followed by '|', each row by a
 * newline; SQL NULL as "NULL". */
const char *prov_test_dump(prov_store_t *s, const char *sql, apr_pool_t *p);

void prov_test_suite_money(void);
void prov_test_suite_secret(void);
void prov_test_suite_error(void);
void prov_test_suite_store(void);
void prov_test_suite_store_sqlite(void);
void prov_test_suite_store_billing(void);
void prov_test_suite_account(void);
void prov_test_suite_models(void);
void prov_test_suite_window(void);
void prov_test_suite_billing(void);
void prov_test_suite_billing_lease(void);
void prov_test_suite_lease_clock(void);
void prov_test_suite_lease_budget(void);
void prov_test_suite_lease_burst(void);
void prov_test_suite_billing_journal(void);
void prov_test_suite_billing_progress(void);
void prov_test_suite_journal(void);
void prov_test_suite_plans(void);
void prov_test_suite_audit(void);
void prov_test_suite_usage(void);
void prov_test_suite_rollup(void);
void prov_test_suite_agent(void);
void prov_test_suite_chat(void);
void prov_test_suite_chat_fast(void);
void prov_test_suite_fields(void);
void prov_test_suite_catalog(void);
void prov_test_suite_credit(void);
void prov_test_suite_sse(void);
void prov_test_suite_cache(void);
void prov_test_suite_ratelimit(void);
void prov_test_suite_metrics(void);
void prov_test_suite_key_controls(void);
void prov_test_suite_messages(void);
void prov_test_suite_messages_relay(void);
void prov_test_suite_messages_fast(void);
void prov_test_suite_responses(void);
void prov_test_suite_responses_fast(void);
void prov_test_suite_responses_request(void);
void prov_test_suite_jwrite(void);
void prov_test_suite_gateway(void);
void prov_test_suite_gateway_conn(void);
void prov_test_suite_redact(void);
void prov_test_suite_header(void);
void prov_test_suite_estimate(void);
void prov_test_suite_ending(void);
void prov_test_suite_usage_strict(void);
void prov_test_suite_worst(void);
void prov_test_suite_json(void);
void prov_test_suite_json_scan(void);
void prov_test_suite_fuzz_findings(void);
void prov_test_suite_idp(void);
void prov_test_suite_idp_meta(void);
void prov_test_suite_signin(void);
void prov_test_suite_jwt(void);
void prov_test_suite_signin_token(void);
void prov_test_suite_session(void);
void prov_test_suite_identity(void);
void prov_test_suite_cabinet(void);
void prov_test_suite_cabinet_requests(void);
void prov_test_suite_refusal(void);
void prov_test_suite_docs(void);
void prov_test_suite_mcp(void);
void prov_test_suite_oauth(void);
void prov_test_suite_alert(void);

/* Adds a suite and its tests or aborts the run. */
#define PROV_SUITE(name, ...) do { \
        CU_pSuite s_ = CU_add_suite(name, NULL, NULL); \
        struct { const char *n; CU_TestFunc f; } t_[] = { __VA_ARGS__ }; \
        if (!s_) abort(); \
        for (size_t i_ = 0; i_ < sizeof(t_) / sizeof(t_[0]); i_++) \
            if (!CU_add_test(s_, t_[i_].n, t_[i_].f)) abort(); \
    } while (0)
#define PROV_TEST(f) { #f, f }

#endif
