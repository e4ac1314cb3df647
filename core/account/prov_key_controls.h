/* prov_key_controls.h: an API key's own controls, set by its owner (the
 * cabinet's PATCH /v1/keys/{id}) or an administrator (providerctl key
 * set): an expiry, the models it may use, the client addresses it may come
 * from (CIDR ranges), a request rate (requests a minute) and a limit on its
 * requests in flight. They are columns of the key's row (schema 016), read
 * by the same query as the key itself (prov_auth_lookup) and kept in the
 * lookup cache with it, so that a key with none set costs nothing more per
 * request. The checks' order and answers are the glue's
 * (mod_provider_keyctl.c); the rate and in-flight counts are prov_keylimit's.
 * Lists are kept as canonical comma-separated text. */
#ifndef PROV_KEY_CONTROLS_H
#define PROV_KEY_CONTROLS_H

#include "prov_common.h"
#include "prov_json.h"
#include "prov_store.h"

#define PROV_KEY_RPM_MAX 1000000
#define PROV_KEY_IN_FLIGHT_MAX 10000
#define PROV_KEY_MODELS_MAX 64
/* Years after 1970 an expiry may be set to (9999-12-31). */
#define PROV_KEY_EXPIRES_MAX APR_INT64_C(253402300799)

typedef struct prov_key_controls_t {
    apr_int64_t expires_at;      /* seconds since the epoch; 0: never */
    const char *models;          /* public ids, comma-separated; NULL: all */
    const char *addresses;       /* CIDR ranges, comma-separated; NULL: any */
    apr_int64_t rpm;             /* requests a minute; 0: no limit */
    apr_int64_t max_in_flight;   /* requests at once; 0: no limit */
} prov_key_controls_t;

/* The controls, one bit each, named as the API names them. */
typedef enum {
    PROV_KC_EXPIRES = 1,         /* "expires_at" */
    PROV_KC_MODELS = 2,          /* "models" */
    PROV_KC_ADDRESSES = 4,       /* "addresses" */
    PROV_KC_RPM = 8,             /* "rpm" */
    PROV_KC_IN_FLIGHT = 16       /* "max_in_flight" */
} prov_kc_field_e;

/* A change: the fields whose bits are in `fields` take the values of `to`
 * (a zero or NULL value clears the control). */
typedef struct prov_key_change_t {
    unsigned fields;
    prov_key_controls_t to;
} prov_key_change_t;

/* Non-zero when any control is set. */
int prov_key_controls_any(const prov_key_controls_t *c);
/* Non-zero when public_id is in list (NULL list: every model). */
int prov_key_model_allowed(const char *list, const char *public_id);
/* The canonical list of the public ids in ids (const char * elements):
 * APR_EINVAL with *bad the first malformed id (NULL: none or too many). */
apr_status_t prov_key_models_parse(const char **list, const char **bad,
                                   const apr_array_header_t *ids, apr_pool_t *p);
/* Splits a canonical list (models or addresses) into its items. */
apr_array_header_t *prov_key_list_split(const char *list, apr_pool_t *p);
/* An RFC 3339 date-time ("2027-01-31T00:00:00Z", "...+02:00", fractions of
 * a second ignored) as seconds since the epoch; APR_EINVAL. */
apr_status_t prov_key_time_parse(apr_int64_t *t, const char *text);
/* t as RFC 3339 UTC ("2027-01-31T00:00:00Z"). */
const char *prov_key_time_text(apr_int64_t t, apr_pool_t *p);
/* Adds the controls to a key's JSON object o as the API shows them:
 * expires_at (RFC 3339 or null), models and addresses (arrays or null),
 * rpm and max_in_flight (numbers or null). */
void prov_key_controls_json(json_object *o, const prov_key_controls_t *c, apr_pool_t *p);

/* Applies ch to the live key key_id's controls, in one statement: every
 * model named must be in the catalog (APR_ENOENT, *bad_model the first
 * missing one). APR_NOTFOUND when the key is unknown or deleted. This is
 * the one function through which both the cabinet and providerctl change
 * a key's controls (the place to hook an audit record); *before and *after
 * (may be NULL) are the controls around the change. */
apr_status_t prov_key_set_controls(prov_key_controls_t *before, prov_key_controls_t *after,
                                   const char **bad_model, prov_store_t *s,
                                   apr_int64_t key_id, const prov_key_change_t *ch,
                                   apr_pool_t *p);

#endif
