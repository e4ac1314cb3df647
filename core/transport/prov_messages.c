/* prov_messages.c: the Messages transport's request half, without httpd. A
 * request is checked and normalised in place so that what coding-agent
 * clients send reaches the gateway's native /v1/messages in a form it accepts
 * and this service can meter: cache_control markers go everywhere, thinking
 * blocks leave the history and the `thinking` field the request, a message's
 * blocks other than text, tool_use and tool_result (images, documents,
 * anything else) are refused naming the block, inside a tool_result a
 * search_result becomes text and any other non-text block a short note, and
 * system messages met in the conversation join the system text. Top-level
 * members outside prov_messages_fields (prov_fields.c) are refused by name,
 * as Anthropic refuses extra inputs. The answer half (the answer, its usage, the streamed relay) is in
 * prov_messages_answer.c. */
#include <string.h>
#include "prov_messages.h"
#include "prov_fields.h"

#define BAD(param, ...) \
    do { *err = prov_error_make(p, PROV_E_INVALID_REQUEST, param, __VA_ARGS__); \
         return APR_EINVAL; } while (0)

/* Text gathered from system prompts, joined by blank lines. */
typedef struct text_acc_t {
    char *s;
} text_acc_t;

/* Fields that /v1/messages/count_tokens does not take. */
static const char *const not_counted[] = { "max_tokens", "stream", "metadata",
    "stop_sequences", "temperature", "top_p", "top_k", "service_tier", NULL };

apr_status_t prov_messages_version_check(const char *v)
{
    static const char *const pattern = "dddd-dd-dd";
    int i, month, day;
    if (!v || strlen(v) != 10)
        return APR_EINVAL;
    for (i = 0; i < 10; i++) {
        if (pattern[i] == 'd' ? (v[i] < '0' || v[i] > '9') : v[i] != '-')
            return APR_EINVAL;
    }
    month = (v[5] - '0') * 10 + (v[6] - '0');
    day = (v[8] - '0') * 10 + (v[9] - '0');
    if (month < 1 || month > 12 || day < 1 || day > 31)
        return APR_EINVAL;
    return strcmp(v, PROV_MESSAGES_VERSION) < 0 ? APR_ENOTIMPL : APR_SUCCESS;
}

static int type_is(json_object *block, const char *type)
{
    const char *t = prov_json_get_str(block, "type");
    return t && !strcmp(t, type);
}

/* The note block that stands for an unsupported block in a tool result. */
static json_object *note_block(const char *type)
{
    char text[128];
    json_object *b = json_object_new_object();
    apr_snprintf(text, sizeof(text), PROV_MESSAGES_NOTE_FMT, type);
    json_object_object_add(b, "type", json_object_new_string("text"));
    json_object_object_add(b, "text", json_object_new_string(text));
    return b;
}

/* A search_result block (what Claude Code's WebFetch returns) as one text
 * block: its title, its source and its text; NULL when it has none. */
static json_object *search_result_text(json_object *b)
{
    json_object *content = prov_json_get(b, "content", json_type_array), *t;
    const char *title = prov_json_get_str(b, "title"), *source = prov_json_get_str(b, "source");
    struct printbuf *pb;
    size_t i, n = content ? json_object_array_length(content) : 0;

    if (!n)
        return NULL;
    pb = printbuf_new();
    if (title || source)
        sprintbuf(pb, "%s%s%s%s\n", title ? title : "", title && source ? " (" : "",
                  source ? source : "", title && source ? ")" : "");
    for (i = 0; i < n; i++) {
        const char *text = prov_json_get_str(json_object_array_get_idx(content, i), "text");
        if (text)
            sprintbuf(pb, "%s%s", i ? "\n" : "", text);
    }
    t = json_object_new_object();
    json_object_object_add(t, "type", json_object_new_string("text"));
    json_object_object_add(t, "text", json_object_new_string_len(pb->buf, pb->bpos));
    printbuf_free(pb);
    return t;
}

/* A tool_result's content: a string, or blocks in which search results
 * become text and anything else but text becomes a note; cache_control goes. */
static apr_status_t tool_result_content(prov_messages_req_t *req, prov_error_t **err,
                                        json_object *result, const char *param, apr_pool_t *p)
{
    json_object *content = NULL, *out;
    size_t i, n;
    json_object_object_del(result, "cache_control");
    if (!json_object_object_get_ex(result, "content", &content) || !content)
        return APR_SUCCESS;
    if (json_object_is_type(content, json_type_string)) {
        req->prompt_bytes += (apr_size_t)json_object_get_string_len(content);
        return APR_SUCCESS;
    }
    if (!json_object_is_type(content, json_type_array))
        BAD(param, "%s.content must be a string or an array of blocks", param);
    n = json_object_array_length(content);
    out = json_object_new_array();
    for (i = 0; i < n; i++) {
        json_object *b = json_object_array_get_idx(content, i);
        const char *type = prov_json_get_str(b, "type");
        json_object *text = prov_json_get(b, "text", json_type_string), *as_text;
        if (!type) {
            json_object_put(out);
            BAD(param, "%s.content[%d] needs a 'type'", param, (int)i);
        }
        if (!strcmp(type, "search_result") && (as_text = search_result_text(b))) {
            req->prompt_bytes += (apr_size_t)json_object_get_string_len(
                json_object_object_get(as_text, "text"));
            json_object_array_add(out, as_text);
            continue;
        }
        /* Anything but text (images, documents, tool references...) becomes
         * a note, so that the agent's session goes on. */
        if (strcmp(type, "text") || !text) {
            json_object_array_add(out, note_block(type));
            req->n_replaced++;
            continue;
        }
        json_object_object_del(b, "cache_control");
        req->prompt_bytes += (apr_size_t)json_object_get_string_len(text);
        json_object_array_add(out, json_object_get(b));
    }
    json_object_object_add(result, "content", out);
    return APR_SUCCESS;
}

/* One message's content blocks: checked, stripped, thinking dropped. Sets
 * *kept to the number of blocks left. */
static apr_status_t message_blocks(prov_messages_req_t *req, prov_error_t **err,
                                   json_object *msg, json_object *content, const char *param,
                                   size_t *kept, apr_pool_t *p)
{
    size_t i, n = json_object_array_length(content);
    json_object *out = json_object_new_array();
    apr_status_t rv;

    for (i = 0; i < n; i++) {
        json_object *b = json_object_array_get_idx(content, i);
        const char *type = prov_json_get_str(b, "type");
        const char *bp = apr_psprintf(p, "%s.content[%d]", param, (int)i);
        json_object *v;

        if (!type) {
            json_object_put(out);
            BAD(bp, "%s must be a block object with a 'type'", bp);
        }
        if (!strcmp(type, "thinking") || !strcmp(type, "redacted_thinking")) {
            req->n_dropped++;
            continue;
        }
        /* Only what the service meters and the gateway surely takes passes:
         * images, documents and every other type (server tools' blocks,
         * search results, container uploads...) are refused by name. */
        if (strcmp(type, "text") && strcmp(type, "tool_use") && strcmp(type, "tool_result")) {
            json_object_put(out);
            BAD(bp, "%s: '%.64s' blocks are not supported by this service (text, tool_use "
                "and tool_result blocks are)", bp, type);
        }
        json_object_object_del(b, "cache_control");
        if (!strcmp(type, "text")) {
            if (!(v = prov_json_get(b, "text", json_type_string))) {
                json_object_put(out);
                BAD(bp, "%s.text is required (a string)", bp);
            }
            req->prompt_bytes += (apr_size_t)json_object_get_string_len(v);
        }
        else if (!strcmp(type, "tool_use")) {
            if (!prov_json_get_str(b, "id") || !prov_json_get_str(b, "name")) {
                json_object_put(out);
                BAD(bp, "%s: a tool_use block needs 'id' and 'name'", bp);
            }
            if (json_object_object_get_ex(b, "input", &v) && v)
                req->prompt_bytes += strlen(json_object_to_json_string_ext(
                    v, JSON_C_TO_STRING_PLAIN));
        }
        else if (!strcmp(type, "tool_result")) {
            if (!prov_json_get_str(b, "tool_use_id")) {
                json_object_put(out);
                BAD(bp, "%s: a tool_result block needs 'tool_use_id'", bp);
            }
            if ((rv = tool_result_content(req, err, b, bp, p)) != APR_SUCCESS) {
                json_object_put(out);
                return rv;
            }
        }
        json_object_array_add(out, json_object_get(b));
    }
    *kept = json_object_array_length(out);
    json_object_object_add(msg, "content", out);
    return APR_SUCCESS;
}

/* The text of a system prompt (string or text blocks) appended to buf. */
static apr_status_t system_text(text_acc_t *acc, prov_error_t **err,
                                json_object *v, const char *param, apr_pool_t *p)
{
    size_t i, n;
    if (json_object_is_type(v, json_type_string)) {
        acc->s = acc->s ? apr_pstrcat(p, acc->s, "\n\n", json_object_get_string(v), NULL)
                        : apr_pstrdup(p, json_object_get_string(v));
        return APR_SUCCESS;
    }
    if (!json_object_is_type(v, json_type_array))
        BAD(param, "%s must be a string or an array of text blocks", param);
    n = json_object_array_length(v);
    for (i = 0; i < n; i++) {
        json_object *b = json_object_array_get_idx(v, i);
        const char *text = prov_json_get_str(b, "text");
        if (!type_is(b, "text") || !text)
            BAD(param, "%s[%d] must be a text block ({\"type\":\"text\",\"text\":...})",
                param, (int)i);
        acc->s = acc->s ? apr_pstrcat(p, acc->s, "\n\n", text, NULL) : apr_pstrdup(p, text);
    }
    return APR_SUCCESS;
}

static apr_status_t check_system(prov_messages_req_t *req, prov_error_t **err,
                                 json_object *root, const char *folded, apr_pool_t *p)
{
    json_object *sys = NULL;
    int has = json_object_object_get_ex(root, "system", &sys) && sys;
    size_t i, n;

    if (has && json_object_is_type(sys, json_type_string)) {
        req->prompt_bytes += (apr_size_t)json_object_get_string_len(sys);
        if (folded)
            json_object_object_add(root, "system", json_object_new_string(
                apr_pstrcat(p, json_object_get_string(sys), "\n\n", folded, NULL)));
    }
    else if (has) {
        text_acc_t acc = { NULL };
        apr_status_t rv = system_text(&acc, err, sys, "system", p);
        if (rv != APR_SUCCESS)
            return rv;
        n = json_object_array_length(sys);
        for (i = 0; i < n; i++) {
            json_object *b = json_object_array_get_idx(sys, i);
            json_object_object_del(b, "cache_control");
            req->prompt_bytes += strlen(prov_json_get_str(b, "text"));
        }
        if (folded) {
            json_object *b = json_object_new_object();
            json_object_object_add(b, "type", json_object_new_string("text"));
            json_object_object_add(b, "text", json_object_new_string(folded));
            json_object_array_add(sys, b);
        }
    }
    else if (folded) {
        json_object_object_add(root, "system", json_object_new_string(folded));
    }
    if (folded)
        req->prompt_bytes += strlen(folded);
    return APR_SUCCESS;
}

static apr_status_t check_messages(prov_messages_req_t *req, prov_error_t **err,
                                   json_object *root, json_object *msgs, apr_pool_t *p)
{
    size_t i, len = json_object_array_length(msgs);
    json_object *out;
    text_acc_t folded = { NULL };
    apr_status_t rv;

    if (len == 0)
        BAD("messages", "'messages' must not be empty");
    out = prov_json_own(json_object_new_array(), p);
    for (i = 0; i < len; i++) {
        json_object *m = json_object_array_get_idx(msgs, i);
        const char *role = prov_json_get_str(m, "role");
        const char *param = apr_psprintf(p, "messages[%d]", (int)i);
        json_object *content = NULL;
        size_t kept = 1;

        if (!json_object_is_type(m, json_type_object))
            BAD(param, "%s must be an object with 'role' and 'content'", param);
        if (!role || (strcmp(role, "user") && strcmp(role, "assistant")
                      && strcmp(role, "system")))
            BAD(apr_pstrcat(p, param, ".role", NULL),
                "%s.role must be \"user\" or \"assistant\"", param);
        if (!json_object_object_get_ex(m, "content", &content) || !content)
            BAD(apr_pstrcat(p, param, ".content", NULL), "%s.content is required", param);
        if (!strcmp(role, "system")) {
            /* Folded into the system text; the gateway takes no system role. */
            if ((rv = system_text(&folded, err, content,
                                  apr_pstrcat(p, param, ".content", NULL), p)) != APR_SUCCESS)
                return rv;
            continue;
        }
        if (json_object_is_type(content, json_type_string))
            req->prompt_bytes += (apr_size_t)json_object_get_string_len(content);
        else if (json_object_is_type(content, json_type_array)) {
            if ((rv = message_blocks(req, err, m, content, param, &kept, p)) != APR_SUCCESS)
                return rv;
        }
        else
            BAD(apr_pstrcat(p, param, ".content", NULL),
                "%s.content must be a string or an array of content blocks", param);
        /* A message that held nothing but thinking is left out. */
        if (kept)
            json_object_array_add(out, json_object_get(m));
    }
    if (json_object_array_length(out) == 0)
        BAD("messages", "'messages' must hold at least one user or assistant message "
            "with content");
    req->n_messages = (int)json_object_array_length(out);
    json_object_object_add(root, "messages", json_object_get(out));
    return check_system(req, err, root, folded.s, p);
}

/* Tools pass as they are, without cache_control; they count as input. */
static apr_status_t check_tools(prov_messages_req_t *req, prov_error_t **err,
                                json_object *root, apr_pool_t *p)
{
    json_object *tools = NULL;
    size_t i, n;
    if (!json_object_object_get_ex(root, "tools", &tools) || !tools)
        return APR_SUCCESS;
    if (!json_object_is_type(tools, json_type_array))
        BAD("tools", "'tools' must be an array of tool definitions");
    n = json_object_array_length(tools);
    for (i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(tools, i);
        if (!json_object_is_type(t, json_type_object) || !prov_json_get_str(t, "name"))
            BAD(apr_psprintf(p, "tools[%d]", (int)i), "tools[%d] needs a 'name'", (int)i);
        json_object_object_del(t, "cache_control");
    }
    req->prompt_bytes += strlen(json_object_to_json_string_ext(tools, JSON_C_TO_STRING_PLAIN));
    return APR_SUCCESS;
}

/* Context-management edits that clear thinking need thinking on upstream,
 * and thinking is not forwarded. */
static void drop_thinking_edits(json_object *root)
{
    json_object *cm = prov_json_get(root, "context_management", json_type_object);
    json_object *edits = prov_json_get(cm, "edits", json_type_array), *out;
    size_t i, n;
    if (!edits)
        return;
    out = json_object_new_array();
    n = json_object_array_length(edits);
    for (i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(edits, i);
        const char *type = prov_json_get_str(e, "type");
        if (!type || strncmp(type, "clear_thinking", 14))
            json_object_array_add(out, json_object_get(e));
    }
    if (json_object_array_length(out) == 0) {
        json_object_put(out);
        json_object_object_del(root, "context_management");
    }
    else {
        json_object_object_add(cm, "edits", out);
    }
}

/* Enabled thinking's budget counts inside max_tokens, so it must be below
 * it (Anthropic's own rule); thinking is then dropped all the same. */
static apr_status_t check_thinking(const prov_messages_req_t *req, prov_error_t **err,
                                   json_object *root, apr_pool_t *p)
{
    json_object *th = prov_json_get(root, "thinking", json_type_object), *b = NULL;
    const char *type = prov_json_get_str(th, "type");
    if (!type || strcmp(type, "enabled") || !json_object_object_get_ex(th, "budget_tokens", &b)
        || !b || req->max_tokens < 0)
        return APR_SUCCESS;
    if (!json_object_is_type(b, json_type_int) || json_object_get_int64(b) < 1)
        BAD("thinking.budget_tokens", "thinking.budget_tokens must be a positive integer");
    if (json_object_get_int64(b) >= req->max_tokens)
        BAD("thinking.budget_tokens", "thinking.budget_tokens (%" APR_INT64_T_FMT ") must be "
            "less than max_tokens (%" APR_INT64_T_FMT "): the thinking counts inside "
            "max_tokens", json_object_get_int64(b), req->max_tokens);
    return APR_SUCCESS;
}

apr_status_t prov_messages_parse(prov_messages_req_t **preq, prov_error_t **err,
                                 const char *body, apr_size_t len, int count_tokens,
                                 apr_pool_t *p)
{
    prov_messages_req_t *req = count_tokens ? NULL : apr_palloc(p, sizeof(*req));
    if (req && prov_messages_parse_fast(req, body, len, p)) {
        *preq = req;
        *err = NULL;
        return APR_SUCCESS;
    }
    return prov_messages_parse_json(preq, err, body, len, count_tokens, p);
}

apr_status_t prov_messages_parse_json(prov_messages_req_t **preq, prov_error_t **err,
                                      const char *body, apr_size_t len, int count_tokens,
                                      apr_pool_t *p)
{
    const char *perr = NULL;
    json_object *root = prov_json_parse_body(body, len, &perr, p);
    json_object *v = NULL, *msgs;
    prov_messages_req_t *req;
    apr_status_t rv;

    if (!root)
        BAD(NULL, "%s", perr);
    if ((rv = prov_fields_check(err, prov_messages_fields, root, 1, p)) != APR_SUCCESS)
        return rv;
    req = apr_pcalloc(p, sizeof(*req));
    req->body = root;
    req->max_tokens = -1;

    req->model = prov_json_get_str(root, "model");
    if (!req->model || !*req->model)
        BAD("model", "'model' is required (a public model id from GET /v1/models)");
    if (!count_tokens) {
        if (!json_object_object_get_ex(root, "max_tokens", &v) || !v)
            BAD("max_tokens", "'max_tokens' is required (a positive integer)");
        if ((rv = prov_fields_output_cap(&req->max_tokens, err, v, "max_tokens", p))
            != APR_SUCCESS)
            return rv;
        if (json_object_object_get_ex(root, "stream", &v) && v) {
            if (!json_object_is_type(v, json_type_boolean))
                BAD("stream", "'stream' must be true or false");
            req->stream = json_object_get_boolean(v);
        }
        if ((rv = check_thinking(req, err, root, p)) != APR_SUCCESS)
            return rv;
    }
    msgs = prov_json_get(root, "messages", json_type_array);
    if (!msgs)
        BAD("messages", "'messages' is required (an array of {role, content})");
    if ((rv = check_messages(req, err, root, msgs, p)) != APR_SUCCESS
        || (rv = check_tools(req, err, root, p)) != APR_SUCCESS)
        return rv;
    json_object_object_del(root, "thinking");
    json_object_object_del(root, "cache_control");
    json_object_object_del(root, "service_tier");
    drop_thinking_edits(root);
    if (count_tokens) {
        const char *const *f;
        for (f = not_counted; *f; f++)
            json_object_object_del(root, *f);
    }
    *preq = req;
    *err = NULL;
    return APR_SUCCESS;
}

const char *prov_messages_upstream_body(const prov_messages_req_t *req,
                                        const char *upstream_id, apr_int64_t cap,
                                        apr_pool_t *p)
{
    json_object *body = req->body;
    if (!body && prov_json_scan_plain(upstream_id))
        return prov_messages_upstream_raw(req, upstream_id, cap, p);
    if (!body) {
        /* taken by the fast path: nothing to normalise, only parse */
        const char *perr = NULL;
        if (!(body = prov_json_parse_body(req->raw, (apr_size_t)(req->raw_end - req->raw),
                                          &perr, p)))
            return NULL;
    }
    json_object_object_add(body, "model", json_object_new_string(upstream_id));
    if (cap > 0 && cap != req->max_tokens)
        json_object_object_add(body, "max_tokens", json_object_new_int64(cap));
    return prov_json_dump(body, p);
}

apr_int64_t prov_messages_estimate_tokens(const prov_messages_req_t *req)
{
    /* About four bytes a token, plus the framing of each message. */
    return (apr_int64_t)(req->prompt_bytes / 4) + 4 * (apr_int64_t)req->n_messages + 8;
}
