/* prov_cabinet_int.h: what the cabinet room's files share and nobody else
 * needs. */
#ifndef PROV_CABINET_INT_H
#define PROV_CABINET_INT_H

#include "prov_cabinet.h"

#define PROV_CABINET_DAY 86400

/* An id as the API writes ids: a string of digits. */
json_object *prov_cabinet_id(apr_int64_t id, apr_pool_t *p);

#endif
