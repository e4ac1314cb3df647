/* prov_cabinet_activity.h: a signed-in user's security activity, the
 * cabinet's GET /v1/account/activity (prov_cabinet_activity.c). */
#ifndef PROV_CABINET_ACTIVITY_H
#define PROV_CABINET_ACTIVITY_H

#include "prov_cabinet.h"

#define PROV_CABINET_ACTIVITY_PAGE 20   /* entries a page, by default */
#define PROV_CABINET_ACTIVITY_MAX 100   /* the most a page may have */

/* The query's values (NULL: the default): limit 1-100 (20), before an entry
 * id (the next page: the answer's next_before), else a 400 in *err. */
apr_status_t prov_cabinet_activity_args(int *limit, apr_int64_t *before, prov_error_t **err,
                                        const char *limit_arg, const char *before_arg,
                                        apr_pool_t *p);
/* {"data": [{id, time, action, actor ("user", "admin", "oauth_client",
 * "system"), target_kind, target_id, address, detail}], "next_before": the
 * id to ask for the next page with, or null}: the user's own rows of the
 * security actions, newest first, older than before (0: the newest). */
apr_status_t prov_cabinet_activity(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                   int limit, apr_int64_t before, apr_pool_t *p);

#endif
