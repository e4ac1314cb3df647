/* prov_error.c: the error table (wire code, HTTP status, OpenAI and Anthropic
 * error types) and the two error body shapes. Every refusal the service gives
 * goes through here, so a code means the same on every transport. */
#include <stdarg.h>
#include <string.h>
#include "prov_error.h"
#include "prov_json.h"

static const prov_errinfo_t table[PROV_E__COUNT] = {
    [PROV_E_INVALID_REQUEST]        = { "INVALID_REQUEST", 400, "invalid_request_error", "invalid_request_error" },
    [PROV_E_INVALID_API_KEY]        = { "INVALID_API_KEY", 401, "authentication_error", "authentication_error" },
    [PROV_E_USER_BLOCKED]           = { "USER_BLOCKED", 403, "permission_error", "permission_error" },
    [PROV_E_NOT_FOUND]              = { "NOT_FOUND", 404, "invalid_request_error", "not_found_error" },
    [PROV_E_MODEL_NOT_FOUND]        = { "MODEL_NOT_FOUND", 404, "invalid_request_error", "not_found_error" },
    [PROV_E_METHOD_NOT_ALLOWED]     = { "METHOD_NOT_ALLOWED", 405, "invalid_request_error", "invalid_request_error" },
    [PROV_E_REQUEST_TOO_LARGE]      = { "REQUEST_TOO_LARGE", 413, "invalid_request_error", "request_too_large" },
    [PROV_E_UNSUPPORTED_MEDIA_TYPE] = { "UNSUPPORTED_MEDIA_TYPE", 415, "invalid_request_error", "invalid_request_error" },
    [PROV_E_INSUFFICIENT_CREDITS]   = { "INSUFFICIENT_CREDITS", 402, "insufficient_quota", "billing_error" },
    [PROV_E_KEY_BUDGET_EXCEEDED]    = { "API_KEY_CREDIT_BUDGET_EXCEEDED", 429, "rate_limit_error", "rate_limit_error" },
    [PROV_E_QUOTA_EXCEEDED]         = { "SUBSCRIPTION_QUOTA_EXCEEDED", 429, "usage_limit_reached", "rate_limit_error" },
    [PROV_E_IDENTITY_ALREADY_LINKED] = { "IDENTITY_ALREADY_LINKED", 409, "invalid_request_error", "invalid_request_error" },
    [PROV_E_NOT_SIGNED_IN]          = { "NOT_SIGNED_IN", 401, "authentication_error", "authentication_error" },
    [PROV_E_CROSS_SITE]             = { "CROSS_SITE_REQUEST", 403, "permission_error", "permission_error" },
    [PROV_E_LAST_IDENTITY]          = { "LAST_IDENTITY", 409, "invalid_request_error", "invalid_request_error" },
    [PROV_E_KEY_NOT_FOUND]          = { "KEY_NOT_FOUND", 404, "invalid_request_error", "not_found_error" },
    [PROV_E_INTERNAL]               = { "INTERNAL_ERROR", 500, "server_error", "api_error" },
    [PROV_E_GATEWAY_ERROR]          = { "GATEWAY_ERROR", 502, "server_error", "api_error" },
    [PROV_E_SERVICE_UNAVAILABLE]    = { "SERVICE_UNAVAILABLE", 503, "server_error", "overloaded_error" },
    [PROV_E_MODEL_NOT_PRICED]       = { "MODEL_NOT_PRICED", 503, "server_error", "api_error" },
    [PROV_E_GATEWAY_TIMEOUT]        = { "GATEWAY_TIMEOUT", 504, "timeout_error", "timeout_error" },
    [PROV_E_STREAM_MAX_DURATION]    = { "STREAM_MAX_DURATION", 504, "timeout_error", "timeout_error" },
    [PROV_E_CONTEXT_LENGTH]         = { "context_length_exceeded", 400, "invalid_request_error", "invalid_request_error" },
    [PROV_E_UPSTREAM_RATE_LIMIT]    = { "rate_limit_exceeded", 429, "rate_limit_error", "rate_limit_error" },
    [PROV_E_UPSTREAM_OVERLOADED]    = { "server_is_overloaded", 503, "server_error", "overloaded_error", 529 },
    [PROV_E_KEY_EXPIRED]            = { "API_KEY_EXPIRED", 401, "authentication_error", "authentication_error" },
    [PROV_E_MODEL_NOT_ALLOWED]      = { "MODEL_NOT_ALLOWED", 403, "permission_error", "permission_error" },
    [PROV_E_ADDRESS_NOT_ALLOWED]    = { "ADDRESS_NOT_ALLOWED", 403, "permission_error", "permission_error" },
    [PROV_E_KEY_RATE_LIMITED]       = { "API_KEY_RATE_LIMITED", 429, "rate_limit_error", "rate_limit_error" },
    [PROV_E_KEY_IN_FLIGHT_LIMIT]    = { "API_KEY_IN_FLIGHT_LIMIT", 429, "rate_limit_error", "rate_limit_error" },
    [PROV_E_KEY_NAME_TAKEN]         = { "KEY_NAME_TAKEN", 409, "invalid_request_error", "invalid_request_error" },
};

const prov_errinfo_t *prov_error_info(prov_errcode_e code)
{
    if ((int)code < 0 || code >= PROV_E__COUNT)
        code = PROV_E_INTERNAL;
    return &table[code];
}

int prov_error_status(prov_errcode_e code, int anthropic)
{
    const prov_errinfo_t *info = prov_error_info(code);
    return anthropic && info->anthropic_status ? info->anthropic_status : info->status;
}

const prov_errinfo_t *prov_error_by_name(const char *name)
{
    int i;
    for (i = 0; name && i < PROV_E__COUNT; i++) {
        if (!strcmp(table[i].code, name))
            return &table[i];
    }
    return NULL;
}

prov_error_t *prov_error_make(apr_pool_t *p, prov_errcode_e code, const char *param,
                              const char *fmt, ...)
{
    prov_error_t *e = apr_pcalloc(p, sizeof(*e));
    va_list ap;

    e->code = code;
    e->param = param ? apr_pstrdup(p, param) : NULL;
    va_start(ap, fmt);
    e->message = apr_pvsprintf(p, fmt, ap);
    va_end(ap);
    return e;
}

const char *prov_error_openai_json(const prov_error_t *e, apr_pool_t *p)
{
    const prov_errinfo_t *info = prov_error_info(e->code);
    json_object *root = prov_json_own(json_object_new_object(), p);
    json_object *err = json_object_new_object();

    json_object_object_add(err, "message", json_object_new_string(e->message));
    json_object_object_add(err, "type", json_object_new_string(info->openai_type));
    json_object_object_add(err, "param", e->param ? json_object_new_string(e->param) : NULL);
    json_object_object_add(err, "code", json_object_new_string(info->code));
    if (e->retry_after > 0) {
        /* When capacity returns, for clients that show it (Codex reads
         * resets_at / resets_in_seconds on a usage limit). */
        json_object_object_add(err, "resets_in_seconds", json_object_new_int64(e->retry_after));
        json_object_object_add(err, "resets_at", json_object_new_int64(prov_now() + e->retry_after));
    }
    json_object_object_add(root, "error", err);
    return prov_json_dump(root, p);
}

const char *prov_error_anthropic_json(const prov_error_t *e, apr_pool_t *p)
{
    const prov_errinfo_t *info = prov_error_info(e->code);
    json_object *root = prov_json_own(json_object_new_object(), p);
    json_object *err = json_object_new_object();

    json_object_object_add(root, "type", json_object_new_string("error"));
    json_object_object_add(err, "type", json_object_new_string(info->anthropic_type));
    json_object_object_add(err, "message", json_object_new_string(e->message));
    json_object_object_add(err, "code", json_object_new_string(info->code));
    json_object_object_add(root, "error", err);
    return prov_json_dump(root, p);
}
