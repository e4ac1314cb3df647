/* test_prov_ending.c: how a request ended and its ledger statuses
 * (prov_ending.c), and the ledger's status table (prov_ledger.c): every
 * case of the broken-stream cascade the transports used to write out,
 * streamed and not, and the names as stored in ledger.status. */
#include <string.h>
#include "unit_tests.h"
#include "prov_ending.h"

/* What a started stream saw: complete, rv, and flags. */
static prov_ending_e started(int complete, apr_status_t rv, int client_left, int gw_error,
                             int too_long, int malformed)
{
    prov_ending_facts_t f;
    memset(&f, 0, sizeof(f));
    f.started = 1;
    f.complete = complete;
    f.rv = rv;
    f.client_left = client_left;
    f.gateway_error = gw_error;
    f.too_long = too_long;
    f.malformed = malformed;
    return prov_ending_classify(&f);
}

/* What a request that sent the client nothing saw. */
static prov_ending_e not_started(apr_status_t rv, int client_left, int refused, int too_long,
                                 int malformed)
{
    prov_ending_facts_t f;
    memset(&f, 0, sizeof(f));
    f.rv = rv;
    f.client_left = client_left;
    f.refused = refused;
    f.too_long = too_long;
    f.malformed = malformed;
    return prov_ending_classify(&f);
}

static const char *reported(prov_ending_e end)
{
    return prov_ledger_status_name(prov_ending_status(end, PROV_BILL_REPORTED));
}

static const char *released(prov_ending_e end)
{
    return prov_ledger_status_name(prov_ending_status(end, PROV_BILL_RELEASE));
}

static void test_classify_started(void)
{
    CU_ASSERT_EQUAL(started(1, APR_SUCCESS, 0, 0, 0, 0), PROV_END_COMPLETE);
    /* complete wins: the whole answer was handed over */
    CU_ASSERT_EQUAL(started(1, APR_TIMEUP, 1, 1, 1, 1), PROV_END_COMPLETE);
    CU_ASSERT_EQUAL(started(0, APR_SUCCESS, 1, 1, 1, 1), PROV_END_CLIENT_LEFT);
    CU_ASSERT_EQUAL(started(0, APR_TIMEUP, 0, 1, 1, 1), PROV_END_GATEWAY_ERROR);
    CU_ASSERT_EQUAL(started(0, APR_TIMEUP, 0, 0, 1, 1), PROV_END_MAX_DURATION);
    CU_ASSERT_EQUAL(started(0, APR_TIMEUP, 0, 0, 0, 1), PROV_END_MALFORMED);
    CU_ASSERT_EQUAL(started(0, APR_TIMEUP, 0, 0, 0, 0), PROV_END_TIMEOUT);
    CU_ASSERT_EQUAL(started(0, APR_ECONNRESET, 0, 0, 0, 0), PROV_END_CUT);
    CU_ASSERT_EQUAL(started(0, APR_SUCCESS, 0, 0, 0, 0), PROV_END_CUT);
}

static void test_classify_not_started(void)
{
    CU_ASSERT_EQUAL(not_started(APR_SUCCESS, 1, 1, 1, 1), PROV_END_CLIENT_LEFT);
    CU_ASSERT_EQUAL(not_started(APR_TIMEUP, 0, 1, 1, 1), PROV_END_REFUSED);
    CU_ASSERT_EQUAL(not_started(APR_TIMEUP, 0, 0, 1, 1), PROV_END_MAX_DURATION);
    CU_ASSERT_EQUAL(not_started(APR_TIMEUP, 0, 0, 0, 1), PROV_END_MALFORMED);
    CU_ASSERT_EQUAL(not_started(APR_TIMEUP, 0, 0, 0, 0), PROV_END_TIMEOUT);
    CU_ASSERT_EQUAL(not_started(APR_ECONNREFUSED, 0, 0, 0, 0), PROV_END_UNREACHABLE);
    /* the gateway answered 200 and no stream */
    CU_ASSERT_EQUAL(not_started(APR_SUCCESS, 0, 0, 0, 0), PROV_END_MALFORMED);
}

/* The statuses the transports wrote before there was a table
 * (docs/internals/broken-streams.md, "What is charged"). */
static void test_statuses(void)
{
    CU_ASSERT_STRING_EQUAL(reported(PROV_END_COMPLETE), "ok");
    CU_ASSERT_STRING_EQUAL(released(PROV_END_COMPLETE), "no_usage");
    CU_ASSERT_STRING_EQUAL(reported(PROV_END_CLIENT_LEFT), "client_cut");
    CU_ASSERT_STRING_EQUAL(released(PROV_END_CLIENT_LEFT), "client_gone");
    CU_ASSERT_STRING_EQUAL(released(PROV_END_REFUSED), "refused");
    CU_ASSERT_STRING_EQUAL(reported(PROV_END_GATEWAY_ERROR), "error");
    CU_ASSERT_STRING_EQUAL(released(PROV_END_GATEWAY_ERROR), "error");
    CU_ASSERT_STRING_EQUAL(reported(PROV_END_MAX_DURATION), "max_duration");
    CU_ASSERT_STRING_EQUAL(released(PROV_END_MAX_DURATION), "max_duration");
    CU_ASSERT_STRING_EQUAL(reported(PROV_END_MALFORMED), "cut");
    CU_ASSERT_STRING_EQUAL(released(PROV_END_MALFORMED), "malformed");
    CU_ASSERT_STRING_EQUAL(reported(PROV_END_TIMEOUT), "cut");
    CU_ASSERT_STRING_EQUAL(released(PROV_END_TIMEOUT), "timeout");
    CU_ASSERT_STRING_EQUAL(released(PROV_END_UNREACHABLE), "failed");
    CU_ASSERT_STRING_EQUAL(reported(PROV_END_CUT), "cut");
    CU_ASSERT_STRING_EQUAL(released(PROV_END_CUT), "cut");
    CU_ASSERT_STRING_EQUAL(released(PROV_END_UNDELIVERED), "undelivered");
    /* an estimate is estimated, however the request ended */
    CU_ASSERT_EQUAL(prov_ending_status(PROV_END_COMPLETE, PROV_BILL_ESTIMATED),
                    PROV_STATUS_ESTIMATED);
    CU_ASSERT_EQUAL(prov_ending_status(PROV_END_CLIENT_LEFT, PROV_BILL_ESTIMATED),
                    PROV_STATUS_ESTIMATED);
    CU_ASSERT_EQUAL(prov_ending_status(PROV_END__COUNT, PROV_BILL_RELEASE), PROV_STATUS_CUT);
    CU_ASSERT_STRING_EQUAL(prov_ending_name(PROV_END_CLIENT_LEFT), "client went away");
}

static void test_status_table(void)
{
    prov_status_e st = PROV_STATUS_OK;
    int i, j;
    /* every status has a distinct name and a meaning, and parses back */
    for (i = 0; i < PROV_STATUS__COUNT; i++) {
        const prov_status_info_t *info = prov_ledger_status_info((prov_status_e)i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(info->name);
        CU_ASSERT_PTR_NOT_NULL(info->meaning);
        CU_ASSERT(strlen(info->name) > 0 && strlen(info->name) < 24);
        CU_ASSERT_EQUAL(prov_ledger_status_parse(&st, info->name), APR_SUCCESS);
        CU_ASSERT_EQUAL(st, (prov_status_e)i);
        for (j = 0; j < i; j++)
            CU_ASSERT(strcmp(info->name, prov_ledger_status_name((prov_status_e)j)) != 0);
    }
    CU_ASSERT_STRING_EQUAL(prov_ledger_status_name(PROV_STATUS_RESERVED), "reserved");
    CU_ASSERT_STRING_EQUAL(prov_ledger_status_name(PROV_STATUS_RELEASED), "released");
    CU_ASSERT_STRING_EQUAL(prov_ledger_status_name(PROV_STATUS__COUNT), "reserved");
    st = PROV_STATUS_OK;
    CU_ASSERT_EQUAL(prov_ledger_status_parse(&st, "Ok"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_ledger_status_parse(&st, ""), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_ledger_status_parse(&st, NULL), APR_EINVAL);
    CU_ASSERT_EQUAL(st, PROV_STATUS_OK);
}

static void test_row_settle(void)
{
    prov_ledger_row_t row;
    prov_tokens_t t = { 5, 6, 7, 8 };
    memset(&row, 0, sizeof(row));
    row.hold = 100;
    row.floor = 9;
    prov_ledger_row_settle(&row, &t, 42, PROV_STATUS_CUT, 1700000000);
    CU_ASSERT_EQUAL(row.tokens.output, 6);
    CU_ASSERT_EQUAL(row.charge, 42);
    CU_ASSERT_EQUAL(row.status, PROV_STATUS_CUT);
    CU_ASSERT_EQUAL(row.settled_at, 1700000000);
    CU_ASSERT_EQUAL(row.hold, 100);
    CU_ASSERT_EQUAL(row.floor, 9);
    prov_ledger_row_settle(&row, NULL, 0, PROV_STATUS_REFUSED, 1700000001);
    CU_ASSERT_EQUAL(row.tokens.input + row.tokens.output + row.tokens.cache
                    + row.tokens.reasoning, 0);
}

void prov_test_suite_ending(void)
{
    PROV_SUITE("ending",
               PROV_TEST(test_classify_started),
               PROV_TEST(test_classify_not_started),
               PROV_TEST(test_statuses),
               PROV_TEST(test_status_table),
               PROV_TEST(test_row_settle));
}
