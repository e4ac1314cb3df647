/* prov_responses_request.c: prov_resp_parse's fast path, as
 * prov_messages_fast.c is prov_messages_parse's, and the body sent to the
 * gateway either way. A /v1/responses request that is plainly a
 * conversation of text (a strict scan: keys plain and unique at every
 * depth; a model without escapes; input a string or message items with a
 * string or text parts; instructions; stream, max_output_tokens,
 * temperature and top_p; store, metadata, user and parallel_tool_calls,
 * which the json-c path ignores without tools; tools and tool_choice only
 * null) is read from its text with prov_json_scan.h, and its Chat
 * Completions body is written as text (prov_jwrite.h) in the bytes json-c
 * prints for it: no json-c tree is built, walked, printed and freed. Tools,
 * reasoning, text formats, previous_response_id, escaped keys, a NUL where
 * the json-c path would cut a C string, numbers json-c prints otherwise
 * than written, and anything else it does not plainly recognise go to the
 * json-c path (prov_responses.c), which decides and words the errors; the
 * two give the same body and values (tests/unit/test_prov_responses_request.c,
 * fuzz_responses_fast). */
#include <string.h>
#include <sys/uio.h>
#include "prov_responses.h"
#include "prov_json_scan.h"
#include "prov_jwrite.h"

/* The request's members this path reads or knows the json-c path ignores. */
static const char *const top_keys[] = { "model", "input", "instructions", "stream",
                                        "max_output_tokens", "temperature", "top_p",
                                        "store", "metadata", "user", "parallel_tool_calls",
                                        "tools", "tool_choice", NULL };
static const char *const numbers[] = { "temperature", "top_p", NULL };
static const char *const item_keys[] = { "type", "role", "content", "id", "status", NULL };
static const char *const part_keys[] = { "type", "text", "annotations", "logprobs", NULL };

/* The upstream body being written, and the request it belongs to. */
typedef struct fast_t {
    prov_resp_req_t *req;
    prov_jwrite_t w;
    apr_pool_t *p;
} fast_t;

/* Absent or null: what the json-c path reads as no value. */
static int unset(const prov_jmember_t *m)
{
    return !m || prov_json_scan_is(m, "null");
}

/* Every member of o is one of keys. */
static int keys_in(const prov_jobject_t *o, const char *const *keys)
{
    int i, k;
    for (i = 0; i < o->n; i++) {
        for (k = 0; keys[k] && (o->m[i].klen != strlen(keys[k])
                                || memcmp(o->m[i].key, keys[k], o->m[i].klen)); k++)
            ;
        if (!keys[k])
            return 0;
    }
    return 1;
}

/* A string value that holds no NUL (the json-c path reads some as C
 * strings); an escaped backslash before "u0000" declines too. */
static int cstring(const prov_jmember_t *m)
{
    return m && *m->val == '"' && !memmem(m->val, m->vlen, "\\u0000", 6);
}

/* A number json-c prints as written: a fraction or exponent keeps its text
 * there; an integer is printed from its value, the same for one that fits
 * but -0. */
static int number_ok(const prov_jmember_t *m)
{
    if (m->vlen > 32 || (*m->val != '-' && (*m->val < '0' || *m->val > '9')))
        return 0;
    return memchr(m->val, '.', m->vlen) || memchr(m->val, 'e', m->vlen)
           || memchr(m->val, 'E', m->vlen) || (m->vlen <= 18 && !prov_json_scan_is(m, "-0"));
}

/* max_output_tokens: absent or null, or a positive integer within
 * PROV_OUTPUT_TOKENS_MAX. stream: absent, null, true or false. */
static int options_ok(prov_resp_req_t *req, const prov_jobject_t *top)
{
    const prov_jmember_t *m = prov_json_scan_member(top, "max_output_tokens");
    const prov_jmember_t *stream = prov_json_scan_member(top, "stream");
    const char *const *k;
    apr_size_t i;

    for (k = numbers; *k; k++) {
        const prov_jmember_t *n = prov_json_scan_member(top, *k);
        if (!unset(n) && !number_ok(n))
            return 0;
    }
    if (!unset(m)) {
        for (i = 0; i < m->vlen; i++) {
            if (m->val[i] < '0' || m->val[i] > '9')
                return 0;
        }
        if (*m->val == '0' || prov_json_scan_int(&req->max_output_tokens, top,
                                                 "max_output_tokens") != APR_SUCCESS
            || req->max_output_tokens > PROV_OUTPUT_TOKENS_MAX)
            return 0;
    }
    if (!unset(stream) && !(req->stream = prov_json_scan_is(stream, "true"))
        && !prov_json_scan_is(stream, "false"))
        return 0;
    return unset(prov_json_scan_member(top, "tools"))
           && unset(prov_json_scan_member(top, "tool_choice"));
}

/* Text parts (input_text, output_text, text) as the one string the json-c
 * path makes of them: their texts joined with "\n", escaped as json-c
 * escapes (byte by byte, so escaped pieces join as the escaped whole). */
static int parts(fast_t *f, const prov_jmember_t *c)
{
    prov_jwrite_t *w = &f->w;
    const char *at = c->val, *v;
    apr_size_t vlen, mark;
    apr_status_t rv;
    int n = 0;

    prov_jwrite_lit(w, "\"");
    while ((rv = prov_json_scan_item(&at, c->val + c->vlen, &v, &vlen)) == APR_SUCCESS) {
        prov_jobject_t part;
        const prov_jmember_t *type, *text;
        if (*v != '{' || prov_json_scan_object(&part, v, vlen) != APR_SUCCESS
            || !keys_in(&part, part_keys) || !(type = prov_json_scan_member(&part, "type"))
            || (!prov_json_scan_is(type, "\"input_text\"")
                && !prov_json_scan_is(type, "\"output_text\"")
                && !prov_json_scan_is(type, "\"text\""))
            || !cstring(text = prov_json_scan_member(&part, "text")))
            return 0;
        if (n++)
            prov_jwrite_lit(w, "\\n");
        mark = w->len;
        prov_jwrite_scanned(w, text->val, text->vlen);
        if (w->oom)
            return 0;
        /* its quotes dropped: the parts make one string */
        memmove(w->p + mark, w->p + mark + 1, w->len - mark - 2);
        w->len -= 2;
        f->req->prompt_bytes += prov_json_scan_strlen(text->val, text->vlen);
    }
    prov_jwrite_lit(w, "\"");
    return rv == APR_EOF;
}

/* One upstream message: role and content (a string or text parts). */
static int message(fast_t *f, const char *role, const prov_jmember_t *content)
{
    prov_jwrite_t *w = &f->w;
    if (f->req->n_messages++)
        prov_jwrite_lit(w, ",");
    prov_jwrite_lit(w, "{\"role\":\"");
    prov_jwrite_mem(w, role, strlen(role));
    prov_jwrite_lit(w, "\",\"content\":");
    if (*content->val == '"') {
        prov_jwrite_scanned(w, content->val, content->vlen);
        f->req->prompt_bytes += prov_json_scan_strlen(content->val, content->vlen);
    }
    else if (*content->val != '[' || !parts(f, content)) {
        return 0;
    }
    prov_jwrite_lit(w, "}");
    return !w->oom;
}

/* A message item: type absent, null or "message", a known role. */
static int item(fast_t *f, const char *v, apr_size_t vlen)
{
    prov_jobject_t it;
    const prov_jmember_t *type, *role, *content;
    const char *r;
    if (*v != '{' || prov_json_scan_object(&it, v, vlen) != APR_SUCCESS
        || !keys_in(&it, item_keys) || !(role = prov_json_scan_member(&it, "role"))
        || !(content = prov_json_scan_member(&it, "content")))
        return 0;
    type = prov_json_scan_member(&it, "type");
    if (!unset(type) && !prov_json_scan_is(type, "\"message\""))
        return 0;
    r = prov_json_scan_is(role, "\"user\"") ? "user"
      : prov_json_scan_is(role, "\"assistant\"") ? "assistant"
      : prov_json_scan_is(role, "\"system\"") || prov_json_scan_is(role, "\"developer\"")
      ? "system" : NULL;
    return r && message(f, r, content);
}

/* A string value's text in the pool: decoded after the body when it has an
 * escape, and taken back off it. */
static const char *decoded(fast_t *f, const prov_jmember_t *m)
{
    apr_size_t n;
    const char *s;
    if (!memchr(m->val, '\\', m->vlen))
        return apr_pstrmemdup(f->p, m->val + 1, m->vlen - 2);
    n = prov_jwrite_decode(&f->w, m->val, m->vlen);
    if (f->w.oom)
        return "";
    s = apr_pstrmemdup(f->p, f->w.p + f->w.len - n, n);
    f->w.len -= n;
    return s;
}

/* instructions (a system message first, and its text for the response
 * object) and input (a string, or message items), then the options. */
static int conversation(fast_t *f, const prov_jobject_t *top)
{
    const prov_jmember_t *ins = prov_json_scan_member(top, "instructions");
    const prov_jmember_t *input = prov_json_scan_member(top, "input");
    const char *const *k;
    prov_jwrite_t *w = &f->w;

    prov_jwrite_lit(w, "{\"messages\":[");
    if (!unset(ins)) {
        if (!cstring(ins) || !message(f, "system", ins))
            return 0;
        f->req->instructions = decoded(f, ins);
    }
    if (unset(input))
        return 0;
    if (*input->val == '"') {
        if (!message(f, "user", input))
            return 0;
    }
    else {
        const char *at = input->val, *v;
        apr_size_t vlen;
        apr_status_t rv;
        if (*input->val != '[')
            return 0;
        while ((rv = prov_json_scan_item(&at, input->val + input->vlen, &v, &vlen))
               == APR_SUCCESS) {
            if (!item(f, v, vlen))
                return 0;
        }
        if (rv != APR_EOF)
            return 0;
    }
    prov_jwrite_lit(w, "]");
    /* max_tokens: added by upstream_text (the cap may be the service's) */
    for (k = numbers; *k; k++) {
        const prov_jmember_t *n = prov_json_scan_member(top, *k);
        if (unset(n))
            continue;
        prov_jwrite_lit(w, ",\"");
        prov_jwrite_mem(w, *k, strlen(*k));
        prov_jwrite_lit(w, "\":");
        prov_jwrite_mem(w, n->val, n->vlen);
    }
    return f->req->n_messages > 0 && !w->oom;
}

int prov_resp_parse_fast(prov_resp_req_t *req, const char *body, apr_size_t len,
                         apr_pool_t *p)
{
    prov_jobject_t top;
    const prov_jmember_t *model;
    fast_t f;

    if (prov_json_scan_strict(&top, body, len) != APR_SUCCESS || !keys_in(&top, top_keys)
        || !(model = prov_json_scan_member(&top, "model")) || *model->val != '"'
        || model->vlen < 3 || memchr(model->val, '\\', model->vlen))
        return 0;
    memset(req, 0, sizeof(*req));
    req->max_output_tokens = -1;
    req->parallel_tool_calls = 1;
    f.req = req;
    f.p = p;
    memset(&f.w, 0, sizeof(f.w));
    if (!options_ok(req, &top) || !conversation(&f, &top)) {
        prov_jwrite_free(&f.w);
        memset(req, 0, sizeof(*req));
        return 0;
    }
    req->fast_body = apr_pstrmemdup(p, f.w.p, f.w.len);
    prov_jwrite_free(&f.w);
    req->model = apr_pstrmemdup(p, model->val + 1, model->vlen - 2);
    req->tools = apr_array_make(p, 1, sizeof(prov_resp_tool_t));
    return 1;
}

apr_status_t prov_resp_parse(prov_resp_req_t **preq, prov_error_t **err, const char *body,
                             apr_size_t len, apr_pool_t *p)
{
    prov_resp_req_t *req = apr_palloc(p, sizeof(*req));
    if (prov_resp_parse_fast(req, body, len, p)) {
        *preq = req;
        *err = NULL;
        return APR_SUCCESS;
    }
    return prov_resp_parse_json(preq, err, body, len, p);
}

/* The fast path's body: its text, then the output cap, the model and the
 * stream members that json-c's path adds after the others. */
static const char *upstream_text(const prov_resp_req_t *req, const char *upstream_id,
                                 apr_int64_t cap, apr_pool_t *p)
{
    static const char *const tail[2] = {
        "}", ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
    };
    int plain = prov_json_scan_plain(upstream_id);
    prov_jwrite_t w;
    struct iovec v[6];
    const char *out;
    int i;

    memset(&w, 0, sizeof(w));
    if (!plain)
        prov_jwrite_cstr(&w, upstream_id);
    v[0].iov_base = (void *)req->fast_body;
    v[1].iov_base = (void *)(cap > 0 ? apr_pstrcat(p, ",\"max_tokens\":", prov_i64(cap, p),
                                                   NULL) : "");
    v[2].iov_base = (void *)(plain ? ",\"model\":\"" : ",\"model\":");
    v[3].iov_base = (void *)(plain ? upstream_id : w.p ? w.p : "\"\"");
    v[4].iov_base = (void *)(plain ? "\"" : "");
    v[5].iov_base = (void *)tail[req->stream != 0];
    for (i = 0; i < 6; i++)
        v[i].iov_len = strlen(v[i].iov_base);
    out = apr_pstrcatv(p, v, 6, NULL);
    prov_jwrite_free(&w);
    return out;
}

const char *prov_resp_upstream_body(const prov_resp_req_t *req, const char *upstream_id,
                                    apr_int64_t cap, apr_pool_t *p)
{
    if (cap <= 0)
        cap = req->max_output_tokens;
    if (!req->upstream)
        return upstream_text(req, upstream_id, cap, p);
    if (cap > 0)
        json_object_object_add(req->upstream, "max_tokens", json_object_new_int64(cap));
    json_object_object_add(req->upstream, "model", json_object_new_string(upstream_id));
    if (req->stream) {
        json_object *so = json_object_new_object();
        json_object_object_add(so, "include_usage", json_object_new_boolean(1));
        json_object_object_add(req->upstream, "stream", json_object_new_boolean(1));
        json_object_object_add(req->upstream, "stream_options", so);
    }
    return prov_json_dump(req->upstream, p);
}
