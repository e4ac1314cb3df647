/* prov_messages_int.h: what the Messages transport's answer files share
 * inside libprovider: a usage object's counts as read strictly
 * (prov_messages_usage.c) for the stream relay (prov_messages_answer.c).
 * Not for callers outside core/transport/prov_messages*.c (and the tests). */
#ifndef PROV_MESSAGES_INT_H
#define PROV_MESSAGES_INT_H

#include "prov_messages.h"
#include "prov_json_scan.h"

/* The counts a usage object reports, by the place they keep in a stream. */
enum { PROV_MC_INPUT, PROV_MC_CREATION, PROV_MC_CACHE_READ, PROV_MC_OUTPUT, PROV_MC_KINDS };

/* A usage object's counts as read (docs/internals/billing.md, "How usage
 * reports are read"): set[i] when count i is there (absent or null: not
 * set); bad when one is not a whole number >= 0, or usage is no object. */
typedef struct prov_mcounts_t {
    apr_int64_t v[PROV_MC_KINDS];
    int set[PROV_MC_KINDS];
    int bad;
} prov_mcounts_t;

/* The counts required of a report: the answer's usage has input and
 * output, message_start's input (what it is read for), message_delta's
 * output (its input is optional). */
#define PROV_MC_NEED_INPUT (1 << PROV_MC_INPUT)
#define PROV_MC_NEED_OUTPUT (1 << PROV_MC_OUTPUT)
#define PROV_MC_NEED_ALL (PROV_MC_NEED_INPUT | PROV_MC_NEED_OUTPUT)

/* Non-zero when c is a readable report with the counts need asks for. */
int prov_mcounts_readable(const prov_mcounts_t *c, int need);
/* With json-c: usage is the member as it came (NULL: absent or null). */
void prov_mcounts_tree(prov_mcounts_t *c, json_object *usage);
/* Token kinds of counts v (input and cache creation both charged as input). */
void prov_mcounts_tokens(prov_tokens_t *t, const apr_int64_t *v);
/* The usage member of o from the scan: 1 with *c (and *usage for an
 * object) for a report, -1 for none (absent or null), 0 when declined. */
int prov_mcounts_scan(prov_mcounts_t *c, const prov_jobject_t *o, prov_jobject_t *usage);

#endif
