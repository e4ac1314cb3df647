/* prov_fields.h: the top-level request members each inference transport
 * accepts, one table per transport that both of its parse paths (json-c and
 * the fast scan) read, and the 400 that names a member outside it in the
 * transport's own words (docs/internals/transports.md, "The fields"). */
#ifndef PROV_FIELDS_H
#define PROV_FIELDS_H

#include "prov_common.h"
#include "prov_error.h"
#include "prov_json.h"
#include "prov_json_scan.h"

/* What the parse does with a member (flags). */
#define PROV_FIELD_FORWARD 1   /* reaches the gateway (as sent, or translated) */
#define PROV_FIELD_CONSUME 2   /* read, normalised or dropped: not forwarded as sent */
#define PROV_FIELD_REFUSE  4   /* refused when not null, with a message of its own */
#define PROV_FIELD_FAST    8   /* the fast path takes it (a REFUSE one only when null) */

/* The most choices a chat request may ask for (`n`): the hold covers them all. */
#define PROV_CHOICES_MAX 8

/* The longest member name an error quotes (bytes, cut at a character). */
#define PROV_FIELD_NAME_MAX 128

typedef struct prov_field_t {
    const char *name;
    int how;
} prov_field_t;

/* The tables, each ending with { NULL, 0 }. */
extern const prov_field_t prov_chat_fields[];
extern const prov_field_t prov_messages_fields[];
extern const prov_field_t prov_resp_fields[];

/* The entry of set named key (klen bytes), or NULL. */
const prov_field_t *prov_fields_find(const prov_field_t *set, const char *key,
                                     apr_size_t klen);
/* The json-c path: APR_SUCCESS when every member of obj is in set; else
 * APR_EINVAL with *err, the 400 naming the first member that is not, worded
 * as OpenAI does ("Unrecognized request argument supplied: NAME") or, with
 * anthropic, as Anthropic does ("NAME: Extra inputs are not permitted"). */
apr_status_t prov_fields_check(prov_error_t **err, const prov_field_t *set, json_object *obj,
                               int anthropic, apr_pool_t *p);
/* The fast path: non-zero when every member of o is in set with
 * PROV_FIELD_FAST (and, when also PROV_FIELD_REFUSE, is null). */
int prov_fields_fast(const prov_field_t *set, const prov_jobject_t *o);

/* An output cap of a request (max_tokens, max_completion_tokens,
 * max_output_tokens) from the member v named name: APR_SUCCESS with *out a
 * whole number from 1 to PROV_OUTPUT_TOKENS_MAX; else APR_EINVAL with *err a
 * 400 INVALID_REQUEST naming the field (json-c reads an integer beyond 64
 * bits as INT64_MAX, so it is refused as too large). */
apr_status_t prov_fields_output_cap(apr_int64_t *out, prov_error_t **err, json_object *v,
                                    const char *name, apr_pool_t *p);

#endif
