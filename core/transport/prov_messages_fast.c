/* prov_messages_fast.c: prov_messages_parse's fast path, as prov_chat_fast.c
 * is prov_chat_parse's. A /v1/messages request that is plainly valid and
 * has nothing to normalise (a strict scan: keys plain and unique at every
 * depth; user and assistant messages of strings, text blocks and tool
 * results of text; a system prompt of a string or text blocks; no
 * cache_control, thinking, context_management, tools or tool_use blocks,
 * which the json-c path strips, rewrites or measures by json-c's own print)
 * is read from its text with prov_json_scan.h and goes to the gateway in the
 * client's bytes, its model's value replaced: no json-c tree is built,
 * walked, printed and freed. It only ever accepts what the json-c path
 * (prov_messages.c) accepts, with the same model, cap, stream flag and
 * counts (tests/unit/test_prov_messages_relay.c and fuzz_messages_request
 * compare the two); anything else goes to that path, which decides and
 * words the errors. */
#include <string.h>
#include <sys/uio.h>
#include "prov_messages.h"

/* Top-level members the json-c path removes or rewrites when present. */
static const char *const rewritten[] = { "thinking", "cache_control", "context_management",
                                         NULL };

static int is_string(const prov_jmember_t *m)
{
    return m && *m->val == '"';
}

/* An escaped NUL in a string's text. */
static int has_nul(const char *val, apr_size_t vlen)
{
    const char *c = val, *end = val + vlen;
    while ((c = memchr(c, '\\', (apr_size_t)(end - c)))) {
        if (c[1] == 'u' && !memcmp(c + 2, "0000", 4))
            return 1;
        c += 2;
    }
    return 0;
}

/* A text block's text bytes as the json-c path counts them, or -1. A
 * system prompt's blocks are counted up to a NUL there (strlen). */
static apr_ssize_t text_of(const prov_jobject_t *b, int system)
{
    const prov_jmember_t *type = prov_json_scan_member(b, "type");
    const prov_jmember_t *text = prov_json_scan_member(b, "text");
    if (!type || !prov_json_scan_is(type, "\"text\"") || !is_string(text)
        || prov_json_scan_member(b, "cache_control") || (system && has_nul(text->val, text->vlen)))
        return -1;
    return (apr_ssize_t)prov_json_scan_strlen(text->val, text->vlen);
}

/* The text bytes of an array of text blocks (a system prompt, a tool
 * result's content), or -1. */
static apr_ssize_t text_blocks(const prov_jmember_t *arr, int system)
{
    const char *at = arr->val, *v;
    apr_size_t vlen, n = 0;
    apr_ssize_t k;
    apr_status_t rv;
    while ((rv = prov_json_scan_item(&at, arr->val + arr->vlen, &v, &vlen)) == APR_SUCCESS) {
        prov_jobject_t b;
        if (*v != '{' || prov_json_scan_object(&b, v, vlen) != APR_SUCCESS
            || (k = text_of(&b, system)) < 0)
            return -1;
        n += (apr_size_t)k;
    }
    return rv == APR_EOF ? (apr_ssize_t)n : -1;
}

/* A tool_result block with a tool_use_id and content absent, null, a string
 * or text blocks: its text bytes, or -1. */
static apr_ssize_t tool_result(const prov_jobject_t *b)
{
    const prov_jmember_t *c = prov_json_scan_member(b, "content");
    if (!is_string(prov_json_scan_member(b, "tool_use_id"))
        || prov_json_scan_member(b, "cache_control"))
        return -1;
    if (!c || prov_json_scan_is(c, "null"))
        return 0;
    if (*c->val == '"')
        return (apr_ssize_t)prov_json_scan_strlen(c->val, c->vlen);
    return *c->val == '[' ? text_blocks(c, 0) : -1;
}

/* A message's content blocks (at least one, each kept by the json-c path):
 * their text bytes, or -1. */
static apr_ssize_t blocks(const prov_jmember_t *content)
{
    const char *at = content->val, *v;
    apr_size_t vlen, n = 0;
    apr_ssize_t k;
    apr_status_t rv;
    int count = 0;
    while ((rv = prov_json_scan_item(&at, content->val + content->vlen, &v, &vlen))
           == APR_SUCCESS) {
        prov_jobject_t b;
        const prov_jmember_t *type;
        if (*v != '{' || prov_json_scan_object(&b, v, vlen) != APR_SUCCESS
            || !(type = prov_json_scan_member(&b, "type")))
            return -1;
        k = prov_json_scan_is(type, "\"text\"") ? text_of(&b, 0)
          : prov_json_scan_is(type, "\"tool_result\"") ? tool_result(&b) : -1;
        if (k < 0)
            return -1;
        n += (apr_size_t)k;
        count++;
    }
    return rv == APR_EOF && count ? (apr_ssize_t)n : -1;
}

static int message_ok(prov_messages_req_t *req, const char *v, apr_size_t vlen)
{
    prov_jobject_t m;
    const prov_jmember_t *role, *content;
    apr_ssize_t n;
    if (*v != '{' || prov_json_scan_object(&m, v, vlen) != APR_SUCCESS
        || !(role = prov_json_scan_member(&m, "role"))
        || (!prov_json_scan_is(role, "\"user\"") && !prov_json_scan_is(role, "\"assistant\""))
        || !(content = prov_json_scan_member(&m, "content")))
        return 0;
    n = *content->val == '"' ? (apr_ssize_t)prov_json_scan_strlen(content->val, content->vlen)
      : *content->val == '[' ? blocks(content) : -1;
    if (n < 0)
        return 0;
    req->prompt_bytes += (apr_size_t)n;
    req->n_messages++;
    return 1;
}

static int messages_ok(prov_messages_req_t *req, const prov_jmember_t *msgs)
{
    const char *at, *v;
    apr_size_t vlen;
    apr_status_t rv;
    if (!msgs || *msgs->val != '[')
        return 0;
    at = msgs->val;
    while ((rv = prov_json_scan_item(&at, msgs->val + msgs->vlen, &v, &vlen)) == APR_SUCCESS) {
        if (!message_ok(req, v, vlen))
            return 0;
    }
    return rv == APR_EOF && req->n_messages > 0;
}

/* The system prompt: absent, null, a string or text blocks. */
static int system_ok(prov_messages_req_t *req, const prov_jmember_t *sys)
{
    apr_ssize_t n;
    if (!sys || prov_json_scan_is(sys, "null"))
        return 1;
    n = *sys->val == '"' ? (apr_ssize_t)prov_json_scan_strlen(sys->val, sys->vlen)
      : *sys->val == '[' ? text_blocks(sys, 1) : -1;
    if (n < 0)
        return 0;
    req->prompt_bytes += (apr_size_t)n;
    return 1;
}

/* max_tokens: a positive integer within PROV_OUTPUT_TOKENS_MAX; stream:
 * absent, null, true or false. */
static int caps_ok(prov_messages_req_t *req, const prov_jobject_t *top)
{
    const prov_jmember_t *m = prov_json_scan_member(top, "max_tokens");
    const prov_jmember_t *stream = prov_json_scan_member(top, "stream");
    apr_size_t i;
    if (!m || *m->val < '1' || *m->val > '9')
        return 0;
    for (i = 1; i < m->vlen; i++) {
        if (m->val[i] < '0' || m->val[i] > '9')
            return 0;
    }
    if (prov_json_scan_int(&req->max_tokens, top, "max_tokens") != APR_SUCCESS
        || req->max_tokens > PROV_OUTPUT_TOKENS_MAX)
        return 0;
    if (stream && !prov_json_scan_is(stream, "null")
        && !(req->stream = prov_json_scan_is(stream, "true"))
        && !prov_json_scan_is(stream, "false"))
        return 0;
    return 1;
}

int prov_messages_parse_fast(prov_messages_req_t *req, const char *body, apr_size_t len,
                             apr_pool_t *p)
{
    prov_jobject_t top;
    const prov_jmember_t *model, *tools;
    int i;

    if (prov_json_scan_strict(&top, body, len) != APR_SUCCESS
        || !(model = prov_json_scan_member(&top, "model")) || *model->val != '"'
        || model->vlen < 3 || memchr(model->val, '\\', model->vlen)
        || ((tools = prov_json_scan_member(&top, "tools")) && !prov_json_scan_is(tools, "null")))
        return 0;
    for (i = 0; rewritten[i]; i++) {
        if (prov_json_scan_member(&top, rewritten[i]))
            return 0;
    }
    memset(req, 0, sizeof(*req));
    if (caps_ok(req, &top) && messages_ok(req, prov_json_scan_member(&top, "messages"))
        && system_ok(req, prov_json_scan_member(&top, "system"))) {
        /* the client's object as it is, and its model's value in it */
        req->raw = memchr(body, '{', len);
        req->raw_end = top.close + 1;
        req->model_val = model->val;
        req->model_len = model->vlen;
        req->cap_val = prov_json_scan_member(&top, "max_tokens")->val;
        req->cap_len = prov_json_scan_member(&top, "max_tokens")->vlen;
        req->model = apr_pstrmemdup(p, model->val + 1, model->vlen - 2);
        return 1;
    }
    memset(req, 0, sizeof(*req));
    return 0;
}

const char *prov_messages_upstream_raw(const prov_messages_req_t *req,
                                       const char *upstream_id, apr_int64_t cap,
                                       apr_pool_t *p)
{
    prov_json_patch_t patch[2];
    int n = 0;
    prov_json_patch_t model = { req->model_val, req->model_len,
                                apr_pstrcat(p, "\"", upstream_id, "\"", NULL) };
    if (cap > 0 && req->cap_val && cap != req->max_tokens) {
        prov_json_patch_t c = { req->cap_val, req->cap_len, prov_i64(cap, p) };
        patch[n++] = c.at < model.at ? c : model;
        patch[n++] = c.at < model.at ? model : c;
    }
    else {
        patch[n++] = model;
    }
    return prov_json_patched(req->raw, req->raw_end, patch, n, p);
}
