/* test_prov_identity.c: unit tests of linked identities
 * (core/identity/prov_identity.c), on SQLite and, with PROV_UNIT_PGSQL, on
 * PostgreSQL: the first sign-in creates the user and the identity, the
 * next finds them; the new user's email (the provider's, folded, or a
 * placeholder when none is given, it is not said to be verified, malformed
 * or another user's, whose account stays untouched); the name made fit;
 * a blocked user refused; linking (added, a no-op the second time, 409's
 * APR_EEXIST for another user's identity); unlinking (not the last one);
 * the list (core/account's) with provider and time only. Then races between connections to
 * one database (nodes): the same first sign-in, the same link, two unlinks
 * of a user's only two identities; then many first sign-ins of one
 * identity at once, round after round (a short stress). */
#include <pthread.h>
#include <string.h>
#include "unit_tests.h"
#include "prov_identity.h"
#include "prov_user_access.h"

#define T0 APR_INT64_C(1800000000)

static prov_claims_t claims(const char *sub, const char *email, int verified, const char *name)
{
    prov_claims_t c;
    c.subject = sub;
    c.email = email;
    c.email_verified = verified;
    c.name = name;
    return c;
}

static prov_user_t *signin(prov_store_t *s, const char *provider, prov_claims_t c, int *created,
                           apr_int64_t now, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_identity_signin(&u, created, s, provider, &c, now, p),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    return u;
}

static void test_first_signin(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_user_t *u, *v, *w;
    apr_array_header_t *list = NULL;
    prov_user_identity_t *id;
    apr_int64_t found = 0;
    int created = -1;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    u = signin(s, "corp", claims("sub-1", "Ann@Example.COM", 1, "Ann Lee"), &created, T0, p);
    CU_ASSERT_EQUAL(created, 1);
    CU_ASSERT_STRING_EQUAL(u->email, "ann@example.com");
    CU_ASSERT_STRING_EQUAL(u->name, "Ann Lee");
    CU_ASSERT_EQUAL(u->created_at, T0);
    CU_ASSERT_EQUAL(prov_identity_user(&found, s, "corp", "sub-1", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(found, u->id);
    /* the next sign-in finds the user, whatever the claims say now */
    v = signin(s, "corp", claims("sub-1", "other@example.com", 1, "Someone"), &created, T0 + 9,
               p);
    CU_ASSERT_EQUAL(created, 0);
    CU_ASSERT_EQUAL(v->id, u->id);
    CU_ASSERT_STRING_EQUAL(v->email, "ann@example.com");
    /* the same subject at another provider is another identity */
    w = signin(s, "other", claims("sub-1", NULL, -1, NULL), &created, T0, p);
    CU_ASSERT_EQUAL(created, 1);
    CU_ASSERT_NOT_EQUAL(w->id, u->id);
    CU_ASSERT_EQUAL(prov_user_identities(&list, s, u->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(list->nelts, 1);
    id = APR_ARRAY_IDX(list, 0, prov_user_identity_t *);
    CU_ASSERT_STRING_EQUAL(id->provider, "corp");
    CU_ASSERT_EQUAL(id->created_at, T0);
    /* the user's row holds no subject */
    CU_ASSERT_PTR_NULL(strstr(prov_test_dump(s, "SELECT * FROM users", p), "sub-1"));
    /* claims without a subject */
    CU_ASSERT_EQUAL(prov_identity_signin(&u, &created, s, "corp", NULL, T0, p), APR_EINVAL);
    {
        prov_claims_t c = claims("", "x@example.com", 1, NULL);
        CU_ASSERT_EQUAL(prov_identity_signin(&u, &created, s, "corp", &c, T0, p), APR_EINVAL);
    }
    prov_store_close(s);
    apr_pool_destroy(p);
}

static void test_email_rules(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_user_t *admin = NULL, *u, *by_email = NULL;
    apr_array_header_t *list = NULL;
    int created;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&admin, s, "bob@example.com", "Bob", p), APR_SUCCESS);
    /* none given, said unverified, malformed */
    u = signin(s, "corp", claims("s1", NULL, -1, NULL), &created, T0, p);
    CU_ASSERT_TRUE(prov_identity_email_is_placeholder(u->email));
    CU_ASSERT_EQUAL(strncmp(u->email, "signin-", 7), 0);
    CU_ASSERT_EQUAL(strlen(u->email), 7 + 24 + 1 + strlen(PROV_IDENTITY_NOMAIL_DOMAIN));
    CU_ASSERT_PTR_NULL(u->name);
    u = signin(s, "corp", claims("s2", "eve@example.com", 0, NULL), &created, T0, p);
    CU_ASSERT_TRUE(prov_identity_email_is_placeholder(u->email));
    u = signin(s, "corp", claims("s3", "not an email", 1, NULL), &created, T0, p);
    CU_ASSERT_TRUE(prov_identity_email_is_placeholder(u->email));
    /* another user's address: never joined to that user */
    u = signin(s, "corp", claims("s4", "BOB@example.com", 1, NULL), &created, T0, p);
    CU_ASSERT_EQUAL(created, 1);
    CU_ASSERT_NOT_EQUAL(u->id, admin->id);
    CU_ASSERT_TRUE(prov_identity_email_is_placeholder(u->email));
    CU_ASSERT_EQUAL(prov_user_identities(&list, s, admin->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(list->nelts, 0);
    /* not said either way: not the account's (first come would squat it);
     * prov_signin_exchange says 1 for a provider with emails_verified=on */
    u = signin(s, "code-host", claims("42", "dev@example.net", -1, NULL), &created, T0, p);
    CU_ASSERT_TRUE(prov_identity_email_is_placeholder(u->email));
    CU_ASSERT_EQUAL(prov_user_find(&by_email, s, "dev@example.net", p), APR_NOTFOUND);
    u = signin(s, "code-host", claims("43", "dev@example.net", 1, NULL), &created, T0, p);
    CU_ASSERT_STRING_EQUAL(u->email, "dev@example.net");
    CU_ASSERT_FALSE(prov_identity_email_is_placeholder(u->email));
    CU_ASSERT_EQUAL(prov_user_find(&by_email, s, "dev@example.net", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(by_email->id, u->id);
    CU_ASSERT_FALSE(prov_identity_email_is_placeholder("a@example.invalid"));
    CU_ASSERT_FALSE(prov_identity_email_is_placeholder(PROV_IDENTITY_NOMAIL_DOMAIN));
    CU_ASSERT_FALSE(prov_identity_email_is_placeholder(NULL));
    prov_store_close(s);
    apr_pool_destroy(p);
}

static void test_name_and_block(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_user_t *u = NULL;
    char longname[400];
    int created, i;
    prov_claims_t c;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    u = signin(s, "corp", claims("n1", NULL, -1, "Ann\n\tLee\x7f"), &created, T0, p);
    CU_ASSERT_STRING_EQUAL(u->name, "Ann  Lee");
    /* 199 ASCII bytes and a two-byte character: cut before the character */
    for (i = 0; i < 199; i++)
        longname[i] = 'a';
    strcpy(longname + 199, "\xc3\xa9 and more");
    u = signin(s, "corp", claims("n2", NULL, -1, longname), &created, T0, p);
    CU_ASSERT_EQUAL(strlen(u->name), 199);
    u = signin(s, "corp", claims("n3", NULL, -1, "\n\n"), &created, T0, p);
    CU_ASSERT_PTR_NULL(u->name);
    /* a blocked user cannot sign in */
    CU_ASSERT_EQUAL(prov_user_set_blocked(NULL, s, u->id, 1, p), APR_SUCCESS);
    c = claims("n3", NULL, -1, NULL);
    u = NULL;
    CU_ASSERT_EQUAL(prov_identity_signin(&u, &created, s, "corp", &c, T0, p), APR_EACCES);
    CU_ASSERT_PTR_NULL(u);
    prov_store_close(s);
    apr_pool_destroy(p);
}

static void test_link_unlink(void)
{
    apr_pool_t *p;
    prov_store_t *s;
    prov_user_t *ann, *bob;
    apr_array_header_t *list = NULL;
    apr_int64_t owner = 0;
    int created, added = -1;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store_any(p);
    ann = signin(s, "corp", claims("ann-corp", "ann@example.com", 1, NULL), &created, T0, p);
    bob = signin(s, "corp", claims("bob-corp", "bob@example.com", 1, NULL), &created, T0, p);
    /* ann links her code-host identity; again: a no-op */
    CU_ASSERT_EQUAL(prov_identity_link(&added, s, ann->id, "code-host", "1001", T0 + 5, p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(added, 1);
    CU_ASSERT_EQUAL(prov_identity_link(&added, s, ann->id, "code-host", "1001", T0 + 6, p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(added, 0);
    /* bob cannot take it, nor ann bob's */
    CU_ASSERT_EQUAL(prov_identity_link(&added, s, bob->id, "code-host", "1001", T0 + 7, p),
                    APR_EEXIST);
    CU_ASSERT_EQUAL(prov_identity_link(&added, s, ann->id, "corp", "bob-corp", T0 + 7, p),
                    APR_EEXIST);
    CU_ASSERT_EQUAL(prov_identity_user(&owner, s, "code-host", "1001", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(owner, ann->id);
    CU_ASSERT_EQUAL(prov_identity_link(&added, s, ann->id, "corp", "", T0, p), APR_EINVAL);
    /* signing in with the linked identity finds ann */
    CU_ASSERT_EQUAL(signin(s, "code-host", claims("1001", NULL, -1, NULL), &created, T0 + 8,
                           p)->id, ann->id);
    CU_ASSERT_EQUAL(created, 0);
    CU_ASSERT_EQUAL(prov_user_identities(&list, s, ann->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(list->nelts, 2);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(list, 0, prov_user_identity_t *)->provider, "corp");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(list, 1, prov_user_identity_t *)->provider, "code-host");
    CU_ASSERT_EQUAL(APR_ARRAY_IDX(list, 1, prov_user_identity_t *)->created_at, T0 + 5);
    /* unlinking: one of two, then not the last; an unknown provider */
    CU_ASSERT_EQUAL(prov_identity_unlink(s, ann->id, "nowhere", p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_identity_unlink(s, ann->id, "corp", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_identity_unlink(s, ann->id, "code-host", p), APR_EBUSY);
    CU_ASSERT_EQUAL(prov_user_identities(&list, s, ann->id, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(list->nelts, 1);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(list, 0, prov_user_identity_t *)->provider, "code-host");
    /* the identity unlinked is free again: a sign-in with it makes a new user */
    CU_ASSERT_NOT_EQUAL(signin(s, "corp", claims("ann-corp", NULL, -1, NULL), &created, T0 + 9,
                               p)->id, ann->id);
    CU_ASSERT_EQUAL(created, 1);
    CU_ASSERT_EQUAL(prov_identity_unlink(s, bob->id + 100, "corp", p), APR_NOTFOUND);
    prov_store_close(s);
    apr_pool_destroy(p);
}

#define RACERS 4
#define SIGNERS 8               /* the many first sign-ins' stress */

typedef struct racer_t {
    prov_store_t *s;
    apr_pool_t *p;
    pthread_barrier_t *go;
    int what;                    /* 0 sign in, 1 link, 2 unlink */
    const char *subject;
    apr_int64_t user;
    const char *provider;
    apr_status_t rv;
    apr_int64_t got;             /* the user signed in */
    int flag;                    /* created / added */
} racer_t;

static void *race(void *arg)
{
    racer_t *r = arg;
    prov_user_t *u = NULL;
    prov_claims_t c = claims(r->subject, "race@example.com", 1, NULL);
    pthread_barrier_wait(r->go);
    if (r->what == 0) {
        r->rv = prov_identity_signin(&u, &r->flag, r->s, "corp", &c, T0, r->p);
        r->got = u ? u->id : 0;
    }
    else if (r->what == 1) {
        r->rv = prov_identity_link(&r->flag, r->s, r->user, "code-host", r->subject, T0, r->p);
    }
    else {
        r->rv = prov_identity_unlink(r->s, r->user, r->provider, r->p);
    }
    return NULL;
}

/* Runs the racers at once; returns when all are done. */
static void run_race(racer_t *r, int n)
{
    pthread_t th[SIGNERS];
    pthread_barrier_t go;
    int i;
    pthread_barrier_init(&go, NULL, (unsigned)n);
    for (i = 0; i < n; i++) {
        r[i].go = &go;
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, race, &r[i]) == 0);
    }
    for (i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
}

/* A user with identities at corp and code-host, made through s. */
static apr_int64_t two_identities(prov_store_t *s, int round, apr_pool_t *p)
{
    prov_claims_t c = claims(apr_psprintf(p, "w-%d", round), NULL, -1, NULL);
    prov_user_t *u = NULL;
    int created, added;
    CU_ASSERT_EQUAL_FATAL(prov_identity_signin(&u, &created, s, "corp", &c, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_identity_link(&added, s, u->id, "code-host",
                                             apr_psprintf(p, "w2-%d", round), T0, p),
                          APR_SUCCESS);
    return u->id;
}

static void test_races(void)
{
    apr_pool_t *p;
    prov_store_t *s[RACERS];
    racer_t r[RACERS];
    apr_array_header_t *list = NULL;
    prov_user_t *other = NULL;
    prov_claims_t c = claims("second", NULL, -1, NULL);
    apr_int64_t w;
    int i, round, n, created, added, noop, eexist, ok, busy;
    apr_pool_create(&p, prov_test_pool());
    prov_test_store_shared(s, RACERS, p);
    /* each node in a pool of its own: a store copies what it reads into its
     * pool, which one thread at a time may use (four racers on one pool
     * once gave one of them a user id read half over by another) */
    for (i = 1; i < RACERS; i++)
        CU_ASSERT_PTR_NOT_EQUAL(s[i]->pool, s[0]->pool);
    CU_ASSERT_EQUAL_FATAL(prov_identity_signin(&other, &created, s[0], "corp", &c, T0, p),
                          APR_SUCCESS);
    for (round = 0; round < 5; round++) {
        /* the same first sign-in on every node: one user, made once */
        memset(r, 0, sizeof(r));
        for (i = 0; i < RACERS; i++) {
            r[i].s = s[i];
            apr_pool_create(&r[i].p, p);
            r[i].subject = apr_psprintf(p, "race-%d", round);
        }
        run_race(r, RACERS);
        for (i = created = 0; i < RACERS; i++) {
            CU_ASSERT_EQUAL(r[i].rv, APR_SUCCESS);
            CU_ASSERT_EQUAL(r[i].got, r[0].got);
            created += r[i].flag;
        }
        CU_ASSERT_EQUAL(created, 1);
        CU_ASSERT_EQUAL(prov_identity_user(&w, s[0], "corp", r[0].subject, p), APR_SUCCESS);
        CU_ASSERT_EQUAL(w, r[0].got);
        /* one identity linked at once to two users, by two nodes each:
         * one link, one no-op for the same user, two refusals */
        for (i = 0; i < RACERS; i++) {
            r[i].what = 1;
            r[i].user = i % 2 ? r[0].got : other->id;
            r[i].subject = apr_psprintf(p, "link-%d", round);
            r[i].flag = 0;
        }
        run_race(r, RACERS);
        for (i = added = noop = eexist = 0; i < RACERS; i++) {
            added += r[i].rv == APR_SUCCESS && r[i].flag;
            noop += r[i].rv == APR_SUCCESS && !r[i].flag;
            eexist += r[i].rv == APR_EEXIST;
        }
        CU_ASSERT_EQUAL(added, 1);
        CU_ASSERT_EQUAL(noop, 1);
        CU_ASSERT_EQUAL(eexist, 2);
        /* two unlinks of a user's only two identities: one is refused */
        w = two_identities(s[0], round, p);
        for (i = 0; i < 2; i++) {
            r[i].what = 2;
            r[i].user = w;
            r[i].provider = i ? "corp" : "code-host";
        }
        run_race(r, 2);
        ok = (r[0].rv == APR_SUCCESS) + (r[1].rv == APR_SUCCESS);
        busy = (r[0].rv == APR_EBUSY) + (r[1].rv == APR_EBUSY);
        CU_ASSERT_EQUAL(ok, 1);
        CU_ASSERT_EQUAL(busy, 1);
        CU_ASSERT_EQUAL(prov_user_identities(&list, s[0], w, p), APR_SUCCESS);
        CU_ASSERT_EQUAL(list->nelts, 1);
    }
    n = atoi(prov_test_dump(s[0], "SELECT COUNT(*) FROM users", p));
    CU_ASSERT_EQUAL(n, 1 + 5 + 5);
    for (i = 0; i < RACERS; i++)
        prov_store_close(s[i]);
    apr_pool_destroy(p);
}

/* Many first sign-ins of one identity at once, round after round: every
 * one gets the one user the database links the identity to, made once. */
static void test_race_many_first_signins(void)
{
    apr_pool_t *p;
    prov_store_t *s[SIGNERS];
    racer_t r[SIGNERS];
    apr_int64_t owner;
    int i, round, created, same;
    apr_pool_create(&p, prov_test_pool());
    prov_test_store_shared(s, SIGNERS, p);
    for (round = 0; round < 20; round++) {
        memset(r, 0, sizeof(r));
        for (i = 0; i < SIGNERS; i++) {
            r[i].s = s[i];
            apr_pool_create(&r[i].p, p);
            r[i].subject = apr_psprintf(p, "many-%d", round);
        }
        run_race(r, SIGNERS);
        owner = 0;
        CU_ASSERT_EQUAL(prov_identity_user(&owner, s[0], "corp", r[0].subject, p), APR_SUCCESS);
        for (i = created = same = 0; i < SIGNERS; i++) {
            CU_ASSERT_EQUAL(r[i].rv, APR_SUCCESS);
            same += r[i].got == owner;
            created += r[i].flag;
        }
        CU_ASSERT_EQUAL(same, SIGNERS);
        CU_ASSERT_EQUAL(created, 1);
        for (i = 0; i < SIGNERS; i++)
            apr_pool_destroy(r[i].p);
    }
    CU_ASSERT_EQUAL(atoi(prov_test_dump(s[0], "SELECT COUNT(*) FROM users", p)), 20);
    for (i = 0; i < SIGNERS; i++)
        prov_store_close(s[i]);
    apr_pool_destroy(p);
}

void prov_test_suite_identity(void)
{
    PROV_SUITE("identity",
               PROV_TEST(test_first_signin),
               PROV_TEST(test_email_rules),
               PROV_TEST(test_name_and_block),
               PROV_TEST(test_link_unlink),
               PROV_TEST(test_races),
               PROV_TEST(test_race_many_first_signins));
}
