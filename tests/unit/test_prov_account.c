/* test_prov_account.c: unit tests of users, balances and API keys on an
 * in-memory SQLite database: email rules and duplicates, blocking, balance
 * movements with their event rows, the life of a key as the hot-path
 * lookup sees it (create, reissue, delete, budgets), and a user's
 * identities and sessions as the administrator lists and revokes them
 * (blocking revokes them too). */
#include <stdlib.h>
#include <string.h>
#include "unit_tests.h"
#include "prov_account.h"
#include "prov_secret.h"
#include "prov_money.h"
#include "prov_user_access.h"

static apr_pool_t *tpool(void)
{
    apr_pool_t *p = NULL;
    apr_pool_create(&p, prov_test_pool());
    return p;
}

/* First column of the first row of a raw query, or -1. */
static apr_int64_t sql_i64(prov_store_t *s, const char *sql, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_int64_t v = -1;
    if (apr_dbd_select(s->driver, p, s->handle, &res, sql, 1) != 0)
        return -1;
    if (apr_dbd_get_row(s->driver, p, res, &row, -1) == 0)
        v = prov_store_get_i64(s, row, 0, -1);
    while (apr_dbd_get_row(s->driver, p, res, &row, -1) == 0)
        ;
    return v;
}

static prov_user_t *mkuser(prov_store_t *s, const char *email, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&u, s, email, NULL, p), APR_SUCCESS);
    return u;
}

static void test_user_add_find(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = NULL, *f = NULL;

    prov_clock_set(1700000000);
    CU_ASSERT_EQUAL(prov_user_add(&u, s, "Alice@Example.COM", "Alice A.", p), APR_SUCCESS);
    prov_clock_set(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_TRUE(u->id > 0);
    CU_ASSERT_STRING_EQUAL(u->email, "alice@example.com");

    CU_ASSERT_EQUAL(prov_user_find(&f, s, "ALICE@example.com", p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->id, u->id);
    CU_ASSERT_STRING_EQUAL(f->name, "Alice A.");
    CU_ASSERT_EQUAL(f->blocked, 0);
    CU_ASSERT_EQUAL(f->balance, 0);
    CU_ASSERT_EQUAL(f->created_at, 1700000000);

    f = NULL;
    CU_ASSERT_EQUAL(prov_user_find(&f, s, prov_i64(u->id, p), p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_STRING_EQUAL(f->email, "alice@example.com");

    f = NULL;
    CU_ASSERT_EQUAL(prov_user_find(&f, s, "bob@example.com", p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_user_find(&f, s, "999", p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_user_find(&f, s, "alice", p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_user_find(&f, s, "-1", p), APR_NOTFOUND);
    CU_ASSERT_PTR_NULL(f);   /* outputs are set only on success */

    /* No name is stored as NULL. */
    u = mkuser(s, "carol@example.org", p);
    CU_ASSERT_PTR_NULL(u->name);
    CU_ASSERT_EQUAL(prov_user_find(&f, s, "carol@example.org", p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(f->name);
    apr_pool_destroy(p);
}

static void test_user_duplicate(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = NULL;
    apr_array_header_t *all = NULL;

    mkuser(s, "dup@example.com", p);
    CU_ASSERT_EQUAL(prov_user_add(&u, s, "dup@example.com", NULL, p), APR_EEXIST);
    CU_ASSERT_EQUAL(prov_user_add(&u, s, "DUP@Example.com", "x", p), APR_EEXIST);
    CU_ASSERT_PTR_NULL(u);
    /* The failed adds left nothing behind and no transaction open. */
    CU_ASSERT_EQUAL(prov_user_list(&all, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(all->nelts, 1);
    CU_ASSERT_EQUAL(prov_user_add(&u, s, "other@example.com", NULL, p), APR_SUCCESS);
    apr_pool_destroy(p);
}

/* "me@" and dotted labels of 9 letters up to ".com", n characters long. */
static const char *long_email(char *buf, int n)
{
    int i;
    memcpy(buf, "me@", 3);
    for (i = 3; i < n - 4; i++)
        buf[i] = ((i - 3) % 10 == 9) ? '.' : 'a';
    if (buf[n - 5] == '.')
        buf[n - 5] = 'a';
    memcpy(buf + n - 4, ".com", 5);
    return buf;
}

static void test_user_malformed(void)
{
    static const char *const bad[] = {
        "", "plain", "@example.com", "a@", "a@b", "a@b.c", "a b@c.com", "a@@b.com",
        "a@b@c.com", "a@-b.com", "a@b-.com", "a..b@c.com", ".a@c.com", "a.@c.com",
        "a@c..com", "a@c.com.", "a@c.c0m", "a<b>@c.com", "a@c_d.com", NULL
    };
    static const char *const good[] = {
        "a@b.co", "first.last+tag@sub.example.org", "x_y-z@h-1.example.museum", NULL
    };
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = NULL;
    apr_array_header_t *all = NULL;
    char longmail[300];
    int i;

    for (i = 0; bad[i]; i++) {
        if (prov_user_add(&u, s, bad[i], NULL, p) != APR_EINVAL)
            CU_FAIL(bad[i]);
    }
    CU_ASSERT_EQUAL(prov_user_add(&u, s, NULL, NULL, p), APR_EINVAL);
    /* 255 characters: one over the limit. */
    CU_ASSERT_EQUAL(prov_user_add(&u, s, long_email(longmail, 255), NULL, p), APR_EINVAL);
    /* A name with a control character is refused too. */
    CU_ASSERT_EQUAL(prov_user_add(&u, s, "n@example.com", "bad\nname", p), APR_EINVAL);
    CU_ASSERT_PTR_NULL(u);

    for (i = 0; good[i]; i++) {
        if (prov_user_add(&u, s, good[i], NULL, p) != APR_SUCCESS)
            CU_FAIL(good[i]);
    }
    /* Exactly at the limit. */
    CU_ASSERT_EQUAL(prov_user_add(&u, s, long_email(longmail, 254), NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_user_list(&all, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(all->nelts, 4);
    apr_pool_destroy(p);
}

static void test_user_block(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = mkuser(s, "b@example.com", p), *f = NULL;

    CU_ASSERT_EQUAL(prov_user_set_blocked(NULL, s, u->id, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_user_find(&f, s, "b@example.com", p), APR_SUCCESS);
    CU_ASSERT_TRUE(f->blocked);
    CU_ASSERT_EQUAL(prov_user_set_blocked(NULL, s, u->id, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_user_find(&f, s, "b@example.com", p), APR_SUCCESS);
    CU_ASSERT_FALSE(f->blocked);
    CU_ASSERT_EQUAL(prov_user_set_blocked(NULL, s, u->id + 100, 1, p), APR_NOTFOUND);
    apr_pool_destroy(p);
}

static void test_balance(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = mkuser(s, "pay@example.com", p), *f = NULL;
    prov_micro_t bal = -1;
    const char *q;

    CU_ASSERT_EQUAL(prov_balance_add(&bal, s, u->id, 10500000, "invoice 7", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(bal, 10500000);
    CU_ASSERT_EQUAL(prov_balance_add(&bal, s, u->id, -500000, NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(bal, 10000000);
    CU_ASSERT_EQUAL(prov_balance_add(NULL, s, u->id, 1, "", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_user_find(&f, s, "pay@example.com", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(f->balance, 10000001);

    q = apr_psprintf(p, "SELECT COUNT(*) FROM balance_events WHERE user_id = %"
                     APR_INT64_T_FMT, u->id);
    CU_ASSERT_EQUAL(sql_i64(s, q, p), 3);
    q = apr_psprintf(p, "SELECT SUM(amount) FROM balance_events WHERE user_id = %"
                     APR_INT64_T_FMT, u->id);
    CU_ASSERT_EQUAL(sql_i64(s, q, p), 10000001);
    CU_ASSERT_EQUAL(sql_i64(s, "SELECT amount FROM balance_events WHERE reason = 'invoice 7'",
                            p), 10500000);
    CU_ASSERT_EQUAL(sql_i64(s, "SELECT COUNT(*) FROM balance_events WHERE reason IS NULL", p), 2);

    /* Refused movements change nothing and record nothing. */
    bal = -1;
    CU_ASSERT_EQUAL(prov_balance_add(&bal, s, u->id, 0, NULL, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_balance_add(&bal, s, u->id + 50, 1000000, NULL, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_balance_add(&bal, s, u->id, PROV_AMOUNT_MAX + 1, NULL, p), APR_EINVAL);
    CU_ASSERT_EQUAL(bal, -1);
    CU_ASSERT_EQUAL(sql_i64(s, "SELECT COUNT(*) FROM balance_events", p), 3);
    /* ... and leave no transaction open behind them. */
    CU_ASSERT_EQUAL(prov_balance_add(&bal, s, u->id, 1, NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(bal, 10000002);
    apr_pool_destroy(p);
}

static void test_key_create_lookup(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = mkuser(s, "k@example.com", p);
    prov_key_t *k = NULL, *g = NULL;
    prov_auth_t *a = NULL;
    const char *secret = NULL, *q;

    CU_ASSERT_EQUAL(prov_balance_add(NULL, s, u->id, 3000000, NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_key_create(&k, &secret, s, u->id, "laptop", 0, 0, p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(secret);
    CU_ASSERT_TRUE(prov_secret_wellformed(secret));
    CU_ASSERT_TRUE(k->id > 0);
    CU_ASSERT_EQUAL(k->user_id, u->id);
    CU_ASSERT_STRING_EQUAL(k->display, prov_secret_display(secret, p));
    CU_ASSERT_FALSE(k->has_budget);

    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s, secret, p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->key_id, k->id);
    CU_ASSERT_EQUAL(a->user_id, u->id);
    CU_ASSERT_FALSE(a->user_blocked);
    CU_ASSERT_FALSE(a->has_budget);
    CU_ASSERT_EQUAL(a->balance, 3000000);
    CU_ASSERT_STRING_EQUAL(a->key_display, k->display);

    /* Only the hash is stored. */
    q = apr_psprintf(p, "SELECT COUNT(*) FROM api_keys WHERE hash = '%s'", secret);
    CU_ASSERT_EQUAL(sql_i64(s, q, p), 0);
    q = apr_psprintf(p, "SELECT COUNT(*) FROM api_keys WHERE hash = '%s'",
                     prov_secret_hash(secret, p));
    CU_ASSERT_EQUAL(sql_i64(s, q, p), 1);

    CU_ASSERT_EQUAL(prov_key_get(&g, s, k->id, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(g->name, "laptop");
    CU_ASSERT_EQUAL(g->deleted_at, 0);

    /* A blocked owner is still found, flagged (the caller answers 403). */
    CU_ASSERT_EQUAL(prov_user_set_blocked(NULL, s, u->id, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s, secret, p), APR_SUCCESS);
    CU_ASSERT_TRUE(a->user_blocked);

    a = NULL;
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s, "sk-prov-nope", p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s, NULL, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s,
        "sk-prov-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", p), APR_NOTFOUND);
    CU_ASSERT_PTR_NULL(a);
    CU_ASSERT_EQUAL(prov_key_get(&g, s, k->id + 10, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_key_create(&k, &secret, s, u->id + 10, NULL, 0, 0, p),
                    APR_NOTFOUND);
    apr_pool_destroy(p);
}

static void test_key_reissue(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = mkuser(s, "r@example.com", p);
    prov_key_t *k = NULL, *g = NULL;
    prov_auth_t *a = NULL;
    const char *old = NULL, *fresh = NULL;

    CU_ASSERT_EQUAL_FATAL(prov_key_create(&k, &old, s, u->id, NULL, 0, 0, p), APR_SUCCESS);
    prov_clock_set(1800000000);
    CU_ASSERT_EQUAL(prov_key_reissue(&fresh, s, k->id, p), APR_SUCCESS);
    prov_clock_set(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fresh);
    CU_ASSERT_STRING_NOT_EQUAL(old, fresh);
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s, old, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s, fresh, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(a->key_id, k->id);
    CU_ASSERT_EQUAL(prov_key_get(&g, s, k->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(g->reissued_at, 1800000000);
    CU_ASSERT_STRING_EQUAL(g->display, prov_secret_display(fresh, p));

    fresh = NULL;
    CU_ASSERT_EQUAL(prov_key_reissue(&fresh, s, k->id + 10, p), APR_NOTFOUND);
    CU_ASSERT_PTR_NULL(fresh);
    apr_pool_destroy(p);
}

static void test_key_delete(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = mkuser(s, "d@example.com", p);
    prov_key_t *k1 = NULL, *k2 = NULL, *g = NULL;
    prov_auth_t *a = NULL;
    apr_array_header_t *keys = NULL;
    const char *s1 = NULL, *s2 = NULL, *fresh = NULL;

    CU_ASSERT_EQUAL_FATAL(prov_key_create(&k1, &s1, s, u->id, NULL, 0, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_key_create(&k2, &s2, s, u->id, NULL, 0, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_key_delete(s, k1->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s, s1, p), APR_NOTFOUND);
    /* Keys are independent: the other one still works. */
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s, s2, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_key_delete(s, k1->id, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_key_reissue(&fresh, s, k1->id, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_key_set_budget(s, k1->id, 1, 1000000, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_key_get(&g, s, k1->id, p), APR_SUCCESS);
    CU_ASSERT_TRUE(g->deleted_at > 0);

    CU_ASSERT_EQUAL(prov_key_list(&keys, s, u->id, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(keys->nelts, 1);
    CU_ASSERT_EQUAL(APR_ARRAY_IDX(keys, 0, prov_key_t *)->id, k2->id);
    CU_ASSERT_EQUAL(prov_key_list(&keys, s, u->id, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(keys->nelts, 2);
    apr_pool_destroy(p);
}

static void test_key_budget(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = mkuser(s, "bud@example.com", p);
    prov_key_t *k = NULL, *g = NULL;
    prov_auth_t *a = NULL;
    const char *secret = NULL;

    CU_ASSERT_EQUAL(prov_key_create(&k, &secret, s, u->id, NULL, 1, -1, p), APR_EINVAL);
    CU_ASSERT_EQUAL_FATAL(prov_key_create(&k, &secret, s, u->id, NULL, 1, 5000000, p),
                          APR_SUCCESS);
    CU_ASSERT_TRUE(k->has_budget);
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s, secret, p), APR_SUCCESS);
    CU_ASSERT_TRUE(a->has_budget);
    CU_ASSERT_EQUAL(a->weekly_budget, 5000000);

    CU_ASSERT_EQUAL(prov_key_set_budget(s, k->id, 0, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s, secret, p), APR_SUCCESS);
    CU_ASSERT_FALSE(a->has_budget);
    CU_ASSERT_EQUAL(prov_key_get(&g, s, k->id, p), APR_SUCCESS);
    CU_ASSERT_FALSE(g->has_budget);

    /* Zero is a real budget (the key can spend nothing), not "none". */
    CU_ASSERT_EQUAL(prov_key_set_budget(s, k->id, 1, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_auth_lookup(&a, s, secret, p), APR_SUCCESS);
    CU_ASSERT_TRUE(a->has_budget);
    CU_ASSERT_EQUAL(a->weekly_budget, 0);

    CU_ASSERT_EQUAL(prov_key_set_budget(s, k->id, 1, 7250000, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_key_get(&g, s, k->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(g->weekly_budget, 7250000);
    CU_ASSERT_EQUAL(prov_key_set_budget(s, k->id, 1, -5, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_key_set_budget(s, k->id + 9, 1, 5, p), APR_NOTFOUND);
    apr_pool_destroy(p);
}

static void test_key_list_filter(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u1 = mkuser(s, "one@example.com", p), *u2 = mkuser(s, "two@example.com", p);
    prov_key_t *k = NULL;
    apr_array_header_t *keys = NULL;
    const char *secret;
    int i;

    for (i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(prov_key_create(&k, &secret, s, u1->id, NULL, 0, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_key_create(&k, &secret, s, u2->id, "ci", 0, 0, p), APR_SUCCESS);

    CU_ASSERT_EQUAL(prov_key_list(&keys, s, 0, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(keys->nelts, 4);
    CU_ASSERT_EQUAL(prov_key_list(&keys, s, u1->id, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(keys->nelts, 3);
    CU_ASSERT_EQUAL(prov_key_list(&keys, s, u2->id, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(keys->nelts, 1);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(keys, 0, prov_key_t *)->name, "ci");
    CU_ASSERT_EQUAL(prov_key_list(&keys, s, u2->id + 10, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(keys->nelts, 0);
    apr_pool_destroy(p);
}

/* Adds a session row as sign-in would leave it (no sign-in exists here). */
static void mksession(prov_store_t *s, apr_int64_t user, const char *tag, apr_int64_t created,
                      apr_int64_t active_exp, apr_int64_t refresh_exp, apr_pool_t *p)
{
    const char *q = apr_psprintf(p, "INSERT INTO sessions (user_id, active_hash, refresh_hash, "
        "active_expires, refresh_expires, created_at) VALUES (%" APR_INT64_T_FMT ", 'a-%s', "
        "'r-%s', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ")",
        user, tag, tag, active_exp, refresh_exp, created);
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(s, q, p), APR_SUCCESS);
}

static void test_user_identities_sessions(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = mkuser(s, "ids@example.com", p), *o = mkuser(s, "other@example.com", p);
    apr_array_header_t *a = NULL;
    const apr_int64_t T = 1900000000;
    prov_user_identity_t *id;
    prov_user_session_t *ses;
    const char *q;

    CU_ASSERT_EQUAL(prov_user_identities(&a, s, u->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(a->nelts, 0);
    q = apr_psprintf(p, "INSERT INTO identities (user_id, provider, subject, created_at) VALUES "
        "(%" APR_INT64_T_FMT ", 'idp2', 'sub-2', 300), (%" APR_INT64_T_FMT ", 'idp1', 'sub-1', 200), "
        "(%" APR_INT64_T_FMT ", 'idp1', 'sub-o', 100)", u->id, u->id, o->id);
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(s, q, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_user_identities(&a, s, u->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(a->nelts, 2);
    id = APR_ARRAY_IDX(a, 0, prov_user_identity_t *);
    CU_ASSERT_STRING_EQUAL(id->provider, "idp1");
    CU_ASSERT_EQUAL(id->created_at, 200);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(a, 1, prov_user_identity_t *)->provider, "idp2");

    /* live (active), live (idle: its refresh term still runs), revoked,
     * refresh term over, and another user's */
    mksession(s, u->id, "live", T - 60, T + 240, T + 86400, p);
    mksession(s, u->id, "idle", T - 3600, T - 3300, T + 3600, p);
    mksession(s, u->id, "gone", T - 50, T + 250, T + 86400, p);
    mksession(s, u->id, "old", T - 40 * 86400, T - 39 * 86400, T - 10 * 86400, p);
    mksession(s, o->id, "othr", T - 10, T + 290, T + 86400, p);
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(s, "UPDATE sessions SET revoked_at = 1 "
                                         "WHERE active_hash = 'a-gone'", p), APR_SUCCESS);
    prov_clock_set(T);
    CU_ASSERT_EQUAL(prov_user_sessions(&a, s, u->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(a->nelts, 2);
    ses = APR_ARRAY_IDX(a, 0, prov_user_session_t *);
    CU_ASSERT_EQUAL(ses->created_at, T - 3600);
    CU_ASSERT_EQUAL(ses->active_expires, T - 3300);
    CU_ASSERT_EQUAL(ses->refresh_expires, T + 3600);
    CU_ASSERT_TRUE(ses->id > 0);
    CU_ASSERT_EQUAL(APR_ARRAY_IDX(a, 1, prov_user_session_t *)->created_at, T - 60);
    prov_clock_set(0);
    apr_pool_destroy(p);
}

static void test_user_sessions_revoke(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_user_t *u = mkuser(s, "rev@example.com", p), *o = mkuser(s, "keep@example.com", p);
    apr_array_header_t *a = NULL;
    const apr_int64_t T = 1900000000;
    int n = -1;
    const char *q;

    mksession(s, u->id, "u1", T - 60, T + 240, T + 86400, p);
    mksession(s, u->id, "u2", T - 3600, T - 3300, T + 3600, p);
    mksession(s, u->id, "u3", T - 40 * 86400, T - 39 * 86400, T - 10 * 86400, p);
    mksession(s, o->id, "o1", T - 10, T + 290, T + 86400, p);
    prov_clock_set(T);
    CU_ASSERT_EQUAL(prov_user_sessions_revoke(&n, s, u->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 2);
    q = apr_psprintf(p, "SELECT COUNT(*) FROM sessions WHERE revoked_at = %" APR_INT64_T_FMT, T);
    CU_ASSERT_EQUAL(sql_i64(s, q, p), 2);
    CU_ASSERT_EQUAL(prov_user_sessions(&a, s, u->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(a->nelts, 0);
    CU_ASSERT_EQUAL(prov_user_sessions(&a, s, o->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(a->nelts, 1);
    /* Again: nothing left to revoke, and the first revocation time stays. */
    prov_clock_set(T + 5);
    CU_ASSERT_EQUAL(prov_user_sessions_revoke(&n, s, u->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(sql_i64(s, q, p), 2);

    /* Blocking revokes in the same step; unblocking revokes nothing. */
    mksession(s, o->id, "o2", T, T + 300, T + 86400, p);
    n = -1;
    CU_ASSERT_EQUAL(prov_user_set_blocked(&n, s, o->id, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(prov_user_sessions(&a, s, o->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(a->nelts, 0);
    n = -1;
    CU_ASSERT_EQUAL(prov_user_set_blocked(&n, s, o->id, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 0);
    /* An unknown user: nothing changes, nothing is revoked. */
    n = -1;
    CU_ASSERT_EQUAL(prov_user_set_blocked(&n, s, o->id + 100, 1, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(n, -1);
    prov_clock_set(0);
    apr_pool_destroy(p);
}

void prov_test_suite_account(void)
{
    PROV_SUITE("account",
               PROV_TEST(test_user_add_find), PROV_TEST(test_user_duplicate),
               PROV_TEST(test_user_malformed), PROV_TEST(test_user_block),
               PROV_TEST(test_balance), PROV_TEST(test_key_create_lookup),
               PROV_TEST(test_key_reissue), PROV_TEST(test_key_delete),
               PROV_TEST(test_key_budget), PROV_TEST(test_key_list_filter),
               PROV_TEST(test_user_identities_sessions), PROV_TEST(test_user_sessions_revoke));
}
