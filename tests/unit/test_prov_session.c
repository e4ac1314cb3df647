/* test_prov_session.c: unit tests of cabinet sessions
 * (core/identity/prov_session.c) on the test clock: two 256-bit tokens
 * stored as SHA-256 only; the active token valid 5 minutes and extended by
 * each lookup, never past the refresh term; an expired active token
 * renewed from the refresh token (a new active token, the old one dead, the
 * refresh term unchanged); the 30-day absolute end; logout by either token
 * or by id; a blocked user's sessions refused by the lookup itself, and
 * the block (core/account) revoking all of them; the list providerctl
 * shows of them; the purge of sessions past their term; malformed tokens. The same tests run on
 * PostgreSQL (prov_test_store_any). */
#include <string.h>
#include "unit_tests.h"
#include "prov_session.h"
#include "prov_account.h"
#include "prov_user_access.h"
#include "prov_secret.h"

#define T0 APR_INT64_C(1800000000)
#define DAY 86400

static apr_int64_t user(prov_store_t *s, const char *email, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&u, s, email, NULL, p), APR_SUCCESS);
    return u->id;
}

static int live(prov_store_t *s, const char *active, apr_int64_t now, apr_pool_t *p)
{
    prov_session_t *x = NULL;
    return prov_session_lookup(&x, s, active, now, p) == APR_SUCCESS;
}

static void test_create_lookup(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_session_t *x = NULL, *y = NULL;
    const char *a = NULL, *r = NULL, *rows;
    apr_int64_t uid;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    uid = user(s, "ann@example.com", p);
    CU_ASSERT_EQUAL_FATAL(prov_session_create(&x, &a, &r, s, uid, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(strlen(a), 43);
    CU_ASSERT_EQUAL(strlen(r), 43);
    CU_ASSERT_STRING_NOT_EQUAL(a, r);
    CU_ASSERT_EQUAL(x->user_id, uid);
    CU_ASSERT_EQUAL(x->active_expires, T0 + 300);
    CU_ASSERT_EQUAL(x->refresh_expires, T0 + 30 * DAY);
    /* only the hashes are stored */
    rows = prov_test_dump(s, "SELECT * FROM sessions", p);
    CU_ASSERT_PTR_NULL(strstr(rows, a));
    CU_ASSERT_PTR_NULL(strstr(rows, r));
    CU_ASSERT_PTR_NOT_NULL(strstr(rows, prov_secret_hash(a, p)));
    CU_ASSERT_PTR_NOT_NULL(strstr(rows, prov_secret_hash(r, p)));
    /* a lookup extends the active term by 5 minutes from now */
    CU_ASSERT_EQUAL_FATAL(prov_session_lookup(&y, s, a, T0 + 299, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(y->id, x->id);
    CU_ASSERT_EQUAL(y->user_id, uid);
    CU_ASSERT_EQUAL(y->active_expires, T0 + 599);
    CU_ASSERT_EQUAL(y->refresh_expires, T0 + 30 * DAY);
    CU_ASSERT_EQUAL(y->created_at, T0);
    CU_ASSERT_TRUE(live(s, a, T0 + 598, p));
    /* idle for 5 minutes: expired */
    CU_ASSERT_FALSE(live(s, a, T0 + 598 + 300, p));
    CU_ASSERT_FALSE(live(s, a, T0 + 598 + 301, p));
    /* the refresh token is no active token, nor the reverse */
    CU_ASSERT_FALSE(live(s, r, T0 + 1, p));
    CU_ASSERT_EQUAL(prov_session_renew(&y, &a, s, "short", T0, p), APR_NOTFOUND);
    CU_ASSERT_FALSE(live(s, NULL, T0, p));
    CU_ASSERT_FALSE(live(s, "x' OR '1'='1", T0, p));
    /* no such user, a blocked one */
    CU_ASSERT_EQUAL(prov_session_create(&x, &a, &r, s, uid + 100, T0, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_user_set_blocked(NULL, s, uid, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_session_create(&x, &a, &r, s, uid, T0, p), APR_EACCES);
    prov_store_close(s);
    apr_pool_destroy(p);
}

static void test_renew(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_session_t *x = NULL, *y = NULL;
    const char *a = NULL, *r = NULL, *a2 = NULL, *a3 = NULL;
    apr_int64_t uid, end;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    uid = user(s, "bob@example.com", p);
    CU_ASSERT_EQUAL_FATAL(prov_session_create(&x, &a, &r, s, uid, T0, p), APR_SUCCESS);
    end = x->refresh_expires;
    /* an hour idle: the active token is dead, the refresh token renews it */
    CU_ASSERT_FALSE(live(s, a, T0 + 3600, p));
    CU_ASSERT_EQUAL_FATAL(prov_session_renew(&y, &a2, s, r, T0 + 3600, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(y->id, x->id);
    CU_ASSERT_EQUAL(y->active_expires, T0 + 3900);
    CU_ASSERT_EQUAL(y->refresh_expires, end);
    CU_ASSERT_STRING_NOT_EQUAL(a2, a);
    CU_ASSERT_TRUE(live(s, a2, T0 + 3601, p));
    /* renewed again: the previous active token stops working */
    CU_ASSERT_EQUAL_FATAL(prov_session_renew(&y, &a3, s, r, T0 + 3700, p), APR_SUCCESS);
    CU_ASSERT_FALSE(live(s, a2, T0 + 3701, p));
    CU_ASSERT_TRUE(live(s, a3, T0 + 3701, p));
    /* near the end of the 30 days the active term stops at the refresh term */
    CU_ASSERT_EQUAL_FATAL(prov_session_renew(&y, &a3, s, r, end - 100, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(y->active_expires, end);
    CU_ASSERT_EQUAL_FATAL(prov_session_lookup(&y, s, a3, end - 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(y->active_expires, end);
    CU_ASSERT_EQUAL(y->refresh_expires, end);
    /* past 30 days: a new sign-in is needed */
    CU_ASSERT_FALSE(live(s, a3, end, p));
    CU_ASSERT_EQUAL(prov_session_renew(&y, &a2, s, r, end, p), APR_NOTFOUND);
    prov_store_close(s);
    apr_pool_destroy(p);
}

static void test_revoke(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_session_t *x[4], *y = NULL;
    const char *a[4], *r[4], *na = NULL;
    apr_array_header_t *list = NULL;
    apr_int64_t ann, bob;
    int i;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    ann = user(s, "ann@example.com", p);
    bob = user(s, "bob@example.com", p);
    for (i = 0; i < 4; i++)
        CU_ASSERT_EQUAL_FATAL(prov_session_create(&x[i], &a[i], &r[i], s, i < 3 ? ann : bob,
                                                  T0 + i, p), APR_SUCCESS);
    /* what providerctl lists (core/account, on the clock) */
    prov_clock_set(T0 + 10);
    CU_ASSERT_EQUAL(prov_user_sessions(&list, s, ann, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(list->nelts, 3);
    CU_ASSERT_EQUAL(APR_ARRAY_IDX(list, 0, prov_user_session_t *)->id, x[0]->id);
    CU_ASSERT_EQUAL(APR_ARRAY_IDX(list, 2, prov_user_session_t *)->created_at, T0 + 2);
    CU_ASSERT_EQUAL(APR_ARRAY_IDX(list, 2, prov_user_session_t *)->active_expires, T0 + 302);
    /* logout with the refresh cookie: both tokens of that device die */
    CU_ASSERT_EQUAL(prov_session_revoke_token(s, r[0], T0 + 10, p), APR_SUCCESS);
    CU_ASSERT_FALSE(live(s, a[0], T0 + 11, p));
    CU_ASSERT_EQUAL(prov_session_renew(&y, &na, s, r[0], T0 + 11, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_session_revoke_token(s, r[0], T0 + 12, p), APR_NOTFOUND);
    /* with the active cookie; by id */
    CU_ASSERT_EQUAL(prov_session_revoke_token(s, a[1], T0 + 10, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_session_renew(&y, &na, s, r[1], T0 + 11, p), APR_NOTFOUND);
    CU_ASSERT_TRUE(live(s, a[2], T0 + 11, p));
    CU_ASSERT_EQUAL(prov_session_revoke(s, x[2]->id, T0 + 12, p), APR_SUCCESS);
    CU_ASSERT_FALSE(live(s, a[2], T0 + 13, p));
    CU_ASSERT_EQUAL(prov_session_revoke(s, x[2]->id, T0 + 12, p), APR_NOTFOUND);
    prov_clock_set(T0 + 13);
    CU_ASSERT_EQUAL(prov_user_sessions(&list, s, ann, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(list->nelts, 0);
    prov_clock_set(0);
    CU_ASSERT_TRUE(live(s, a[3], T0 + 13, p));
    CU_ASSERT_EQUAL(prov_session_revoke_token(s, "not-a-token", T0, p), APR_NOTFOUND);
    prov_store_close(s);
    apr_pool_destroy(p);
}

static void test_block(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_session_t *x = NULL, *y = NULL;
    const char *a[3], *r[3], *na = NULL;
    apr_int64_t ann, bob;
    int i, n = -1;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    ann = user(s, "ann@example.com", p);
    bob = user(s, "bob@example.com", p);
    for (i = 0; i < 3; i++)
        CU_ASSERT_EQUAL_FATAL(prov_session_create(&x, &a[i], &r[i], s, i < 2 ? ann : bob, T0,
                                                  p), APR_SUCCESS);
    /* a blocked user's sessions are refused by the lookup itself, even
     * were they not revoked */
    CU_ASSERT_EQUAL(prov_store_raw(s, apr_psprintf(p, "UPDATE users SET blocked = 1 WHERE id = %"
                                                   APR_INT64_T_FMT, ann), p), APR_SUCCESS);
    CU_ASSERT_FALSE(live(s, a[0], T0 + 1, p));
    CU_ASSERT_EQUAL(prov_session_renew(&y, &na, s, r[1], T0 + 1, p), APR_NOTFOUND);
    CU_ASSERT_TRUE(live(s, a[2], T0 + 1, p));
    CU_ASSERT_EQUAL(prov_store_raw(s, apr_psprintf(p, "UPDATE users SET blocked = 0 WHERE id = %"
                                                   APR_INT64_T_FMT, ann), p), APR_SUCCESS);
    CU_ASSERT_TRUE(live(s, a[0], T0 + 2, p));
    /* the block (core/account) revokes them all in its transaction, so
     * unblocking does not bring them back */
    prov_clock_set(T0 + 2);
    CU_ASSERT_EQUAL(prov_user_set_blocked(&n, s, ann, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(prov_user_set_blocked(&n, s, ann, 0, p), APR_SUCCESS);
    prov_clock_set(0);
    CU_ASSERT_FALSE(live(s, a[0], T0 + 3, p));
    CU_ASSERT_FALSE(live(s, a[1], T0 + 3, p));
    CU_ASSERT_EQUAL(prov_session_renew(&y, &na, s, r[0], T0 + 3, p), APR_NOTFOUND);
    CU_ASSERT_TRUE(live(s, a[2], T0 + 3, p));
    prov_store_close(s);
    apr_pool_destroy(p);
}

static void test_purge(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_session_t *x = NULL;
    const char *a = NULL, *r = NULL;
    apr_int64_t uid;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    uid = user(s, "ann@example.com", p);
    CU_ASSERT_EQUAL(prov_session_create(&x, &a, &r, s, uid, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_session_create(&x, &a, &r, s, uid, T0 + DAY, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT COUNT(*) FROM sessions", p), "2|\n");
    CU_ASSERT_EQUAL(prov_session_create(&x, &a, &r, s, uid, T0 + 30 * DAY, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT COUNT(*) FROM sessions", p), "2|\n");
    CU_ASSERT_TRUE(live(s, a, T0 + 30 * DAY + 1, p));
    prov_store_close(s);
    apr_pool_destroy(p);
}

void prov_test_suite_session(void)
{
    PROV_SUITE("session",
               PROV_TEST(test_create_lookup),
               PROV_TEST(test_renew),
               PROV_TEST(test_revoke),
               PROV_TEST(test_block),
               PROV_TEST(test_purge));
}
