/* prov_chat_fast.c: prov_chat_parse's fast path. A Chat Completions request
 * that is plainly valid as it stands (a strict scan: keys plain and unique
 * at every depth; top-level members only those of prov_chat_fields that it
 * takes, so no legacy "message", "stream_options" or "service_tier", tools
 * only null; "messages" of text only with known roles, no streaming, one
 * sane cap, n and temperature) is read from its text with prov_json_scan.h and relayed to
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

/* An integer member: absent or null (*out left as it is), or digits only
 * whose value is from 1 to max. */
static int int_ok(apr_int64_t *out, const prov_jobject_t *o, const char *key, apr_int64_t max)
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
    if (prov_json_scan_int(&n, o, key) != APR_SUCCESS || n < 1 || n > max)
        return 0;
    *out = n;
    return 1;
}

/* The output cap (one of the two, not both) and n. */
static int caps_ok(prov_chat_req_t *req, const prov_jobject_t *o)
{
    apr_int64_t a = -1, b = -1;
    if (!int_ok(&a, o, "max_tokens", PROV_OUTPUT_TOKENS_MAX)
        || !int_ok(&b, o, "max_completion_tokens", PROV_OUTPUT_TOKENS_MAX)
        || (a > 0 && b > 0) || !int_ok(&req->n, o, "n", PROV_CHOICES_MAX))
        return 0;
    req->max_tokens = a > 0 ? a : b;
    req->cap_field = a > 0 ? "max_tokens" : b > 0 ? "max_completion_tokens" : NULL;
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
        || !prov_fields_fast(prov_chat_fields, &top)
        || !(model = prov_json_scan_member(&top, "model")) || *model->val != '"'
        || model->vlen < 3 || memchr(model->val, '\\', model->vlen)
        || ((stream = prov_json_scan_member(&top, "stream")) && !prov_json_scan_is(stream, "false")
            && !prov_json_scan_is(stream, "null"))
        || !(msgs = prov_json_scan_member(&top, "messages")))
        return 0;
    memset(req, 0, sizeof(*req));
    req->max_tokens = -1;
    req->n = 1;
    if (!messages_ok(req, msgs) || !caps_ok(req, &top) || !temperature_ok(&top)) {
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
