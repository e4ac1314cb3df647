/* prov_chat.h: the Chat Completions transport's rules, without httpd:
 * validating and normalising a request (legacy `message`, no streaming, no
 * tools), the body sent to the gateway (upstream model id), reading the
 * gateway's answer and its usage, and the answer given to the client (public
 * model id, credits in usage). */
#ifndef PROV_CHAT_H
#define PROV_CHAT_H

#include "prov_common.h"
#include "prov_error.h"
#include "prov_fields.h"
#include "prov_json.h"
#include "prov_json_scan.h"
#include "prov_relay.h"
#include "prov_estimate.h"

typedef struct prov_chat_req_t {
    json_object *body;          /* normalised request (always has "messages"); owned by p;
                                 * NULL when it was read without a tree (raw, below) */
    const char *raw;            /* the client's body as it is, when body is NULL: its
                                 * object from raw to raw_end, its model's value at
                                 * model_val (model_len bytes, quotes included) */
    const char *raw_end, *model_val;
    apr_size_t model_len;
    const char *cap_val[2];     /* raw: the values of max_tokens and
                                 * max_completion_tokens, NULL where absent */
    apr_size_t cap_len[2];
    const char *model;          /* public model id */
    apr_int64_t max_tokens;     /* -1 when absent */
    const char *cap_field;      /* the cap the client sent: "max_tokens",
                                 * "max_completion_tokens" (never both), or NULL */
    apr_int64_t n;              /* choices asked for, 1 to PROV_CHOICES_MAX (1 when absent):
                                 * each may be written to the cap */
    apr_size_t prompt_bytes;    /* bytes of message text, for the input estimate */
    int n_messages;
} prov_chat_req_t;

/* Parses and validates a request body. APR_SUCCESS with *req, or APR_EINVAL
 * with *err (400 INVALID_REQUEST naming the field): a top-level member not in
 * prov_chat_fields (prov_fields.h), both output caps, n outside 1 to
 * PROV_CHOICES_MAX, among others. */
apr_status_t prov_chat_parse(prov_chat_req_t **req, prov_error_t **err, const char *body,
                             apr_size_t len, apr_pool_t *p);
/* The same through a json-c tree always (prov_chat_parse's path for what
 * the fast path below declines). */
apr_status_t prov_chat_parse_json(prov_chat_req_t **req, prov_error_t **err, const char *body,
                                  apr_size_t len, apr_pool_t *p);
/* prov_chat_parse's fast path (prov_chat_fast.c): non-zero when body is
 * plainly a request prov_chat_parse accepts as it is (nothing to
 * normalise), *req then filled with body kept raw; zero to let the json-c
 * path decide. */
int prov_chat_parse_fast(prov_chat_req_t *req, const char *body, apr_size_t len,
                         apr_pool_t *p);
/* The JSON sent to the gateway: the request with model = upstream_id and,
 * when cap > 0, an output cap of cap tokens (in each cap field the client
 * sent, even as null; else as max_tokens). */
const char *prov_chat_upstream_body(const prov_chat_req_t *req, const char *upstream_id,
                                    apr_int64_t cap, apr_pool_t *p);
/* The counts of an OpenAI usage object, as reported. */
typedef struct prov_chat_usage_t {
    apr_int64_t prompt, completion, cached, reasoning;
} prov_chat_usage_t;
/* Reads a usage object strictly (docs/internals/billing.md, "How usage
 * reports are read"): prompt_tokens and completion_tokens whole numbers >= 0
 * (prov_json_get_count), prompt_tokens_details.cached_tokens and
 * completion_tokens_details.reasoning_tokens the same or absent (a details
 * object absent or null, a count absent or null: 0). APR_SUCCESS with *u;
 * APR_ENOENT when usage is NULL (no usage member, or null); APR_EINVAL when
 * it cannot be read (*u zero): no usage. */
apr_status_t prov_chat_usage(prov_chat_usage_t *u, json_object *usage);
/* The same from a scanned usage object: APR_SUCCESS, APR_EINVAL, or
 * APR_EGENERAL when the scan declines (json-c's reading decides). */
apr_status_t prov_chat_usage_scan(prov_chat_usage_t *u, const prov_jobject_t *usage);
/* Token kinds from an OpenAI usage object read as prov_chat_usage reads it
 * (same results; README "Pricing"): cache = cached prompt tokens, input = the rest
 * of the prompt, reasoning = reasoning tokens, output = the rest of the
 * completion (prov_tokens_split: a part above its whole raises the whole). */
apr_status_t prov_chat_tokens(prov_tokens_t *t, json_object *usage);
/* Reads a successful gateway answer: APR_EINVAL when it is not a chat
 * completion object; APR_ENOENT when it has no usage, PROV_USAGE_UNREADABLE
 * when its usage cannot be read (*answer set in both cases). */
apr_status_t prov_chat_read_answer(json_object **answer, prov_tokens_t *t, const char *body,
                                   apr_size_t len, apr_pool_t *p);
/* The same without a tree, for relaying (prov_json_scan.h): APR_SUCCESS
 * with *t and *rl when the answer is plainly a chat completion with a
 * readable usage; APR_EGENERAL otherwise (prov_chat_read_answer then
 * decides). */
apr_status_t prov_chat_relay_read(prov_relay_t *rl, prov_tokens_t *t, const char *body,
                                  apr_size_t len);
/* The client's answer: model = public_id, usage.credits = charge (decimal). */
const char *prov_chat_render(json_object *answer, const char *public_id, prov_micro_t charge,
                             apr_pool_t *p);

#endif
