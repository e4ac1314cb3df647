/* prov_ledger.c: the table of ledger statuses (wire name as stored in
 * ledger.status, meaning), as prov_error.c's is of wire error codes: every
 * status a row is given is named here, and only here; and the names of
 * the agent clients (ledger.agent_client). */
#include <string.h>
#include "prov_ledger.h"

static const prov_status_info_t table[PROV_STATUS__COUNT] = {
    [PROV_STATUS_RESERVED]     = { "reserved", "holding: the request is in flight" },
    [PROV_STATUS_OK]           = { "ok", "settled by the gateway's usage report" },
    [PROV_STATUS_NO_USAGE]     = { "no_usage", "complete without usage and nothing delivered: "
                                   "no charge" },
    [PROV_STATUS_ESTIMATED]    = { "estimated", "settled by the estimate of what was "
                                   "delivered (no usage report, or a killed child's progress)" },
    [PROV_STATUS_CLIENT_CUT]   = { "client_cut", "the client left a started stream after "
                                   "the gateway's final usage" },
    [PROV_STATUS_CLIENT_GONE]  = { "client_gone", "the client left before anything it could "
                                   "be charged for: no charge" },
    [PROV_STATUS_CUT]          = { "cut", "the gateway's stream ended before the answer "
                                   "was complete" },
    [PROV_STATUS_MAX_DURATION] = { "max_duration", "the stream was ended at "
                                   "ProviderStreamMaxDuration" },
    [PROV_STATUS_TIMEOUT]      = { "timeout", "the gateway was silent past "
                                   "ProviderGatewayTimeout" },
    [PROV_STATUS_ERROR]        = { "error", "the gateway's stream ended with an error event" },
    [PROV_STATUS_FAILED]       = { "failed", "the gateway could not be reached, or the "
                                   "transfer failed before anything was sent: no charge" },
    [PROV_STATUS_REFUSED]      = { "refused", "the gateway refused the request: no charge" },
    [PROV_STATUS_MALFORMED]    = { "malformed", "the gateway's answer was not of its kind" },
    [PROV_STATUS_UNDELIVERED]  = { "undelivered", "the service could not write its answer: "
                                   "no charge" },
    [PROV_STATUS_EXPIRED]      = { "expired", "the hold outlived ProviderHoldTimeout "
                                   "(its worker died): released" },
    [PROV_STATUS_RELEASED]     = { "released", "the hold was released by hand "
                                   "(providerctl hold release)" },
};

const prov_status_info_t *prov_ledger_status_info(prov_status_e status)
{
    if ((int)status < 0 || status >= PROV_STATUS__COUNT)
        status = PROV_STATUS_RESERVED;
    return &table[status];
}

const char *prov_ledger_status_name(prov_status_e status)
{
    return prov_ledger_status_info(status)->name;
}

apr_status_t prov_ledger_status_parse(prov_status_e *status, const char *name)
{
    int i;
    for (i = 0; name && i < PROV_STATUS__COUNT; i++) {
        if (!strcmp(table[i].name, name)) {
            *status = (prov_status_e)i;
            return APR_SUCCESS;
        }
    }
    return APR_EINVAL;
}

void prov_ledger_row_settle(prov_ledger_row_t *row, const prov_tokens_t *t, prov_micro_t charge,
                            prov_status_e status, apr_int64_t now)
{
    static const prov_tokens_t none = { 0, 0, 0, 0 };
    row->tokens = t ? *t : none;
    row->charge = charge;
    row->status = status;
    row->settled_at = now;
}

static const char *const clients[PROV_CLIENT__COUNT] = {
    [PROV_CLIENT_NONE] = NULL, [PROV_CLIENT_CLAUDE_CODE] = "claude-code",
    [PROV_CLIENT_CODEX] = "codex", [PROV_CLIENT_OTHER] = "other",
};

const char *prov_ledger_client_name(prov_client_e client)
{
    return (int)client > 0 && client < PROV_CLIENT__COUNT ? clients[client] : NULL;
}

apr_status_t prov_ledger_client_parse(prov_client_e *client, const char *name)
{
    int i;
    if (!name || !*name) {
        *client = PROV_CLIENT_NONE;
        return APR_SUCCESS;
    }
    for (i = 1; i < PROV_CLIENT__COUNT; i++) {
        if (!strcmp(clients[i], name)) {
            *client = (prov_client_e)i;
            return APR_SUCCESS;
        }
    }
    return APR_EINVAL;
}

apr_size_t prov_ledger_row_strings_len(const prov_ledger_row_t *row)
{
    return strlen(row->request_id) + 1 + strlen(row->transport) + 1
           + (row->session ? strlen(row->session) + 1 : 0);
}

void prov_ledger_row_strings_copy(prov_ledger_row_t *dst, const prov_ledger_row_t *src,
                                  char *buf)
{
    const char *id = src->request_id, *t = src->transport, *session = src->session;
    apr_size_t n = strlen(id) + 1;
    dst->request_id = memcpy(buf, id, n);
    buf += n;
    n = strlen(t) + 1;
    dst->transport = memcpy(buf, t, n);
    buf += n;
    dst->session = session ? memcpy(buf, session, strlen(session) + 1) : NULL;
}
