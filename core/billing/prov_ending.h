/* prov_ending.h: how a request ended, and the ledger status it is settled
 * or released with (docs/internals/broken-streams.md, "What is charged").
 * Every transport, streamed or not, tells what it saw (prov_ending_facts_t);
 * one function names the ending, one table maps it to its statuses. */
#ifndef PROV_ENDING_H
#define PROV_ENDING_H

#include "prov_ledger.h"
#include "prov_estimate.h"

typedef enum {
    PROV_END_COMPLETE = 0,          /* the whole answer was handed over */
    PROV_END_CLIENT_LEFT,           /* the client went away first */
    PROV_END_REFUSED,               /* the gateway refused (non-200, or an error
                                     * before anything was sent) */
    PROV_END_GATEWAY_ERROR,         /* the gateway's stream ended with an error event */
    PROV_END_MAX_DURATION,          /* ended by us at ProviderStreamMaxDuration */
    PROV_END_MALFORMED,             /* the gateway's answer was not of its kind */
    PROV_END_TIMEOUT,               /* the gateway was silent past its timeout */
    PROV_END_UNREACHABLE,           /* the gateway transfer failed before anything
                                     * was sent */
    PROV_END_CUT,                   /* the gateway's stream ended early */
    PROV_END_UNDELIVERED,           /* our answer could not be written */
    PROV_END__COUNT
} prov_ending_e;

/* What a transport saw of its request's end. */
typedef struct prov_ending_facts_t {
    int complete;                   /* the client was sent the whole answer */
    int started;                    /* the client had something (a stream's 200) */
    int client_left;
    int refused;                    /* a gateway refusal before anything was sent */
    int gateway_error;              /* an error event ended the stream */
    int too_long;                   /* ProviderStreamMaxDuration */
    int malformed;                  /* the gateway's bytes were refused */
    apr_status_t rv;                /* the gateway transfer's result */
} prov_ending_facts_t;

/* The ending of f, the first that holds of: complete, client left,
 * refused, gateway error, max duration, malformed, timeout (rv APR_TIMEUP),
 * unreachable (nothing started and rv an error), malformed again (nothing
 * started and the gateway sent no stream), cut. */
prov_ending_e prov_ending_classify(const prov_ending_facts_t *f);
/* The ledger status of a request that ended so and is billed how
 * (prov_estimate_rule): estimated for an estimate; else the ending's
 * status for a reported usage or for a release (they differ: a complete
 * answer is ok or no_usage, a client who left client_cut or client_gone, a
 * timeout cut or timeout, a malformed stream cut or malformed). */
prov_status_e prov_ending_status(prov_ending_e end, prov_bill_e how);
/* A short description of the ending, for the log. */
const char *prov_ending_name(prov_ending_e end);

#endif
