/* prov_messages_usage.c: the Messages transport's usage reports read
 * strictly (docs/internals/billing.md, "How usage reports are read"), with
 * json-c and from the scan alike, for the non-streamed answer (read whole,
 * or relayed without a tree) and for the stream relay's message_start and
 * message_delta (prov_messages_answer.c). */
#include <string.h>
#include "prov_messages_int.h"

static const char *const count_keys[PROV_MC_KINDS] = { "input_tokens",
    "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens" };

/* Non-zero when c is a readable report with the counts need asks for. */
int prov_mcounts_readable(const prov_mcounts_t *c, int need)
{
    int i;
    for (i = 0; i < PROV_MC_KINDS; i++) {
        if ((need & (1 << i)) && !c->set[i])
            return 0;
    }
    return !c->bad;
}

/* With json-c: usage is the member as it came (NULL: absent or null). */
void prov_mcounts_tree(prov_mcounts_t *c, json_object *usage)
{
    int i;
    memset(c, 0, sizeof(*c));
    if (!json_object_is_type(usage, json_type_object)) {
        c->bad = 1;
        return;
    }
    for (i = 0; i < PROV_MC_KINDS; i++) {
        apr_status_t rv = prov_json_get_count(&c->v[i], usage, count_keys[i]);
        c->set[i] = rv == APR_SUCCESS;
        c->bad |= rv == APR_EINVAL;
    }
}

/* Input and cache-creation tokens are both charged as input. */
void prov_mcounts_tokens(prov_tokens_t *t, const apr_int64_t *v)
{
    t->input = prov_i64_add_sat(v[PROV_MC_INPUT], v[PROV_MC_CREATION]);
    t->cache = v[PROV_MC_CACHE_READ];
    t->output = v[PROV_MC_OUTPUT];
    t->reasoning = 0;
}

static json_object *member(json_object *o, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

apr_status_t prov_messages_tokens(prov_tokens_t *t, json_object *usage)
{
    prov_mcounts_t c;
    if (!usage)
        return APR_ENOENT;
    prov_mcounts_tree(&c, usage);
    if (!prov_mcounts_readable(&c, PROV_MC_NEED_ALL))
        return APR_EINVAL;
    prov_mcounts_tokens(t, c.v);
    return APR_SUCCESS;
}

apr_status_t prov_messages_read_answer(json_object **answer, prov_tokens_t *t,
                                       const char *body, apr_size_t len, apr_pool_t *p)
{
    const char *perr = NULL;
    json_object *root = prov_json_parse(body, len, &perr, p);
    const char *type = root ? prov_json_get_str(root, "type") : NULL;
    apr_status_t rv;
    if (!type || strcmp(type, "message") || !prov_json_get(root, "content", json_type_array))
        return APR_EINVAL;
    *answer = root;
    rv = prov_messages_tokens(t, member(root, "usage"));
    return rv == APR_EINVAL ? PROV_USAGE_UNREADABLE : rv;
}

/* A usage object's counts read from the scan: 0 when it declines. */
static int scan_counts(prov_mcounts_t *c, const prov_jobject_t *usage)
{
    int i;
    memset(c, 0, sizeof(*c));
    for (i = 0; i < PROV_MC_KINDS; i++) {
        apr_status_t rv = prov_json_scan_count(&c->v[i], usage, count_keys[i]);
        if (rv == APR_EGENERAL)
            return 0;
        c->set[i] = rv == APR_SUCCESS;
        c->bad |= rv == APR_EINVAL;
    }
    return 1;
}

apr_status_t prov_messages_relay_read(prov_relay_t *rl, prov_tokens_t *t,
                                      const char *body, apr_size_t len)
{
    const prov_jmember_t *type, *content;
    prov_mcounts_t c;
    if (prov_json_scan_object(&rl->top, body, len) != APR_SUCCESS
        || !(type = prov_json_scan_member(&rl->top, "type"))
        || type->vlen != 9 || memcmp(type->val, "\"message\"", 9)
        || !(content = prov_json_scan_member(&rl->top, "content")) || *content->val != '['
        || !prov_json_scan_member(&rl->top, "model")
        || prov_json_scan_sub(&rl->usage, &rl->top, "usage") != APR_SUCCESS
        || prov_json_scan_member(&rl->usage, "credits")
        || !scan_counts(&c, &rl->usage) || !prov_mcounts_readable(&c, PROV_MC_NEED_ALL))
        return APR_EGENERAL;
    rl->body = body;
    rl->len = len;
    prov_mcounts_tokens(t, c.v);
    return APR_SUCCESS;
}

/* The usage member of o read from the scan, as take_usage reads it: 1 with
 * *c (and *usage, for an object) for a report, -1 for none (absent or
 * null), 0 when the scan declines. */
int prov_mcounts_scan(prov_mcounts_t *c, const prov_jobject_t *o, prov_jobject_t *usage)
{
    const prov_jmember_t *m = prov_json_scan_member(o, "usage");
    if (!m || prov_json_scan_is(m, "null"))
        return -1;
    if (*m->val != '{') {
        memset(c, 0, sizeof(*c));
        c->bad = 1;
        return 1;
    }
    if (prov_json_scan_sub(usage, o, "usage") != APR_SUCCESS)
        return 0;
    return scan_counts(c, usage);
}

