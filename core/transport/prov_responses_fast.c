/* prov_responses_fast.c: the Responses stream's fast reader. A gateway chunk
 * (chat.completion.chunk) is read with the scanner (prov_json_scan.h):
 * its usage, the first choice's delta (content, refusal, tool calls: their
 * index, id, name and arguments) and finish_reason, then applied to the stream
 * as the json-c path applies them, its events written as text. It reads
 * the same values json-c reads (prov_json_get's typing: a member of
 * another type counts as absent) and takes only what it plainly
 * recognises: an error member, an escape in finish_reason or in a call's
 * id or name, a call index out of range, more than MAX_CALLS call deltas,
 * or anything the scanner declines leave the chunk untouched for json-c
 * (prov_responses_jsonc.c), which decides. */
#include <string.h>
#include "prov_responses_stream_int.h"
#include "prov_json_scan.h"

/* Tool-call deltas of one chunk read here (a gateway sends one). */
#define MAX_CALLS 8

/* What a chunk says, read before anything is done with it. */
typedef struct chunk_t {
    int have_usage;                             /* a usage report, readable or not */
    apr_status_t usage_rv;
    prov_chat_usage_t usage;
    const prov_jmember_t *content, *refusal;    /* string values, or NULL */
    const char *finish;
    apr_size_t finish_len;
    int n_calls;
    struct {
        int idx;
        prov_jmember_t id, name, args;          /* string values, or val NULL */
    } calls[MAX_CALLS];
} chunk_t;

/* The chunk's usage report (none when absent or null) read as the json-c
 * path reads it (prov_chat_usage); zero when the scan declines it. */
static int read_usage(chunk_t *k, const prov_jobject_t *top, prov_jobject_t *u)
{
    const prov_jmember_t *m = prov_json_scan_member(top, "usage");
    if (!m || prov_json_scan_is(m, "null"))
        return 1;
    k->have_usage = 1;
    k->usage_rv = APR_EINVAL;       /* not an object: unreadable */
    if (*m->val != '{')
        return 1;
    if (prov_json_scan_sub(u, top, "usage") != APR_SUCCESS)
        return 0;
    k->usage_rv = prov_chat_usage_scan(&k->usage, u);
    return k->usage_rv != APR_EGENERAL;
}

static const prov_jmember_t *string_member(const prov_jobject_t *o, const char *key)
{
    const prov_jmember_t *m = prov_json_scan_member(o, key);
    return m && *m->val == '"' ? m : NULL;
}

/* A string member without escapes (id, name), or NULL; *bad when it is
 * there with one (json-c's path takes it). */
static const prov_jmember_t *plain_member(const prov_jobject_t *o, const char *key, int *bad)
{
    const prov_jmember_t *m = string_member(o, key);
    if (m && memchr(m->val, '\\', m->vlen))
        *bad = 1;
    return m;
}

static void keep(prov_jmember_t *to, const prov_jmember_t *m)
{
    if (m)
        *to = *m;
}

/* Tool-call deltas: index (0 to 1024), id, function name and arguments. */
static int read_calls(chunk_t *k, const prov_jmember_t *m, prov_jobject_t *tc, prov_jobject_t *fn)
{
    const char *at = m->val, *v;
    apr_size_t vlen;
    apr_status_t rv;
    while ((rv = prov_json_scan_item(&at, m->val + m->vlen, &v, &vlen)) == APR_SUCCESS) {
        apr_int64_t idx;
        apr_status_t frv;
        int bad = 0;
        if (*v != '{' || k->n_calls == MAX_CALLS
            || prov_json_scan_object(tc, v, vlen) != APR_SUCCESS
            || prov_json_scan_int(&idx, tc, "index") != APR_SUCCESS || idx < 0 || idx > 1024
            || (frv = prov_json_scan_sub(fn, tc, "function")) == APR_EGENERAL)
            return 0;
        k->calls[k->n_calls].idx = (int)idx;
        /* (copied: fn and tc are scanned again for the next) */
        keep(&k->calls[k->n_calls].id, plain_member(tc, "id", &bad));
        if (frv == APR_SUCCESS) {
            keep(&k->calls[k->n_calls].name, plain_member(fn, "name", &bad));
            keep(&k->calls[k->n_calls].args, string_member(fn, "arguments"));
        }
        if (bad)
            return 0;
        k->n_calls++;
    }
    return rv == APR_EOF;
}

/* The first choice (none when it is not an object, as for json-c). */
static int read_choice(chunk_t *k, const prov_jobject_t *top, prov_jobject_t *scan)
{
    const prov_jmember_t *m, *f;
    prov_jobject_t *choice = scan, *delta = scan + 1;
    apr_status_t rv = prov_json_scan_first(choice, top, "choices");

    if (rv != APR_SUCCESS)
        return rv == APR_NOTFOUND;
    if ((rv = prov_json_scan_sub(delta, choice, "delta")) == APR_EGENERAL)
        return 0;
    if (rv == APR_SUCCESS) {
        k->content = string_member(delta, "content");
        k->refusal = string_member(delta, "refusal");
        if ((m = prov_json_scan_member(delta, "tool_calls")) && *m->val == '['
            && !read_calls(k, m, scan + 2, scan + 3))
            return 0;
    }
    if ((f = string_member(choice, "finish_reason"))) {
        if (memchr(f->val, '\\', f->vlen))
            return 0;
        k->finish = f->val + 1;
        k->finish_len = f->vlen - 2;
    }
    return 1;
}

/* The text a scanned string value holds: its own bytes when it has no
 * escape, else decoded into s->dec. */
static apr_status_t decoded(prov_resp_stream_t *s, const prov_jmember_t *m, const char **t,
                            apr_size_t *n)
{
    if (!memchr(m->val, '\\', m->vlen)) {
        *t = m->val + 1;
        *n = m->vlen - 2;
        return APR_SUCCESS;
    }
    s->dec.len = 0;
    *n = prov_jwrite_decode(&s->dec, m->val, m->vlen);
    *t = s->dec.p;
    return s->dec.oom ? APR_ENOMEM : APR_SUCCESS;
}

static apr_status_t text(prov_resp_stream_t *s, const prov_jmember_t *m, int refusal)
{
    const char *t;
    apr_size_t n;
    apr_status_t rv = decoded(s, m, &t, &n);
    return rv == APR_SUCCESS ? prov_resp_op_text(s, t, n, refusal) : rv;
}

/* A call opened when new, then its arguments. */
static apr_status_t call_delta(prov_resp_stream_t *s, const prov_jmember_t *id,
                               const prov_jmember_t *name, int idx, const prov_jmember_t *args)
{
    prov_resp_call_t *c = prov_resp_call_at(s, idx);
    const char *a;
    apr_size_t n;
    apr_status_t rv;
    if (c->index < 0
        && (rv = prov_resp_op_open_call(s, c, id->val ? id->val + 1 : NULL,
                                        id->val ? id->vlen - 2 : 0,
                                        name->val ? name->val + 1 : NULL,
                                        name->val ? name->vlen - 2 : 0)) != APR_SUCCESS)
        return rv;
    if (!args->val)
        return APR_SUCCESS;
    if ((rv = decoded(s, args, &a, &n)) != APR_SUCCESS)
        return rv;
    return prov_resp_op_args(s, c, a, n);
}

/* The chunk applied, in the json-c reader's order (prov_responses_jsonc.c). */
static apr_status_t apply(prov_resp_stream_t *s, const chunk_t *k)
{
    apr_status_t rv;
    int i;
    if ((rv = prov_resp_op_start(s)) != APR_SUCCESS)
        return rv;
    if (k->have_usage)
        prov_resp_usage_take(s, &k->usage, k->usage_rv);
    if (k->content && k->content->vlen > 2 && (rv = text(s, k->content, 0)) != APR_SUCCESS)
        return rv;
    if (k->refusal && k->refusal->vlen > 2 && (rv = text(s, k->refusal, 1)) != APR_SUCCESS)
        return rv;
    for (i = 0; i < k->n_calls; i++)
        if ((rv = call_delta(s, &k->calls[i].id, &k->calls[i].name, k->calls[i].idx,
                             &k->calls[i].args)) != APR_SUCCESS)
            return rv;
    if (k->finish) {
        s->finish_reason = apr_pstrmemdup(s->p, k->finish, k->finish_len);
        s->finished = 1;
    }
    return APR_SUCCESS;
}

int prov_resp_fast_chunk(prov_resp_stream_t *s, const char *data, apr_size_t len,
                         apr_status_t *rv)
{
    /* the chunk, its usage, choice, delta, a tool call and its function */
    prov_jobject_t top, u, scan[4];
    chunk_t k;

    memset(&k, 0, sizeof(k));
    if (prov_json_scan_object(&top, data, len) != APR_SUCCESS
        || prov_json_scan_member(&top, "error") || !read_usage(&k, &top, &u)
        || !read_choice(&k, &top, scan))
        return 0;
    *rv = apply(s, &k);
    return 1;
}
