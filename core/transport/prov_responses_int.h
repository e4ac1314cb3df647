/* prov_responses_int.h: what the Responses transport's two answer files
 * share inside libprovider: the pieces of a response object (text parts,
 * message and tool-call items, usage, the object itself and its incomplete
 * state, item ids) that prov_responses_answer.c puts together for an answer
 * and prov_responses_stream.c sends event by event. Not for callers outside
 * core/transport/prov_responses*.c. */
#ifndef PROV_RESPONSES_INT_H
#define PROV_RESPONSES_INT_H

#include "prov_responses.h"
#include "prov_chat.h"

/* The usage of a chat completion as reported; have is zero until a usage
 * object was read (prov_chat_usage: only a readable one counts). */
typedef struct prov_resp_usage_t {
    int have;
    apr_int64_t input, cached, output, reasoning;
} prov_resp_usage_t;

/* An output_text part (or a refusal part when refusal is non-zero) holding
 * len bytes of text. */
json_object *prov_resp_text_part(const char *text, apr_size_t len, int refusal);
/* An assistant message item; content (an array, taken) may be NULL. */
json_object *prov_resp_message_item(const char *id, const char *status, json_object *content);
/* The output item of a tool call by the gateway's (flat) name, with the
 * client's own name and namespace; *custom says whether it is a
 * custom_tool_call. A status other than "completed" gives empty input. */
json_object *prov_resp_call_item(const prov_resp_req_t *req, const char *id,
                                 const char *status, const char *call_id, const char *flat,
                                 const char *args, apr_size_t len, int *custom);
/* Reads a chat completion's usage object into u (nothing when it is none
 * or cannot be read: prov_chat_usage). */
void prov_resp_usage_read(prov_resp_usage_t *u, json_object *usage);
/* u from counts read by prov_chat_usage or prov_chat_usage_scan. */
void prov_resp_usage_set(prov_resp_usage_t *u, const prov_chat_usage_t *c);
/* The response's usage object; credits only when charge >= 0. */
json_object *prov_resp_usage_json(const prov_resp_usage_t *u, prov_micro_t charge);
/* The incomplete_details reason for a finish_reason, or NULL when the
 * response is complete. */
const char *prov_resp_incomplete_reason(const char *finish);
/* A response object with the given status and output (an array, taken; NULL
 * for an empty one) and usage null. */
json_object *prov_resp_object(const prov_resp_req_t *req, const char *resp_id,
                              const char *public_id, apr_int64_t created_at,
                              const char *status, json_object *output);
/* Marks a response object incomplete for reason. */
void prov_resp_set_incomplete(json_object *resp, const char *reason);
/* "resp_X" -> "<prefix>_X_<n>": an item id that belongs to its response. */
const char *prov_resp_item_id(const char *resp_id, const char *prefix, int n, apr_pool_t *p);

#endif
