/* prov_json.h: json-c with APR pools. Parsed and built objects are released
 * by a cleanup on the pool they belong to; small typed getters that say no
 * when a field is missing or has the wrong type. */
#ifndef PROV_JSON_H
#define PROV_JSON_H

#include "prov_common.h"
#include <json-c/json.h>

/* Parses len bytes; NULL with *err set (a short description) on bad JSON.
 * The result is put when p is cleared. */
json_object *prov_json_parse(const char *buf, apr_size_t len, const char **err, apr_pool_t *p);
/* Puts obj when p is cleared; returns obj. */
json_object *prov_json_own(json_object *obj, apr_pool_t *p);
/* Compact serialisation copied into p ("/" not escaped). */
const char *prov_json_dump(json_object *obj, apr_pool_t *p);

/* Member key of obj when obj is an object and the member has the type; else NULL. */
json_object *prov_json_get(json_object *obj, const char *key, json_type type);
/* String member or NULL. */
const char *prov_json_get_str(json_object *obj, const char *key);

/* A credit amount (micro-credits) as a JSON number with exactly the decimals
 * it needs (12.5, 0.000125): never a binary-float rendering. */
json_object *prov_json_credits(prov_micro_t v);

#endif
