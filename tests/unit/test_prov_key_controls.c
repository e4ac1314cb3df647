/* test_prov_key_controls.c: unit tests of an API key's controls: CIDR
 * ranges (IPv4, IPv6, a mapped IPv4 address, host bits, bad ones, lists),
 * the model list, RFC 3339 times, the cabinet's PATCH body (each field's
 * refusal names it), the change through prov_key_set_controls read back by
 * the hot path's lookup (one query), the lookup cache's copy, and the
 * rate and in-flight table (exact rate over 60 s with its Retry-After,
 * in-flight taken and given back, keys apart, a full set). */
#include <stdarg.h>
#include <string.h>
#include "unit_tests.h"
#include "prov_cidr.h"
#include "prov_keylimit.h"
#include "prov_key_controls.h"
#include "prov_account.h"
#include "prov_cache.h"
#include "prov_cabinet.h"
#include "prov_models.h"

static void test_cidr(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_cidr_t c;
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "10.1.2.3/8"), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_cidr_text(&c, p), "10.0.0.0/8");
    CU_ASSERT(prov_cidr_match(&c, "10.255.0.1"));
    CU_ASSERT(!prov_cidr_match(&c, "11.0.0.1"));
    CU_ASSERT(prov_cidr_match(&c, "::ffff:10.9.9.9"));      /* mapped: as IPv4 */
    CU_ASSERT(!prov_cidr_match(&c, "::1"));
    CU_ASSERT(!prov_cidr_match(&c, "not an address"));
    CU_ASSERT(!prov_cidr_match(&c, NULL));
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "192.0.2.7"), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_cidr_text(&c, p), "192.0.2.7/32");
    CU_ASSERT(prov_cidr_match(&c, "192.0.2.7"));
    CU_ASSERT(!prov_cidr_match(&c, "192.0.2.8"));
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "2001:DB8:0:0:1::/33"), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_cidr_text(&c, p), "2001:db8::/33");
    CU_ASSERT(prov_cidr_match(&c, "2001:db8:7fff::1"));
    CU_ASSERT(!prov_cidr_match(&c, "2001:db8:8000::1"));
    CU_ASSERT(!prov_cidr_match(&c, "10.0.0.1"));
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "0.0.0.0/0"), APR_SUCCESS);
    CU_ASSERT(prov_cidr_match(&c, "203.0.113.5"));
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "::/0"), APR_SUCCESS);
    CU_ASSERT(prov_cidr_match(&c, "fe80::1"));
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "10.0.0.0/33"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "::/129"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "10.0.0.0/"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "10.0.0.0/08"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "10.0.0.0/-1"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "10.0.0"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "example.com"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, ""), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "/8"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, " 10.0.0.1"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_cidr_parse(&c, "::ffff:10.0.0.1/104"), APR_EINVAL);
}

static apr_array_header_t *strs(apr_pool_t *p, int n, ...)
{
    apr_array_header_t *a = apr_array_make(p, n, sizeof(const char *));
    va_list ap;
    int i;
    va_start(ap, n);
    for (i = 0; i < n; i++)
        APR_ARRAY_PUSH(a, const char *) = va_arg(ap, const char *);
    va_end(ap);
    return a;
}

static void test_lists(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *list = NULL, *bad = NULL;
    CU_ASSERT_EQUAL(prov_cidr_list_parse(&list, &bad, strs(p, 2, "192.0.2.0/24",
                                                           "2001:db8::1"), p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(list, "192.0.2.0/24,2001:db8::1/128");
    CU_ASSERT(prov_cidr_list_match(list, "192.0.2.200"));
    CU_ASSERT(prov_cidr_list_match(list, "2001:db8::1"));
    CU_ASSERT(!prov_cidr_list_match(list, "2001:db8::2"));
    CU_ASSERT(!prov_cidr_list_match(list, "198.51.100.1"));
    CU_ASSERT_EQUAL(prov_cidr_list_parse(&list, &bad, strs(p, 2, "192.0.2.0/24", "nope"), p),
                    APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(bad, "nope");
    CU_ASSERT_EQUAL(prov_cidr_list_parse(&list, &bad, strs(p, 0), p), APR_EINVAL);
    CU_ASSERT_PTR_NULL(bad);

    CU_ASSERT_EQUAL(prov_key_models_parse(&list, &bad, strs(p, 3, "alpha", "vendor/beta",
                                                            "alpha"), p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(list, "alpha,vendor/beta");      /* the repeat dropped */
    CU_ASSERT(prov_key_model_allowed(list, "alpha"));
    CU_ASSERT(prov_key_model_allowed(list, "vendor/beta"));
    CU_ASSERT(!prov_key_model_allowed(list, "alph"));
    CU_ASSERT(!prov_key_model_allowed(list, "vendor"));
    CU_ASSERT(!prov_key_model_allowed(list, ""));
    CU_ASSERT(prov_key_model_allowed(NULL, "anything"));
    CU_ASSERT_EQUAL(prov_key_models_parse(&list, &bad, strs(p, 1, "a,b"), p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(bad, "a,b");
    CU_ASSERT_EQUAL(prov_key_list_split("a,b,c", p)->nelts, 3);
    CU_ASSERT_EQUAL(prov_key_list_split(NULL, p)->nelts, 0);
}

static void test_times(void)
{
    apr_pool_t *p = prov_test_pool();
    apr_int64_t t = 0;
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "2027-01-31T00:00:00Z"), APR_SUCCESS);
    CU_ASSERT_EQUAL(t, APR_INT64_C(1801353600));
    CU_ASSERT_STRING_EQUAL(prov_key_time_text(t, p), "2027-01-31T00:00:00Z");
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "2027-01-31T02:00:00.125+02:00"), APR_SUCCESS);
    CU_ASSERT_EQUAL(t, APR_INT64_C(1801353600));
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "2027-01-30T19:00:00-05:00"), APR_SUCCESS);
    CU_ASSERT_EQUAL(t, APR_INT64_C(1801353600));
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "2028-02-29T00:00:00Z"), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "2027-02-29T00:00:00Z"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "2027-01-31"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "2027-01-31T00:00:00"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "2027-13-01T00:00:00Z"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "2027-01-31T24:00:00Z"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "2027-01-31T00:00:00.Z"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "1969-12-31T00:00:00Z"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, "tomorrow"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_key_time_parse(&t, NULL), APR_EINVAL);
}

/* The PATCH body is refused with param. */
static void patch_refused(const char *body, const char *param)
{
    apr_pool_t *p = prov_test_pool();
    prov_key_change_t ch;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL(prov_cabinet_controls_parse(&ch, &err, body, strlen(body), p), APR_EINVAL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_INVALID_REQUEST);
    if (param) {
        CU_ASSERT_STRING_EQUAL(err->param ? err->param : "(null)", param);
    }
    else {
        CU_ASSERT_PTR_NULL(err->param);
    }
}

static void test_patch_body(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_key_change_t ch;
    prov_error_t *err = NULL;
    const char *ok = "{\"expires_at\":\"2027-01-31T00:00:00Z\",\"models\":[\"alpha\"],"
                     "\"addresses\":[\"10.0.0.0/8\",\"::1\"],\"rpm\":60,\"max_in_flight\":2}";
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_controls_parse(&ch, &err, ok, strlen(ok), p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(ch.fields, PROV_KC_EXPIRES | PROV_KC_MODELS | PROV_KC_ADDRESSES
                    | PROV_KC_RPM | PROV_KC_IN_FLIGHT);
    CU_ASSERT_EQUAL(ch.to.expires_at, APR_INT64_C(1801353600));
    CU_ASSERT_STRING_EQUAL(ch.to.models, "alpha");
    CU_ASSERT_STRING_EQUAL(ch.to.addresses, "10.0.0.0/8,::1/128");
    CU_ASSERT_EQUAL(ch.to.rpm, 60);
    CU_ASSERT_EQUAL(ch.to.max_in_flight, 2);
    ok = "{\"models\":null,\"rpm\":null}";
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_controls_parse(&ch, &err, ok, strlen(ok), p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(ch.fields, PROV_KC_MODELS | PROV_KC_RPM);
    CU_ASSERT_PTR_NULL(ch.to.models);
    CU_ASSERT_EQUAL(ch.to.rpm, 0);

    patch_refused("{\"colour\":1}", "colour");
    patch_refused("{}", NULL);
    patch_refused("[]", NULL);
    patch_refused("{\"expires_at\":\"soon\"}", "expires_at");
    patch_refused("{\"expires_at\":1801353600}", "expires_at");
    patch_refused("{\"models\":\"alpha\"}", "models");
    patch_refused("{\"models\":[]}", "models");
    patch_refused("{\"models\":[1]}", "models");
    patch_refused("{\"models\":[\"-bad\"]}", "models");
    patch_refused("{\"addresses\":[\"10.0.0.0/99\"]}", "addresses");
    patch_refused("{\"addresses\":[\"example.com\"]}", "addresses");
    patch_refused("{\"rpm\":0}", "rpm");
    patch_refused("{\"rpm\":1.5}", "rpm");
    patch_refused("{\"rpm\":\"10\"}", "rpm");
    patch_refused("{\"rpm\":1000001}", "rpm");
    patch_refused("{\"max_in_flight\":-1}", "max_in_flight");
    patch_refused("{\"max_in_flight\":10001}", "max_in_flight");
}

/* A change read back by the key's own lookup (the hot path's one query)
 * and kept by the lookup cache. */
static void test_set_and_lookup(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = NULL;
    prov_key_t *k = NULL;
    prov_model_t *m = NULL;
    prov_auth_t *a = NULL, *c = NULL;
    prov_cache_t *cache = NULL;
    prov_key_change_t ch;
    prov_key_controls_t before, after;
    const char *secret = NULL, *bad = NULL;

    CU_ASSERT_EQUAL_FATAL(prov_user_add(&u, s, "kc@example.com", NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_key_create(&k, &secret, s, u->id, "k", 0, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(&m, s, "alpha", "up/alpha", NULL, NULL, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_auth_lookup(&a, s, secret, p), APR_SUCCESS);
    CU_ASSERT(!prov_key_controls_any(&a->controls));

    memset(&ch, 0, sizeof(ch));
    ch.fields = PROV_KC_MODELS;
    ch.to.models = "alpha,nosuch";
    CU_ASSERT_EQUAL(prov_key_set_controls(NULL, NULL, &bad, s, k->id, &ch, p), APR_ENOENT);
    CU_ASSERT_STRING_EQUAL(bad, "nosuch");
    ch.fields = PROV_KC_MODELS | PROV_KC_ADDRESSES | PROV_KC_RPM | PROV_KC_EXPIRES;
    ch.to.models = "alpha";
    ch.to.addresses = "10.0.0.0/8";
    ch.to.rpm = 5;
    ch.to.expires_at = 2000000000;
    CU_ASSERT_EQUAL_FATAL(prov_key_set_controls(&before, &after, &bad, s, k->id, &ch, p),
                          APR_SUCCESS);
    CU_ASSERT(!prov_key_controls_any(&before));
    CU_ASSERT_EQUAL(after.rpm, 5);
    /* Only the fields named change. */
    ch.fields = PROV_KC_IN_FLIGHT;
    ch.to.max_in_flight = 3;
    CU_ASSERT_EQUAL_FATAL(prov_key_set_controls(NULL, NULL, &bad, s, k->id, &ch, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_auth_lookup(&a, s, secret, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(a->controls.expires_at, 2000000000);
    CU_ASSERT_STRING_EQUAL(a->controls.models, "alpha");
    CU_ASSERT_STRING_EQUAL(a->controls.addresses, "10.0.0.0/8");
    CU_ASSERT_EQUAL(a->controls.rpm, 5);
    CU_ASSERT_EQUAL(a->controls.max_in_flight, 3);

    CU_ASSERT_EQUAL_FATAL(prov_cache_create(&cache, 60, 16, p), APR_SUCCESS);
    prov_cache_put_auth(cache, a, 1000);
    c = prov_cache_get_auth(cache, a->key_hash, 1001, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->controls.models, "alpha");
    CU_ASSERT_STRING_EQUAL(c->controls.addresses, "10.0.0.0/8");
    CU_ASSERT_EQUAL(c->controls.max_in_flight, 3);

    ch.fields = PROV_KC_MODELS | PROV_KC_ADDRESSES | PROV_KC_RPM | PROV_KC_EXPIRES
              | PROV_KC_IN_FLIGHT;
    memset(&ch.to, 0, sizeof(ch.to));
    CU_ASSERT_EQUAL_FATAL(prov_key_set_controls(NULL, NULL, &bad, s, k->id, &ch, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_key_get(&k, s, k->id, p), APR_SUCCESS);
    CU_ASSERT(!prov_key_controls_any(&k->controls));
    CU_ASSERT_EQUAL(prov_key_set_controls(NULL, NULL, &bad, s, 999, &ch, p), APR_NOTFOUND);
}

static prov_keylimit_t *kl_table(unsigned slots, apr_pool_t *p)
{
    prov_keylimit_t *t = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_keylimit_init(&t, apr_palloc(p, prov_keylimit_size(slots)),
                                             slots), APR_SUCCESS);
    return t;
}

static void test_rate(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_keylimit_t *t = kl_table(64, p);
    prov_kl_verdict_t v;
    apr_int64_t t0 = 100000;
    int i;
    for (i = 0; i < 3; i++) {
        prov_keylimit_take(&v, t, 7, 5, 0, t0 + i * 10);     /* at 0, 10, 20 s */
        CU_ASSERT_EQUAL(v.result, PROV_KL_ALLOWED);
        CU_ASSERT_EQUAL(v.slot, -1);                         /* no in-flight count */
    }
    prov_keylimit_take(&v, t, 7, 5, 0, t0 + 30);
    prov_keylimit_take(&v, t, 7, 5, 0, t0 + 30);
    CU_ASSERT_EQUAL(v.result, PROV_KL_ALLOWED);
    prov_keylimit_take(&v, t, 7, 5, 0, t0 + 30);             /* the sixth in a minute */
    CU_ASSERT_EQUAL(v.result, PROV_KL_RATE);
    CU_ASSERT_EQUAL(v.retry_after, 30);                      /* the one at 0 leaves at 60 */
    prov_keylimit_take(&v, t, 7, 5, 0, t0 + 59);
    CU_ASSERT_EQUAL(v.result, PROV_KL_RATE);
    CU_ASSERT_EQUAL(v.retry_after, 1);
    prov_keylimit_take(&v, t, 8, 5, 0, t0 + 59);             /* another key: its own */
    CU_ASSERT_EQUAL(v.result, PROV_KL_ALLOWED);
    prov_keylimit_take(&v, t, 7, 5, 0, t0 + 60);             /* refusals did not count */
    CU_ASSERT_EQUAL(v.result, PROV_KL_ALLOWED);
    prov_keylimit_take(&v, t, 7, 5, 0, t0 + 60);
    CU_ASSERT_EQUAL(v.result, PROV_KL_RATE);
    CU_ASSERT_EQUAL(v.retry_after, 10);
    prov_keylimit_take(&v, t, 7, 5, 0, t0 + 500);            /* a quiet while: all fresh */
    CU_ASSERT_EQUAL(v.result, PROV_KL_ALLOWED);
    prov_keylimit_take(&v, t, 7, 0, 0, t0 + 500);            /* no limits: not counted */
    CU_ASSERT_EQUAL(v.result, PROV_KL_ALLOWED);
}

static void test_in_flight(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_keylimit_t *t = kl_table(64, p);
    prov_kl_verdict_t a, b, c;
    apr_int64_t now = 5000;
    prov_keylimit_take(&a, t, 9, 0, 2, now);
    prov_keylimit_take(&b, t, 9, 0, 2, now);
    prov_keylimit_take(&c, t, 9, 0, 2, now);
    CU_ASSERT_EQUAL(a.result, PROV_KL_ALLOWED);
    CU_ASSERT_EQUAL(b.result, PROV_KL_ALLOWED);
    CU_ASSERT(a.slot >= 0 && a.slot == b.slot);
    CU_ASSERT_EQUAL(c.result, PROV_KL_IN_FLIGHT);
    CU_ASSERT_EQUAL(c.retry_after, 1);
    CU_ASSERT_EQUAL(prov_keylimit_in_flight(t, 9), 2);
    prov_keylimit_release(t, a.slot, 9, now);
    prov_keylimit_release(t, a.slot, 10, now);               /* not its key: nothing */
    CU_ASSERT_EQUAL(prov_keylimit_in_flight(t, 9), 1);
    prov_keylimit_take(&c, t, 9, 0, 2, now);
    CU_ASSERT_EQUAL(c.result, PROV_KL_ALLOWED);
    prov_keylimit_release(t, b.slot, 9, now);
    prov_keylimit_release(t, c.slot, 9, now);
    prov_keylimit_release(t, c.slot, 9, now);                /* never below zero */
    CU_ASSERT_EQUAL(prov_keylimit_in_flight(t, 9), 0);
    /* A count left by a dead child is forgotten after PROV_KL_STALE. */
    prov_keylimit_take(&a, t, 9, 0, 1, now);
    prov_keylimit_take(&b, t, 9, 0, 1, now + 10);
    CU_ASSERT_EQUAL(b.result, PROV_KL_IN_FLIGHT);
    prov_keylimit_take(&b, t, 9, 0, 1, now + PROV_KL_STALE);
    CU_ASSERT_EQUAL(b.result, PROV_KL_ALLOWED);
}

/* One set (8 slots): the ninth key takes the least recently used idle slot;
 * with all eight in flight, a ninth goes through uncounted. */
static void test_full_set(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_keylimit_t *t = kl_table(PROV_KL_WAYS, p);
    prov_kl_verdict_t v;
    apr_int64_t id;
    for (id = 1; id <= PROV_KL_WAYS; id++) {
        prov_keylimit_take(&v, t, id, 0, 1, 100 + id);
        CU_ASSERT_EQUAL(v.result, PROV_KL_ALLOWED);
    }
    prov_keylimit_take(&v, t, 99, 0, 1, 120);
    CU_ASSERT_EQUAL(v.result, PROV_KL_ALLOWED);
    CU_ASSERT(v.untracked);
    CU_ASSERT_EQUAL(v.slot, -1);
    prov_keylimit_release(t, 0, 1, 120);                      /* key 1 was in slot 0 */
    CU_ASSERT_EQUAL(prov_keylimit_in_flight(t, 1), 0);
    prov_keylimit_take(&v, t, 99, 5, 1, 130);
    CU_ASSERT_EQUAL(v.result, PROV_KL_ALLOWED);
    CU_ASSERT_EQUAL(v.slot, 0);
    CU_ASSERT(v.evicted);                                     /* key 1's minute was live */
    CU_ASSERT_EQUAL(prov_keylimit_in_flight(t, 99), 1);
    CU_ASSERT_EQUAL(prov_keylimit_in_flight(t, 2), 1);
}

void prov_test_suite_key_controls(void)
{
    PROV_SUITE("key_controls", PROV_TEST(test_cidr), PROV_TEST(test_lists),
               PROV_TEST(test_times), PROV_TEST(test_patch_body),
               PROV_TEST(test_set_and_lookup), PROV_TEST(test_rate),
               PROV_TEST(test_in_flight), PROV_TEST(test_full_set));
}
