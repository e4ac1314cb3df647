/* prov_ledger.h: one request's ledger row as every part of the service
 * carries it (a reservation, a lease's entry, a journal record, a row
 * written whole), and the closed set of its statuses with one table of
 * their names as stored in ledger.status (migration 011 makes the schema
 * refuse any other). A field of the row is added here, once; the structs
 * that need the row embed it. */
#ifndef PROV_LEDGER_H
#define PROV_LEDGER_H

#include "prov_common.h"
#include "prov_money.h"

/* ledger.status: reserved while the request holds, then how it ended. The
 * order is the table's (and the wire names' in migration 011's list); a new
 * status gets a row in the table, a migration that admits its name, and a
 * line in docs/internals/billing.md. */
typedef enum {
    PROV_STATUS_RESERVED = 0,       /* holding: in flight, not settled */
    PROV_STATUS_OK,                 /* settled by the gateway's usage */
    PROV_STATUS_NO_USAGE,           /* complete without usage, nothing delivered: free */
    PROV_STATUS_ESTIMATED,          /* settled by the estimate of what was delivered */
    PROV_STATUS_CLIENT_CUT,         /* the client left a started stream; usage reported */
    PROV_STATUS_CLIENT_GONE,        /* the client left before anything it was charged for */
    PROV_STATUS_CUT,                /* the gateway's stream ended early */
    PROV_STATUS_MAX_DURATION,       /* ended by us at ProviderStreamMaxDuration */
    PROV_STATUS_TIMEOUT,            /* the gateway was silent past ProviderGatewayTimeout */
    PROV_STATUS_ERROR,              /* the gateway's stream ended with an error event */
    PROV_STATUS_FAILED,             /* the gateway could not be reached or reset */
    PROV_STATUS_REFUSED,            /* the gateway refused the request (non-200) */
    PROV_STATUS_MALFORMED,          /* the gateway's answer was not of its kind */
    PROV_STATUS_UNDELIVERED,        /* our answer could not be written: free */
    PROV_STATUS_EXPIRED,            /* the hold outlived ProviderHoldTimeout */
    PROV_STATUS_RELEASED,           /* released by hand (providerctl hold release) */
    PROV_STATUS__COUNT
} prov_status_e;

typedef struct prov_status_info_t {
    const char *name;               /* as stored in ledger.status and the journal */
    const char *meaning;
} prov_status_info_t;

/* The status's row of the table (an unknown value: reserved's). */
const prov_status_info_t *prov_ledger_status_info(prov_status_e status);
/* Its name as stored in ledger.status. */
const char *prov_ledger_status_name(prov_status_e status);
/* The status named name: APR_SUCCESS and *status, or APR_EINVAL for a name
 * the table does not hold (*status untouched). */
apr_status_t prov_ledger_status_parse(prov_status_e *status, const char *name);

/* ledger.agent_client: the coding agent that named the request's session
 * (prov_agent.h reads it from the request's headers); none without a
 * session. Only for grouping: never trusted for anything else. */
typedef enum {
    PROV_CLIENT_NONE = 0,           /* no session (stored as NULL) */
    PROV_CLIENT_CLAUDE_CODE,        /* "claude-code": x-claude-code-session-id */
    PROV_CLIENT_CODEX,              /* "codex": session-id from Codex */
    PROV_CLIENT_OTHER,              /* "other": session-id from another client */
    PROV_CLIENT__COUNT
} prov_client_e;

/* Its name as stored in ledger.agent_client (NULL for none). */
const char *prov_ledger_client_name(prov_client_e client);
/* The client named name (NULL or "": none): APR_SUCCESS, or APR_EINVAL for
 * another name (*client untouched). */
apr_status_t prov_ledger_client_parse(prov_client_e *client, const char *name);

/* One request's ledger row. */
typedef struct prov_ledger_row_t {
    const char *request_id;
    const char *transport;
    prov_status_e status;
    apr_int64_t user_id, key_id, model_id;
    apr_int64_t created_at, settled_at;
    prov_tokens_t tokens;
    prov_micro_t hold, charge;      /* ledger.reserved, ledger.credits */
    prov_micro_t floor;             /* the charge of its input estimate alone
                                     * (ledger.floor_credits) */
    int from_plan;                  /* funded by the plan (plan_credits = charge,
                                     * source 'plan'), else by the balance */
    const char *session;            /* the agent session it belongs to
                                     * (ledger.agent_session), NULL: none */
    prov_client_e client;           /* who named it (ledger.agent_client) */
} prov_ledger_row_t;

/* The bytes the row's strings take (request id, transport, session, each
 * with its NUL), and their copy into buf (that many bytes): dst's strings
 * then point into buf. For a row that outlives the request's pool (a
 * lease's entry, a queued settlement). */
apr_size_t prov_ledger_row_strings_len(const prov_ledger_row_t *row);
void prov_ledger_row_strings_copy(prov_ledger_row_t *dst, const prov_ledger_row_t *src,
                                  char *buf);

/* Settles row: tokens t (NULL: none), charge and status at now. */
void prov_ledger_row_settle(prov_ledger_row_t *row, const prov_tokens_t *t, prov_micro_t charge,
                            prov_status_e status, apr_int64_t now);

#endif
