/*
 * mockgw_route.c — request routing, authentication and the request-level
 * faults of the mock gateway.
 *
 * Owns the endpoint table (health, models, the _last inspection endpoint, the
 * inference endpoints and 404), the service-token check, the recording of the
 * last POST request for GET /v1/_last (under a mutex), the error shapes of both
 * API families, the faults that replace an answer (reset, delay, 500, 429,
 * overflow, overloaded, 529, malformed) with each family's wording, and the
 * error events of the error-event faults. The faults that shape an answer on the wire (cut,
 * trickle) are passed on in the context and applied by mockgw_http.c.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mockgw.h"

/* ---- the last POST request, for GET /v1/_last ---- */

static struct {
    pthread_mutex_t mu;
    unsigned long seq;      /* POST requests recorded so far */
    char *method, *path, *query;
    char *headers;          /* packed "name\0value\0" pairs */
    size_t nheaders;
    char *body;
    size_t body_len;
} last = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Records r, taking ownership of its body. */
static void last_record(mgw_request_t *r)
{
    size_t size = 0, i;
    char *packed, *p, *old[5];

    for (i = 0; i < r->nheaders; i++)
        size += strlen(r->headers[i].name) + strlen(r->headers[i].value) + 2;
    p = packed = mgw_xmalloc(size);
    for (i = 0; i < r->nheaders; i++) {
        size_t n = strlen(r->headers[i].name) + 1;
        memcpy(p, r->headers[i].name, n);
        p += n;
        n = strlen(r->headers[i].value) + 1;
        memcpy(p, r->headers[i].value, n);
        p += n;
    }
    char *method = mgw_xstrdup(r->method), *path = mgw_xstrdup(r->path);
    char *query = r->query ? mgw_xstrdup(r->query) : NULL;

    pthread_mutex_lock(&last.mu);
    old[0] = last.method;
    old[1] = last.path;
    old[2] = last.query;
    old[3] = last.headers;
    old[4] = last.body;
    last.seq++;
    last.method = method;
    last.path = path;
    last.query = query;
    last.headers = packed;
    last.nheaders = r->nheaders;
    last.body = r->body;
    last.body_len = r->body_len;
    pthread_mutex_unlock(&last.mu);
    r->body = NULL;
    r->body_len = 0;
    for (i = 0; i < 5; i++)
        free(old[i]);
}

static json_object *opt_string(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

static json_object *last_to_json(void)
{
    json_object *o = json_object_new_object(), *h = json_object_new_object();
    json_object *body = NULL;

    pthread_mutex_lock(&last.mu);
    mgw_jset(o, "seq", json_object_new_int64((int64_t)last.seq));
    mgw_jset(o, "method", opt_string(last.method));
    mgw_jset(o, "path", opt_string(last.path));
    mgw_jset(o, "query", opt_string(last.query));
    const char *p = last.headers;
    for (size_t i = 0; i < last.nheaders; i++) {
        const char *name = p, *value = p + strlen(p) + 1;
        json_object *prev;
        p = value + strlen(value) + 1;
        if (json_object_object_get_ex(h, name, &prev)) {
            /* a repeated header is shown as its values joined by ", " */
            mgw_buf_t joined = { 0 };
            mgw_buf_printf(&joined, "%s, %s", json_object_get_string(prev), value);
            json_object_object_add(h, name, json_object_new_string(joined.p));
            mgw_buf_free(&joined);
        } else {
            json_object_object_add(h, name, json_object_new_string(value));
        }
    }
    if (last.body && mgw_json_parse(last.body, last.body_len, &body) != 0)
        body = json_object_new_string_len(last.body, (int)last.body_len);
    pthread_mutex_unlock(&last.mu);
    mgw_jset(o, "headers", h);
    mgw_jset(o, "body", body);
    return o;
}

/* ---- answers ---- */

static int send_json_f(mgw_ctx_t *x, int status, json_object *o,
                       const mgw_fault_t *f, const char *extra)
{
    size_t len;
    const char *s = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    int ret = mgw_http_respond(x->conn, status, "application/json", extra, s,
                               len, f);
    json_object_put(o);
    return ret;
}

int mgw_send_json(mgw_ctx_t *x, int status, json_object *o)
{
    return send_json_f(x, status, o, &x->fault, NULL);
}

int mgw_send_openai_error_p(mgw_ctx_t *x, int status, const char *type,
                            const char *code, const char *param,
                            const char *message, const char *extra_headers)
{
    json_object *o = json_object_new_object(), *e = json_object_new_object();

    mgw_jset(e, "message", json_object_new_string(message));
    mgw_jset(e, "type", json_object_new_string(type));
    mgw_jset(e, "param", param ? json_object_new_string(param) : NULL);
    mgw_jset(e, "code", code ? json_object_new_string(code) : NULL);
    mgw_jset(o, "error", e);
    return send_json_f(x, status, o, NULL, extra_headers);
}

int mgw_send_openai_error(mgw_ctx_t *x, int status, const char *type,
                          const char *code, const char *message,
                          const char *extra_headers)
{
    return mgw_send_openai_error_p(x, status, type, code, NULL, message,
                                   extra_headers);
}

int mgw_send_anthropic_error(mgw_ctx_t *x, int status, const char *type,
                             const char *message, const char *extra_headers)
{
    json_object *o = json_object_new_object(), *e = json_object_new_object();

    mgw_jset(o, "type", json_object_new_string("error"));
    mgw_jset(e, "type", json_object_new_string(type));
    mgw_jset(e, "message", json_object_new_string(message));
    mgw_jset(o, "error", e);
    return send_json_f(x, status, o, NULL, extra_headers);
}

/* Sends an error in the family's shape. oa_code is OpenAI's error.code. */
static int family_error(mgw_ctx_t *x, mgw_family_t fam, int status,
                        const char *type, const char *oa_code, const char *msg,
                        const char *extra)
{
    if (fam == MGW_FAMILY_ANTHROPIC)
        return mgw_send_anthropic_error(x, status, type, msg, extra);
    return mgw_send_openai_error(x, status, type, oa_code, msg, extra);
}

/* ---- faults and overrides ---- */

/* Reads the faults of the request into x->fault. Returns 0, or -1 if one is
 * unknown. */
static int read_faults(mgw_ctx_t *x, const char *model)
{
    const char *h = mgw_request_header(x->req, "x-mock-fault");

    mgw_fault_init(&x->fault);
    if (mgw_fault_parse_model(&x->fault, model))
        return -1;
    if (h && mgw_fault_parse(&x->fault, h))
        return -1;
    if (x->fault.first >= 0) {
        mgw_buf_t key = { 0 };
        mgw_buf_printf(&key, "%s\n%s", model ? model : "", h ? h : "");
        if (!mgw_fault_first_applies(&x->fault, key.p))
            mgw_fault_init(&x->fault);
        mgw_buf_free(&key);
    }
    if (model && strcmp(model, "slow-model") == 0 && x->fault.delay_ms < 0)
        x->fault.delay_ms = 3000;
    return 0;
}

void mgw_leak_message(mgw_buf_t *out, const char *path)
{
    mgw_buf_printf(out, "upstream call to %s%s failed; the request carried "
                   "Authorization: Bearer %s", mgw_cfg.self_url, path, mgw_cfg.token);
}

/* What the gateway answers for a refusal fault, in each family. */
typedef struct {
    mgw_fault_kind_t kind;
    int status;
    const char *type, *code, *param, *message;
} refusal_t;

static const refusal_t openai_refusals[] = {
    { MGW_FAULT_500, 500, "server_error", "internal_error", NULL,
      "mock gateway internal error" },
    { MGW_FAULT_429, 429, "rate_limit_error", "rate_limit_exceeded", NULL,
      "mock gateway rate limit" },
    { MGW_FAULT_404, 404, "invalid_request_error", "not_found", NULL,
      "mock gateway: no such endpoint" },
    { MGW_FAULT_OVERFLOW, 400, "invalid_request_error", "context_length_exceeded",
      "messages", "This model's maximum context length is 200000 tokens. "
      "However, your messages resulted in 250000 tokens." },
    { MGW_FAULT_OVERLOADED, 503, "server_error", "server_is_overloaded", NULL,
      "The server is overloaded or not ready yet." },
    { MGW_FAULT_529, 529, "overloaded_error", NULL, NULL, "Overloaded" },
};

static const refusal_t anthropic_refusals[] = {
    { MGW_FAULT_500, 500, "api_error", NULL, NULL, "mock gateway internal error" },
    { MGW_FAULT_429, 429, "rate_limit_error", NULL, NULL, "mock gateway rate limit" },
    { MGW_FAULT_404, 404, "not_found_error", NULL, NULL,
      "mock gateway: no such endpoint" },
    { MGW_FAULT_OVERFLOW, 400, "invalid_request_error", NULL, NULL,
      "prompt is too long: 250000 tokens > 200000 maximum" },
    { MGW_FAULT_OVERLOADED, 529, "overloaded_error", NULL, NULL, "Overloaded" },
    { MGW_FAULT_529, 529, "overloaded_error", NULL, NULL, "Overloaded" },
};

/* Returns the family's refusal of kind, or NULL if kind is not one. */
static const refusal_t *refusal_of(mgw_family_t fam, mgw_fault_kind_t kind)
{
    const refusal_t *t = fam == MGW_FAMILY_ANTHROPIC ? anthropic_refusals
                                                     : openai_refusals;
    size_t n = sizeof openai_refusals / sizeof openai_refusals[0];

    for (size_t i = 0; i < n; i++)
        if (t[i].kind == kind)
            return &t[i];
    return NULL;
}

/* Answers the refusal r with its Retry-After: the fault's, or 1 on a 429. */
static int send_refusal(mgw_ctx_t *x, mgw_family_t fam, const refusal_t *r)
{
    long ra = x->fault.retry_after >= 0 ? x->fault.retry_after
              : (r->kind == MGW_FAULT_429 ? 1 : -1);
    char extra[64] = "";

    if (ra >= 0)
        snprintf(extra, sizeof extra, "Retry-After: %ld\r\n", ra);
    if (fam == MGW_FAMILY_ANTHROPIC)
        return mgw_send_anthropic_error(x, r->status, r->type, r->message, extra);
    return mgw_send_openai_error_p(x, r->status, r->type, r->code, r->param,
                                   r->message, extra);
}

void mgw_events_fail(mgw_ctx_t *x, mgw_events_t *e, mgw_family_t fam)
{
    size_t keep = x->fault.event_first ? 0 : (e->n / 2 ? e->n / 2 : (e->n ? 1 : 0));
    const refusal_t *r = refusal_of(fam, x->fault.event_error);
    json_object *o = json_object_new_object(), *err = json_object_new_object();
    mgw_buf_t msg = { 0 };

    if (keep < e->n) {
        e->n = keep;
        e->data.len = keep ? e->ends[keep - 1] : 0;
        if (e->data.p)
            e->data.p[e->data.len] = '\0';
    }
    if (r)
        mgw_buf_puts(&msg, r->message);
    else
        mgw_leak_message(&msg, x->req->path);
    mgw_jset(err, "message", json_object_new_string(msg.p));
    if (fam == MGW_FAMILY_ANTHROPIC) {
        mgw_jset(o, "type", json_object_new_string("error"));
        mgw_jset(err, "type", json_object_new_string(r ? r->type : "overloaded_error"));
        mgw_jset(o, "error", err);
        mgw_events_add(e, "error", o);
    } else {
        mgw_jset(err, "type", json_object_new_string(r ? r->type : "server_error"));
        mgw_jset(err, "param", r && r->param ? json_object_new_string(r->param) : NULL);
        mgw_jset(err, "code", json_object_new_string(r ? r->code : "internal_error"));
        mgw_jset(o, "error", err);
        mgw_events_add(e, NULL, o);
    }
    mgw_buf_free(&msg);
}

/* The leak and error-event faults outside a stream. Returns 1 with *ret set
 * if it answered, 0 for a stream (the handler applies error-event). */
static int answer_leak(mgw_ctx_t *x, mgw_family_t fam, int *ret)
{
    bool an = fam == MGW_FAMILY_ANTHROPIC;
    json_object *st = mgw_json_get(x->body, "stream", json_type_boolean);
    mgw_buf_t msg = { 0 };

    if (x->fault.kind == MGW_FAULT_ERROR_EVENT && st && json_object_get_boolean(st))
        return 0;
    if (x->fault.kind == MGW_FAULT_ERROR_EVENT && x->fault.event_error != MGW_FAULT_LEAK) {
        *ret = send_refusal(x, fam, refusal_of(fam, x->fault.event_error));
        return 1;
    }
    mgw_leak_message(&msg, x->req->path);
    if (x->fault.kind == MGW_FAULT_LEAK)
        *ret = family_error(x, fam, 400, "invalid_request_error", "invalid_request",
                            msg.p, NULL);
    else
        *ret = family_error(x, fam, 500, an ? "api_error" : "server_error",
                            "internal_error", msg.p, NULL);
    mgw_buf_free(&msg);
    return 1;
}

/* Answers the faults that replace the answer. Returns 1 with *ret set if it
 * answered, else 0 (after any delay). */
static int answer_faults(mgw_ctx_t *x, mgw_family_t fam, int *ret)
{
    static const char broken[] = "{\"id\": \"broken";
    const refusal_t *r;

    if (x->fault.kind == MGW_FAULT_RESET) {
        *ret = mgw_http_reset(x->conn);
        return 1;
    }
    mgw_sleep_ms(x->fault.delay_ms);
    if ((r = refusal_of(fam, x->fault.kind)) != NULL) {
        *ret = send_refusal(x, fam, r);
        return 1;
    }
    switch (x->fault.kind) {
    case MGW_FAULT_LEAK:
    case MGW_FAULT_ERROR_EVENT:
        return answer_leak(x, fam, ret);
    case MGW_FAULT_MALFORMED:
        *ret = mgw_http_respond(x->conn, 200, "application/json", NULL, broken,
                                sizeof broken - 1, NULL);
        return 1;
    default:
        return 0;
    }
}

/* The counts of a "USAGE:" line in the last user message's text, where
 * neither the header nor the body field gave them. Returns -1 if malformed. */
static int usage_from_last_user(mgw_ctx_t *x)
{
    json_object *messages = mgw_json_get(x->body, "messages", json_type_array);
    json_object *last = NULL, *content = NULL;
    mgw_buf_t t = { 0 };
    size_t n = messages ? json_object_array_length(messages) : 0;
    int ret;

    for (size_t i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(messages, i);
        const char *role = mgw_json_str(m, "role");
        if (role && strcmp(role, "user") == 0)
            last = m;
    }
    if (!last || !json_object_object_get_ex(last, "content", &content))
        return 0;
    mgw_content_text(content, &t);
    ret = t.p ? mgw_usage_from_text(&x->usage, t.p) : 0;
    mgw_buf_free(&t);
    return ret;
}

static int inference(mgw_ctx_t *x, mgw_family_t fam, bool body_ok,
                     int (*handler)(mgw_ctx_t *))
{
    const char *h;
    json_object *mu;
    int ret;

    if (fam == MGW_FAMILY_ANTHROPIC
        && !mgw_request_header(x->req, "anthropic-version"))
        return mgw_send_anthropic_error(x, 400, "invalid_request_error",
                                        "anthropic-version: header is required",
                                        NULL);
    if (!body_ok)
        return family_error(x, fam, 400, "invalid_request_error",
                            "invalid_json", "request body is not a JSON object",
                            NULL);
    if (read_faults(x, mgw_json_str(x->body, "model")))
        return family_error(x, fam, 400, "invalid_request_error", "invalid_fault",
                            "unknown mock fault in x-mock-fault or model", NULL);
    mgw_usage_init(&x->usage);
    /* at the top (a direct call) or in metadata, which mod_provider forwards
     * on chat and messages (it refuses unknown top-level fields) */
    if ((json_object_object_get_ex(x->body, "mock_usage", &mu)
         || json_object_object_get_ex(json_object_object_get(x->body, "metadata"),
                                      "mock_usage", &mu))
        && mgw_usage_parse_json(&x->usage, mu))
        return family_error(x, fam, 400, "invalid_request_error", "invalid_mock_usage",
                            "mock_usage must be an object of non-negative integers "
                            "(prompt, completion, cached, reasoning, creation)", NULL);
    h = mgw_request_header(x->req, "x-mock-usage");
    if (h && mgw_usage_parse_header(&x->usage, h))
        return family_error(x, fam, 400, "invalid_request_error", "invalid_mock_usage",
                            "x-mock-usage must read prompt=P,completion=C,"
                            "cached=K,reasoning=R", NULL);
    if (usage_from_last_user(x))
        return family_error(x, fam, 400, "invalid_request_error", "invalid_mock_usage",
                            "a USAGE: line must read USAGE: prompt=P,completion=C,... "
                            "with 64-bit integers", NULL);
    if (answer_faults(x, fam, &ret))
        return ret;
    return handler(x);
}

/* ---- the other endpoints ---- */

static bool authorized(const mgw_request_t *r)
{
    const char *a = mgw_request_header(r, "authorization");

    if (!a || strncasecmp(a, "Bearer ", 7) != 0)
        return false;
    a += 7;
    while (*a == ' ')
        a++;
    return strcmp(a, mgw_cfg.token) == 0;
}

static int models(mgw_ctx_t *x)
{
    const char *h = mgw_request_header(x->req, "x-mock-fault");
    int ret;

    mgw_fault_init(&x->fault);
    if (h && mgw_fault_parse(&x->fault, h))
        return mgw_send_openai_error(x, 400, "invalid_request_error",
                                     "invalid_fault", "unknown mock fault", NULL);
    if (answer_faults(x, MGW_FAMILY_OPENAI, &ret))
        return ret;
    return mgw_http_respond(x->conn, 200, "application/json", NULL,
                            mgw_cfg.models_json, strlen(mgw_cfg.models_json),
                            &x->fault);
}

/* GET /v1/_ack?n=N: the client of the lockstep stream has N pieces. */
static int ack(mgw_ctx_t *x)
{
    const char *q = x->req->query;
    char *end;
    long n = q && strncmp(q, "n=", 2) == 0 ? strtol(q + 2, &end, 10) : -1;

    if (n < 0 || *end)
        return mgw_send_openai_error(x, 400, "invalid_request_error", "invalid_ack",
                                     "GET /v1/_ack?n=N with N >= 0", NULL);
    mgw_lockstep_ack(n);
    return mgw_send_json(x, 200, json_object_new_object());
}

int mgw_route(mgw_conn_t *c, mgw_request_t *r)
{
    static const char ok[] = "{\"ok\":true}";
    mgw_ctx_t x;
    const char *path = r->path;
    bool get = strcmp(r->method, "GET") == 0;
    bool post = strcmp(r->method, "POST") == 0;
    bool body_ok = false;
    int ret;

    memset(&x, 0, sizeof x);
    x.conn = c;
    x.req = r;
    mgw_fault_init(&x.fault);
    if (post) {
        x.body_bytes = r->body_len;
        if (r->body_len > 0 && mgw_json_parse(r->body, r->body_len, &x.body) == 0)
            body_ok = x.body && json_object_is_type(x.body, json_type_object);
        last_record(r);
    }

    if (get && strcmp(path, "/health") == 0)
        ret = mgw_http_respond(c, 200, "application/json", NULL, ok,
                               sizeof ok - 1, NULL);
    else if (!authorized(r))
        ret = mgw_send_openai_error(&x, 401, "authentication_error",
                                    "invalid_token", "invalid service token", NULL);
    else if (get && strcmp(path, "/v1/models") == 0)
        ret = models(&x);
    else if (get && strcmp(path, "/v1/_last") == 0)
        ret = send_json_f(&x, 200, last_to_json(), NULL, NULL);
    else if (get && strcmp(path, "/v1/_ack") == 0)
        ret = ack(&x);
    else if (get && strcmp(path, "/v1/_lockstep") == 0)
        ret = send_json_f(&x, 200, mgw_lockstep_json(), NULL, NULL);
    else if (post && strcmp(path, "/v1/chat/completions") == 0)
        ret = inference(&x, MGW_FAMILY_OPENAI, body_ok, mgw_openai_chat);
    else if (post && strcmp(path, "/v1/messages") == 0)
        ret = inference(&x, MGW_FAMILY_ANTHROPIC, body_ok, mgw_anthropic_messages);
    else if (post && strcmp(path, "/v1/messages/count_tokens") == 0)
        ret = inference(&x, MGW_FAMILY_ANTHROPIC, body_ok,
                        mgw_anthropic_count_tokens);
    else {
        mgw_buf_t msg = { 0 };
        mgw_buf_printf(&msg, "no route for %s %s", r->method, path);
        ret = mgw_send_openai_error(&x, 404, "invalid_request_error", "not_found",
                                    msg.p, NULL);
        mgw_buf_free(&msg);
    }
    json_object_put(x.body);
    if (mgw_cfg.verbose)
        fprintf(stderr, "mockgw: %s %s -> %d%s\n", r->method, path,
                c->last_status, ret < 0 ? " (close)" : "");
    return ret;
}
