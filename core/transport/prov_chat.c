/* prov_chat.c: the Chat Completions transport without httpd: request
 * validation and normalisation (legacy `message`, no streaming, no tools),
 * the gateway body, token kinds from the gateway's usage, and the answer the
 * client gets (public model id, credits in usage). */
#include <string.h>
#include "prov_chat.h"
#include "prov_fields.h"
#include "prov_json.h"
#include "prov_money.h"

#define BAD(param, ...) \
    do { *err = prov_error_make(p, PROV_E_INVALID_REQUEST, param, __VA_ARGS__); \
         return APR_EINVAL; } while (0)

/* Content is a string or an array of text parts; returns the text bytes or -1. */
static apr_ssize_t content_bytes(json_object *content, const char **why)
{
    apr_ssize_t n = 0;
    size_t i, len;
    if (json_object_is_type(content, json_type_string))
        return (apr_ssize_t)json_object_get_string_len(content);
    if (!json_object_is_type(content, json_type_array)) {
        *why = "must be a string or an array of text parts";
        return -1;
    }
    len = json_object_array_length(content);
    for (i = 0; i < len; i++) {
        json_object *part = json_object_array_get_idx(content, i);
        const char *type = prov_json_get_str(part, "type");
        json_object *text = prov_json_get(part, "text", json_type_string);
        if (!type || strcmp(type, "text") || !text) {
            *why = type ? "has a part type that this transport does not support (only text)"
                        : "has a part without a type";
            return -1;
        }
        n += json_object_get_string_len(text);
    }
    return n;
}

static apr_status_t check_messages(prov_chat_req_t *req, prov_error_t **err,
                                   json_object *msgs, apr_pool_t *p)
{
    size_t i, len = json_object_array_length(msgs);
    if (len == 0)
        BAD("messages", "'messages' must not be empty");
    for (i = 0; i < len; i++) {
        json_object *m = json_object_array_get_idx(msgs, i);
        const char *role = prov_json_get_str(m, "role");
        json_object *content = NULL;
        const char *why = NULL;
        apr_ssize_t n;
        const char *param = apr_psprintf(p, "messages[%d]", (int)i);

        if (!json_object_is_type(m, json_type_object))
            BAD(param, "%s must be an object with 'role' and 'content'", param);
        if (!role)
            BAD(apr_pstrcat(p, param, ".role", NULL), "%s.role is required (a string)", param);
        if (strcmp(role, "user") && strcmp(role, "assistant") && strcmp(role, "system")
            && strcmp(role, "developer"))
            BAD(apr_pstrcat(p, param, ".role", NULL),
                "%s.role '%s' is not supported here (user, assistant, system, developer; "
                "tools are not supported on this transport)", param, role);
        if (json_object_object_get_ex(m, "tool_calls", NULL))
            BAD(apr_pstrcat(p, param, ".tool_calls", NULL),
                "tool calls are not supported on /v1/chat/completions");
        if (!json_object_object_get_ex(m, "content", &content) || !content)
            BAD(apr_pstrcat(p, param, ".content", NULL), "%s.content is required", param);
        n = content_bytes(content, &why);
        if (n < 0)
            BAD(apr_pstrcat(p, param, ".content", NULL), "%s.content %s", param, why);
        req->prompt_bytes += (apr_size_t)n;
    }
    req->n_messages = (int)len;
    return APR_SUCCESS;
}

/* The legacy single `message`: a string, a message object or an array. */
static apr_status_t normalise_legacy(prov_error_t **err, json_object *body, apr_pool_t *p)
{
    json_object *legacy = NULL, *msgs;
    if (json_object_object_get_ex(body, "messages", NULL)) {
        json_object_object_del(body, "message");
        return APR_SUCCESS;
    }
    if (!json_object_object_get_ex(body, "message", &legacy) || !legacy)
        BAD("messages", "'messages' is required (an array of {role, content})");
    if (json_object_is_type(legacy, json_type_string)) {
        json_object *m = json_object_new_object();
        json_object_object_add(m, "role", json_object_new_string("user"));
        json_object_object_add(m, "content", json_object_get(legacy));
        msgs = json_object_new_array();
        json_object_array_add(msgs, m);
    }
    else if (json_object_is_type(legacy, json_type_object)) {
        msgs = json_object_new_array();
        json_object_array_add(msgs, json_object_get(legacy));
    }
    else if (json_object_is_type(legacy, json_type_array)) {
        msgs = json_object_get(legacy);
    }
    else {
        BAD("message", "'message' must be a string or a message object");
    }
    json_object_object_add(body, "messages", msgs);
    json_object_object_del(body, "message");
    return APR_SUCCESS;
}

/* The output cap: max_tokens or max_completion_tokens, not both (a gateway
 * may honour either, and only one is held). */
static apr_status_t read_caps(prov_chat_req_t *req, prov_error_t **err, json_object *body,
                              apr_pool_t *p)
{
    static const char *const caps[] = { "max_tokens", "max_completion_tokens", NULL };
    const char *const *c;
    json_object *v = NULL;
    apr_status_t rv;
    for (c = caps; *c; c++) {
        if (!json_object_object_get_ex(body, *c, &v) || !v)
            continue;
        if (req->cap_field)
            BAD("max_tokens,max_completion_tokens",
                "send one of max_tokens and max_completion_tokens, not both");
        if ((rv = prov_fields_output_cap(&req->max_tokens, err, v, *c, p)) != APR_SUCCESS)
            return rv;
        req->cap_field = *c;
    }
    return APR_SUCCESS;
}

/* n: how many choices, an integer from 1 to PROV_CHOICES_MAX (1 when absent). */
static apr_status_t read_n(prov_chat_req_t *req, prov_error_t **err, json_object *body,
                           apr_pool_t *p)
{
    json_object *v = NULL;
    req->n = 1;
    if (!json_object_object_get_ex(body, "n", &v) || !v)
        return APR_SUCCESS;
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1
        || json_object_get_int64(v) > PROV_CHOICES_MAX)
        BAD("n", "'n' must be an integer from 1 to %d (the number of choices)",
            PROV_CHOICES_MAX);
    req->n = json_object_get_int64(v);
    return APR_SUCCESS;
}

apr_status_t prov_chat_parse(prov_chat_req_t **preq, prov_error_t **err, const char *body,
                             apr_size_t len, apr_pool_t *p)
{
    prov_chat_req_t *req = apr_pcalloc(p, sizeof(*req));
    if (prov_chat_parse_fast(req, body, len, p)) {
        *preq = req;
        *err = NULL;
        return APR_SUCCESS;
    }
    return prov_chat_parse_json(preq, err, body, len, p);
}

apr_status_t prov_chat_parse_json(prov_chat_req_t **preq, prov_error_t **err, const char *body,
                                  apr_size_t len, apr_pool_t *p)
{
    const char *perr = NULL;
    json_object *root, *v = NULL, *msgs;
    prov_chat_req_t *req;
    const prov_field_t *f;
    apr_status_t rv;

    root = prov_json_parse_body(body, len, &perr, p);
    if (!root)
        BAD(NULL, "%s", perr);
    if ((rv = prov_fields_check(err, prov_chat_fields, root, 0, p)) != APR_SUCCESS)
        return rv;
    req = apr_pcalloc(p, sizeof(*req));
    req->body = root;
    req->max_tokens = -1;

    req->model = prov_json_get_str(root, "model");
    if (!req->model || !*req->model)
        BAD("model", "'model' is required (a public model id from GET /v1/models)");
    if (json_object_object_get_ex(root, "stream", &v) && v
        && (!json_object_is_type(v, json_type_boolean) || json_object_get_boolean(v)))
        BAD("stream", "Streaming is not supported on /v1/chat/completions "
            "(use /v1/responses or /v1/messages for streaming)");
    for (f = prov_chat_fields; f->name; f++) {
        if ((f->how & PROV_FIELD_REFUSE) && json_object_object_get_ex(root, f->name, &v) && v)
            BAD(f->name, "'%s': tools are not supported on /v1/chat/completions "
                "(use /v1/responses or /v1/messages for tool use)", f->name);
    }
    if ((rv = normalise_legacy(err, root, p)) != APR_SUCCESS)
        return rv;
    msgs = prov_json_get(root, "messages", json_type_array);
    if (!msgs)
        BAD("messages", "'messages' must be an array of {role, content}");
    if ((rv = check_messages(req, err, msgs, p)) != APR_SUCCESS)
        return rv;
    if ((rv = read_caps(req, err, root, p)) != APR_SUCCESS
        || (rv = read_n(req, err, root, p)) != APR_SUCCESS)
        return rv;
    if (json_object_object_get_ex(root, "temperature", &v) && v) {
        double t;
        if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
            BAD("temperature", "'temperature' must be a number between 0 and 2");
        t = json_object_get_double(v);
        if (t < 0.0 || t > 2.0)
            BAD("temperature", "'temperature' must be a number between 0 and 2");
    }
    json_object_object_del(root, "stream_options");
    json_object_object_del(root, "service_tier");
    *preq = req;
    *err = NULL;
    return APR_SUCCESS;
}

/* The client's bytes with the model's value (and the cap) replaced, or the
 * cap inserted first when the client set none. */
static const char *upstream_raw(const prov_chat_req_t *req, const char *upstream_id,
                                apr_int64_t cap, apr_pool_t *p)
{
    prov_json_patch_t patch[3], t;
    const char *cap_text = cap > 0 ? prov_i64(cap, p) : NULL;
    int n = 0, i, k;
    patch[n++] = (prov_json_patch_t){ req->model_val, req->model_len,
                                      apr_pstrcat(p, "\"", upstream_id, "\"", NULL) };
    for (i = 0; cap_text && i < 2; i++) {
        if (req->cap_val[i])
            patch[n++] = (prov_json_patch_t){ req->cap_val[i], req->cap_len[i], cap_text };
    }
    if (cap_text && n == 1)
        patch[n++] = (prov_json_patch_t){ req->raw + 1, 0,
                                          apr_pstrcat(p, "\"max_tokens\":", cap_text, ",",
                                                      NULL) };
    for (i = 1; i < n; i++) {        /* in the order of the body */
        for (k = i; k > 0 && patch[k].at < patch[k - 1].at; k--) {
            t = patch[k];
            patch[k] = patch[k - 1];
            patch[k - 1] = t;
        }
    }
    return prov_json_patched(req->raw, req->raw_end, patch, n, p);
}

const char *prov_chat_upstream_body(const prov_chat_req_t *req, const char *upstream_id,
                                    apr_int64_t cap, apr_pool_t *p)
{
    json_object *body = req->body;
    if (!body && prov_json_scan_plain(upstream_id))
        return upstream_raw(req, upstream_id, cap, p);
    if (!body) {
        /* taken by the fast path: nothing to normalise, only parse */
        const char *perr = NULL;
        body = prov_json_parse_body(req->raw, (apr_size_t)(req->raw_end - req->raw), &perr, p);
        if (!body)
            return NULL;
    }
    json_object_object_add(body, "model", json_object_new_string(upstream_id));
    if (cap > 0) {
        int mct = json_object_object_get_ex(body, "max_completion_tokens", NULL);
        if (!mct || json_object_object_get_ex(body, "max_tokens", NULL))
            json_object_object_add(body, "max_tokens", json_object_new_int64(cap));
        if (mct)
            json_object_object_add(body, "max_completion_tokens", json_object_new_int64(cap));
    }
    return prov_json_dump(body, p);
}

/* A details object's count (prompt_tokens_details.cached_tokens): 0 when
 * the object or the count is absent or null. */
static apr_status_t detail(apr_int64_t *v, json_object *usage, const char *a, const char *b)
{
    json_object *d = NULL;
    apr_status_t rv;
    *v = 0;
    if (!json_object_object_get_ex(usage, a, &d) || !d)
        return APR_SUCCESS;
    if (!json_object_is_type(d, json_type_object))
        return APR_EINVAL;
    rv = prov_json_get_count(v, d, b);
    return rv == APR_NOTFOUND ? APR_SUCCESS : rv;
}

apr_status_t prov_chat_usage(prov_chat_usage_t *u, json_object *usage)
{
    memset(u, 0, sizeof(*u));
    if (!usage)
        return APR_ENOENT;
    if (!json_object_is_type(usage, json_type_object)
        || prov_json_get_count(&u->prompt, usage, "prompt_tokens") != APR_SUCCESS
        || prov_json_get_count(&u->completion, usage, "completion_tokens") != APR_SUCCESS
        || detail(&u->cached, usage, "prompt_tokens_details", "cached_tokens") != APR_SUCCESS
        || detail(&u->reasoning, usage, "completion_tokens_details", "reasoning_tokens")
               != APR_SUCCESS) {
        memset(u, 0, sizeof(*u));
        return APR_EINVAL;
    }
    return APR_SUCCESS;
}

/* As detail, from the scan: APR_EGENERAL when it declines. */
static apr_status_t scan_detail(apr_int64_t *v, const prov_jobject_t *usage, const char *a,
                                const char *b)
{
    const prov_jmember_t *m = prov_json_scan_member(usage, a);
    prov_jobject_t d;
    apr_status_t rv;
    *v = 0;
    if (!m || prov_json_scan_is(m, "null"))
        return APR_SUCCESS;
    if (*m->val != '{')
        return APR_EINVAL;
    if (prov_json_scan_sub(&d, usage, a) != APR_SUCCESS)
        return APR_EGENERAL;
    rv = prov_json_scan_count(v, &d, b);
    return rv == APR_NOTFOUND ? APR_SUCCESS : rv;
}

/* The first of a and b that is not APR_SUCCESS, a declined scan first. */
static apr_status_t worst(apr_status_t a, apr_status_t b)
{
    if (a == APR_EGENERAL || b == APR_EGENERAL)
        return APR_EGENERAL;
    return a != APR_SUCCESS ? a : b;
}

apr_status_t prov_chat_usage_scan(prov_chat_usage_t *u, const prov_jobject_t *usage)
{
    apr_status_t rv = prov_json_scan_count(&u->prompt, usage, "prompt_tokens");
    rv = worst(rv, prov_json_scan_count(&u->completion, usage, "completion_tokens"));
    rv = worst(rv, scan_detail(&u->cached, usage, "prompt_tokens_details", "cached_tokens"));
    rv = worst(rv, scan_detail(&u->reasoning, usage, "completion_tokens_details",
                               "reasoning_tokens"));
    if (rv == APR_NOTFOUND)
        rv = APR_EINVAL;        /* a required count is missing */
    if (rv != APR_SUCCESS)
        memset(u, 0, sizeof(*u));
    return rv;
}

static void split(prov_tokens_t *t, const prov_chat_usage_t *u)
{
    prov_tokens_split(t, u->prompt, u->completion, u->cached, u->reasoning);
}

apr_status_t prov_chat_tokens(prov_tokens_t *t, json_object *usage)
{
    prov_chat_usage_t u;
    apr_status_t rv = prov_chat_usage(&u, usage);
    if (rv == APR_SUCCESS)
        split(t, &u);
    return rv;
}

/* The member key of o, whatever its type (NULL when absent or null). */
static json_object *member(json_object *o, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

apr_status_t prov_chat_read_answer(json_object **answer, prov_tokens_t *t, const char *body,
                                   apr_size_t len, apr_pool_t *p)
{
    const char *perr = NULL;
    json_object *root = prov_json_parse(body, len, &perr, p);
    apr_status_t rv;
    if (!root || !prov_json_get(root, "choices", json_type_array))
        return APR_EINVAL;
    *answer = root;
    rv = prov_chat_tokens(t, member(root, "usage"));
    return rv == APR_EINVAL ? PROV_USAGE_UNREADABLE : rv;
}

apr_status_t prov_chat_relay_read(prov_relay_t *rl, prov_tokens_t *t, const char *body,
                                  apr_size_t len)
{
    const prov_jmember_t *choices;
    prov_chat_usage_t u;
    if (prov_json_scan_object(&rl->top, body, len) != APR_SUCCESS
        || !(choices = prov_json_scan_member(&rl->top, "choices")) || *choices->val != '['
        || !prov_json_scan_member(&rl->top, "model")
        || prov_json_scan_sub(&rl->usage, &rl->top, "usage") != APR_SUCCESS
        || prov_json_scan_member(&rl->usage, "credits")
        || prov_chat_usage_scan(&u, &rl->usage) != APR_SUCCESS)
        return APR_EGENERAL;
    rl->body = body;
    rl->len = len;
    split(t, &u);
    return APR_SUCCESS;
}

const char *prov_chat_render(json_object *answer, const char *public_id, prov_micro_t charge,
                             apr_pool_t *p)
{
    return prov_relay_render_tree(answer, public_id, charge, p);
}
