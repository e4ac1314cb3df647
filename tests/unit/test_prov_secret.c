/* test_prov_secret.c: unit tests of secrets and ids: key shape, uniqueness, hashing,
 * request ids that sort by time,
 * and the display prefix that is all that is shown after creation. */
#include <ctype.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "unit_tests.h"
#include "prov_secret.h"

static void test_generate(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *s1, *h1, *d1, *s2, *h2, *d2;
    CU_ASSERT_EQUAL(prov_secret_generate(&s1, &h1, &d1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_secret_generate(&s2, &h2, &d2, p), APR_SUCCESS);
    CU_ASSERT_STRING_NOT_EQUAL(s1, s2);
    CU_ASSERT_EQUAL(strncmp(s1, PROV_SECRET_KEY_PREFIX, strlen(PROV_SECRET_KEY_PREFIX)), 0);
    CU_ASSERT_EQUAL(strlen(s1), strlen(PROV_SECRET_KEY_PREFIX) + PROV_SECRET_RANDOM_LEN);
    CU_ASSERT_TRUE(prov_secret_wellformed(s1));
    CU_ASSERT_EQUAL(strlen(h1), 64);
    CU_ASSERT_STRING_EQUAL(h1, prov_secret_hash(s1, p));
    CU_ASSERT_EQUAL(strlen(d1), PROV_SECRET_DISPLAY_LEN);
    CU_ASSERT_EQUAL(strncmp(d1, s1, PROV_SECRET_DISPLAY_LEN), 0);
    CU_ASSERT_PTR_NULL(strstr(h1, s1 + strlen(PROV_SECRET_KEY_PREFIX)));
}

static void test_wellformed(void)
{
    CU_ASSERT_FALSE(prov_secret_wellformed(NULL));
    CU_ASSERT_FALSE(prov_secret_wellformed(""));
    CU_ASSERT_FALSE(prov_secret_wellformed("sk-prov-short"));
    CU_ASSERT_FALSE(prov_secret_wellformed("sk-other-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
    CU_ASSERT_FALSE(prov_secret_wellformed("sk-prov-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA!"));
    CU_ASSERT_TRUE(prov_secret_wellformed("sk-prov-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA-_a"));
}

static void test_hash_known(void)
{
    /* SHA-256("abc") */
    CU_ASSERT_STRING_EQUAL(prov_secret_hash("abc", prov_test_pool()),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_request_id(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *a = NULL, *b = NULL, *c = NULL;
    apr_size_t i;
    CU_ASSERT_EQUAL(prov_secret_request_id(&a, APR_INT64_C(1795000000123456), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_secret_request_id(&b, APR_INT64_C(1795000000123457), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_secret_request_id(&c, APR_INT64_C(1795000000123457), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(strlen(a), 4 + 13 + 12);
    CU_ASSERT_EQUAL(strncmp(a, "req_6608b01611240", 17), 0);
    for (i = 4; i < strlen(a); i++)
        CU_ASSERT_TRUE(isalnum((unsigned char)a[i]) || a[i] == '-' || a[i] == '_');
    /* later ids sort after earlier ones; ids of the same microsecond differ */
    CU_ASSERT_TRUE(strcmp(a, b) < 0);
    CU_ASSERT_TRUE(strcmp(a, c) < 0);
    CU_ASSERT_STRING_NOT_EQUAL(b, c);
}

/* A forked child (an httpd child) seeds its ids again: its next id is not
 * its parent's next one. */
static void test_request_id_fork(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *a = NULL, *mine = NULL;
    char theirs[64] = "";
    int fds[2], status = 0;
    ssize_t n;
    pid_t pid;
    CU_ASSERT_EQUAL_FATAL(prov_secret_request_id(&a, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        const char *c = "";
        close(fds[0]);
        if (prov_secret_request_id(&c, 0, p) != APR_SUCCESS)
            c = "";
        n = write(fds[1], c, strlen(c));
        _exit(n == (ssize_t)strlen(c) ? 0 : 1);
    }
    close(fds[1]);
    n = read(fds[0], theirs, sizeof(theirs) - 1);
    close(fds[0]);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(n > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    theirs[n > 0 ? n : 0] = '\0';
    CU_ASSERT_EQUAL(prov_secret_request_id(&mine, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(strlen(theirs), strlen(mine));
    CU_ASSERT_STRING_NOT_EQUAL(theirs, mine);
}

void prov_test_suite_secret(void)
{
    PROV_SUITE("keys", PROV_TEST(test_generate), PROV_TEST(test_wellformed),
               PROV_TEST(test_hash_known), PROV_TEST(test_request_id),
               PROV_TEST(test_request_id_fork));
}
