/* prov_agent.h: the agent session a request names. Coding agents send an
 * id on every request of one session of work: Claude Code
 * x-claude-code-session-id, Codex session-id. The ledger records it with
 * the request's row (ledger.agent_session, and the client that sent it in
 * ledger.agent_client) so that usage can be grouped by session
 * (docs/internals/billing.md, "Agent sessions"). The id is the client's
 * word and is used for nothing but that grouping: a value that is not
 * 1 to PROV_AGENT_SESSION_MAX token characters is not recorded (the
 * request goes on as if it had none, never refused). */
#ifndef PROV_AGENT_H
#define PROV_AGENT_H

#include "prov_common.h"
#include "prov_ledger.h"

#define PROV_AGENT_SESSION_MAX 128

/* Whether id is 1 to PROV_AGENT_SESSION_MAX characters of an HTTP token
 * (letters, digits and !#$%&'*+-.^_`|~): printable ASCII, no space. */
int prov_agent_session_valid(const char *id);

/* The session of a request with these header values (NULL: absent):
 * x-claude-code-session-id (client claude-code), else session-id (client
 * codex when the User-Agent names Codex, else other); a header whose value
 * is not valid counts as absent. *session is one of the values (not
 * copied) or NULL, and *client PROV_CLIENT_NONE with it. */
void prov_agent_session(const char **session, prov_client_e *client, const char *claude_code,
                        const char *session_id, const char *user_agent);

#endif
