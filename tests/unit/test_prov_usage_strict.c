/* test_prov_usage_strict.c: unit tests of how a gateway's usage reports are
 * read (docs/internals/billing.md, "How usage reports are read"), with the
 * shapes a broken gateway sends: counts as strings, floats, null, negative
 * or missing, usage {} or under other names (no usage: the estimate, the
 * report counted as unreadable), contradicting counts (a part above its
 * whole raises the whole), a reported input of 0 (the input estimate), a
 * Responses usage chunk followed by more text (partial: the larger of the
 * report and the delivered), Messages content after message_delta (not
 * relayed), and output counted once written (queued output only for a
 * complete answer). Chat, Messages (answer and stream) and Responses
 * (answer and stream), through the scanner and through json-c alike. */
#include <string.h>
#include "unit_tests.h"
#include "prov_chat.h"
#include "prov_estimate.h"
#include "prov_messages.h"
#include "prov_money.h"
#include "prov_responses_stream_int.h"
#include "prov_sse.h"

/* One token of each kind costs a micro-credit. */
static const prov_rates_t unit = { 1000000, 1000000, 1000000, 1000000 };

static json_object *parse(const char *s, apr_pool_t *p)
{
    const char *err = NULL;
    json_object *o = prov_json_parse(s, strlen(s), &err, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    return o;
}

/* ---- chat usage objects ------------------------------------------------------ */

/* The usage object u (text) read by json-c and by the scan: the same result. */
static apr_status_t chat_usage(prov_chat_usage_t *c, const char *u, apr_pool_t *p)
{
    prov_chat_usage_t s;
    prov_jobject_t o;
    apr_status_t tree = prov_chat_usage(c, parse(u, p)), scan;
    CU_ASSERT_EQUAL_FATAL(prov_json_scan_object(&o, u, strlen(u)), APR_SUCCESS);
    scan = prov_chat_usage_scan(&s, &o);
    if (scan != APR_EGENERAL) {
        CU_ASSERT_EQUAL(scan, tree);
        CU_ASSERT(!memcmp(&s, c, sizeof(s)));
    }
    return tree;
}

static void test_chat_unreadable(void)
{
    static const char *const bad[] = {
        "{\"prompt_tokens\":\"10\",\"completion_tokens\":\"20\"}",          /* strings */
        "{\"prompt_tokens\":10.0,\"completion_tokens\":20}",                /* float */
        "{\"prompt_tokens\":10,\"completion_tokens\":2e1}",                 /* exponent */
        "{\"prompt_tokens\":null,\"completion_tokens\":20}",                /* null */
        "{\"prompt_tokens\":10}",                                           /* missing */
        "{}",                                                               /* empty */
        "{\"input_tokens\":10,\"output_tokens\":20}",                       /* renamed */
        "{\"prompt_tokens\":-10,\"completion_tokens\":20}",                 /* negative */
        "{\"prompt_tokens\":10,\"completion_tokens\":true}",
        "{\"prompt_tokens\":10,\"completion_tokens\":20,\"prompt_tokens_details\":"
        "{\"cached_tokens\":\"5\"}}",
        "{\"prompt_tokens\":10,\"completion_tokens\":20,\"completion_tokens_details\":"
        "{\"reasoning_tokens\":1.5}}",
        "{\"prompt_tokens\":10,\"completion_tokens\":20,\"completion_tokens_details\":3}",
        NULL
    };
    apr_pool_t *p = prov_test_pool();
    prov_chat_usage_t c;
    prov_tokens_t t;
    int i;
    for (i = 0; bad[i]; i++) {
        CU_ASSERT_EQUAL(chat_usage(&c, bad[i], p), APR_EINVAL);
        CU_ASSERT_EQUAL(c.prompt + c.completion + c.cached + c.reasoning, 0);
        CU_ASSERT_EQUAL(prov_chat_tokens(&t, parse(bad[i], p)), APR_EINVAL);
    }
    /* not an object at all, or none */
    CU_ASSERT_EQUAL(prov_chat_usage(&c, parse("[1,2]", p)), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_chat_usage(&c, parse("\"10\"", p)), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_chat_usage(&c, NULL), APR_ENOENT);
}

static void test_chat_readable(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_chat_usage_t c;
    prov_tokens_t t;
    /* optional details absent, null, or with null counts: 0 */
    CU_ASSERT_EQUAL(chat_usage(&c, "{\"prompt_tokens\":10,\"completion_tokens\":20,"
                               "\"prompt_tokens_details\":null,\"completion_tokens_details\":"
                               "{\"reasoning_tokens\":null},\"total_tokens\":\"x\"}", p),
                    APR_SUCCESS);
    CU_ASSERT(c.prompt == 10 && c.completion == 20 && c.cached == 0 && c.reasoning == 0);
    CU_ASSERT_EQUAL(chat_usage(&c, "{\"completion_tokens\":0,\"prompt_tokens\":-0}", p),
                    APR_SUCCESS);
    CU_ASSERT(c.prompt == 0 && c.completion == 0);
    /* Contradictions: a part above its whole raises the whole (cached 50 of
     * a prompt of 10: 50 cached, no other input; reasoning 30 of a
     * completion of 20: 30 reasoning, no other output). */
    CU_ASSERT_EQUAL(prov_chat_tokens(&t, parse("{\"prompt_tokens\":10,\"completion_tokens\":20,"
        "\"prompt_tokens_details\":{\"cached_tokens\":50},\"completion_tokens_details\":"
        "{\"reasoning_tokens\":30}}", p)), APR_SUCCESS);
    CU_ASSERT(t.input == 0 && t.cache == 50 && t.output == 0 && t.reasoning == 30);
    CU_ASSERT_EQUAL(prov_chat_tokens(&t, parse("{\"prompt_tokens\":60,\"completion_tokens\":20,"
        "\"prompt_tokens_details\":{\"cached_tokens\":50},\"completion_tokens_details\":"
        "{\"reasoning_tokens\":5}}", p)), APR_SUCCESS);
    CU_ASSERT(t.input == 10 && t.cache == 50 && t.output == 15 && t.reasoning == 5);
}

/* A chat answer's usage: absent or null is no usage, anything unreadable
 * PROV_USAGE_UNREADABLE; both leave the answer for the estimate. */
static void test_chat_answers(void)
{
    static const char *const head = "{\"id\":\"c\",\"model\":\"up\",\"choices\":[{\"index\":0,"
        "\"message\":{\"role\":\"assistant\",\"content\":\"hello\"}}]";
    apr_pool_t *p = prov_test_pool();
    json_object *a = NULL;
    prov_tokens_t t;
    const char *body;
    body = apr_pstrcat(p, head, "}", NULL);
    CU_ASSERT_EQUAL(prov_chat_read_answer(&a, &t, body, strlen(body), p), APR_ENOENT);
    body = apr_pstrcat(p, head, ",\"usage\":null}", NULL);
    CU_ASSERT_EQUAL(prov_chat_read_answer(&a, &t, body, strlen(body), p), APR_ENOENT);
    body = apr_pstrcat(p, head, ",\"usage\":{}}", NULL);
    CU_ASSERT_EQUAL(prov_chat_read_answer(&a, &t, body, strlen(body), p),
                    PROV_USAGE_UNREADABLE);
    CU_ASSERT_EQUAL(prov_estimate_chat_answer(a), 5);
    body = apr_pstrcat(p, head, ",\"usage\":{\"prompt_tokens\":\"12\",\"completion_tokens\":"
                       "\"30000\"}}", NULL);
    CU_ASSERT_EQUAL(prov_chat_read_answer(&a, &t, body, strlen(body), p),
                    PROV_USAGE_UNREADABLE);
    body = apr_pstrcat(p, head, ",\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3}}",
                       NULL);
    CU_ASSERT_EQUAL(prov_chat_read_answer(&a, &t, body, strlen(body), p), APR_SUCCESS);
    CU_ASSERT(t.input == 12 && t.output == 3);
}

/* ---- the charge: input 0, partial reports, queued output ------------------------ */

static void test_input_zero(void)
{
    prov_delivery_t d;
    prov_tokens_t t;
    prov_bill_e how;
    unsigned notes;
    prov_micro_t c;

    /* A final report of no input at all: the input estimate instead. */
    memset(&d, 0, sizeof(d));
    d.usage = PROV_USAGE_FINAL;
    d.started = d.complete = 1;
    d.reported.output = 7;
    c = prov_estimate_bill(&how, &t, &notes, &d, &unit, 1000, 100, 5000);
    CU_ASSERT_EQUAL(how, PROV_BILL_REPORTED);
    CU_ASSERT_EQUAL(notes, PROV_BILL_INPUT_ESTIMATE);
    CU_ASSERT_EQUAL(t.input, 1000);
    CU_ASSERT_EQUAL(c, 1007);
    /* Cached input is input: the report stands. */
    d.reported.cache = 3;
    c = prov_estimate_bill(&how, &t, &notes, &d, &unit, 1000, 100, 5000);
    CU_ASSERT_EQUAL(notes, 0);
    CU_ASSERT_EQUAL(c, 10);
    /* A partial one (message_start's input_tokens: 0), the client gone
     * after the first delta: the input estimate and the delivered output. */
    memset(&d, 0, sizeof(d));
    d.usage = PROV_USAGE_PARTIAL;
    d.reported.output = 1;
    d.started = d.client_left = 1;
    d.output_bytes = 30;
    c = prov_estimate_bill(&how, &t, &notes, &d, &unit, 100000, 4096, 1000000);
    CU_ASSERT_EQUAL(how, PROV_BILL_ESTIMATED);
    CU_ASSERT_EQUAL(notes, PROV_BILL_INPUT_ESTIMATE);
    CU_ASSERT(t.input == 100000 && t.output == 10);
    CU_ASSERT_EQUAL(c, 100010);
    /* still capped by the hold */
    c = prov_estimate_bill(&how, &t, &notes, &d, &unit, 100000, 4096, 5000);
    CU_ASSERT_EQUAL(c, 5000);
    /* A request without input (no estimate): nothing to replace. */
    c = prov_estimate_bill(&how, &t, &notes, &d, &unit, 0, 4096, 1000000);
    CU_ASSERT_EQUAL(notes, 0);
    CU_ASSERT_EQUAL(t.input, 0);
    /* An absurd report is flagged, and charged at most the hold. */
    memset(&d, 0, sizeof(d));
    d.usage = PROV_USAGE_FINAL;
    d.complete = 1;
    d.reported.input = 5;
    d.reported.output = 101;
    c = prov_estimate_bill(&how, &t, &notes, &d, &unit, 5, 100, 50);
    CU_ASSERT_EQUAL(notes, PROV_BILL_ABSURD);
    CU_ASSERT_EQUAL(c, 50);
}

static void test_queued_output(void)
{
    prov_delivery_t d;
    prov_tokens_t t;
    prov_bill_e how;
    prov_micro_t c;

    /* Put into the output but never written to a client that left: not
     * delivered, so nothing to charge but what was written. */
    memset(&d, 0, sizeof(d));
    d.queued_bytes = 3000;
    CU_ASSERT_EQUAL(prov_estimate_delivered(&d), 0);
    CU_ASSERT_EQUAL(prov_estimate_rule(&d), PROV_BILL_RELEASE);
    d.output_bytes = 30;
    d.started = d.client_left = 1;
    c = prov_estimate_bill(&how, &t, NULL, &d, &unit, 10, 4096, 1000000);
    CU_ASSERT_EQUAL(how, PROV_BILL_ESTIMATED);
    CU_ASSERT_EQUAL(t.output, 10);
    CU_ASSERT_EQUAL(c, 20);
    /* A complete answer's last events go out after its settlement: counted. */
    d.client_left = 0;
    d.complete = 1;
    CU_ASSERT_EQUAL(prov_estimate_delivered(&d), 3030);
    c = prov_estimate_bill(&how, &t, NULL, &d, &unit, 10, 4096, 1000000);
    CU_ASSERT_EQUAL(t.output, 1010);
    CU_ASSERT_EQUAL(c, 1020);
    /* (no wrap) */
    d.output_bytes = APR_UINT64_MAX;
    CU_ASSERT_EQUAL(prov_estimate_delivered(&d), APR_UINT64_MAX);
}

/* A final report of a stream that was then cut still follows the rule:
 * the report (the ledger's status says cut). */
static void test_final_then_cut(void)
{
    prov_delivery_t d;
    prov_tokens_t t;
    prov_bill_e how;
    memset(&d, 0, sizeof(d));
    d.usage = PROV_USAGE_FINAL;
    d.reported.input = 4;
    d.reported.output = 2;
    d.started = 1;
    d.output_bytes = 300;
    CU_ASSERT_EQUAL(prov_estimate_bill(&how, &t, NULL, &d, &unit, 50, 100, 1000), 6);
    CU_ASSERT_EQUAL(how, PROV_BILL_REPORTED);
    /* the same report followed by output is partial: the larger per kind */
    d.usage = PROV_USAGE_PARTIAL;
    CU_ASSERT_EQUAL(prov_estimate_bill(&how, &t, NULL, &d, &unit, 50, 100, 1000), 104);
    CU_ASSERT_EQUAL(how, PROV_BILL_ESTIMATED);
}

/* ---- the Messages stream --------------------------------------------------------- */

#define EV(name, data) "event: " name "\ndata: " data "\n\n"
#define START(usage) EV("message_start", "{\"type\":\"message_start\",\"message\":{\"id\":" \
    "\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up\",\"content\":[]," \
    "\"usage\":" usage "}}")
#define BSTART EV("content_block_start", "{\"type\":\"content_block_start\",\"index\":0," \
    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}")
#define TEXT(t) EV("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0," \
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"" t "\"}}")
#define BSTOP EV("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
#define DELTA(usage) EV("message_delta", "{\"type\":\"message_delta\",\"delta\":" \
    "{\"stop_reason\":\"end_turn\"},\"usage\":" usage "}")
#define STOP EV("message_stop", "{\"type\":\"message_stop\"}")

typedef struct mrun_t {
    prov_messages_stream_t *s;
    prov_sse_buf_t *out;
    char text[8192];
    apr_size_t len;
} mrun_t;

static apr_status_t m_emit(void *baton, const char *ev, apr_size_t len)
{
    mrun_t *r = baton;
    CU_ASSERT_FATAL(r->len + len < sizeof(r->text));
    memcpy(r->text + r->len, ev, len);
    r->len += len;
    r->text[r->len] = '\0';
    return APR_SUCCESS;
}

/* The stream relayed (fast or through json-c) into an out buffer that is
 * then written when written is non-zero; input estimate 1000, hold 10^6. */
static void mrelay(mrun_t *r, const char *text, int fast, int written, apr_pool_t *p)
{
    memset(r, 0, sizeof(*r));
    r->s = prov_messages_stream_create("pub", &unit, 1000, 4096, 1000000, m_emit, r, p);
    r->out = prov_sse_buf_create(p);
    prov_messages_stream_set_out(r->s, r->out);
    prov_messages_stream_set_fast(r->s, fast);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(r->s, text, strlen(text)), APR_SUCCESS);
    m_emit(r, r->out->data, r->out->len);
    if (written)
        prov_messages_stream_written(r->s);
}

/* The credits message_delta told, in micro-credits, or -1. */
static apr_int64_t told(const mrun_t *r, apr_pool_t *p)
{
    const char *at = strstr(r->text, "event: message_delta\ndata: ");
    prov_micro_t v = -1;
    apr_size_t n;
    if (!at || !(at = strstr(at, "\"credits\":")))
        return -1;
    at += strlen("\"credits\":");
    n = strspn(at, "0123456789.");
    CU_ASSERT_EQUAL(prov_money_parse(&v, apr_pstrndup(p, at, n), 0), APR_SUCCESS);
    return v;
}

/* The stream both ways: the same delivery; returns the fast one's. */
static void mboth(prov_delivery_t *d, mrun_t *f, const char *text, apr_pool_t *p)
{
    mrun_t *j = apr_pcalloc(p, sizeof(*j));
    prov_delivery_t dj;
    mrelay(f, text, 1, 1, p);
    mrelay(j, text, 0, 1, p);
    prov_messages_stream_delivery(f->s, d);
    prov_messages_stream_delivery(j->s, &dj);
    CU_ASSERT(!memcmp(d, &dj, sizeof(dj)));
    CU_ASSERT_EQUAL(told(f, p), told(j, p));
}

static void test_messages_unreadable_stream(void)
{
    static const char *const bad[] = {
        "{\"input_tokens\":\"120\",\"output_tokens\":\"9\"}",
        "{\"input_tokens\":120.5,\"output_tokens\":9}",
        "{\"input_tokens\":120,\"output_tokens\":null}",
        "{}",
        "{\"prompt_tokens\":120,\"completion_tokens\":9}",
        "{\"input_tokens\":120,\"output_tokens\":-9}",
        "\"120\"",
        NULL
    };
    apr_pool_t *p = prov_test_pool();
    int i;
    for (i = 0; bad[i]; i++) {
        mrun_t r;
        prov_delivery_t d;
        const char *text = apr_pstrcat(p, START("{\"input_tokens\":10,\"output_tokens\":1}"),
                                       BSTART, TEXT("abcdef"), BSTOP, "event: message_delta\n"
                                       "data: {\"type\":\"message_delta\",\"delta\":{},"
                                       "\"usage\":", bad[i], "}\n\n", STOP, NULL);
        mboth(&d, &r, text, p);
        /* message_start's usage stays partial: the estimate (10 input, 2 output) */
        CU_ASSERT_EQUAL(d.usage, PROV_USAGE_PARTIAL);
        CU_ASSERT_EQUAL(d.unreadable, 1);
        CU_ASSERT_TRUE(d.complete);
        CU_ASSERT_EQUAL(told(&r, p), 12);
    }
    /* the same at message_start (where only input_tokens is required: a
     * null output is no count): no usage at all but the delta's output */
    for (i = 0; bad[i]; i++) {
        mrun_t r;
        prov_delivery_t d;
        if (strstr(bad[i], "\"output_tokens\":null"))
            continue;
        const char *text = apr_pstrcat(p, "event: message_start\ndata: {\"type\":"
                                       "\"message_start\",\"message\":{\"id\":\"m\",\"usage\":",
                                       bad[i], "}}\n\n", BSTART, TEXT("abcdef"), BSTOP,
                                       DELTA("{\"output_tokens\":4}"), STOP, NULL);
        mboth(&d, &r, text, p);
        CU_ASSERT_EQUAL(d.usage, PROV_USAGE_FINAL);
        CU_ASSERT_EQUAL(d.unreadable, 1);
        /* final, with no input reported: the input estimate (1000) */
        CU_ASSERT_EQUAL(told(&r, p), 1004);
    }
}

static void test_messages_zero_input(void)
{
    apr_pool_t *p = prov_test_pool();
    mrun_t r;
    prov_delivery_t d;
    prov_bill_e how;
    prov_tokens_t t;
    /* message_start says input 0; the client leaves after the first delta */
    mboth(&d, &r, START("{\"input_tokens\":0,\"output_tokens\":1}") BSTART
          TEXT("012345678901234567890123456789"), p);
    CU_ASSERT_EQUAL(d.usage, PROV_USAGE_PARTIAL);
    CU_ASSERT_EQUAL(d.output_bytes, 30);
    CU_ASSERT_EQUAL(prov_messages_stream_bill(r.s, 0, 1, &how, &t), 1000 + 10);
    CU_ASSERT_EQUAL(how, PROV_BILL_ESTIMATED);
    CU_ASSERT_EQUAL(t.input, 1000);
    /* a later count never lowers an earlier one (running totals) */
    mboth(&d, &r, START("{\"input_tokens\":500,\"output_tokens\":1}") BSTART TEXT("abc")
          BSTOP DELTA("{\"input_tokens\":0,\"output_tokens\":3}") STOP, p);
    CU_ASSERT_EQUAL(d.usage, PROV_USAGE_FINAL);
    CU_ASSERT_EQUAL(d.reported.input, 500);
    CU_ASSERT_EQUAL(told(&r, p), 503);
}

static void test_messages_after_delta(void)
{
    apr_pool_t *p = prov_test_pool();
    mrun_t r;
    prov_delivery_t d;
    prov_bill_e how;
    prov_tokens_t t;
    mboth(&d, &r, START("{\"input_tokens\":10,\"output_tokens\":1}") BSTART TEXT("abc")
          DELTA("{\"output_tokens\":1}") TEXT("after the figure was told") BSTOP
          EV("ping", "{\"type\":\"ping\"}") STOP, p);
    /* not relayed, not counted: the figure told is the charge */
    CU_ASSERT_PTR_NULL(strstr(r.text, "after the figure"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "event: ping"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.text, "event: message_stop"));
    CU_ASSERT_EQUAL(prov_messages_stream_dropped(r.s), 2);
    CU_ASSERT_EQUAL(d.output_bytes, 3);
    CU_ASSERT_TRUE(d.complete);
    CU_ASSERT_EQUAL(told(&r, p), 11);
    CU_ASSERT_EQUAL(prov_messages_stream_bill(r.s, 1, 0, &how, &t), 11);
}

static void test_messages_written(void)
{
    apr_pool_t *p = prov_test_pool();
    mrun_t r;
    prov_delivery_t d;
    prov_bill_e how;
    prov_tokens_t t;
    /* put into the output, never written (the client left first) */
    mrelay(&r, START("{\"input_tokens\":10,\"output_tokens\":1}") BSTART
           TEXT("012345678901234567890123456789"), 1, 0, p);
    prov_messages_stream_delivery(r.s, &d);
    CU_ASSERT_EQUAL(d.output_bytes, 0);
    CU_ASSERT_EQUAL(d.queued_bytes, 30);
    /* the client left: its input (the gateway did the work), no output */
    CU_ASSERT_EQUAL(prov_messages_stream_bill(r.s, 0, 1, &how, &t), 10 + 1);
    prov_messages_stream_written(r.s);
    prov_messages_stream_delivery(r.s, &d);
    CU_ASSERT_EQUAL(d.output_bytes, 30);
    CU_ASSERT_EQUAL(d.queued_bytes, 0);
    CU_ASSERT_EQUAL(prov_messages_stream_bill(r.s, 0, 1, &how, &t), 10 + 10);
}

static void test_messages_answers(void)
{
    apr_pool_t *p = prov_test_pool();
    json_object *a = NULL;
    prov_tokens_t t;
    const char *head = "{\"type\":\"message\",\"model\":\"up\",\"content\":[{\"type\":\"text\","
                       "\"text\":\"hello\"}]";
    const char *const bad[] = { "{\"input_tokens\":\"5\",\"output_tokens\":2}",
        "{\"input_tokens\":5,\"output_tokens\":2.5}", "{\"input_tokens\":5}", "{}",
        "{\"input_tokens\":5,\"output_tokens\":2,\"cache_read_input_tokens\":-1}",
        "{\"prompt_tokens\":5,\"completion_tokens\":2}", "[]", NULL };
    const char *body;
    int i;
    for (i = 0; bad[i]; i++) {
        prov_relay_t rl;
        body = apr_pstrcat(p, head, ",\"usage\":", bad[i], "}", NULL);
        CU_ASSERT_EQUAL(prov_messages_relay_read(&rl, &t, body, strlen(body)), APR_EGENERAL);
        CU_ASSERT_EQUAL(prov_messages_read_answer(&a, &t, body, strlen(body), p),
                        PROV_USAGE_UNREADABLE);
        CU_ASSERT_EQUAL(prov_estimate_messages_answer(a), 5);
    }
    body = apr_pstrcat(p, head, ",\"usage\":null}", NULL);
    CU_ASSERT_EQUAL(prov_messages_read_answer(&a, &t, body, strlen(body), p), APR_ENOENT);
    /* optional cache counts null: 0 */
    body = apr_pstrcat(p, head, ",\"usage\":{\"input_tokens\":5,\"output_tokens\":2,"
                       "\"cache_creation_input_tokens\":null,\"cache_read_input_tokens\":null}}",
                       NULL);
    CU_ASSERT_EQUAL(prov_messages_read_answer(&a, &t, body, strlen(body), p), APR_SUCCESS);
    CU_ASSERT(t.input == 5 && t.output == 2 && t.cache == 0);
}

/* ---- the Responses stream -------------------------------------------------------- */

#define CHUNK(delta) "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0," \
    "\"delta\":" delta ",\"finish_reason\":null}]}\n\n"
#define FINISH "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
#define UCHUNK(u) "data: {\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":" u \
    "}\n\n"
#define DONE "data: [DONE]\n\n"
#define GOOD "{\"prompt_tokens\":20,\"completion_tokens\":0}"

static apr_status_t r_emit(void *baton, const char *ev, apr_size_t len)
{
    (void)baton;
    (void)ev;
    (void)len;
    return APR_SUCCESS;
}

static prov_resp_req_t *request(apr_pool_t *p)
{
    static const char body[] = "{\"model\":\"m\",\"input\":\"hi\",\"stream\":true}";
    prov_resp_req_t *req = NULL;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_resp_parse(&req, &err, body, sizeof(body) - 1, p), APR_SUCCESS);
    return req;
}

/* The stream translated (fast, then through json-c alone: the same
 * delivery) into an out buffer, written when written is non-zero. */
static prov_resp_stream_t *rrun(prov_delivery_t *d, const char *text, int written, apr_pool_t *p)
{
    prov_resp_stream_t *s = NULL;
    prov_delivery_t dd[2];
    int tree;
    for (tree = 0; tree < 2; tree++) {
        s = prov_resp_stream_create(request(p), "resp_u", "pub", 1, r_emit, NULL, p);
        if (tree)
            prov_resp_stream_tree_only(s);
        prov_resp_stream_set_out(s, prov_sse_buf_create(p));
        CU_ASSERT_EQUAL(prov_resp_stream_feed(s, text, strlen(text)), APR_SUCCESS);
        if (written)
            prov_resp_stream_written(s);
        prov_resp_stream_delivery(s, &dd[tree]);
    }
    CU_ASSERT(!memcmp(&dd[0], &dd[1], sizeof(dd[0])));
    *d = dd[0];
    return s;
}

static void test_responses_early_usage(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_delivery_t d;
    prov_bill_e how;
    prov_tokens_t t;
    prov_micro_t c;
    /* a first chunk with usage (completion 0), then 300 bytes of text */
    const char *text = apr_pstrcat(p, UCHUNK(GOOD), NULL);
    int i;
    for (i = 0; i < 10; i++)
        text = apr_pstrcat(p, text, CHUNK("{\"content\":\"012345678901234567890123456789\"}"),
                           NULL);
    text = apr_pstrcat(p, text, FINISH, DONE, NULL);
    rrun(&d, text, 1, p);
    CU_ASSERT_EQUAL(d.usage, PROV_USAGE_PARTIAL);
    CU_ASSERT_EQUAL(d.output_bytes, 300);
    d.complete = 1;
    c = prov_estimate_bill(&how, &t, NULL, &d, &unit, 1000, 4096, 1000000);
    CU_ASSERT_EQUAL(how, PROV_BILL_ESTIMATED);
    CU_ASSERT(t.input == 20 && t.output == 100);
    CU_ASSERT_EQUAL(c, 120);
    /* a usage chunk after the text (and one with text of its own) is final */
    rrun(&d, CHUNK("{\"content\":\"abc\"}") FINISH UCHUNK(GOOD) DONE, 1, p);
    CU_ASSERT_EQUAL(d.usage, PROV_USAGE_FINAL);
    rrun(&d, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"abc\"},"
         "\"finish_reason\":\"stop\"}],\"usage\":" GOOD "}\n\n" DONE, 1, p);
    CU_ASSERT_EQUAL(d.usage, PROV_USAGE_FINAL);
    /* an early report, text, then a final one: the final one */
    rrun(&d, UCHUNK(GOOD) CHUNK("{\"content\":\"abc\"}") FINISH
         UCHUNK("{\"prompt_tokens\":20,\"completion_tokens\":1}") DONE, 1, p);
    CU_ASSERT_EQUAL(d.usage, PROV_USAGE_FINAL);
    CU_ASSERT_EQUAL(d.reported.output, 1);
}

static void test_responses_unreadable(void)
{
    static const char *const bad[] = {
        "{\"prompt_tokens\":\"20\",\"completion_tokens\":\"900\"}",
        "{\"prompt_tokens\":20.0,\"completion_tokens\":900}",
        "{\"prompt_tokens\":null,\"completion_tokens\":null}",
        "{}",
        "{\"input_tokens\":20,\"output_tokens\":900}",
        "{\"prompt_tokens\":20,\"completion_tokens\":-900}",
        "\"20\"",
        NULL
    };
    apr_pool_t *p = prov_test_pool();
    prov_delivery_t d;
    int i;
    for (i = 0; bad[i]; i++) {
        const char *text = apr_pstrcat(p, CHUNK("{\"content\":\"abc\"}"), FINISH,
                                       "data: {\"choices\":[],\"usage\":", bad[i], "}\n\n",
                                       DONE, NULL);
        rrun(&d, text, 1, p);
        CU_ASSERT_EQUAL(d.usage, PROV_USAGE_NONE);
        CU_ASSERT_EQUAL(d.unreadable, 1);
        CU_ASSERT_EQUAL(d.output_bytes, 3);
    }
    /* usage null on every chunk but the last is no report at all */
    rrun(&d, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"abc\"}}],"
         "\"usage\":null}\n\n" UCHUNK(GOOD) DONE, 1, p);
    CU_ASSERT_EQUAL(d.unreadable, 0);
    CU_ASSERT_EQUAL(d.usage, PROV_USAGE_FINAL);
}

static void test_responses_written(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_delivery_t d;
    prov_bill_e how;
    prov_tokens_t t;
    rrun(&d, CHUNK("{\"content\":\"012345678901234567890123456789\"}"), 0, p);
    CU_ASSERT_EQUAL(d.output_bytes, 0);
    CU_ASSERT_EQUAL(d.queued_bytes, 30);
    d.client_left = 1;
    CU_ASSERT_EQUAL(prov_estimate_bill(&how, &t, NULL, &d, &unit, 50, 4096, 1000000), 50);
    CU_ASSERT_EQUAL(t.output, 0);
    rrun(&d, CHUNK("{\"content\":\"012345678901234567890123456789\"}"), 1, p);
    CU_ASSERT_EQUAL(d.output_bytes, 30);
    CU_ASSERT_EQUAL(d.queued_bytes, 0);
}

/* The non-streamed Responses answer shows a readable usage only. */
static void test_responses_render(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *out;
    json_object *u;
    out = prov_resp_render(request(p), parse("{\"choices\":[{\"index\":0,\"message\":{\"role\":"
        "\"assistant\",\"content\":\"hi\"}}],\"usage\":{\"prompt_tokens\":\"7\","
        "\"completion_tokens\":3}}", p), "resp_x", "pub", 1, 42, p);
    u = prov_json_get(parse(out, p), "usage", json_type_object);
    CU_ASSERT_EQUAL(json_object_get_int64(prov_json_get(u, "input_tokens", json_type_int)), 0);
    CU_ASSERT_EQUAL(json_object_get_int64(prov_json_get(u, "output_tokens", json_type_int)), 0);
    CU_ASSERT_TRUE(json_object_object_get_ex(u, "credits", NULL));
}

void prov_test_suite_usage_strict(void)
{
    PROV_SUITE("usage_strict",
               PROV_TEST(test_chat_unreadable),
               PROV_TEST(test_chat_readable),
               PROV_TEST(test_chat_answers),
               PROV_TEST(test_input_zero),
               PROV_TEST(test_queued_output),
               PROV_TEST(test_final_then_cut),
               PROV_TEST(test_messages_unreadable_stream),
               PROV_TEST(test_messages_zero_input),
               PROV_TEST(test_messages_after_delta),
               PROV_TEST(test_messages_written),
               PROV_TEST(test_messages_answers),
               PROV_TEST(test_responses_early_usage),
               PROV_TEST(test_responses_unreadable),
               PROV_TEST(test_responses_written),
               PROV_TEST(test_responses_render));
}
