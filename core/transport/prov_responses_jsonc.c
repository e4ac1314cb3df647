/* prov_responses_jsonc.c: the Responses stream's json-c reader: a gateway
 * chunk that the scanner (prov_responses_fast.c) does not plainly recognise
 * (an error chunk, escaped keys, odd Unicode, deep nesting...) parsed with
 * json-c and applied through the operations (prov_responses_ops.c) as the
 * translator always did; the gateway's error chunk kept for the log. The
 * stream has its events built by the tree emitter meanwhile
 * (prov_responses_stream.c). With prov_resp_stream_tree_only every chunk
 * comes here: the reference that the fast reader is compared with. */
#include <string.h>
#include "prov_responses_stream_int.h"

static apr_status_t add_call_delta(prov_resp_stream_t *s, json_object *tc)
{
    json_object *fn = prov_json_get(tc, "function", json_type_object);
    json_object *jidx = prov_json_get(tc, "index", json_type_int);
    json_object *args = prov_json_get(fn, "arguments", json_type_string);
    apr_int64_t idx = jidx ? json_object_get_int64(jidx) : 0;
    prov_resp_call_t *c;
    apr_status_t rv;

    if (idx < 0 || idx > 1024)
        return APR_EINVAL;
    c = prov_resp_call_at(s, (int)idx);
    if (c->index < 0) {
        const char *name = prov_json_get_str(fn, "name");
        const char *id = prov_json_get_str(tc, "id");
        rv = prov_resp_op_open_call(s, c, id, id ? strlen(id) : 0, name, name ? strlen(name) : 0);
        if (rv != APR_SUCCESS)
            return rv;
    }
    if (!args)
        return APR_SUCCESS;
    return prov_resp_op_args(s, c, json_object_get_string(args),
                             (apr_size_t)json_object_get_string_len(args));
}

static apr_status_t on_chunk(prov_resp_stream_t *s, json_object *chunk)
{
    json_object *choices, *choice, *delta, *calls, *v;
    const char *finish;
    apr_status_t rv;
    size_t i;

    if (!json_object_is_type(chunk, json_type_object))
        return APR_EINVAL;
    if (prov_json_get(chunk, "error", json_type_object)) {
        /* Kept for the log; the client never gets the gateway's words. */
        const char *raw_text = json_object_to_json_string_ext(chunk, JSON_C_TO_STRING_PLAIN);
        prov_gwerror_read(&s->gw_error, 0, raw_text, strlen(raw_text), s->p);
        s->gw_failed = 1;
        return APR_EINVAL;
    }
    if ((rv = prov_resp_op_start(s)) != APR_SUCCESS)
        return rv;
    if (json_object_object_get_ex(chunk, "usage", &v) && v) {
        prov_chat_usage_t u;            /* null: no report (every chunk but the last) */
        prov_resp_usage_take(s, &u, prov_chat_usage(&u, v));
    }
    /* a chunk may come without choices (usage alone): json-c aborts the
     * process when asked for an element of what is not an array */
    choices = prov_json_get(chunk, "choices", json_type_array);
    choice = choices ? json_object_array_get_idx(choices, 0) : NULL;
    if (!choice)
        return APR_SUCCESS;
    delta = prov_json_get(choice, "delta", json_type_object);
    if ((v = prov_json_get(delta, "content", json_type_string)) && json_object_get_string_len(v)
        && (rv = prov_resp_op_text(s, json_object_get_string(v),
                                   (apr_size_t)json_object_get_string_len(v), 0)) != APR_SUCCESS)
        return rv;
    if ((v = prov_json_get(delta, "refusal", json_type_string)) && json_object_get_string_len(v)
        && (rv = prov_resp_op_text(s, json_object_get_string(v),
                                   (apr_size_t)json_object_get_string_len(v), 1)) != APR_SUCCESS)
        return rv;
    calls = prov_json_get(delta, "tool_calls", json_type_array);
    for (i = 0; calls && i < json_object_array_length(calls); i++)
        if ((rv = add_call_delta(s, json_object_array_get_idx(calls, i))) != APR_SUCCESS)
            return rv;
    if ((finish = prov_json_get_str(choice, "finish_reason"))) {
        s->finish_reason = apr_pstrdup(s->p, finish);
        s->finished = 1;
    }
    return APR_SUCCESS;
}

apr_status_t prov_resp_jsonc_chunk(prov_resp_stream_t *s, const char *data, apr_size_t len)
{
    const char *perr = NULL;
    json_object *chunk = prov_json_parse_raw(data, len, &perr);
    apr_status_t rv;
    if (!chunk)
        return APR_EINVAL;
    rv = on_chunk(s, chunk);
    json_object_put(chunk);
    return rv;
}
