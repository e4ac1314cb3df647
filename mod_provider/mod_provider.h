/* mod_provider.h: what the glue files of mod_provider share: the server
 * configuration (directives with unset markers, and the runtime objects built
 * from them; mod_provider_config.c), the endpoints the module routes to, the
 * request plumbing of mod_provider_http.c, the database leases of
 * mod_provider_db.c, the inference steps (mod_provider_infer.c), the event
 * stream (mod_provider_stream.c), and the transport table that the one
 * inference driver (mod_provider_drive.c) serves every transport by
 * (docs/internals/transports.md). Only mod_provider/ includes httpd headers. */
#ifndef MOD_PROVIDER_H
#define MOD_PROVIDER_H

#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "apr_dbd.h"
#include "mod_dbd.h"

#include "prov_common.h"
#include "prov_error.h"
#include "prov_store.h"
#include "prov_gateway.h"
#include "prov_catalog.h"
#include "prov_account.h"
#include "prov_billing.h"
#include "prov_models.h"
#include "prov_cache.h"
#include "prov_estimate.h"
#include "prov_ending.h"
#include "prov_worst.h"
#include "prov_gwerror.h"
#include "prov_redact.h"
#include "prov_json_scan.h"
#include "prov_json.h"
#include "prov_sse.h"
#include "prov_idp.h"
#include "prov_ratelimit.h"

extern module AP_MODULE_DECLARE_DATA provider_module;

#define PROVIDER_HANDLER "provider-api"
#define PROVIDER_UNSET (-1)

typedef enum {
    PROVIDER_EP_NONE = 0,
    PROVIDER_EP_MODELS,
    PROVIDER_EP_CHAT,
    PROVIDER_EP_MESSAGES,
    PROVIDER_EP_COUNT_TOKENS,
    PROVIDER_EP_RESPONSES,
    PROVIDER_EP_AUTH,          /* /v1/auth/...: sign-in (mod_provider_auth.c) */
    PROVIDER_EP_CABINET,       /* /cabinet and /cabinet/... (mod_provider_cabinet.c) */
    PROVIDER_EP_ACCOUNT,       /* /v1/account (mod_provider_account.c) */
    PROVIDER_EP_USAGE,         /* /v1/usage (mod_provider_account.c) */
    PROVIDER_EP_KEYS,          /* /v1/keys... (mod_provider_keys.c) */
    PROVIDER_EP_FAVORITES,     /* /v1/models/... (mod_provider_favorites.c) */
    PROVIDER_EP_DOCS,          /* /docs and /docs/... (mod_provider_docs.c) */
    PROVIDER_EP_OPENAPI,       /* /v1/docs, the OpenAPI description (mod_provider_docs.c) */
    PROVIDER_EP_MCP,           /* /v1/mcp (mod_provider_mcp.c) */
    PROVIDER_EP_MCP_ACCOUNT,   /* /v1/mcp/account (mod_provider_oauth.c) */
    PROVIDER_EP_MCP_CLIENTS,   /* /v1/mcp/clients[/ID] (mod_provider_oauth.c) */
    PROVIDER_EP_OAUTH,         /* /oauth/... and /.well-known/oauth-... (mod_provider_oauth.c) */
    PROVIDER_EP_UNKNOWN        /* under /v1/ but not served: 404 in our shape */
} provider_endpoint_e;

/* The error family a transport answers in. */
typedef enum {
    PROVIDER_FAMILY_OPENAI = 0,
    PROVIDER_FAMILY_ANTHROPIC
} provider_family_e;

typedef struct provider_srv_conf {
    int engine;                     /* PROVIDER_UNSET, 0, 1 */
    const char *gateway_url;
    const char *token_file;
    apr_int64_t gateway_timeout;    /* seconds */
    apr_int64_t connect_timeout;    /* seconds */
    apr_int64_t max_body;           /* bytes */
    apr_int64_t models_ttl;         /* seconds */
    const char *messages_family;
    apr_int64_t default_max_tokens;
    apr_int64_t hold_timeout;       /* seconds */
    apr_int64_t stream_max;         /* seconds a stream may last (below the hold timeout) */
    apr_int64_t lookup_ttl;         /* seconds the key and model lookups are cached */
    const char *clock_file;         /* tests only */
    apr_int64_t ping_interval;      /* seconds between keep-alive events of a silent stream */
    const char *journal_dir;        /* the billing journal's directory, or "none" */
    /* Sign-in (mod_provider_auth.c, mod_provider_session.c). */
    const char *public_url;         /* ProviderPublicURL, an origin without a trailing '/' */
    apr_array_header_t *idps;       /* prov_idp_t *: ProviderIdentityProvider, up to four */
    int cookie_secure;              /* ProviderCookieSecure: PROVIDER_UNSET, 0, 1 */
    const char *docs_root;          /* ProviderDocsRoot: the installed docs/site/ */
    const char *web_root;           /* ProviderWebRoot: the cabinet's files */
    /* The anonymous endpoints' limits (mod_provider_limit.c) and the purge
     * (mod_provider_purge.c). per_minute PROVIDER_UNSET: the class's default. */
    prov_rl_limit_t anon_limit[PROV_RL_CLASSES];  /* ProviderAnonRateLimit CLASS N [BURST] */
    apr_int64_t anon_slots;         /* ProviderAnonRateLimitSlots (the first server's) */
    apr_int64_t purge_interval;     /* ProviderPurgeInterval, seconds (the first server's) */

    /* Built at post_config / child_init from the above. */
    prov_gateway_t *gateway;
    prov_catalog_cache_t *catalog;
    prov_redactor_t *redactor;      /* masks the gateway's URL and token in logged text */
    struct prov_docs_cache_t *docs_cache; /* search_docs' sections, per child (or NULL) */
} provider_srv_conf;

/* mod_provider_config.c */
/* The directives' default directory of billing journals (under DefaultRuntimeDir). */
#define PROVIDER_JOURNAL_DIR_DEFAULT "provider-journal"
/* The cabinet's files as make install puts them (ProviderWebRoot's default). */
#define PROVIDER_WEB_ROOT_DEFAULT PROV_DATADIR "/web"
extern const command_rec provider_config_cmds[];
void *provider_config_create(apr_pool_t *p, server_rec *s);
void *provider_config_merge(apr_pool_t *p, void *basev, void *addv);
/* Fills in the defaults of what c leaves unset (post_config). */
void provider_config_defaults(provider_srv_conf *c);
/* What is wrong with c's sign-in directives taken together (a message naming
 * the directive), or NULL (post_config). */
const char *provider_config_signin_check(const provider_srv_conf *c, apr_pool_t *p);
/* ProviderStreamMaxDuration against the engine's hold timeout (post_config):
 * a stream must end before its hold could expire. Set at or above it: what
 * is wrong (a start-up error). Unset: the default, 1800 s, or half the hold
 * timeout when that is not above it (*lowered: a start-up notice). */
const char *provider_config_stream_check(provider_srv_conf *c, apr_int64_t hold_timeout,
                                         int *lowered, apr_pool_t *p);
/* The effective configuration of r's server. A virtual host without
 * directives of this module shares its main server's structure. */
provider_srv_conf *provider_conf(request_rec *r);
/* The key and model lookup cache of r's server (per child; NULL when
 * ProviderLookupCacheTTL is 0). One per server, not per configuration:
 * servers that share this module's configuration may still have databases
 * of their own (DBDParams inside <VirtualHost>), and a key of one must never
 * be found through the other's cache. */
prov_cache_t *provider_lookups(request_rec *r);
/* Records s's lookup cache for provider_lookups (child_init). */
void provider_lookups_add(server_rec *s, prov_cache_t *lookups, apr_pool_t *pchild);

/* mod_provider_limit.c: the anonymous endpoints' limits (shared memory) */
/* Registers its hooks (the mutex type, the table, each child's mutex). */
void provider_limit_hooks(apr_pool_t *p);
/* r's client address as the limits count it (r->useragent_ip: mod_remoteip's
 * when it runs; an IPv6 address by its /64). */
const char *provider_client_key(request_rec *r);
/* PROVIDER_GO, or r answered 429 with Retry-After in its endpoint's shape
 * (ep: r's endpoint) because its client address is over its class's limit. */
int provider_limit_check(request_rec *r, provider_endpoint_e ep);
/* Non-zero when it is this caller's turn to purge (the server's children
 * share one turn every `every`; without shared memory, always). */
int provider_purge_turn(apr_interval_time_t every);

/* mod_provider_purge.c: the periodic purge's thread in a child (child_init). */
void provider_purge_start(server_rec *s, apr_pool_t *pchild);

/* mod_provider_http.c */
/* A request id for logs and the x-request-id header (set on err_headers_out). */
const char *provider_request_id(request_rec *r);
/* What a write to the client came to. */
#define PROVIDER_WRITE_OK      0
#define PROVIDER_WRITE_GONE    1   /* the client went away */
#define PROVIDER_WRITE_REFUSED 2   /* a header would be refused: nothing was written */
#define PROVIDER_WRITE_FAILED  3   /* the answer was refused on its way out: httpd answered */
/* Checks the headers r would send against what httpd accepts (RFC 7230
 * tokens and field values); one that fails is logged as an error and removed.
 * Returns 0 when one failed. */
int provider_headers_ok(request_rec *r);
/* Passes bb (then empty) to the client: PROVIDER_WRITE_*. The first write,
 * which sends the headers, checks them first (provider_headers_ok) and writes
 * nothing when one would be refused. */
int provider_pass(request_rec *r, apr_bucket_brigade *bb);
/* Writes json as the whole answer with status: PROVIDER_WRITE_*. */
int provider_write_json(request_rec *r, int status, const char *json);
/* Writes body as JSON with status (leaving out a header httpd would refuse);
 * returns what the handler must return. */
int provider_send_json(request_rec *r, int status, const char *json);
/* Writes e in the family's shape (with Retry-After when e has one). */
int provider_send_error(request_rec *r, provider_family_e family, const prov_error_t *e);
/* Shortcut: make and send an error. */
int provider_fail(request_rec *r, provider_family_e family, prov_errcode_e code,
                  const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The API key from "Authorization: Bearer" (and, when allow_x_api_key,
 * "x-api-key"); NULL when none was sent. */
const char *provider_api_key(request_rec *r, int allow_x_api_key);
/* Reads the whole body up to max bytes. APR_EINVAL/413 handling is the
 * caller's: returns APR_ENOSPC when the body is larger than max. */
apr_status_t provider_read_body(request_rec *r, apr_int64_t max, const char **body,
                                apr_size_t *len);

/* mod_provider_db.c */
/* A database connection for one phase of a request (released by
 * provider_db_close, or at the latest when r ends). NULL when the database or
 * its schema is not usable; the reason is logged. */
prov_store_t *provider_db_open(request_rec *r, prov_error_t **err);
void provider_db_close(request_rec *r, prov_store_t *store);
/* A billing source for r: connections opened (from r's pool) only when the
 * billing engine needs one for a batch this request's thread leads. */
prov_store_source_t *provider_request_source(request_rec *r);
/* A billing source for the server s itself, usable from any thread (the
 * billing writer's): the same channel as s's requests. */
prov_store_source_t *provider_server_source(server_rec *s, apr_pool_t *p);
/* Non-zero when mod_dbd is loaded (its connection functions are there). */
int provider_db_available(void);

/* mod_provider_infer.c: the inference path shared by the transports. A step
 * returns PROVIDER_GO to go on; anything else means it has answered (in the
 * transport's error shape) and the handler returns that value. */
#define PROVIDER_GO (-2)

/* A request as the driver sees it, whatever its transport's rules. */
typedef struct provider_call_t {
    void *req;                    /* the transport's own parsed request */
    const char *model;            /* the public model id asked for */
    apr_size_t prompt_bytes;      /* for the input estimate */
    int n_messages;
    apr_int64_t max_output;       /* the request's output cap; -1 when none */
    apr_int64_t choices;          /* answers asked for (chat's n); 0 or 1: one */
    int stream;                   /* answered as an event stream */
} provider_call_t;

typedef struct provider_infer_t {
    request_rec *r;
    provider_srv_conf *conf;
    prov_cache_t *lookups;        /* r's server's lookup cache, or NULL */
    provider_family_e family;
    const char *transport;        /* "chat", "messages", "responses" */
    const char *request_id;
    prov_store_t *store;          /* open from begin until reserve */
    const char *secret;           /* the API key as sent */
    prov_auth_t *auth;
    int auth_fresh;               /* auth was read from the database, not the cache */
    const char *body;             /* the request body (NUL-terminated) */
    apr_size_t len;
    provider_call_t call;         /* the parsed request */
    prov_model_t *model;
    prov_rates_t eff;             /* the model's effective rates */
    prov_micro_t hold;
    prov_worst_t worst;           /* what the hold covers (prov_worst.h) */
    apr_int64_t cap;              /* the output cap of each choice the gateway is sent */
    apr_int64_t forward_cap;      /* cap when the body must carry it (the client set
                                   * none, or a larger one); 0: the client's own */
    apr_int64_t input_estimate;   /* the input tokens an estimate charges */
    apr_int64_t max_output;       /* the output a settlement believes: cap for each
                                   * choice */
    prov_reservation_t *res;
    prov_micro_t charge;          /* after provider_infer_settle */
    /* The settlement staged until the answer is out (provider_infer_commit). */
    int staged;                   /* one is staged */
    prov_status_e staged_status;  /* its ledger status */
    int staged_release;           /* no charge */
    prov_tokens_t staged_tokens;
} provider_infer_t;

/* Key (Bearer; also x-api-key when allowed), blocked user, method (POST),
 * body (size limit). */
int provider_infer_begin(provider_infer_t **in, request_rec *r, provider_family_e family,
                         const char *transport, int allow_x_api_key);
/* For a request that holds nothing (count_tokens), whose key no billing
 * transaction re-checks: a key taken from the lookup cache is read again from
 * the database (401 when gone, 403 when its user is now blocked). */
int provider_infer_recheck_key(provider_infer_t *in);
/* The catalog model: known, enabled, priced; with messages_only also of the
 * messages family and enabled for it. */
int provider_infer_model(provider_infer_t *in, const char *public_id, int messages_only);
/* Holds the request's worst case (prov_worst.h: its body, in->call's cap
 * and choices, the model's maximum output) and releases the database
 * connection; a request without a cap of its own may be held, and capped,
 * for less (in->cap, told in x-provider-output-cap). input_estimate is what
 * an estimate charges for the input. */
int provider_infer_reserve(provider_infer_t *in, apr_int64_t input_estimate);
/* Releases the phase-one database connection early (idempotent). */
void provider_infer_close(provider_infer_t *in);
/* A stream's progress for this process's journal (d: what was delivered
 * so far, as if the stream broke now): the charge it would be settled at,
 * charged by the replay should the process die before the settlement.
 * Nothing when nothing was delivered (the replay then charges the floor).
 * Returns whether a record was made. */
int provider_infer_progress(provider_infer_t *in, const prov_delivery_t *d);
/* Stages the charge of the gateway's usage t at the model's rates (an absurd
 * t: at most the hold, with a warning; no input at all: the input estimate)
 * as a complete answer (status ok) and sets x-provider-credits while headers
 * are unsent; returns the charge. Nothing is committed before
 * provider_infer_commit or provider_infer_answer. The same as
 * provider_infer_bill of a complete answer with that final usage. */
prov_micro_t provider_infer_settle(provider_infer_t *in, const prov_tokens_t *t);
/* Stages the settlement of what d delivered by prov_estimate's rule (the
 * reported usage, an estimate at most the hold, or a release), its ledger
 * status the one prov_ending_status gives a request that ended so, and sets
 * x-provider-credits while headers are unsent; returns the charge. Logs an
 * absurd report (PROV00300), unreadable ones (PROV00305) and a report of no
 * input replaced by the estimate (PROV00306). */
prov_micro_t provider_infer_bill(provider_infer_t *in, const prov_delivery_t *d,
                                 prov_ending_e end);
/* Commits the staged settlement: completes the ledger row. */
void provider_infer_commit(provider_infer_t *in);
/* Writes json as the 200 answer; commits the staged settlement once the
 * answer was handed to the client (or the client left), else releases the
 * hold (provider_infer_undelivered). Returns what the handler returns. */
int provider_infer_answer(provider_infer_t *in, const char *json);
/* The answer could not be delivered by the module's own fault (write, a
 * PROVIDER_WRITE_* result): releases the hold with status "undelivered" and,
 * when nothing was sent, answers 500 INTERNAL_ERROR in the transport's
 * shape. Returns what the handler returns. */
int provider_infer_undelivered(provider_infer_t *in, int write);
/* Returns the hold without a charge now; the ledger row records the status
 * of a release of a request that ended so (prov_ending_status). */
void provider_infer_release(provider_infer_t *in, prov_ending_e end);
/* A gateway transport failure (prov_gateway_* result): release, 504/502. */
int provider_infer_gateway_failed(provider_infer_t *in, apr_status_t rv);

/* A non-200 gateway answer in the family's shape, in our words
 * (prov_gwerror_client): 400 for request errors (4xx), 502 with Retry-After
 * when it is busy (429), 502 otherwise; never the gateway's text. That text
 * is logged, masked (provider_log_gateway_error). */
int provider_gateway_refusal(request_rec *r, provider_family_e family,
                             const prov_gw_response_t *resp);
/* Logs a gateway's error with its text masked (prov_redact): info, or warn
 * when the gateway refused the service token. */
void provider_log_gateway_error(request_rec *r, const prov_gwerror_t *g);

/* mod_provider_stream.c: one event stream to the client. */

/* An answer streamed to the client while the gateway streams to us. */
typedef struct provider_stream_t {
    request_rec *r;
    const struct provider_streamer_t *how;
    void *translator;             /* the transport's (how->open) */
    apr_bucket_brigade *bb;
    int status;                   /* the gateway's HTTP status, once known */
    int started;                  /* the client has the 200 and its headers */
    int client_gone;
    int undelivered;              /* PROVIDER_WRITE_REFUSED or _FAILED: our answer failed */
    int malformed;                /* the translator refused the gateway's bytes */
    int feeding;                  /* inside on_data: events wait for the gateway's
                                   * pause (or the answer's end) */
    prov_sse_buf_t *out;          /* events not yet passed on; a translator may
                                   * encode into it (prov_sse_put_*) instead of
                                   * calling provider_stream_write */
    apr_time_t last_write;
    apr_interval_time_t ping;     /* ProviderStreamPingInterval */
    apr_time_t deadline;          /* the request's start + ProviderStreamMaxDuration */
    int too_long;                 /* ended at the deadline (by us, like a gateway cut) */
    provider_infer_t *in;         /* the request (its progress, journaled by the tick) */
    apr_time_t progress_at;       /* the tick's next progress record */
    int progressed;               /* the first was made (at the first write
                                   * that delivered output); the tick's follow */
    char *refusal;                /* a non-200 answer's body, kept up to 64 KiB */
    apr_size_t refusal_len;
    const char *retry_after;      /* the refusal's Retry-After header, or NULL */
} provider_stream_t;

/* How a transport streams: the translator between the gateway's stream and
 * the client's. */
typedef struct provider_streamer_t {
    const char *content_type;
    /* Makes the answer's translator; it emits each event for the client
     * through provider_stream_write with x as baton. */
    void *(*open)(provider_infer_t *in, provider_stream_t *x);
    /* Feeds the translator gateway bytes (pieces of any size); a failure
     * stops the transfer. */
    apr_status_t (*feed)(void *translator, const char *data, apr_size_t len);
    /* The keep-alive event while the gateway is silent; NULL: none. */
    const char *(*ping)(void);
    /* A gateway error that ended the stream before the client had anything
     * (answered as a plain error); NULL when the translator relays errors. */
    const prov_gwerror_t *(*early_error)(void *translator);
    /* Whether the answer is complete (its last event seen): its last
     * events then wait for provider_stream_finish. */
    int (*complete)(void *translator);
    /* Everything the translator put into x->out so far reached the client
     * (a write of it succeeded): its output counts as delivered. NULL: the
     * translator does not count output. */
    void (*written)(void *translator);
    /* What was delivered so far (for the tick's progress records); NULL:
     * none. */
    void (*delivery)(void *translator, prov_delivery_t *d);
    /* Settles a stream that the client has, however it ended (rv: the
     * gateway transfer's result), and writes its last event. */
    int (*end)(provider_infer_t *in, provider_stream_t *x, apr_status_t rv);
    /* The message of the 502 when the gateway's answer was no such stream. */
    const char *malformed;
} provider_streamer_t;

/* Writes one event (x is a provider_stream_t) and flushes it; the first
 * write sends the 200 and the stream's headers. The events made from the
 * gateway's bytes go out together, flushed when the gateway has nothing
 * more to read for now (one write to the client, not one per event;
 * nothing waits for the gateway's next bytes). APR_ECONNABORTED when the
 * client has gone or the answer failed (x says which): the translator
 * stops. */
apr_status_t provider_stream_write(void *x, const char *event, apr_size_t len);
/* Ends the answer of a complete stream for the client (the events still
 * waiting and the last chunk, in one write with a flush) before the
 * transport commits its settlement, as an answer read whole goes out before
 * its settlement. Returns PROVIDER_WRITE_*: _REFUSED or _FAILED when this
 * was the answer's first write and it was refused (nothing was delivered:
 * provider_infer_undelivered). */
int provider_stream_finish(provider_stream_t *x);
/* A complete stream's end: provider_stream_finish, then the staged
 * settlement committed (or, when that first write was refused, the hold
 * released as undelivered). Returns what the handler returns. */
int provider_stream_commit(provider_infer_t *in, provider_stream_t *x);
/* Non-zero when the client has gone (noticed now or before). */
int provider_stream_gone(provider_stream_t *x);
/* How the stream ended (prov_ending_classify of what x saw; rv: the
 * gateway transfer's result; complete and gateway_error: the transport's
 * judgement of its last events). */
prov_ending_e provider_stream_ending(const provider_stream_t *x, apr_status_t rv, int complete,
                                     int gateway_error);
/* A stream the client has, cut short (not complete, not left by the client,
 * not ended by a gateway error event; rv: the transfer's result): the error
 * the client is told, naming the limit or the gateway (what_cut: the
 * transport's words for a gateway cut) and the charge. */
prov_error_t *provider_stream_cut_error(const provider_stream_t *x, apr_status_t rv,
                                        const char *what_cut, prov_micro_t charge);
/* Streams the gateway's answer to body at path through how and settles it;
 * returns what the handler returns. */
int provider_stream_run(provider_infer_t *in, const provider_streamer_t *how, const char *path,
                        const char *body, const apr_table_t *headers);

/* mod_provider_drive.c: the one inference driver of every transport. */

/* A transport: its rules as the driver calls them, in the driver's order. */
typedef struct provider_transport_t {
    const char *name;             /* the ledger's: "chat", "messages", "responses" */
    provider_family_e family;     /* the shape of its errors */
    int x_api_key;                /* the key may come as x-api-key */
    int messages_only;            /* only models served on /v1/messages */
    const char *path;             /* the gateway's path */
    /* Checks before the body is parsed (headers); NULL: none. */
    int (*check)(provider_infer_t *in);
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
    apr_status_t (*relay_read)(prov_json_relay_t *rl, prov_tokens_t *t, const char *body,
                               apr_size_t len);
} provider_transport_t;

/* Key, blocked user, method, body, t's checks, the request, the model: all
 * that comes before money is held. PROVIDER_GO with *in, or answered. */
int provider_drive_prepare(provider_infer_t **in, request_rec *r,
                           const provider_transport_t *t);
/* Serves r by t: prepare, hold, the gateway call, the settlement and the
 * answer (plain or streamed). Returns what the handler returns. */
int provider_drive(request_rec *r, const provider_transport_t *t);

/* Answers the catalog entries of models (prov_model_t*) that the gateway
 * offers now, as GET /v1/models does (502 when its list is unknown). */
int provider_catalog_send(request_rec *r, const apr_array_header_t *models);

/* Handlers */
int provider_models_handler(request_rec *r);
int provider_chat_handler(request_rec *r);
int provider_messages_handler(request_rec *r);
int provider_count_tokens_handler(request_rec *r);
int provider_responses_handler(request_rec *r);

/* mod_provider_docs.c: GET /docs, /docs/NAME, /docs/style.css and /v1/docs. */
#define PROVIDER_DOCS_ROOT_DEFAULT PROV_DATADIR "/docs/site"
int provider_docs_handler(request_rec *r);
/* The directory of r's server's documentation pages (ProviderDocsRoot, else
 * the default): what core/docs's prov_docs_sections reads (MCP search_docs). */
const char *provider_docs_root(request_rec *r);
int provider_openapi_handler(request_rec *r);

/* mod_provider_sqlite.c */
/* Start-up warnings about SQLite settings that cannot work well (post_config). */
void provider_sqlite_check(server_rec *s, apr_pool_t *ptemp);
/* Logs the child's SQLite lock waits (info) when it stops. */
void provider_sqlite_child_init(apr_pool_t *pchild, server_rec *s);

#endif
