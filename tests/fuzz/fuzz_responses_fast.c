/* fuzz_responses_fast.c: libFuzzer harness of the Responses request's fast
 * path (prov_resp_parse_fast, prov_responses_request.c) against the json-c
 * path (prov_resp_parse_json), which judges. The input is a /v1/responses
 * body. Checked: a body the fast path takes, the json-c path takes too, with
 * the same model, output cap, stream flag, prompt bytes, message count,
 * instructions, tools (none) and parallel_tool_calls; the gateway gets the
 * same bytes from both (prov_resp_upstream_body, for an upstream id as it is
 * and for one that needs escaping), and the client the same stream of
 * response.* events for a short gateway answer. An input that starts with
 * a byte other than '{' or white space is not a body but the choices of a
 * generator that writes one in the shapes the fast path reads (items,
 * roles, parts, strings with escapes and NULs, numbers as json-c prints
 * them or not), so that the fuzzer spends its time where the two paths
 * could differ. */
#include "fuzz_stream_util.h"
#include "prov_responses.h"
#include "prov_error.h"

/* A short answer that ends at its cap, with its usage. */
static const char chunks[] =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\n"
    "data: [DONE]\n\n";

static const char *events(const prov_resp_req_t *req, apr_pool_t *p)
{
    collected_t c;
    prov_resp_stream_t *s;
    collected_init(&c, p);
    s = prov_resp_stream_create(req, "resp_f", "public/m", 1700000000, collect, &c, p);
    FUZZ_CHECK(prov_resp_stream_feed(s, chunks, sizeof(chunks) - 1) == APR_SUCCESS);
    FUZZ_CHECK(prov_resp_stream_complete(s, 42) == APR_SUCCESS);
    return c.buf;
}

/* ---- the generator -------------------------------------------------------- */

typedef struct gen_t {
    const uint8_t *data;
    size_t size;
    char *buf;
    apr_size_t len, cap;
} gen_t;

static void put(gen_t *g, const char *s, apr_size_t n)
{
    if (g->len + n + 1 > g->cap)
        return;
    memcpy(g->buf + g->len, s, n);
    g->len += n;
    g->buf[g->len] = '\0';
}

#define PUT(g, lit) put((g), (lit), sizeof(lit) - 1)

static unsigned pick(gen_t *g, unsigned n)
{
    return fuzz_take(&g->data, &g->size) % n;
}

/* One of list (NULL-terminated), as written. */
static void one_of(gen_t *g, const char *const *list)
{
    unsigned n = 0;
    while (list[n])
        n++;
    n = pick(g, n);
    put(g, list[n], strlen(list[n]));
}

/* A string of the input's next bytes: control bytes, quotes and
 * backslashes escaped, 0x7f as "\/", the rest as it is. */
static void string(gen_t *g)
{
    unsigned n = pick(g, 12), i;
    char esc[8];
    PUT(g, "\"");
    for (i = 0; i < n && g->size; i++) {
        unsigned char b = (unsigned char)fuzz_take(&g->data, &g->size);
        if (b < 0x20 || b == '"' || b == '\\') {
            snprintf(esc, sizeof(esc), "\\u%04x", b);
            put(g, esc, 6);
        }
        else if (b == 0x7f) {
            PUT(g, "\\/");
        }
        else {
            put(g, (const char *)&b, 1);
        }
    }
    PUT(g, "\"");
}

static const char *const numbers[] = { "0", "1", "-1", "-0", "0.70", "-1E2", "1e400",
                                       "-0.0", "1.5e-4", "12345678901234567890", "16.0",
                                       "999999999999999999", "1000000", "1000001", "null",
                                       "\"1\"", "true", NULL };

/* content: a string, text parts, or something else. */
static void content(gen_t *g)
{
    static const char *const types[] = { "\"input_text\"", "\"output_text\"", "\"text\"",
                                         "\"refusal\"", "\"input_image\"", "null", NULL };
    static const char *const extra[] = { "", ",\"annotations\":[]", ",\"logprobs\":null",
                                         ",\"x\":1", ",\"text\":\"again\"", NULL };
    unsigned k = pick(g, 8), i, n;
    if (k < 3) {
        string(g);
        return;
    }
    if (k > 5) {
        one_of(g, numbers);
        return;
    }
    PUT(g, "[");
    for (i = 0, n = pick(g, 4); i < n; i++) {
        if (i)
            PUT(g, ",");
        PUT(g, "{\"type\":");
        one_of(g, types);
        PUT(g, ",\"text\":");
        pick(g, 6) ? string(g) : one_of(g, numbers);
        one_of(g, extra);
        PUT(g, "}");
    }
    PUT(g, "]");
}

static void items(gen_t *g)
{
    static const char *const roles[] = { "\"user\"", "\"assistant\"", "\"system\"",
                                         "\"developer\"", "\"tool\"", "\"us\\u0065r\"",
                                         "null", NULL };
    static const char *const types[] = { "", "\"type\":\"message\",", "\"type\":null,",
                                         "\"type\":\"reasoning\",", "\"id\":\"m\",",
                                         "\"status\":\"completed\",", "\"call_id\":\"c\",",
                                         NULL };
    unsigned i, n = pick(g, 5);
    PUT(g, "[");
    for (i = 0; i < n; i++) {
        if (i)
            PUT(g, ",");
        PUT(g, "{");
        one_of(g, types);
        PUT(g, "\"role\":");
        one_of(g, roles);
        PUT(g, ",\"content\":");
        content(g);
        PUT(g, "}");
    }
    PUT(g, "]");
}

/* A body from the input's choices. */
static const char *generate(const uint8_t *data, size_t size, apr_size_t *len, apr_pool_t *p)
{
    static const char *const keys[] = { "\"stream\":", "\"max_output_tokens\":",
                                        "\"temperature\":", "\"top_p\":",
                                        "\"instructions\":", "\"store\":",
                                        "\"tools\":", "\"parallel_tool_calls\":", NULL };
    gen_t g = { data, size, NULL, 0, 8192 };
    unsigned i, n;
    g.buf = apr_palloc(p, g.cap);
    PUT(&g, "{\"model\":\"gpt-4o-mini\",\"input\":");
    pick(&g, 3) ? items(&g) : string(&g);
    for (i = 0, n = pick(&g, 5); i < n; i++) {
        PUT(&g, ",");
        one_of(&g, keys);
        pick(&g, 2) ? string(&g) : one_of(&g, numbers);
    }
    PUT(&g, "}");
    *len = g.len;
    return g.buf;
}

/* ---- the comparison ------------------------------------------------------ */

static int same_str(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    prov_resp_req_t fast, *req = NULL;
    prov_error_t *err = NULL;
    const char *body = (const char *)data;
    if (size && data[0] != '{' && data[0] != ' ' && data[0] != '\n')
        body = generate(data + 1, size - 1, &size, p);
    if (prov_resp_parse_fast(&fast, body, size, p)) {
        FUZZ_CHECK(!fast.upstream && fast.fast_body);
        FUZZ_CHECK(prov_resp_parse_json(&req, &err, body, size, p)
                   == APR_SUCCESS);
        FUZZ_CHECK(!strcmp(fast.model, req->model)
                   && fast.max_output_tokens == req->max_output_tokens
                   && fast.stream == req->stream && fast.prompt_bytes == req->prompt_bytes
                   && fast.n_messages == req->n_messages
                   && fast.parallel_tool_calls == req->parallel_tool_calls);
        FUZZ_CHECK(same_str(fast.instructions, req->instructions));
        FUZZ_CHECK(!fast.dropped_tools && !req->dropped_tools);
        FUZZ_CHECK(fast.tools->nelts == 0 && req->tools->nelts == 0);
        FUZZ_CHECK(!strcmp(prov_resp_upstream_body(&fast, "gw/model-1", 0, p),
                           prov_resp_upstream_body(req, "gw/model-1", 0, p)));
        FUZZ_CHECK(!strcmp(prov_resp_upstream_body(&fast, "gw\"\\\x01\x7f\xc3\xa9", 0, p),
                           prov_resp_upstream_body(req, "gw\"\\\x01\x7f\xc3\xa9", 0, p)));
        FUZZ_CHECK(!strcmp(events(&fast, p), events(req, p)));
    }
    apr_pool_destroy(p);
    return 0;
}
