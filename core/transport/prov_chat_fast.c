/* prov_chat_fast.c: prov_chat_parse's fast path. A Chat Completions request
 * that is plainly valid as it stands (a strict scan: keys plain and unique
 * at every depth; "messages" of text only with known roles, no legacy
 * "message", no "stream_options", no tools, no streaming, sane caps and
 * temperature) is read from its text with prov_json_scan.h and relayed to
 * the gateway as the client wrote it, its model's value replaced: no json-c
 * tree is built, walked, printed and freed. It only ever accepts what the
 * json-c path (prov_chat.c) accepts, with the same model, caps and counts
 * (tests/unit/test_prov_chat_fast.c compares the two); anything else goes
 * to that path, which decides and words the errors. */
#include <stdlib.h>
#include <string.h>
#include "prov_chat.h"
#include "prov_money.h"

static const char *const roles[] = { "\"user\"", "\"assistant\"", "\"system\"",
                                     "\"developer\"", NULL };
static const char *const refused[] = { "tools", "functions", "tool_choice", "function_call",
                                       NULL };

/* Absent or null: what json-c's path reads as no value. */
static int unset(const prov_jobject_t *o, const char *key)
{
    const prov_jmember_t *m = prov_json_scan_member(o, key);
    return !m || prov_json_scan_is(m, "null");
}

/* The text bytes of a message's content (a string, or text parts), or -1. */
static apr_ssize_t content_bytes(const prov_jmember_t *c)
{
    const char *at = c->val, *end = c->val + c->vlen, *v;
    apr_size_t vlen, n = 0;
    apr_status_t rv;
    if (*c->val == '"')
        return (apr_ssize_t)prov_json_scan_strlen(c->val, c->vlen);
    if (*c->val != '[')
        return -1;
    while ((rv = prov_json_scan_item(&at, end, &v, &vlen)) == APR_SUCCESS) {
        prov_jobject_t part;
        const prov_jmember_t *type, *text;
        if (*v != '{' || prov_json_scan_object(&part, v, vlen) != APR_SUCCESS
            || !(type = prov_json_scan_member(&part, "type"))
            || !prov_json_scan_is(type, "\"text\"")
            || !(text = prov_json_scan_member(&part, "text")) || *text->val != '"')
            return -1;
        n += prov_json_scan_strlen(text->val, text->vlen);
    }
    return rv == APR_EOF ? (apr_ssize_t)n : -1;
}

static int message_ok(prov_chat_req_t *req, const char *v, apr_size_t vlen)
{
    prov_jobject_t m;
    const prov_jmember_t *role, *content;
    apr_ssize_t n;
    int i;
    if (*v != '{' || prov_json_scan_object(&m, v, vlen) != APR_SUCCESS
        || !(role = prov_json_scan_member(&m, "role"))
        || prov_json_scan_member(&m, "tool_calls")
        || !(content = prov_json_scan_member(&m, "content")))
        return 0;
    for (i = 0; roles[i] && !prov_json_scan_is(role, roles[i]); i++)
        ;
    if (!roles[i] || (n = content_bytes(content)) < 0)
        return 0;
    req->prompt_bytes += (apr_size_t)n;
    req->n_messages++;
    return 1;
}

static int messages_ok(prov_chat_req_t *req, const prov_jmember_t *msgs)
{
    const char *at = msgs->val, *v;
    apr_size_t vlen;
    apr_status_t rv;
    if (*msgs->val != '[')
        return 0;
    while ((rv = prov_json_scan_item(&at, msgs->val + msgs->vlen, &v, &vlen)) == APR_SUCCESS) {
        if (!message_ok(req, v, vlen))
            return 0;
    }
    return rv == APR_EOF && req->n_messages > 0;
}

/* An output cap: absent or null (left as it is), or a positive integer
 * within PROV_OUTPUT_TOKENS_MAX. */
static int cap_ok(apr_int64_t *out, const prov_jobject_t *o, const char *key)
{
    const prov_jmember_t *m = prov_json_scan_member(o, key);
    apr_int64_t n;
    apr_size_t i;
    if (!m || prov_json_scan_is(m, "null"))
        return 1;
    for (i = 0; i < m->vlen; i++) {
        if (m->val[i] < '0' || m->val[i] > '9')
            return 0;
    }
    if (prov_json_scan_int(&n, o, key) != APR_SUCCESS || n < 1 || n > PROV_OUTPUT_TOKENS_MAX)
        return 0;
    *out = n;
    return 1;
}

static int temperature_ok(const prov_jobject_t *o)
{
    const prov_jmember_t *m = prov_json_scan_member(o, "temperature");
    double t;
    if (!m || prov_json_scan_is(m, "null"))
        return 1;
    if (*m->val != '-' && (*m->val < '0' || *m->val > '9'))
        return 0;
    t = strtod(m->val, NULL);     /* the number ends at a JSON delimiter */
    return t >= 0.0 && t <= 2.0;
}

int prov_chat_parse_fast(prov_chat_req_t *req, const char *body, apr_size_t len,
                         apr_pool_t *p)
{
    prov_jobject_t top;
    const prov_jmember_t *model, *stream, *msgs, *cap;
    int i;

    if (prov_json_scan_strict(&top, body, len) != APR_SUCCESS
        || !(model = prov_json_scan_member(&top, "model")) || *model->val != '"'
        || model->vlen < 3 || memchr(model->val, '\\', model->vlen)
        || ((stream = prov_json_scan_member(&top, "stream")) && !prov_json_scan_is(stream, "false")
            && !prov_json_scan_is(stream, "null"))
        || prov_json_scan_member(&top, "message") || prov_json_scan_member(&top, "stream_options")
        || !(msgs = prov_json_scan_member(&top, "messages")))
        return 0;
    for (i = 0; refused[i]; i++) {
        if (!unset(&top, refused[i]))
            return 0;
    }
    memset(req, 0, sizeof(*req));
    req->max_tokens = -1;
    if (!messages_ok(req, msgs) || !cap_ok(&req->max_tokens, &top, "max_tokens")
        || !cap_ok(&req->max_tokens, &top, "max_completion_tokens") || !temperature_ok(&top)) {
        memset(req, 0, sizeof(*req));
        return 0;
    }
    req->model = apr_pstrmemdup(p, model->val + 1, model->vlen - 2);
    req->raw = body;
    while (*req->raw != '{')
        req->raw++;
    req->raw_end = top.close + 1;
    req->model_val = model->val;
    req->model_len = model->vlen;
    for (i = 0; i < 2; i++) {
        if ((cap = prov_json_scan_member(&top, i ? "max_completion_tokens" : "max_tokens"))) {
            req->cap_val[i] = cap->val;
            req->cap_len[i] = cap->vlen;
        }
    }
    return 1;
}
