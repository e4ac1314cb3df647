/* prov_agent.c: the agent session a request names, read from its headers
 * and validated (see prov_agent.h). Cheap: a scan of at most
 * PROV_AGENT_SESSION_MAX bytes and a prefix compare, no allocation. */
#include <string.h>
#include <strings.h>
#include <apr_lib.h>
#include "prov_agent.h"

int prov_agent_session_valid(const char *id)
{
    apr_size_t n;
    if (!id)
        return 0;
    for (n = 0; id[n]; n++) {
        unsigned char c = (unsigned char)id[n];
        if (n >= PROV_AGENT_SESSION_MAX
            || !(apr_isalnum(c) || (c < 0x80 && strchr("!#$%&'*+-.^_`|~", c))))
            return 0;
    }
    return n > 0;
}

/* Codex names itself first in its User-Agent: "codex_cli_rs/0.x ...",
 * "codex_exec/0.x ...". */
static int is_codex(const char *user_agent)
{
    return user_agent && !strncasecmp(user_agent, "codex", 5);
}

void prov_agent_session(const char **session, prov_client_e *client, const char *claude_code,
                        const char *session_id, const char *user_agent)
{
    *session = NULL;
    *client = PROV_CLIENT_NONE;
    if (prov_agent_session_valid(claude_code)) {
        *session = claude_code;
        *client = PROV_CLIENT_CLAUDE_CODE;
    }
    else if (prov_agent_session_valid(session_id)) {
        *session = session_id;
        *client = is_codex(user_agent) ? PROV_CLIENT_CODEX : PROV_CLIENT_OTHER;
    }
}
