/* prov_ending.c: the one cascade from what a transport saw of its
 * request's end to the ending, and the table from an ending to its ledger
 * statuses (prov_ending.h). The transports only gather the facts. */
#include "prov_ending.h"

static const struct {
    prov_status_e reported;         /* settled by the gateway's usage */
    prov_status_e released;         /* nothing to charge */
    const char *name;
} table[PROV_END__COUNT] = {
    [PROV_END_COMPLETE]      = { PROV_STATUS_OK, PROV_STATUS_NO_USAGE, "complete" },
    [PROV_END_CLIENT_LEFT]   = { PROV_STATUS_CLIENT_CUT, PROV_STATUS_CLIENT_GONE,
                                 "client went away" },
    [PROV_END_REFUSED]       = { PROV_STATUS_REFUSED, PROV_STATUS_REFUSED, "gateway refused" },
    [PROV_END_GATEWAY_ERROR] = { PROV_STATUS_ERROR, PROV_STATUS_ERROR, "gateway error" },
    [PROV_END_MAX_DURATION]  = { PROV_STATUS_MAX_DURATION, PROV_STATUS_MAX_DURATION,
                                 "ProviderStreamMaxDuration" },
    [PROV_END_MALFORMED]     = { PROV_STATUS_CUT, PROV_STATUS_MALFORMED,
                                 "malformed gateway stream" },
    [PROV_END_TIMEOUT]       = { PROV_STATUS_CUT, PROV_STATUS_TIMEOUT, "gateway timeout" },
    [PROV_END_UNREACHABLE]   = { PROV_STATUS_FAILED, PROV_STATUS_FAILED,
                                 "gateway unreachable" },
    [PROV_END_CUT]           = { PROV_STATUS_CUT, PROV_STATUS_CUT, "gateway stream ended" },
    [PROV_END_UNDELIVERED]   = { PROV_STATUS_UNDELIVERED, PROV_STATUS_UNDELIVERED,
                                 "answer undelivered" },
};

prov_ending_e prov_ending_classify(const prov_ending_facts_t *f)
{
    if (f->complete)
        return PROV_END_COMPLETE;
    if (f->client_left)
        return PROV_END_CLIENT_LEFT;
    if (f->refused)
        return PROV_END_REFUSED;
    if (f->gateway_error)
        return PROV_END_GATEWAY_ERROR;
    if (f->too_long)
        return PROV_END_MAX_DURATION;
    if (f->malformed)
        return PROV_END_MALFORMED;
    if (f->rv == APR_TIMEUP)
        return PROV_END_TIMEOUT;
    if (!f->started)
        return f->rv != APR_SUCCESS ? PROV_END_UNREACHABLE : PROV_END_MALFORMED;
    return PROV_END_CUT;
}

prov_status_e prov_ending_status(prov_ending_e end, prov_bill_e how)
{
    if ((int)end < 0 || end >= PROV_END__COUNT)
        end = PROV_END_CUT;
    if (how == PROV_BILL_ESTIMATED)
        return PROV_STATUS_ESTIMATED;
    return how == PROV_BILL_REPORTED ? table[end].reported : table[end].released;
}

const char *prov_ending_name(prov_ending_e end)
{
    if ((int)end < 0 || end >= PROV_END__COUNT)
        end = PROV_END_CUT;
    return table[end].name;
}
