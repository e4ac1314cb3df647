/* mod_provider_drive.h: the API of mod_provider_drive.c, the one inference
 * driver, and the transport table it serves every transport by
 * (docs/internals/transports.md). */
#ifndef MOD_PROVIDER_DRIVE_H
#define MOD_PROVIDER_DRIVE_H

#include "mod_provider_infer.h"
#include "mod_provider_stream.h"
#include "prov_json.h"
#include "prov_relay.h"

/* A transport: its rules as the driver calls them, in the driver's order. */
typedef struct provider_transport_t {
    const char *name;             /* the ledger's: "chat", "messages", "responses" */
    provider_family_e family;     /* the shape of its errors */
    int x_api_key;                /* the key may come as x-api-key */
    int messages_only;            /* only models served on /v1/messages */
    const char *path;             /* the gateway's path */
    /* Checks before the body is parsed (headers); NULL: none. */
    provider_step_t (*check)(provider_infer_t *in);
    /* Parses in->body into in->call: APR_EINVAL with *err (400). */
    apr_status_t (*parse)(provider_infer_t *in, prov_error_t **err);
    /* Once the hold is taken: headers for the answer or an error; NULL: none. */
    void (*held)(provider_infer_t *in);
    /* The gateway's request body, and its extra headers (*headers, or NULL). */
    const char *(*upstream)(provider_infer_t *in, apr_table_t **headers);
    /* Reads a 200 answer: APR_EINVAL when it is none, another failure when it
     * has no usage (*answer set). */
    apr_status_t (*read_answer)(json_object **answer, prov_tokens_t *t, const char *body,
                                apr_size_t len, apr_pool_t *p);
    /* The output bytes of an answer, for an estimate when it has no usage. */
    apr_uint64_t (*answer_bytes)(json_object *answer);
    const char *answer_kind;      /* what a 200 answer must be ("a message") */
    /* The client's answer (in->charge is its charge). */
    const char *(*render)(provider_infer_t *in, json_object *answer);
    const provider_streamer_t *stream;   /* NULL: never streamed */
    /* A 200 answer relayed without a JSON tree (prov_json_scan.h), its
     * "model" and credits spliced in: APR_SUCCESS when it is plainly valid
     * and has usage, else read_answer and render decide. NULL: never. */
    apr_status_t (*relay_read)(prov_relay_t *rl, prov_tokens_t *t, const char *body,
                               apr_size_t len);
} provider_transport_t;

/* Key, blocked user, method, body, t's checks, the request, the model: all
 * that comes before money is held. PROVIDER_GO with *in, or answered. */
provider_step_t provider_drive_prepare(provider_infer_t **in, request_rec *r,
                                       const provider_transport_t *t);
/* Serves r by t: prepare, hold, the gateway call, the settlement and the
 * answer (plain or streamed). Returns what the handler returns. */
int provider_drive(request_rec *r, const provider_transport_t *t);

#endif
