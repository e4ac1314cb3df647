/* prov_json.h: json-c with APR pools. Parsed and built objects are released
 * by a cleanup on the pool they belong to; small typed getters that say no
 * when a field is missing or has the wrong type. */
#ifndef PROV_JSON_H
#define PROV_JSON_H

#include "prov_common.h"
#include <json-c/json.h>

/* Parses len bytes strictly (RFC 8259: no comments, single quotes, trailing
 * commas, NaN, raw control characters in strings; valid UTF-8); NULL with
 * *err set (a short description) on bad JSON or a JSON null. The result is
 * put when p is cleared. */
json_object *prov_json_parse(const char *buf, apr_size_t len, const char **err, apr_pool_t *p);
/* The same, owned by the caller (who puts it): for many short-lived
 * values, such as the events of a stream. */
json_object *prov_json_parse_raw(const char *buf, apr_size_t len, const char **err);
/* The same for a request body, which must be a JSON object: NULL with *err a
 * sentence for the client ("The request body is not valid JSON: ...", or
 * "The request body must be a JSON object" for valid JSON of another type). */
json_object *prov_json_parse_body(const char *buf, apr_size_t len, const char **err,
                                  apr_pool_t *p);
/* Puts obj when p is cleared; returns obj. */
json_object *prov_json_own(json_object *obj, apr_pool_t *p);
/* Compact serialisation copied into p ("/" not escaped). */
const char *prov_json_dump(json_object *obj, apr_pool_t *p);

/* Member key of obj when obj is an object and the member has the type; else NULL. */
json_object *prov_json_get(json_object *obj, const char *key, json_type type);
/* String member or NULL. */
const char *prov_json_get_str(json_object *obj, const char *key);
/* A token count of a usage report, member key of the object obj, read
 * strictly: APR_SUCCESS with *v for a whole number >= 0 (json-c's integer
 * type: no fraction, no exponent); APR_NOTFOUND (*v = 0) when there is no
 * such member or it is null; APR_EINVAL (*v = 0) for anything else (a
 * string, a float, a negative number, true, an object...). */
apr_status_t prov_json_get_count(apr_int64_t *v, json_object *obj, const char *key);

/* A credit amount (micro-credits) as a JSON number with exactly the decimals
 * it needs (12.5, 0.000125): never a binary-float rendering. */
json_object *prov_json_credits(prov_micro_t v);
#endif
