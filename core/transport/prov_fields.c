/* prov_fields.c: the top-level request members of each inference transport
 * (Chat Completions, Messages and its count_tokens, Responses), what the
 * parse does with each (forwards it, consumes it, refuses it with a message
 * of its own) and whether the fast path takes it; and the check both parse
 * paths make against that one table: a member outside it never reaches the
 * gateway, the request gets a 400 naming it. docs/internals/transports.md
 * ("The fields") lists the same tables with the reasons. */
#include <string.h>
#include "prov_fields.h"
#include "prov_money.h"

#define FWD  PROV_FIELD_FORWARD
#define CON  PROV_FIELD_CONSUME
#define REF  PROV_FIELD_REFUSE
#define FAST PROV_FIELD_FAST

/* Chat Completions: relayed, so every forwarded member reaches the gateway
 * as the client wrote it (model's value replaced). */
const prov_field_t prov_chat_fields[] = {
    { "model", FWD | FAST },            { "messages", FWD | FAST },
    { "max_tokens", FWD | FAST },       { "max_completion_tokens", FWD | FAST },
    { "n", FWD | FAST },                { "stream", FWD | FAST },   /* false only */
    { "temperature", FWD | FAST },      { "top_p", FWD | FAST },
    { "stop", FWD | FAST },             { "presence_penalty", FWD | FAST },
    { "frequency_penalty", FWD | FAST },{ "seed", FWD | FAST },
    { "user", FWD | FAST },             { "safety_identifier", FWD | FAST },
    { "prompt_cache_key", FWD | FAST }, { "response_format", FWD | FAST },
    { "logit_bias", FWD | FAST },       { "logprobs", FWD | FAST },
    { "top_logprobs", FWD | FAST },     { "metadata", FWD | FAST },
    { "store", FWD | FAST },            { "reasoning_effort", FWD | FAST },
    { "verbosity", FWD | FAST },
    { "message", CON },                 /* legacy: made "messages" */
    { "stream_options", CON },          /* dropped (no streaming here) */
    { "service_tier", CON },            /* dropped: the default tier, which the catalog prices */
    { "tools", REF | FAST },            { "functions", REF | FAST },
    { "tool_choice", REF | FAST },      { "function_call", REF | FAST },
    { "parallel_tool_calls", REF | FAST },
    { NULL, 0 }
};

/* Messages (and count_tokens, which drops what that endpoint does not take):
 * relayed natively, normalised. */
const prov_field_t prov_messages_fields[] = {
    { "model", FWD | FAST },            { "messages", FWD | FAST },
    { "max_tokens", FWD | FAST },       { "system", FWD | FAST },
    { "stream", FWD | FAST },           { "metadata", FWD | FAST },
    { "stop_sequences", FWD | FAST },   { "temperature", FWD | FAST },
    { "top_p", FWD | FAST },            { "top_k", FWD | FAST },
    { "tools", FWD | FAST },            /* the fast path takes only null */
    { "tool_choice", FWD | FAST },      { "output_config", FWD | FAST },
    { "context_management", FWD | CON },/* clear_thinking edits dropped */
    { "thinking", CON },                /* checked, then dropped */
    { "cache_control", CON },           /* dropped */
    { "service_tier", CON },            /* dropped: the default tier, which the catalog prices */
    { NULL, 0 }
};

/* Responses: translated into a Chat Completions body; only what the
 * translation writes reaches the gateway. */
const prov_field_t prov_resp_fields[] = {
    { "model", FWD | FAST },            { "input", FWD | FAST },
    { "instructions", FWD | FAST },     { "stream", FWD | FAST },
    { "max_output_tokens", FWD | FAST },{ "temperature", FWD | FAST },
    { "top_p", FWD | FAST },
    { "tools", FWD | FAST },            /* the fast path takes only null */
    { "tool_choice", FWD | FAST },      /* likewise */
    { "parallel_tool_calls", FWD | FAST }, /* with tools only */
    { "text", FWD },                    /* text.format: response_format */
    { "store", CON | FAST },            { "metadata", CON | FAST },
    { "user", CON | FAST },
    { "reasoning", CON },               { "include", CON },
    { "prompt_cache_key", CON },        { "client_metadata", CON },
    { "service_tier", CON },            { "truncation", CON },
    { "safety_identifier", CON },       { "stream_options", CON },
    { "background", CON },              /* true is refused */
    { "previous_response_id", REF },    { "conversation", REF },
    { "prompt", REF },
    { NULL, 0 }
};

const prov_field_t *prov_fields_find(const prov_field_t *set, const char *key,
                                     apr_size_t klen)
{
    for (; set->name; set++) {
        if (klen && set->name[0] == key[0] && !strncmp(set->name, key, klen)
            && !set->name[klen])
            return set;
    }
    return NULL;
}

/* key cut to PROV_FIELD_NAME_MAX bytes, not inside a UTF-8 character. */
static const char *quoted_name(const char *key, apr_pool_t *p)
{
    apr_size_t n = strlen(key);
    if (n <= PROV_FIELD_NAME_MAX)
        return key;
    n = PROV_FIELD_NAME_MAX;
    while (n > 0 && ((unsigned char)key[n] & 0xC0) == 0x80)
        n--;
    return apr_pstrcat(p, apr_pstrmemdup(p, key, n), "...", NULL);
}

apr_status_t prov_fields_check(prov_error_t **err, const prov_field_t *set, json_object *obj,
                               int anthropic, apr_pool_t *p)
{
    json_object_object_foreach(obj, key, val) {
        const char *name;
        (void)val;
        if (prov_fields_find(set, key, strlen(key)))
            continue;
        name = quoted_name(key, p);
        *err = anthropic
            ? prov_error_make(p, PROV_E_INVALID_REQUEST, name,
                              "%s: Extra inputs are not permitted", name)
            : prov_error_make(p, PROV_E_INVALID_REQUEST, name,
                              "Unrecognized request argument supplied: %s", name);
        return APR_EINVAL;
    }
    return APR_SUCCESS;
}

int prov_fields_fast(const prov_field_t *set, const prov_jobject_t *o)
{
    int i;
    for (i = 0; i < o->n; i++) {
        const prov_field_t *f = prov_fields_find(set, o->m[i].key, o->m[i].klen);
        if (!f || !(f->how & PROV_FIELD_FAST)
            || ((f->how & PROV_FIELD_REFUSE) && !prov_json_scan_is(&o->m[i], "null")))
            return 0;
    }
    return 1;
}

apr_status_t prov_fields_output_cap(apr_int64_t *out, prov_error_t **err, json_object *v,
                                    const char *name, apr_pool_t *p)
{
    apr_int64_t n;
    if (!json_object_is_type(v, json_type_int) || (n = json_object_get_int64(v)) < 1) {
        *err = prov_error_make(p, PROV_E_INVALID_REQUEST, name,
                               "'%s' must be a positive integer", name);
        return APR_EINVAL;
    }
    if (n > PROV_OUTPUT_TOKENS_MAX) {
        *err = prov_error_make(p, PROV_E_INVALID_REQUEST, name,
                               "'%s' must be at most %" APR_INT64_T_FMT " (the largest "
                               "output this service allows for one request)",
                               name, PROV_OUTPUT_TOKENS_MAX);
        return APR_EINVAL;
    }
    *out = n;
    return APR_SUCCESS;
}
