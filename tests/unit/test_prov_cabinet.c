/* test_prov_cabinet.c: unit tests of core/cabinet (the cabinet's JSON API
 * without HTTP) and of the favorites in core/account/prov_models.c, on an
 * in-memory SQLite database and a fixed clock. The request checks, one
 * test per rule (the field each refusal names); the account summary
 * (balance, what requests in flight hold, the plan's windows with when
 * capacity returns and when it is full again) as one exact JSON text; keys
 * (another user's id, an unknown one and a deleted one alike, the secret
 * only in the answer that made it, a reissue that refuses the old secret,
 * the usage of today, the last seven days and each of the seven days);
 * usage over whole UTC days by day, key (with names) and model; favorites
 * (idempotent, unknown and disabled models). */
#include <stdarg.h>
#include <string.h>
#include "unit_tests.h"
#include "prov_cabinet.h"
#include "prov_account.h"
#include "prov_models.h"
#include "prov_plans.h"
#include "prov_billing.h"
#include "prov_window.h"

#define T0  APR_INT64_C(1700000000)   /* 2023-11-14T22:13:20Z */
#define DAY APR_INT64_C(86400)
#define M   PROV_BUCKET_MINUTES
#define H   PROV_BUCKET_HOUR

static apr_pool_t *tpool(void)
{
    apr_pool_t *p = NULL;
    apr_pool_create(&p, prov_test_pool());
    return p;
}

/* ---- request checks --------------------------------------------------------- */

/* The key body's check refuses text with a 400 naming param, the message
 * containing msg. */
static void key_refused(const char *text, const char *param, const char *msg)
{
    apr_pool_t *p = tpool();
    prov_cabinet_key_req_t r = { "untouched", 7, 7 };
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL(prov_cabinet_key_parse(&r, &err, text, strlen(text), p), APR_EINVAL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_INVALID_REQUEST);
    if (param) {
        CU_ASSERT_STRING_EQUAL(err->param ? err->param : "(null)", param);
    }
    else {
        CU_ASSERT_PTR_NULL(err->param);
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, msg));
    CU_ASSERT_STRING_EQUAL(r.name, "untouched");
    apr_pool_destroy(p);
}

static void key_taken(const char *text, const char *name, int has_budget, prov_micro_t budget)
{
    apr_pool_t *p = tpool();
    prov_cabinet_key_req_t r;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_key_parse(&r, &err, text, strlen(text), p),
                          APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(r.name, name);
    CU_ASSERT_EQUAL(r.has_budget, has_budget);
    CU_ASSERT_EQUAL(r.budget, budget);
    apr_pool_destroy(p);
}

static void test_name_required(void)
{
    key_refused("{}", "name", "name is required");
    key_refused("{\"name\":null}", "name", "name is required");
    key_refused("{\"weekly_budget\":5}", "name", "name is required");
}

static void test_name_string(void)
{
    key_refused("{\"name\":7}", "name", "name must be a string");
    key_refused("{\"name\":[\"a\"]}", "name", "name must be a string");
    key_refused("{\"name\":true}", "name", "name must be a string");
}

static void test_name_empty(void)
{
    key_refused("{\"name\":\"\"}", "name", "must not be empty");
    key_refused("{\"name\":\"   \"}", "name", "must not be empty");
}

/* 100 characters pass whatever their bytes; 101 do not. */
static void test_name_length(void)
{
    apr_pool_t *p = tpool();
    char ascii[102], wide[2 * 101 + 1];
    int i;
    memset(ascii, 'x', 101);
    ascii[101] = '\0';
    for (i = 0; i < 101; i++)
        memcpy(wide + 2 * i, "\xc3\xa9", 2);   /* e acute */
    wide[202] = '\0';
    key_refused(apr_psprintf(p, "{\"name\":\"%s\"}", ascii), "name", "at most 100 characters");
    key_refused(apr_psprintf(p, "{\"name\":\"%s\"}", wide), "name", "at most 100 characters");
    ascii[100] = '\0';
    wide[200] = '\0';
    key_taken(apr_psprintf(p, "{\"name\":\"%s\"}", ascii), ascii, 0, 0);
    key_taken(apr_psprintf(p, "{\"name\":\"%s\"}", wide), wide, 0, 0);
    apr_pool_destroy(p);
}

static void test_name_control(void)
{
    key_refused("{\"name\":\"a\\nb\"}", "name", "control characters");
    key_refused("{\"name\":\"a\\u0000b\"}", "name", "control characters");
    key_refused("{\"name\":\"a\\u007fb\"}", "name", "control characters");
}

static void test_budget_values(void)
{
    key_taken("{\"name\":\"a\",\"weekly_budget\":25}", "a", 1, APR_INT64_C(25000000));
    key_taken("{\"name\":\"a\",\"weekly_budget\":12.5}", "a", 1, APR_INT64_C(12500000));
    key_taken("{\"name\":\"a\",\"weekly_budget\":0.000001}", "a", 1, 1);
    key_taken("{\"name\":\"a\",\"weekly_budget\":0}", "a", 1, 0);
    key_taken("{\"name\":\"a\",\"weekly_budget\":null}", "a", 0, 0);
    key_taken("{\"name\":\"laptop\"}", "laptop", 0, 0);
}

static void test_budget_negative(void)
{
    key_refused("{\"name\":\"a\",\"weekly_budget\":-1}", "weekly_budget", "not be negative");
    key_refused("{\"name\":\"a\",\"weekly_budget\":-0.5}", "weekly_budget", "not be negative");
}

static void test_budget_type(void)
{
    key_refused("{\"name\":\"a\",\"weekly_budget\":\"5\"}", "weekly_budget", "must be a number");
    key_refused("{\"name\":\"a\",\"weekly_budget\":true}", "weekly_budget", "must be a number");
    key_refused("{\"name\":\"a\",\"weekly_budget\":{}}", "weekly_budget", "must be a number");
}

static void test_budget_form(void)
{
    key_refused("{\"name\":\"a\",\"weekly_budget\":1.0000001}", "weekly_budget",
                "at most 6 decimals");
    key_refused("{\"name\":\"a\",\"weekly_budget\":1e2}", "weekly_budget", "plain decimal");
    key_refused("{\"name\":\"a\",\"weekly_budget\":99999999999999999999}", "weekly_budget",
                "too large");
    key_refused("{\"name\":\"a\",\"weekly_budget\":1000000000001}", "weekly_budget",
                "too large");
}

static void test_unknown_field(void)
{
    key_refused("{\"name\":\"a\",\"colour\":\"blue\"}", "colour", "Unknown field \"colour\"");
}

static void test_body_shape(void)
{
    key_refused("", NULL, "not valid JSON");
    key_refused("[1]", NULL, "must be a JSON object");
    key_refused("{\"name\":\"a\",}", NULL, "not valid JSON");
}

static void test_budget_body(void)
{
    apr_pool_t *p = tpool();
    prov_cabinet_key_req_t r;
    prov_error_t *err = NULL;
#define BUDGET(text) prov_cabinet_budget_parse(&r, &err, text, strlen(text), p)
    CU_ASSERT_EQUAL(BUDGET("{}"), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(err->param, "weekly_budget");
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "weekly_budget is required"));
    CU_ASSERT_EQUAL(BUDGET("{\"name\":\"a\",\"weekly_budget\":1}"), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(err->param, "name");
    CU_ASSERT_EQUAL(BUDGET("{\"weekly_budget\":-2}"),
                    APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(err->param, "weekly_budget");
    CU_ASSERT_EQUAL_FATAL(BUDGET("{\"weekly_budget\":null}"),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(r.has_budget, 0);
    CU_ASSERT_EQUAL_FATAL(BUDGET("{\"weekly_budget\":2.25}"),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(r.has_budget, 1);
    CU_ASSERT_EQUAL(r.budget, 2250000);
    apr_pool_destroy(p);
#undef BUDGET
}

static void test_usage_args(void)
{
    static const char *const bad_days[] = { "0", "31", "x", "", "-1", "7.0", "007", "1 " };
    apr_pool_t *p = tpool();
    prov_error_t *err = NULL;
    prov_usage_by_e by;
    int days = 0;
    apr_size_t i;
    CU_ASSERT_EQUAL(prov_cabinet_usage_args(&days, &by, &err, NULL, NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(days, 7);
    CU_ASSERT_EQUAL(by, PROV_USAGE_BY_DAY);
    CU_ASSERT_EQUAL(prov_cabinet_usage_args(&days, &by, &err, "30", "model", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(days, 30);
    CU_ASSERT_EQUAL(by, PROV_USAGE_BY_MODEL);
    CU_ASSERT_EQUAL(prov_cabinet_usage_args(&days, &by, &err, "1", "key", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(days, 1);
    CU_ASSERT_EQUAL(by, PROV_USAGE_BY_KEY);
    for (i = 0; i < sizeof(bad_days) / sizeof(bad_days[0]); i++) {
        err = NULL;
        CU_ASSERT_EQUAL(prov_cabinet_usage_args(&days, &by, &err, bad_days[i], NULL, p),
                        APR_EINVAL);
        CU_ASSERT_STRING_EQUAL(err ? err->param : "", "days");
    }
    CU_ASSERT_EQUAL(prov_cabinet_usage_args(&days, &by, &err, NULL, "week", p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(err->param, "by");
    CU_ASSERT_EQUAL(prov_cabinet_usage_args(&days, &by, &err, NULL, "", p), APR_EINVAL);
    apr_pool_destroy(p);
}

static void test_key_id(void)
{
    apr_int64_t id = 0;
    CU_ASSERT_EQUAL(prov_cabinet_key_id(&id, "17"), APR_SUCCESS);
    CU_ASSERT_EQUAL(id, 17);
    CU_ASSERT_EQUAL(prov_cabinet_key_id(&id, "999999999999999999"), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_cabinet_key_id(&id, "0"), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_cabinet_key_id(&id, "-1"), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_cabinet_key_id(&id, "1x"), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_cabinet_key_id(&id, ""), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_cabinet_key_id(&id, NULL), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_cabinet_key_id(&id, "9999999999999999999"), APR_NOTFOUND);
    CU_ASSERT_EQUAL(id, 999999999999999999);
}

/* ---- the store ------------------------------------------------------------- */

typedef struct fixture_t {
    apr_pool_t *p;
    prov_store_t *s;
    prov_user_t *ann, *bob;
    prov_model_t *model;
} fixture_t;

static void setup(fixture_t *f)
{
    f->p = tpool();
    f->s = prov_test_store(f->p);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&f->ann, f->s, "ann@example.com", "Ann", f->p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&f->bob, f->s, "bob@example.com", NULL, f->p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(&f->model, f->s, "alpha", "up/alpha", "Alpha", NULL,
                                         f->p), APR_SUCCESS);
}

static void raw(fixture_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void raw(fixture_t *f, const char *fmt, ...)
{
    va_list ap;
    const char *sql;
    va_start(ap, fmt);
    sql = apr_pvsprintf(f->p, fmt, ap);
    va_end(ap);
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(f->s, sql, f->p), APR_SUCCESS);
}

/* A settled ledger row: 10 input, 5 output, 2 cache, 1 reasoning tokens. */
static void ledger(fixture_t *f, apr_int64_t user, apr_int64_t key, apr_int64_t at,
                   prov_micro_t credits)
{
    static int seq;
    raw(f, "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, input_tokens, "
        "output_tokens, cache_tokens, reasoning_tokens, credits, status, created_at) VALUES "
        "('cab-%d', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", 'chat', "
        "10, 5, 2, 1, %" APR_INT64_T_FMT ", 'ok', %" APR_INT64_T_FMT ")", ++seq, user, key,
        f->model->id, credits, at);
}

static void bucket(fixture_t *f, const char *scope, apr_int64_t id, apr_int64_t start,
                   prov_micro_t credits, prov_micro_t plan)
{
    raw(f, "INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, "
        "requests) VALUES ('%s', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT
        ", %" APR_INT64_T_FMT ", 1)", scope, id, start, credits, plan);
}

static const char *dump(json_object *o, apr_pool_t *p)
{
    return prov_json_dump(o, p);
}

static void test_account_no_plan(void)
{
    fixture_t f;
    json_object *o = NULL;
    setup(&f);
    CU_ASSERT_EQUAL_FATAL(prov_balance_add(NULL, f.s, f.ann->id, APR_INT64_C(12500000), NULL, f.p),
                          APR_SUCCESS);
    /* a request in flight holds 0.25 of the balance; one on the plan holds none of it */
    raw(&f, "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, reserved, "
        "source, status, created_at) VALUES ('held-1', %" APR_INT64_T_FMT ", 1, 1, 'chat', "
        "250000, 'balance', 'reserved', %" APR_INT64_T_FMT "), ('held-2', %" APR_INT64_T_FMT
        ", 1, 1, 'chat', 900000, 'plan', 'reserved', %" APR_INT64_T_FMT ")",
        f.ann->id, T0 - 5, f.ann->id, T0 - 5);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_account(&o, f.s, f.ann->id, T0, f.p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(dump(o, f.p), apr_psprintf(f.p, "{\"id\":\"%" APR_INT64_T_FMT "\","
        "\"email\":\"ann@example.com\",\"name\":\"Ann\",\"balance\":12.5,\"held\":0.25,"
        "\"available\":12.25,\"plan\":null}", f.ann->id));
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_account(&o, f.s, f.bob->id, T0, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(dump(o, f.p), "\"name\":null,\"balance\":0,\"held\":0,"
                                  "\"available\":0,\"plan\":null"));
    CU_ASSERT_EQUAL(prov_cabinet_account(&o, f.s, 999, T0, f.p), APR_NOTFOUND);
    apr_pool_destroy(f.p);
}

/* Both windows from the buckets the reservations read: used, remaining,
 * when the oldest usage leaves (capacity returns) and the newest (full). */
static void test_account_plan(void)
{
    fixture_t f;
    prov_plan_t *plan = NULL;
    prov_subscription_t *sub = NULL;
    json_object *o = NULL;
    apr_int64_t b1 = prov_bucket_of(T0 - 600, M), b2 = prov_bucket_of(T0 - 60, M);
    apr_int64_t h1 = prov_bucket_of(T0 - 2 * H, H);
    setup(&f);
    CU_ASSERT_EQUAL_FATAL(prov_plan_add(&plan, f.s, "pro", APR_INT64_C(10000000),
                                        APR_INT64_C(50000000), f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_subscription_set(&sub, f.s, f.ann->id, plan->id, 0, T0 - 100,
                                                f.p), APR_SUCCESS);
    bucket(&f, "user:m", f.ann->id, b1, 0, 1500000);
    bucket(&f, "user:m", f.ann->id, b2, 0, 1000000);
    bucket(&f, "user:m", f.ann->id, prov_bucket_of(T0 - PROV_WINDOW_5H - M, M), 0, 7000000);
    bucket(&f, "user:h", f.ann->id, h1, 0, 2500000);
    bucket(&f, "user:h", f.bob->id, h1, 0, 9000000);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_account(&o, f.s, f.ann->id, T0, f.p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(dump(o, f.p), apr_psprintf(f.p, "{\"id\":\"%" APR_INT64_T_FMT "\","
        "\"email\":\"ann@example.com\",\"name\":\"Ann\",\"balance\":0,\"held\":0,"
        "\"available\":0,\"plan\":{\"name\":\"pro\",\"windows\":["
        "{\"window\":\"5h\",\"quota\":10,\"used\":2.5,\"remaining\":7.5,\"returns_at\":\"%s\","
        "\"full_at\":\"%s\"},"
        "{\"window\":\"7d\",\"quota\":50,\"used\":2.5,\"remaining\":47.5,\"returns_at\":\"%s\","
        "\"full_at\":\"%s\"}]}}", f.ann->id,
        prov_cabinet_time(b1 + M + PROV_WINDOW_5H, f.p),
        prov_cabinet_time(b2 + M + PROV_WINDOW_5H, f.p),
        prov_cabinet_time(h1 + H + PROV_WINDOW_7D, f.p),
        prov_cabinet_time(h1 + H + PROV_WINDOW_7D, f.p)));
    /* over quota: nothing remains; a window without use returns nothing */
    bucket(&f, "user:m", f.ann->id, prov_bucket_of(T0 + 150, M), 0, 9000000);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_account(&o, f.s, f.ann->id, T0 + 10 * DAY, f.p),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(dump(o, f.p), "{\"window\":\"5h\",\"quota\":10,\"used\":0,"
                                  "\"remaining\":10,\"returns_at\":null,\"full_at\":null}"));
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_account(&o, f.s, f.ann->id, T0 + 150, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(dump(o, f.p), "\"used\":11.5,\"remaining\":0,"));
    apr_pool_destroy(f.p);
}

/* The key object's member name as dumped JSON. */
static const char *member(json_object *o, const char *name, apr_pool_t *p)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, name, &v))
        return "(absent)";
    return v ? dump(v, p) : "null";
}

static json_object *only_key(fixture_t *f, apr_int64_t user, apr_int64_t now)
{
    json_object *o = NULL, *data;
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_keys(&o, f->s, user, now, f->p), APR_SUCCESS);
    data = json_object_object_get(o, "data");
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(data), 1);
    return json_object_array_get_idx(data, 0);
}

static void test_keys_usage(void)
{
    fixture_t f;
    prov_cabinet_key_req_t req = { "laptop", 1, APR_INT64_C(25000000) };
    json_object *k = NULL, *daily;
    apr_int64_t id, day0 = T0 - T0 % DAY;
    setup(&f);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_key_create(&k, f.s, f.ann->id, &req, T0, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(strncmp(member(k, "secret", f.p), "\"sk-prov-", 9), 0);
    id = json_object_get_int64(json_object_object_get(k, "id"));
    CU_ASSERT_STRING_EQUAL(member(k, "id", f.p), apr_psprintf(f.p, "\"%" APR_INT64_T_FMT "\"", id));
    CU_ASSERT_STRING_EQUAL(member(k, "weekly_budget", f.p), "25");
    CU_ASSERT_STRING_EQUAL(member(k, "reissued_at", f.p), "null");
    ledger(&f, f.ann->id, id, T0 - 10, 100000);           /* today */
    ledger(&f, f.ann->id, id, day0 - 1, 200000);          /* yesterday's last second */
    ledger(&f, f.ann->id, id, day0 - 6 * DAY, 400000);    /* 6 days ago: in daily[0] */
    ledger(&f, f.ann->id, id, day0 - 7 * DAY, 800000);    /* out of the daily chart */
    ledger(&f, f.bob->id, 999, T0 - 10, 1600000);         /* another key */
    bucket(&f, "key:h", id, prov_bucket_of(T0 - 10, H), 300000, 0);
    k = only_key(&f, f.ann->id, T0);
    CU_ASSERT_STRING_EQUAL(member(k, "secret", f.p), "(absent)");
    CU_ASSERT_STRING_EQUAL(member(k, "week_used", f.p), "0.3");
    CU_ASSERT_STRING_EQUAL(member(k, "today", f.p), "{\"requests\":1,\"input_tokens\":10,"
        "\"output_tokens\":5,\"cache_tokens\":2,\"reasoning_tokens\":1,\"credits\":0.1}");
    /* the last 7 days are T0 - 7 days on: day0 - 6 days is in, day0 - 7 days is not */
    CU_ASSERT_STRING_EQUAL(member(k, "last_7_days", f.p), "{\"requests\":3,\"input_tokens\":30,"
        "\"output_tokens\":15,\"cache_tokens\":6,\"reasoning_tokens\":3,\"credits\":0.7}");
    daily = json_object_object_get(k, "daily");
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(daily), 7);
    CU_ASSERT_STRING_EQUAL(dump(json_object_array_get_idx(daily, 0), f.p),
        "{\"date\":\"2023-11-08\",\"requests\":1,\"credits\":0.4,\"tokens\":18}");
    CU_ASSERT_STRING_EQUAL(dump(json_object_array_get_idx(daily, 1), f.p),
        "{\"date\":\"2023-11-09\",\"requests\":0,\"credits\":0,\"tokens\":0}");
    CU_ASSERT_STRING_EQUAL(dump(json_object_array_get_idx(daily, 5), f.p),
        "{\"date\":\"2023-11-13\",\"requests\":1,\"credits\":0.2,\"tokens\":18}");
    CU_ASSERT_STRING_EQUAL(dump(json_object_array_get_idx(daily, 6), f.p),
        "{\"date\":\"2023-11-14\",\"requests\":1,\"credits\":0.1,\"tokens\":18}");
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_keys(&k, f.s, f.bob->id, T0, f.p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(dump(k, f.p), "{\"data\":[]}");
    apr_pool_destroy(f.p);
}

/* Another user's key, an unknown one and a deleted one are all NOTFOUND,
 * and nothing changes. */
static void test_keys_owner(void)
{
    fixture_t f;
    prov_cabinet_key_req_t req = { "bobs", 1, 3000000 }, none = { NULL, 0, 0 };
    prov_key_t *theirs = NULL, *after = NULL;
    const char *secret = NULL;
    json_object *o = NULL;
    apr_int64_t ids[3];
    int i;
    setup(&f);
    CU_ASSERT_EQUAL_FATAL(prov_key_create(&theirs, &secret, f.s, f.bob->id, "bobs", 1,
                                          3000000, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_key_create(&o, f.s, f.ann->id, &req, T0, f.p),
                          APR_SUCCESS);
    ids[0] = theirs->id;
    ids[1] = 12345;
    ids[2] = json_object_get_int64(json_object_object_get(o, "id"));
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_key_delete(f.s, f.ann->id, ids[2], f.p), APR_SUCCESS);
    for (i = 0; i < 3; i++) {
        o = NULL;
        CU_ASSERT_EQUAL(prov_cabinet_key_reissue(&o, f.s, f.ann->id, ids[i], T0, f.p),
                        APR_NOTFOUND);
        CU_ASSERT_EQUAL(prov_cabinet_key_budget(&o, f.s, f.ann->id, ids[i], &none, T0, f.p),
                        APR_NOTFOUND);
        CU_ASSERT_EQUAL(prov_cabinet_key_delete(f.s, f.ann->id, ids[i], f.p), APR_NOTFOUND);
        CU_ASSERT_PTR_NULL(o);
    }
    CU_ASSERT_EQUAL_FATAL(prov_key_get(&after, f.s, theirs->id, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(after->deleted_at, 0);
    CU_ASSERT_EQUAL(after->reissued_at, 0);
    CU_ASSERT_EQUAL(after->weekly_budget, 3000000);
    apr_pool_destroy(f.p);
}

static void test_keys_reissue_budget(void)
{
    fixture_t f;
    prov_cabinet_key_req_t req = { "app", 0, 0 }, budget = { NULL, 1, 1500000 };
    prov_auth_t *a = NULL;
    json_object *k = NULL, *n = NULL;
    const char *old, *fresh;
    apr_int64_t id;
    setup(&f);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_key_create(&k, f.s, f.ann->id, &req, T0, f.p),
                          APR_SUCCESS);
    old = json_object_get_string(json_object_object_get(k, "secret"));
    id = json_object_get_int64(json_object_object_get(k, "id"));
    ledger(&f, f.ann->id, id, T0 - 10, 100000);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_key_reissue(&n, f.s, f.ann->id, id, T0, f.p),
                          APR_SUCCESS);
    fresh = json_object_get_string(json_object_object_get(n, "secret"));
    CU_ASSERT_STRING_NOT_EQUAL(old, fresh);
    CU_ASSERT_STRING_EQUAL(member(n, "id", f.p), member(k, "id", f.p));
    CU_ASSERT_STRING_EQUAL(member(n, "name", f.p), "\"app\"");
    CU_ASSERT_STRING_NOT_EQUAL(member(n, "reissued_at", f.p), "null");
    CU_ASSERT_STRING_EQUAL(member(json_object_object_get(n, "today"), "requests", f.p), "1");
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, f.s, old, f.p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, f.s, fresh, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_key_budget(&k, f.s, f.ann->id, id, &budget, T0, f.p),
                          APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(member(k, "weekly_budget", f.p), "1.5");
    CU_ASSERT_STRING_EQUAL(member(k, "secret", f.p), "(absent)");
    budget.has_budget = 0;
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_key_budget(&k, f.s, f.ann->id, id, &budget, T0, f.p),
                          APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(member(k, "weekly_budget", f.p), "null");
    CU_ASSERT_EQUAL(prov_cabinet_key_delete(f.s, f.ann->id, id, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, f.s, fresh, f.p), APR_NOTFOUND);
    apr_pool_destroy(f.p);
}

static void test_usage_days(void)
{
    fixture_t f;
    prov_key_t *k1 = NULL, *k2 = NULL;
    const char *secret;
    json_object *o = NULL;
    apr_int64_t day0 = T0 - T0 % DAY;
    setup(&f);
    CU_ASSERT_EQUAL_FATAL(prov_key_create(&k1, &secret, f.s, f.ann->id, "one", 0, 0, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_key_create(&k2, &secret, f.s, f.ann->id, NULL, 0, 0, f.p),
                          APR_SUCCESS);
    ledger(&f, f.ann->id, k1->id, day0, 100000);
    ledger(&f, f.ann->id, k2->id, day0 - 1, 200000);
    ledger(&f, f.bob->id, 77, day0, 400000);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_usage(&o, f.s, f.ann->id, 1, PROV_USAGE_BY_DAY, T0, f.p),
                          APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(dump(o, f.p), "{\"days\":1,\"by\":\"day\",\"data\":[{\"group\":"
        "\"2023-11-14\",\"requests\":1,\"input_tokens\":10,\"output_tokens\":5,"
        "\"cache_tokens\":2,\"reasoning_tokens\":1,\"credits\":0.1}]}");
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_usage(&o, f.s, f.ann->id, 2, PROV_USAGE_BY_KEY, T0, f.p),
                          APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(dump(o, f.p), apr_psprintf(f.p, "{\"days\":2,\"by\":\"key\",\"data\":["
        "{\"group\":\"%" APR_INT64_T_FMT "\",\"name\":\"one\",\"requests\":1,\"input_tokens\":10,"
        "\"output_tokens\":5,\"cache_tokens\":2,\"reasoning_tokens\":1,\"credits\":0.1},"
        "{\"group\":\"%" APR_INT64_T_FMT "\",\"name\":null,\"requests\":1,\"input_tokens\":10,"
        "\"output_tokens\":5,\"cache_tokens\":2,\"reasoning_tokens\":1,\"credits\":0.2}]}",
        k1->id, k2->id));
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_usage(&o, f.s, f.ann->id, 30, PROV_USAGE_BY_MODEL, T0,
                                             f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(dump(o, f.p), "[{\"group\":\"alpha\",\"requests\":2,"));
    CU_ASSERT_EQUAL(prov_cabinet_usage(&o, f.s, f.ann->id, 31, PROV_USAGE_BY_DAY, T0, f.p),
                    APR_EINVAL);
    CU_ASSERT_EQUAL(prov_cabinet_usage(&o, f.s, f.ann->id, 7, PROV_USAGE_BY_NONE, T0, f.p),
                    APR_EINVAL);
    apr_pool_destroy(f.p);
}

static void test_favorites(void)
{
    fixture_t f;
    prov_model_t *beta = NULL;
    prov_model_change_t off = { NULL, NULL, NULL, 0, -1 };
    apr_array_header_t *list = NULL;
    int i;
    setup(&f);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(&beta, f.s, "vendor/beta", "up/beta", NULL, NULL, f.p),
                          APR_SUCCESS);
    for (i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(prov_favorite_add(f.s, f.ann->id, "vendor/beta", f.p), APR_SUCCESS);
        CU_ASSERT_EQUAL(prov_favorite_add(f.s, f.ann->id, "alpha", f.p), APR_SUCCESS);
    }
    CU_ASSERT_EQUAL(prov_favorite_add(f.s, f.ann->id, "nope", f.p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_favorite_add(f.s, f.ann->id, "bad id", f.p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_favorite_remove(f.s, f.ann->id, "nope", f.p), APR_NOTFOUND);
    CU_ASSERT_EQUAL_FATAL(prov_favorite_list(&list, f.s, f.ann->id, 1, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(list->nelts, 2);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(list, 0, prov_model_t *)->public_id, "alpha");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(list, 1, prov_model_t *)->public_id, "vendor/beta");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(list, 0, prov_model_t *)->display_name, "Alpha");
    CU_ASSERT_EQUAL_FATAL(prov_favorite_list(&list, f.s, f.bob->id, 1, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(list->nelts, 0);
    /* a disabled model: not added, not listed as enabled, still removable */
    CU_ASSERT_EQUAL_FATAL(prov_model_set(f.s, "vendor/beta", &off, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_favorite_add(f.s, f.bob->id, "vendor/beta", f.p), APR_NOTFOUND);
    CU_ASSERT_EQUAL_FATAL(prov_favorite_list(&list, f.s, f.ann->id, 1, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(list->nelts, 1);
    CU_ASSERT_EQUAL_FATAL(prov_favorite_list(&list, f.s, f.ann->id, 0, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(list->nelts, 2);
    for (i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(prov_favorite_remove(f.s, f.ann->id, "vendor/beta", f.p), APR_SUCCESS);
    }
    CU_ASSERT_EQUAL_FATAL(prov_favorite_list(&list, f.s, f.ann->id, 0, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(list->nelts, 1);
    apr_pool_destroy(f.p);
}

void prov_test_suite_cabinet(void)
{
    PROV_SUITE("cabinet",
               PROV_TEST(test_name_required),
               PROV_TEST(test_name_string),
               PROV_TEST(test_name_empty),
               PROV_TEST(test_name_length),
               PROV_TEST(test_name_control),
               PROV_TEST(test_budget_values),
               PROV_TEST(test_budget_negative),
               PROV_TEST(test_budget_type),
               PROV_TEST(test_budget_form),
               PROV_TEST(test_unknown_field),
               PROV_TEST(test_body_shape),
               PROV_TEST(test_budget_body),
               PROV_TEST(test_usage_args),
               PROV_TEST(test_key_id),
               PROV_TEST(test_account_no_plan),
               PROV_TEST(test_account_plan),
               PROV_TEST(test_keys_usage),
               PROV_TEST(test_keys_owner),
               PROV_TEST(test_keys_reissue_budget),
               PROV_TEST(test_usage_days),
               PROV_TEST(test_favorites));
}
