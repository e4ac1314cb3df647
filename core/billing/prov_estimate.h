/* prov_estimate.h: what a request is charged when the gateway did not report
 * what it cost (docs/internals/broken-streams.md). One rule for every
 * transport: the gateway's usage when it reported the answer's usage; else,
 * when something was delivered, an estimate of what was delivered (the input
 * plus the output relayed to the client, counted generously, never more than
 * the hold); else nothing. A client that leaves a started stream is charged
 * like a delivery (the gateway did the work). Also the counting of the output
 * text in the answers and stream events of each transport. */
#ifndef PROV_ESTIMATE_H
#define PROV_ESTIMATE_H

#include "prov_common.h"
#include "prov_json.h"
#include "prov_money.h"

/* What a transport's answer reader returns when the answer carries a usage
 * report that cannot be read (docs/internals/billing.md, "How usage reports
 * are read"): it counts as no usage. */
#define PROV_USAGE_UNREADABLE (APR_OS_START_USERERR + 290)

typedef enum {
    PROV_USAGE_NONE = 0,    /* the gateway reported no usage (or none readable) */
    PROV_USAGE_PARTIAL,     /* counts so far: a Messages stream's message_start, or
                             * a report that more output followed */
    PROV_USAGE_FINAL        /* the usage of the whole answer */
} prov_usage_e;

/* What an answer delivered, as far as the module saw it. */
typedef struct prov_delivery_t {
    prov_tokens_t reported;     /* the gateway's counts (usage PARTIAL or FINAL) */
    prov_usage_e usage;
    int unreadable;             /* usage reports that could not be read (for the log) */
    apr_uint64_t output_bytes;  /* output text written to the client */
    apr_uint64_t queued_bytes;  /* output text put into the answer, not yet written:
                                 * counted only for a complete answer (its last
                                 * write comes after its settlement) */
    int started;                /* something was sent to the client */
    int complete;               /* the client was sent the whole answer */
    int client_left;            /* the client went away before the end */
} prov_delivery_t;

typedef enum {
    PROV_BILL_RELEASE = 0,      /* nothing delivered: no charge */
    PROV_BILL_REPORTED,         /* the gateway's usage */
    PROV_BILL_ESTIMATED         /* the estimate of what was delivered */
} prov_bill_e;

/* What prov_estimate_bill noticed (bits of *notes). */
#define PROV_BILL_ABSURD 1          /* the report was absurd: charged at most the hold */
#define PROV_BILL_INPUT_ESTIMATE 2  /* the report said no input: the input estimate used */

/* How d is billed: a complete answer by its final usage, else by estimate; a
 * broken one by its final usage when the gateway had reported it, else by
 * estimate when output was written (or the client left a started stream),
 * else not at all. */
prov_bill_e prov_estimate_rule(const prov_delivery_t *d);
/* The output bytes d counts: those written, and for a complete answer those
 * queued too. */
apr_uint64_t prov_estimate_delivered(const prov_delivery_t *d);
/* Output tokens for bytes of output text: ceil(bytes / 3), generous on
 * purpose (like the input estimate). */
apr_int64_t prov_estimate_output_tokens(apr_uint64_t bytes);
/* The tokens of an estimate: input = the gateway's input and cache counts
 * when it reported any that are not 0, else input_estimate; output = the
 * larger of the reported output and prov_estimate_output_tokens of the
 * delivered bytes; reasoning as reported. */
void prov_estimate_tokens(prov_tokens_t *t, const prov_delivery_t *d,
                          apr_int64_t input_estimate);
/* Applies the rule: *how and *t (the tokens the ledger row records; zero for
 * a release) and returns the charge: the reported tokens as a settlement
 * charges them (prov_money_settle: an absurd report, beyond the request's
 * output cap max_output or overflowing, at most the hold), or the estimated
 * ones at most hold; 0 for a release. A report whose input and cache are
 * both 0 is taken with input_estimate as its input (a reported 0 never
 * replaces the estimate of what was sent). *notes (may be NULL) gets the
 * PROV_BILL_* bits. */
prov_micro_t prov_estimate_bill(prov_bill_e *how, prov_tokens_t *t, unsigned *notes,
                                const prov_delivery_t *d, const prov_rates_t *effective,
                                apr_int64_t input_estimate, apr_int64_t max_output,
                                prov_micro_t hold);

/* Fills d for a complete non-streamed answer without usage that carries
 * output_bytes of output text; returns d. */
const prov_delivery_t *prov_estimate_answer(prov_delivery_t *d, apr_uint64_t output_bytes);
/* Output bytes of a non-streamed Chat Completions answer: the text, refusal,
 * tool names and arguments of every choice's message. */
apr_uint64_t prov_estimate_chat_answer(json_object *answer);
/* Output bytes of a non-streamed Messages answer: text, thinking, and the
 * name and input of tool_use blocks. */
apr_uint64_t prov_estimate_messages_answer(json_object *answer);
/* Output bytes one Messages stream event carries: the text, thinking and
 * partial_json of a content_block_delta, the text and tool name of a
 * content_block_start; 0 for other events. */
apr_uint64_t prov_estimate_messages_event(const char *name, json_object *ev);

#endif
