/* prov_relay.h: a gateway answer relayed to the client as ours, the public
 * model id and the credits put in: spliced into the gateway's bytes when
 * the scanner read it (prov_relay_render), else through json-c
 * (prov_relay_render_tree). Shared by Chat Completions and Messages. */
#ifndef PROV_RELAY_H
#define PROV_RELAY_H

#include "prov_common.h"
#include "prov_json.h"
#include "prov_json_scan.h"

/* A gateway answer read for relaying: its bytes, its members and those of
 * its "usage" object (prov_chat_relay_read, prov_messages_relay_read). */
typedef struct prov_relay_t {
    const char *body;
    apr_size_t len;
    prov_jobject_t top, usage;
} prov_relay_t;

/* The answer of rl with the value of its "model" member replaced by
 * public_id and "credits": charge added as usage's last member, in p; NULL
 * when public_id would need escaping or there is no "model" member (the
 * caller renders through json-c: prov_relay_render_tree). */
const char *prov_relay_render(const prov_relay_t *rl, const char *public_id,
                              prov_micro_t charge, apr_pool_t *p);
/* The same through json-c: "model" set to public_id and the charge added
 * to its "usage" object (made when missing) as "credits"; then printed. */
const char *prov_relay_render_tree(json_object *answer, const char *public_id,
                                   prov_micro_t charge, apr_pool_t *p);

#endif
