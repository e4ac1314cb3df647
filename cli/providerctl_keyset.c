/* providerctl_keyset.c: `key set`, an administrator's change of an API
 * key's own controls (core/account/prov_key_controls.h: expiry, models,
 * addresses, request rate, requests in flight), and how `key show` prints
 * them. The change goes through prov_key_set_controls, the one function the
 * cabinet's PATCH /v1/keys/{id} uses too. A running server's children see
 * it at their next lookup of the key from the database (at the latest
 * after ProviderLookupCacheTTL). */
#include <stdio.h>
#include <string.h>
#include "providerctl.h"
#include "prov_cidr.h"

/* --expires T|none: RFC 3339, or what ctl_parse_time takes. */
static int expires_opt(ctl_t *ctl, prov_key_change_t *ch, const char *v)
{
    ch->fields |= PROV_KC_EXPIRES;
    if (!strcmp(v, "none"))
        return CTL_OK;
    if (prov_key_time_parse(&ch->to.expires_at, v) == APR_SUCCESS)
        return CTL_OK;
    return ctl_parse_time(ctl, &ch->to.expires_at, v, "--expires time");
}

/* --models ID,...|all and --addresses CIDR,...|any. */
static int lists_opt(ctl_t *ctl, prov_key_change_t *ch)
{
    const char *models = ctl_opt(ctl, "models"), *addrs = ctl_opt(ctl, "addresses"), *bad;
    if (models) {
        ch->fields |= PROV_KC_MODELS;
        if (strcmp(models, "all")
            && prov_key_models_parse(&ch->to.models, &bad,
                                     prov_key_list_split(models, ctl->pool), ctl->pool)
               != APR_SUCCESS)
            return ctl_usage(ctl, "--models: '%s' is not a model id (give ID,... or all; at "
                             "most %d)", bad ? bad : models, PROV_KEY_MODELS_MAX);
    }
    if (addrs) {
        ch->fields |= PROV_KC_ADDRESSES;
        if (strcmp(addrs, "any")
            && prov_cidr_list_parse(&ch->to.addresses, &bad,
                                    prov_key_list_split(addrs, ctl->pool), ctl->pool)
               != APR_SUCCESS)
            return ctl_usage(ctl, "--addresses: '%s' is not an IPv4 or IPv6 address or CIDR "
                             "range (give CIDR,... or any; at most %d)", bad ? bad : addrs,
                             PROV_CIDR_LIST_MAX);
    }
    return CTL_OK;
}

/* --rpm N|none and --max-in-flight N|none. */
static int count_opt(ctl_t *ctl, prov_key_change_t *ch, const char *name, unsigned field,
                     apr_int64_t *out, apr_int64_t max)
{
    const char *v = ctl_opt(ctl, name);
    if (!v)
        return CTL_OK;
    ch->fields |= field;
    if (!strcmp(v, "none"))
        return CTL_OK;
    if (strspn(v, "0123456789") != strlen(v) || prov_parse_i64(out, v) != APR_SUCCESS
        || *out < 1 || *out > max)
        return ctl_usage(ctl, "--%s: '%s' is not a whole number from 1 to %" APR_INT64_T_FMT
                         " (or none)", name, v, max);
    return CTL_OK;
}

void ctl_key_controls_print(const prov_key_controls_t *c, apr_pool_t *p)
{
    ctl_kv("expires:", c->expires_at ? apr_pstrcat(p, ctl_time(c->expires_at, 0, p), " UTC",
                                                   c->expires_at <= prov_now()
                                                   ? " (expired)" : "", NULL) : "never");
    ctl_kv("models:", c->models ? c->models : "all");
    ctl_kv("addresses:", c->addresses ? c->addresses : "any");
    ctl_kv("rpm:", c->rpm ? apr_psprintf(p, "%" APR_INT64_T_FMT " requests a minute", c->rpm)
                          : "no limit");
    ctl_kv("max in flight:", c->max_in_flight ? prov_i64(c->max_in_flight, p) : "no limit");
}

int ctl_key_set(ctl_t *ctl)
{
    prov_key_change_t ch;
    prov_key_controls_t after;
    const char *expires = ctl_opt(ctl, "expires"), *bad_model = NULL;
    apr_int64_t id = 0;
    apr_status_t rv;
    int rc;

    memset(&ch, 0, sizeof(ch));
    if ((rc = ctl_parse_id(ctl, &id, ctl->argv[0], "key id")) != CTL_OK
        || (expires && (rc = expires_opt(ctl, &ch, expires)) != CTL_OK)
        || (rc = lists_opt(ctl, &ch)) != CTL_OK
        || (rc = count_opt(ctl, &ch, "rpm", PROV_KC_RPM, &ch.to.rpm, PROV_KEY_RPM_MAX))
           != CTL_OK
        || (rc = count_opt(ctl, &ch, "max-in-flight", PROV_KC_IN_FLIGHT, &ch.to.max_in_flight,
                           PROV_KEY_IN_FLIGHT_MAX)) != CTL_OK)
        return rc;
    if (!ch.fields)
        return ctl_usage(ctl, "nothing to set: give --expires, --models, --addresses, --rpm "
                         "or --max-in-flight");
    rv = prov_key_set_controls(NULL, &after, &bad_model, ctl->store, id, &ch, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "unknown or deleted key %s", ctl->argv[0]);
    if (rv == APR_ENOENT)
        return ctl_fail(ctl, "--models: there is no model '%s' in the catalog", bad_model);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "set the key's controls");
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_int64(id));
        prov_key_controls_json(o, &after, ctl->pool);
        ctl_json_print(o);
        return CTL_OK;
    }
    printf("key %" APR_INT64_T_FMT ":\n", id);
    ctl_key_controls_print(&after, ctl->pool);
    return CTL_OK;
}

const ctl_opt_t ctl_key_set_opts[] = {
    { "expires", "T|none", 0, "refuse the key from T on (RFC 3339, YYYY-MM-DD[THH:MM[:SS]Z] "
      "UTC or epoch seconds); none: never" },
    { "models", "ID,...|all", 0, "the public model ids the key may use; all: every one" },
    { "addresses", "CIDR,...|any", 0, "the client address ranges (IPv4, IPv6) it may come "
      "from; any: anywhere" },
    { "rpm", "N|none", 0, "at most N requests a minute (each server counts its own)" },
    { "max-in-flight", "N|none", 0, "at most N requests at once (each server counts its own)" },
    { NULL, NULL, 0, NULL }
};
