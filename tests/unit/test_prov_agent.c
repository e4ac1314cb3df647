/* test_prov_agent.c: unit tests of agent sessions (prov_agent.h,
 * docs/internals/billing.md "Agent sessions"): which header values are a
 * session (1 to 128 token characters; anything else is ignored, never an
 * error) and which client sent it (Claude Code's header first, then
 * session-id, Codex by its User-Agent); the client names' round trip; a
 * row's strings copied with its session; the journal's record carrying the
 * session and its client through a replay, a record of the older format
 * (without them) still read, and a record with an unknown client dropped;
 * and the usage report by session on SQLite: one row per session, client
 * and key, models sorted, newest first, reservations and rows without a
 * session left out, at most PROV_USAGE_SESSIONS_MAX; and the cabinet's
 * GET /v1/usage?by=session answer made of it. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "unit_tests.h"
#include "prov_agent.h"
#include "prov_journal.h"
#include "prov_usage.h"
#include "prov_models.h"
#include "prov_cabinet.h"

static void test_agent_valid(void)
{
    char long_id[PROV_AGENT_SESSION_MAX + 2];
    CU_ASSERT_TRUE(prov_agent_session_valid("0f6c0c39-4c1e-4bb6-9d0e-6d2a2b1f5c11"));
    CU_ASSERT_TRUE(prov_agent_session_valid("a"));
    CU_ASSERT_TRUE(prov_agent_session_valid("tok!#$%&'*+-.^_`|~9"));
    CU_ASSERT_FALSE(prov_agent_session_valid(NULL));
    CU_ASSERT_FALSE(prov_agent_session_valid(""));
    CU_ASSERT_FALSE(prov_agent_session_valid("has space"));
    CU_ASSERT_FALSE(prov_agent_session_valid("tab\there"));
    CU_ASSERT_FALSE(prov_agent_session_valid("quote\"d"));
    CU_ASSERT_FALSE(prov_agent_session_valid("comma,list"));
    CU_ASSERT_FALSE(prov_agent_session_valid("caf\xc3\xa9"));
    CU_ASSERT_FALSE(prov_agent_session_valid("del\x7f"));
    memset(long_id, 'x', sizeof(long_id));
    long_id[PROV_AGENT_SESSION_MAX] = '\0';
    CU_ASSERT_TRUE(prov_agent_session_valid(long_id));
    long_id[PROV_AGENT_SESSION_MAX] = 'x';
    long_id[PROV_AGENT_SESSION_MAX + 1] = '\0';
    CU_ASSERT_FALSE(prov_agent_session_valid(long_id));
}

static void test_agent_headers(void)
{
    const char *s = "x";
    prov_client_e c = PROV_CLIENT_OTHER;
    prov_agent_session(&s, &c, "cc-1", "sid-1", "claude-cli/2.1.0 (external, cli)");
    CU_ASSERT_STRING_EQUAL(s, "cc-1");
    CU_ASSERT_EQUAL(c, PROV_CLIENT_CLAUDE_CODE);
    prov_agent_session(&s, &c, NULL, "sid-2", "codex_exec/0.63.0 (Debian 12; x86_64)");
    CU_ASSERT_STRING_EQUAL(s, "sid-2");
    CU_ASSERT_EQUAL(c, PROV_CLIENT_CODEX);
    prov_agent_session(&s, &c, NULL, "sid-3", "Codex_CLI_RS/0.50");
    CU_ASSERT_EQUAL(c, PROV_CLIENT_CODEX);
    prov_agent_session(&s, &c, NULL, "sid-4", "curl/8.0");
    CU_ASSERT_STRING_EQUAL(s, "sid-4");
    CU_ASSERT_EQUAL(c, PROV_CLIENT_OTHER);
    prov_agent_session(&s, &c, NULL, "sid-5", NULL);
    CU_ASSERT_EQUAL(c, PROV_CLIENT_OTHER);
    /* an invalid Claude Code header is as none: session-id is taken */
    prov_agent_session(&s, &c, "bad value", "sid-6", "codex_exec/1");
    CU_ASSERT_STRING_EQUAL(s, "sid-6");
    CU_ASSERT_EQUAL(c, PROV_CLIENT_CODEX);
    prov_agent_session(&s, &c, "bad value", "also bad", "codex_exec/1");
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_EQUAL(c, PROV_CLIENT_NONE);
    prov_agent_session(&s, &c, NULL, NULL, "claude-cli/2");
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_EQUAL(c, PROV_CLIENT_NONE);
}

static void test_agent_client_names(void)
{
    prov_client_e c = PROV_CLIENT_OTHER;
    int i;
    for (i = 1; i < PROV_CLIENT__COUNT; i++) {
        CU_ASSERT_EQUAL(prov_ledger_client_parse(&c, prov_ledger_client_name(i)), APR_SUCCESS);
        CU_ASSERT_EQUAL((int)c, i);
    }
    CU_ASSERT_PTR_NULL(prov_ledger_client_name(PROV_CLIENT_NONE));
    CU_ASSERT_PTR_NULL(prov_ledger_client_name(PROV_CLIENT__COUNT));
    CU_ASSERT_STRING_EQUAL(prov_ledger_client_name(PROV_CLIENT_CLAUDE_CODE), "claude-code");
    CU_ASSERT_EQUAL(prov_ledger_client_parse(&c, ""), APR_SUCCESS);
    CU_ASSERT_EQUAL(c, PROV_CLIENT_NONE);
    c = PROV_CLIENT_CODEX;
    CU_ASSERT_EQUAL(prov_ledger_client_parse(&c, "cursor"), APR_EINVAL);
    CU_ASSERT_EQUAL(c, PROV_CLIENT_CODEX);
}

static void test_agent_row_copy(void)
{
    prov_ledger_row_t a, b;
    char *buf;
    memset(&a, 0, sizeof(a));
    a.request_id = "req-1";
    a.transport = "messages";
    a.session = "sess-42";
    a.client = PROV_CLIENT_CLAUDE_CODE;
    CU_ASSERT_EQUAL(prov_ledger_row_strings_len(&a), 6 + 9 + 8);
    buf = malloc(prov_ledger_row_strings_len(&a));
    b = a;
    prov_ledger_row_strings_copy(&b, &a, buf);
    CU_ASSERT_STRING_EQUAL(b.session, "sess-42");
    CU_ASSERT_STRING_EQUAL(b.transport, "messages");
    CU_ASSERT_TRUE(b.session >= buf && b.request_id == buf);
    free(buf);
    a.session = NULL;
    CU_ASSERT_EQUAL(prov_ledger_row_strings_len(&a), 6 + 9);
    buf = malloc(prov_ledger_row_strings_len(&a));
    prov_ledger_row_strings_copy(&b, &a, buf);
    CU_ASSERT_PTR_NULL(b.session);
    free(buf);
}

/* ---- the journal ---------------------------------------------------------- */

typedef struct got_t {
    int n;
    char ids[4][32], sessions[4][160];
    prov_client_e clients[4];
} got_t;

static apr_status_t got(void *baton, const char *owner, const prov_journal_rec_t *recs, int n,
                        int last, apr_pool_t *p)
{
    got_t *g = baton;
    int i;
    (void)owner;
    (void)last;
    (void)p;
    for (i = 0; i < n && g->n < 4; i++, g->n++) {
        apr_cpystrn(g->ids[g->n], recs[i].row.request_id, sizeof(g->ids[0]));
        apr_cpystrn(g->sessions[g->n], recs[i].row.session ? recs[i].row.session : "(none)",
                    sizeof(g->sessions[0]));
        g->clients[g->n] = recs[i].row.client;
    }
    return APR_SUCCESS;
}

static void remove_all(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[512];
    while (d && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            unlink(path);
        }
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static void test_agent_journal(void)
{
    apr_pool_t *p = NULL;
    prov_journal_t *j = NULL;
    prov_journal_rec_t r;
    got_t g;
    char dir[64] = "/tmp/prov-unit-agent-XXXXXX", path[512], sess[PROV_AGENT_SESSION_MAX + 1];
    int ticket = 0, fd, replayed = 0;
    /* the format before sessions (17 fields), and a client nobody knows */
    static const char old[] = "S\treq-old\t7\t8\t9\tchat\t1\t2\t0\t0\t500\t40\t0\t1\tok\t"
                              "1700000000\t1700000001\n";
    static const char bad[] = "S\treq-bad\t7\t8\t9\tchat\t1\t2\t0\t0\t500\t40\t0\t1\tok\t"
                              "1700000000\t1700000001\tsess-x\tcursor\n";

    apr_pool_create(&p, prov_test_pool());
    memset(&g, 0, sizeof(g));
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, dir, "db-1", 0, p), APR_SUCCESS);
    memset(&r, 0, sizeof(r));
    r.row.request_id = "req-new";
    r.row.transport = "responses";
    r.row.status = PROV_STATUS_CUT;
    r.row.user_id = 7;
    r.row.charge = 321;
    memset(sess, 'z', PROV_AGENT_SESSION_MAX);     /* the longest a session is */
    sess[PROV_AGENT_SESSION_MAX] = '\0';
    r.row.session = sess;
    r.row.client = PROV_CLIENT_CODEX;
    r.drawn = 1;
    CU_ASSERT_EQUAL(prov_journal_append(j, &r, &ticket), APR_SUCCESS);
    r.row.request_id = "req-none";
    r.row.session = NULL;
    r.row.client = PROV_CLIENT_CODEX;             /* no session: no client either */
    CU_ASSERT_EQUAL(prov_journal_append(j, &r, &ticket), APR_SUCCESS);
    snprintf(path, sizeof(path), "%s/%s.1.log", dir, prov_journal_owner(j));
    prov_journal_close(j);                         /* outstanding: left for a survivor */
    fd = open(path, O_WRONLY | O_APPEND);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(write(fd, old, sizeof(old) - 1), (ssize_t)sizeof(old) - 1);
    CU_ASSERT_EQUAL(write(fd, bad, sizeof(bad) - 1), (ssize_t)sizeof(bad) - 1);
    close(fd);
    CU_ASSERT_EQUAL(prov_journal_recover(&replayed, dir, "db-1", got, &g, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(replayed, 1);
    CU_ASSERT_EQUAL_FATAL(g.n, 3);
    CU_ASSERT_STRING_EQUAL(g.ids[0], "req-new");
    CU_ASSERT_STRING_EQUAL(g.sessions[0], sess);
    CU_ASSERT_EQUAL(g.clients[0], PROV_CLIENT_CODEX);
    CU_ASSERT_STRING_EQUAL(g.ids[1], "req-none");
    CU_ASSERT_STRING_EQUAL(g.sessions[1], "(none)");
    CU_ASSERT_EQUAL(g.clients[1], PROV_CLIENT_NONE);
    CU_ASSERT_STRING_EQUAL(g.ids[2], "req-old");
    CU_ASSERT_STRING_EQUAL(g.sessions[2], "(none)");
    CU_ASSERT_EQUAL(g.clients[2], PROV_CLIENT_NONE);
    remove_all(dir);
    apr_pool_destroy(p);
}

/* ---- the report ------------------------------------------------------------- */

/* 2030-01-15 00:00:00 UTC */
#define T0 APR_INT64_C(1894665600)

static void row(prov_store_t *s, apr_int64_t user, apr_int64_t key, apr_int64_t model,
                apr_int64_t at, const char *status, apr_int64_t in, apr_int64_t credits,
                const char *session, const char *client, apr_pool_t *p)
{
    static int seq;
    const char *sql = apr_psprintf(p,
        "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, input_tokens, "
        "output_tokens, reserved, credits, status, created_at, agent_session, agent_client) "
        "VALUES ('ag-%d', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT
        ", 'chat', %" APR_INT64_T_FMT ", 1, 0, %" APR_INT64_T_FMT ", '%s', %" APR_INT64_T_FMT
        ", %s, %s)", ++seq, user, key, model, in, credits, status, at,
        session ? apr_psprintf(p, "'%s'", session) : "NULL",
        client ? apr_psprintf(p, "'%s'", client) : "NULL");
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(s, sql, p), APR_SUCCESS);
}

static void test_agent_report(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_usage_filter_t f;
    apr_array_header_t *rows = NULL;
    const prov_usage_session_t *u;
    int i;

    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(NULL, s, "beta", "up/beta", NULL, NULL, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(NULL, s, "alpha", "up/alpha", NULL, NULL, p),
                          APR_SUCCESS);
    row(s, 1, 10, 1, T0 + 10, "ok", 100, 1000, "cc-a", "claude-code", p);
    row(s, 1, 10, 2, T0 + 20, "cut", 50, 500, "cc-a", "claude-code", p);
    row(s, 1, 10, 1, T0 + 25, "reserved", 0, 0, "cc-a", "claude-code", p);
    row(s, 1, 11, 1, T0 + 30, "ok", 7, 70, "cx-b", "codex", p);
    row(s, 1, 10, 1, T0 + 40, "ok", 9, 90, NULL, NULL, p);
    row(s, 2, 20, 1, T0 + 50, "ok", 3, 30, "cc-a", "claude-code", p);
    memset(&f, 0, sizeof(f));
    f.user_id = 1;
    CU_ASSERT_EQUAL_FATAL(prov_usage_sessions(&rows, s, &f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(rows->nelts, 2);
    u = APR_ARRAY_IDX(rows, 0, const prov_usage_session_t *);   /* the newest first */
    CU_ASSERT_STRING_EQUAL(u->sums.group, "cx-b");
    CU_ASSERT_STRING_EQUAL(u->client, "codex");
    CU_ASSERT_EQUAL(u->key_id, 11);
    u = APR_ARRAY_IDX(rows, 1, const prov_usage_session_t *);
    CU_ASSERT_STRING_EQUAL(u->sums.group, "cc-a");
    CU_ASSERT_STRING_EQUAL(u->client, "claude-code");
    CU_ASSERT_EQUAL(u->user_id, 1);
    CU_ASSERT_EQUAL(u->sums.requests, 2);
    CU_ASSERT_EQUAL(u->sums.tokens.input, 150);
    CU_ASSERT_EQUAL(u->sums.credits, 1500);
    CU_ASSERT_EQUAL(u->first_at, T0 + 10);
    CU_ASSERT_EQUAL(u->last_at, T0 + 20);
    CU_ASSERT_EQUAL_FATAL(u->models->nelts, 2);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(u->models, 0, const char *), "alpha");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(u->models, 1, const char *), "beta");
    /* every user: the other user's use of the same id is its own row */
    f.user_id = 0;
    CU_ASSERT_EQUAL_FATAL(prov_usage_sessions(&rows, s, &f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(rows->nelts, 3);
    /* a time range */
    f.since = T0 + 30;
    CU_ASSERT_EQUAL_FATAL(prov_usage_sessions(&rows, s, &f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(rows->nelts, 2);
    /* bounded */
    for (i = 0; i < PROV_USAGE_SESSIONS_MAX + 5; i++)
        row(s, 3, 30, 1, T0 + 100 + i, "ok", 1, 1, apr_psprintf(p, "many-%d", i), "other", p);
    memset(&f, 0, sizeof(f));
    f.user_id = 3;
    CU_ASSERT_EQUAL_FATAL(prov_usage_sessions(&rows, s, &f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(rows->nelts, PROV_USAGE_SESSIONS_MAX);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(rows, 0, const prov_usage_session_t *)->sums.group,
                           apr_psprintf(p, "many-%d", PROV_USAGE_SESSIONS_MAX + 4));
    f.user_id = -1;
    CU_ASSERT_EQUAL(prov_usage_sessions(&rows, s, &f, p), APR_EINVAL);
    apr_pool_destroy(p);
}

static void test_agent_cabinet(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_error_t *err = NULL;
    prov_usage_by_e by = PROV_USAGE_BY_DAY;
    json_object *o = NULL, *data, *e, *v;
    int days = 0;

    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(prov_cabinet_usage_args(&days, &by, &err, "2", "session", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(by, PROV_USAGE_BY_SESSION);
    CU_ASSERT_EQUAL(prov_cabinet_usage_args(&days, &by, &err, NULL, "sessions", p), APR_EINVAL);
    s = prov_test_store(p);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(NULL, s, "beta", "up/beta", NULL, NULL, p),
                          APR_SUCCESS);
    row(s, 1, 10, 1, T0 + 10, "ok", 100, 1000, "cc-a", "claude-code", p);
    row(s, 1, 10, 1, T0 + 70, "ok", 50, 500, "cc-a", "claude-code", p);
    row(s, 1, 10, 1, T0 - 86400 * 3, "ok", 1, 1, "old", "codex", p);   /* out of the days */
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_usage(&o, s, 1, 2, PROV_USAGE_BY_SESSION, T0 + 100, p),
                          APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(o, "by")), "session");
    data = json_object_object_get(o, "data");
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(data), 1);
    e = json_object_array_get_idx(data, 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(e, "session")), "cc-a");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(e, "group")), "cc-a");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(e, "client")),
                           "claude-code");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(e, "key")), "10");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(e, "first_request_at")),
                           "2030-01-15T00:00:10Z");
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(e, "last_request_at")),
                           "2030-01-15T00:01:10Z");
    CU_ASSERT_EQUAL(json_object_get_int64(json_object_object_get(e, "requests")), 2);
    CU_ASSERT_EQUAL(json_object_get_int64(json_object_object_get(e, "input_tokens")), 150);
    v = json_object_object_get(e, "models");
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(v), 1);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_array_get_idx(v, 0)), "beta");
    apr_pool_destroy(p);
}

void prov_test_suite_agent(void)
{
    PROV_SUITE("agent", PROV_TEST(test_agent_valid), PROV_TEST(test_agent_headers),
               PROV_TEST(test_agent_client_names), PROV_TEST(test_agent_row_copy),
               PROV_TEST(test_agent_journal), PROV_TEST(test_agent_report),
               PROV_TEST(test_agent_cabinet));
}
