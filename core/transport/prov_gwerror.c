/* prov_gwerror.c: reading a gateway's error and deciding what of it a client
 * may see. The gateway's fields (type, code, message) are read from the
 * OpenAI shape {"error":{...}}, the Anthropic shape {"type":"error",
 * "error":{...}} or a bare {"message"|"detail": ...}; they only choose a kind
 * from a fixed list. What goes out is the kind's allow-listed type name, the
 * status class and a message written here; from the gateway's text, only the
 * two token counts of a context-length refusal, read as digits. The text
 * itself is kept, bounded, for the caller to log once masked. */
#include <ctype.h>
#include <string.h>
#include "prov_gwerror.h"
#include "prov_json.h"
#include "prov_sse.h"

#define DIGITS_MAX 12

static const char *const anthropic_types[] = {
    [PROV_GWERR_UNKNOWN] = "api_error",
    [PROV_GWERR_INVALID_REQUEST] = "invalid_request_error",
    [PROV_GWERR_CONTEXT_LENGTH] = "invalid_request_error",
    [PROV_GWERR_RATE_LIMIT] = "rate_limit_error",
    [PROV_GWERR_OVERLOADED] = "overloaded_error",
    [PROV_GWERR_AUTH] = "api_error",
    [PROV_GWERR_NOT_FOUND] = "api_error",
    [PROV_GWERR_SERVER] = "api_error",
};

static int eq(const char *a, const char *b)
{
    return a && !strcmp(a, b);
}

static int has(const char *s, const char *needle)
{
    return s && strcasestr(s, needle) != NULL;
}

static int says_context(const char *type, const char *code, const char *msg)
{
    return eq(code, "context_length_exceeded") || eq(type, "context_length_exceeded")
        || has(msg, "prompt is too long") || has(msg, "context length")
        || has(msg, "context window") || has(msg, "maximum context")
        || has(msg, "input is too long");
}

/* By the status when there is one (its class is what the client learns);
 * inside a stream by the type. */
static prov_gwerr_kind_e classify(int status, const char *type, const char *code,
                                  const char *msg)
{
    int context = says_context(type, code, msg);
    if (status == 429)
        return PROV_GWERR_RATE_LIMIT;
    if (status == 529 || (status >= 500 && (eq(type, "overloaded_error")
                                            || eq(code, "server_is_overloaded"))))
        return PROV_GWERR_OVERLOADED;
    if (status == 401 || status == 403)
        return PROV_GWERR_AUTH;
    if (status == 404)
        return PROV_GWERR_NOT_FOUND;
    if (status >= 500)
        return PROV_GWERR_SERVER;
    if (status >= 400)
        return context ? PROV_GWERR_CONTEXT_LENGTH : PROV_GWERR_INVALID_REQUEST;
    if (status != 0)
        return PROV_GWERR_UNKNOWN;
    if (context)
        return PROV_GWERR_CONTEXT_LENGTH;
    if (eq(type, "rate_limit_error") || eq(code, "rate_limit_exceeded"))
        return PROV_GWERR_RATE_LIMIT;
    if (eq(type, "overloaded_error") || eq(code, "server_is_overloaded"))
        return PROV_GWERR_OVERLOADED;
    if (eq(type, "invalid_request_error"))
        return PROV_GWERR_INVALID_REQUEST;
    if (eq(type, "authentication_error") || eq(type, "permission_error"))
        return PROV_GWERR_AUTH;
    if (eq(type, "not_found_error"))
        return PROV_GWERR_NOT_FOUND;
    if (eq(type, "api_error") || eq(type, "server_error"))
        return PROV_GWERR_SERVER;
    return PROV_GWERR_UNKNOWN;
}

/* The whole number whose digits end at end (exclusive), or 0. */
static apr_int64_t digits_before(const char *start, const char *end, apr_pool_t *p)
{
    const char *b = end;
    apr_int64_t v = 0;
    while (b > start && end - b < DIGITS_MAX && isdigit((unsigned char)b[-1]))
        b--;
    if (b == end || prov_parse_i64(&v, apr_pstrndup(p, b, (apr_size_t)(end - b))) != APR_SUCCESS)
        return 0;
    return v;
}

/* The whole number that starts at s, or 0. */
static apr_int64_t digits_at(const char *s, apr_pool_t *p)
{
    apr_size_t n = 0;
    apr_int64_t v = 0;
    while (n < DIGITS_MAX && isdigit((unsigned char)s[n]))
        n++;
    if (!n || isdigit((unsigned char)s[n])
        || prov_parse_i64(&v, apr_pstrndup(p, s, n)) != APR_SUCCESS)
        return 0;
    return v;
}

/* "N tokens > M maximum" (Anthropic) or "maximum context length is M tokens
 * ... resulted in N tokens" (OpenAI). */
static void context_counts(prov_gwerror_t *e, const char *msg, apr_pool_t *p)
{
    const char *at;
    if (!msg)
        return;
    if ((at = strstr(msg, " tokens > "))) {
        e->prompt_tokens = digits_before(msg, at, p);
        e->limit_tokens = digits_at(at + 10, p);
    }
    else if ((at = strstr(msg, "context length is ")) && (e->limit_tokens = digits_at(at + 18, p))
             && (at = strstr(at, "resulted in "))) {
        e->prompt_tokens = digits_at(at + 12, p);
    }
    if (e->prompt_tokens <= 0 || e->limit_tokens <= 0)
        e->prompt_tokens = e->limit_tokens = 0;
}

static const char *code_of(json_object *err, apr_pool_t *p)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(err, "code", &v) || !v)
        return NULL;
    if (json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    if (json_object_is_type(v, json_type_int))
        return prov_i64(json_object_get_int64(v), p);
    return NULL;
}

void prov_gwerror_read(prov_gwerror_t *e, int status, const char *body, apr_size_t len,
                       apr_pool_t *p)
{
    const char *perr = NULL, *type = NULL, *code = NULL, *msg = NULL;
    json_object *root = body && len ? prov_json_parse(body, len, &perr, p) : NULL;
    json_object *err = prov_json_get(root, "error", json_type_object);

    memset(e, 0, sizeof(*e));
    e->status = status;
    if (err) {
        type = prov_json_get_str(err, "type");
        code = code_of(err, p);
        msg = prov_json_get_str(err, "message");
    }
    else if (root && json_object_is_type(root, json_type_object)) {
        msg = prov_json_get_str(root, "message");
        if (!msg)
            msg = prov_json_get_str(root, "detail");
        if (!msg)
            msg = prov_json_get_str(root, "error");
    }
    if (msg)
        e->text = apr_pstrndup(p, msg, PROV_GWERROR_TEXT_MAX);
    else if (body && len)
        e->text = apr_pstrndup(p, body, len < PROV_GWERROR_TEXT_MAX ? len : PROV_GWERROR_TEXT_MAX);
    e->kind = classify(status, type, code, msg);
    e->type = anthropic_types[e->kind];
    if (e->kind == PROV_GWERR_CONTEXT_LENGTH)
        context_counts(e, msg, p);
}

void prov_gwerror_retry_after(prov_gwerror_t *e, const char *header)
{
    apr_int64_t v;
    if (header && prov_parse_i64(&v, header) == APR_SUCCESS && v > 0
        && v <= PROV_GWERROR_RETRY_MAX)
        e->retry_after = v;
}

/* A context overflow: Claude Code and the SDKs recognise it by "prompt is
 * too long" and read the counts that follow. */
static prov_error_t *context_error(const prov_gwerror_t *e, apr_pool_t *p)
{
    if (e->prompt_tokens > 0)
        return prov_error_make(p, PROV_E_CONTEXT_LENGTH, NULL,
                               "prompt is too long: %" APR_INT64_T_FMT " tokens > %"
                               APR_INT64_T_FMT " maximum. The prompt is longer than this "
                               "model's context window.", e->prompt_tokens, e->limit_tokens);
    return prov_error_make(p, PROV_E_CONTEXT_LENGTH, NULL, "prompt is too long: the prompt "
                           "is longer than this model's context window.");
}

/* Throttled or overloaded, in a stream (status 0) or not: "try again in N
 * s" is OpenAI's wording, which Codex reads for its retry delay. */
static prov_error_t *busy_error(const prov_gwerror_t *e, apr_pool_t *p)
{
    const char *what = e->status || e->early ? "Nothing was charged." : "The model's answer "
                       "was interrupted.";
    prov_error_t *c;
    if (e->kind == PROV_GWERR_RATE_LIMIT) {
        apr_int64_t wait = e->retry_after > 0 ? e->retry_after : 1;
        c = prov_error_make(p, PROV_E_UPSTREAM_RATE_LIMIT, NULL, "The model is rate limited "
                            "upstream. Please try again in %" APR_INT64_T_FMT "s. %s", wait,
                            what);
        c->retry_after = wait;
        return c;
    }
    c = prov_error_make(p, PROV_E_UPSTREAM_OVERLOADED, NULL, "The model is overloaded "
                        "upstream; retry shortly. %s", what);
    c->retry_after = e->retry_after;
    return c;
}

prov_error_t *prov_gwerror_client(const prov_gwerror_t *e, apr_pool_t *p)
{
    if (e->kind == PROV_GWERR_CONTEXT_LENGTH)
        return context_error(e, p);
    if (e->kind == PROV_GWERR_RATE_LIMIT || e->kind == PROV_GWERR_OVERLOADED)
        return busy_error(e, p);
    if (e->status == 0 && e->early)
        return prov_error_make(p, PROV_E_GATEWAY_ERROR, NULL, "The model gateway answered "
                               "this request with an error (%s). Nothing was charged.", e->type);
    if (e->status == 0)
        return prov_error_make(p, PROV_E_GATEWAY_ERROR, NULL, "The model's answer was "
                               "interrupted by an error upstream (%s).", e->type);
    if (e->kind == PROV_GWERR_INVALID_REQUEST)
        return prov_error_make(p, PROV_E_INVALID_REQUEST, NULL, "The model refused this "
                               "request as invalid (HTTP %d from the model gateway). Nothing "
                               "was charged.", e->status);
    return prov_error_make(p, PROV_E_GATEWAY_ERROR, NULL, "The model gateway failed to "
                           "answer this request (HTTP %d). Nothing was charged.", e->status);
}

const char *prov_gwerror_anthropic_event(const prov_gwerror_t *e, apr_pool_t *p)
{
    const prov_error_t *c = prov_gwerror_client(e, p);
    json_object *root = prov_json_own(json_object_new_object(), p);
    json_object *err = json_object_new_object();
    json_object_object_add(root, "type", json_object_new_string("error"));
    json_object_object_add(err, "type", json_object_new_string(e->type));
    json_object_object_add(err, "message", json_object_new_string(c->message));
    json_object_object_add(err, "code", json_object_new_string(prov_error_info(c->code)->code));
    json_object_object_add(root, "error", err);
    return prov_sse_encode("error", prov_json_dump(root, p), p);
}
