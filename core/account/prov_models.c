/* prov_models.c: the model catalog as the administrator keeps it: public ids
 * and their validation, display names, the gateway's upstream ids, the family
 * that decides the messages transport, the enabled flags and the rate card
 * (four nullable micro-credit rates per 1M tokens). Reads and writes go through
 * the labelled statements of prov_sql.c; adding a model checks for a duplicate
 * inside one write transaction, and a price change reads the current card and
 * writes the merged one in the same transaction. Users' favorites are rows
 * of (user, model): adding one twice or removing an absent one changes
 * nothing, so both are idempotent without a read first. */
#include <string.h>
#include <apr_lib.h>
#include "prov_models.h"
#include "prov_log.h"

#define MODEL_ID_MAX     128
#define UPSTREAM_ID_MAX  256
#define DISPLAY_MAX      200
#define FAMILY_MAX       64

int prov_model_id_valid(const char *s)
{
    apr_size_t n;
    if (!s || !apr_isalnum(s[0]))
        return 0;
    for (n = 0; s[n]; n++) {
        if (n >= MODEL_ID_MAX)
            return 0;
        if (!apr_isalnum(s[n]) && !strchr("._:/-", s[n]))
            return 0;
    }
    return 1;
}

/* The gateway's id: printable ASCII without spaces (it goes into JSON bodies
 * and, for some gateways, into paths). */
static int upstream_valid(const char *s)
{
    apr_size_t n;
    if (!s || !*s)
        return 0;
    for (n = 0; s[n]; n++) {
        unsigned char c = (unsigned char)s[n];
        if (n >= UPSTREAM_ID_MAX || c <= 0x20 || c >= 0x7f)
            return 0;
    }
    return 1;
}

/* A display name is free text for humans: non-empty, no control characters. */
static int display_valid(const char *s)
{
    const unsigned char *c;
    if (!s || !*s || strlen(s) > DISPLAY_MAX)
        return 0;
    for (c = (const unsigned char *)s; *c; c++) {
        if (*c < 0x20 || *c == 0x7f)
            return 0;
    }
    return 1;
}

/* A family is compared with ProviderMessagesFamily: a short lower-case word;
 * empty means none. */
static int family_valid(const char *s)
{
    apr_size_t n;
    if (!s)
        return 0;
    for (n = 0; s[n]; n++) {
        if (n >= FAMILY_MAX)
            return 0;
        if (!apr_islower(s[n]) && !apr_isdigit(s[n]) && !strchr("._-", s[n]))
            return 0;
    }
    return 1;
}

apr_int64_t prov_model_max_output(const prov_model_t *m, apr_int64_t default_max_output)
{
    return m->max_output > 0 ? m->max_output : default_max_output;
}

static int rate_valid(prov_micro_t r)
{
    return r == PROV_RATE_UNSET || (r >= 0 && r <= PROV_RATE_MAX);
}

/* MODEL_COLS: id, public_id, display_name, upstream_id, family, enabled,
 * messages_enabled, rate_input, rate_output, rate_cache, rate_reasoning,
 * max_output, created_at */
static prov_micro_t rate_col(prov_store_t *s, apr_dbd_row_t *row, int n)
{
    return prov_store_get(s, row, n) ? prov_store_get_i64(s, row, n, PROV_RATE_UNSET)
                                     : PROV_RATE_UNSET;
}

static const char *col_str(prov_store_t *s, apr_dbd_row_t *row, int n, apr_pool_t *p)
{
    const char *v = prov_store_get(s, row, n);
    return apr_pstrdup(p, v ? v : "");
}

static prov_model_t *model_from_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_model_t *m = apr_pcalloc(p, sizeof(*m));
    m->id = prov_store_get_i64(s, row, 0, 0);
    m->public_id = col_str(s, row, 1, p);
    m->display_name = col_str(s, row, 2, p);
    m->upstream_id = col_str(s, row, 3, p);
    m->family = col_str(s, row, 4, p);
    m->enabled = prov_store_get_i64(s, row, 5, 0) != 0;
    m->messages_enabled = prov_store_get_i64(s, row, 6, 0) != 0;
    m->rates.input = rate_col(s, row, 7);
    m->rates.output = rate_col(s, row, 8);
    m->rates.cache = rate_col(s, row, 9);
    m->rates.reasoning = rate_col(s, row, 10);
    m->max_output = prov_store_get(s, row, 11) ? prov_store_get_i64(s, row, 11, 0) : 0;
    m->created_at = prov_store_get_i64(s, row, 12, 0);
    return m;
}

static const char *rate_arg(prov_micro_t r, apr_pool_t *p)
{
    return r == PROV_RATE_UNSET ? NULL : prov_i64(r, p);
}

static const char *flag_arg(int v)
{
    return v < 0 ? NULL : (v ? "1" : "0");
}

apr_status_t prov_model_find(prov_model_t **m, prov_store_t *s, const char *public_id,
                             apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;

    if (!prov_model_id_valid(public_id))
        return APR_NOTFOUND;
    rv = prov_store_select(s, &res, "model_find", PROV_ARGS(public_id), p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_row(s, res, &row, p);
    if (rv == APR_EOF)
        return APR_NOTFOUND;
    if (rv != APR_SUCCESS)
        return rv;
    *m = model_from_row(s, row, p);
    return APR_SUCCESS;
}

apr_status_t prov_model_add(prov_model_t **m, prov_store_t *s, const char *public_id,
                            const char *upstream_id, const char *display_name,
                            const char *family, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    prov_model_t *old = NULL, *nm;
    const char *now;
    apr_status_t rv;

    if (!display_name || !*display_name)
        display_name = public_id;
    if (!family)
        family = "";
    if (!prov_model_id_valid(public_id) || !upstream_valid(upstream_id)
        || !display_valid(display_name) || !family_valid(family))
        return APR_EINVAL;
    now = prov_i64(prov_now(), p);

    rv = prov_store_begin(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_model_find(&old, s, public_id, p);
    if (rv == APR_SUCCESS) {
        rv = APR_EEXIST;
        goto fail;
    }
    if (rv != APR_NOTFOUND)
        goto fail;
    rv = prov_store_select(s, &res, "model_add",
                           PROV_ARGS(public_id, display_name, upstream_id, family, "0",
                                     now, now), p);
    if (rv != APR_SUCCESS) {
        /* A concurrent add on PostgreSQL (whose BEGIN takes no write lock)
         * can win between the check and the insert: then it is a duplicate. */
        prov_store_rollback(s, p);
        if (prov_model_find(&old, s, public_id, p) == APR_SUCCESS)
            rv = APR_EEXIST;
        return rv;
    }
    rv = prov_store_row(s, res, &row, p);
    if (rv == APR_EOF)
        rv = APR_EGENERAL;
    if (rv != APR_SUCCESS)
        goto fail;
    nm = apr_pcalloc(p, sizeof(*nm));
    nm->id = prov_store_get_i64(s, row, 0, 0);
    rv = prov_store_commit(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    nm->public_id = apr_pstrdup(p, public_id);
    nm->display_name = apr_pstrdup(p, display_name);
    nm->upstream_id = apr_pstrdup(p, upstream_id);
    nm->family = apr_pstrdup(p, family);
    nm->enabled = 1;
    nm->messages_enabled = 0;
    nm->rates.input = nm->rates.output = PROV_RATE_UNSET;
    nm->rates.cache = nm->rates.reasoning = PROV_RATE_UNSET;
    prov_log(PROV_LOG_INFO, 0, "PROV02201: model %s added (upstream %s)", public_id,
             upstream_id);
    if (m)
        *m = nm;
    return APR_SUCCESS;

fail:
    prov_store_rollback(s, p);
    return rv;
}

/* The models a select of MODEL_COLS rows returns, in its order. */
static apr_status_t models_read(apr_array_header_t **models, prov_store_t *s,
                                apr_dbd_results_t *res, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_array_header_t *arr;
    apr_status_t rv;
    arr = apr_array_make(p, 16, sizeof(prov_model_t *));
    while ((rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS)
        APR_ARRAY_PUSH(arr, prov_model_t *) = model_from_row(s, row, p);
    if (rv != APR_EOF)
        return rv;
    *models = arr;
    return APR_SUCCESS;
}

apr_status_t prov_model_list(apr_array_header_t **models, prov_store_t *s, int enabled_only,
                             apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_status_t rv = prov_store_select(s, &res, "model_list",
                                        PROV_ARGS(enabled_only ? "1" : "0"), p);
    return rv == APR_SUCCESS ? models_read(models, s, res, p) : rv;
}

/* ---- favorites ------------------------------------------------------------ */

/* The model a favorite change names: any known one for a removal, an
 * enabled one for an addition (what the catalog could show). */
static apr_status_t favorite_model(prov_model_t **m, prov_store_t *s, const char *public_id,
                                   int enabled_only, apr_pool_t *p)
{
    apr_status_t rv = prov_model_find(m, s, public_id, p);
    if (rv == APR_SUCCESS && enabled_only && !(*m)->enabled)
        rv = APR_NOTFOUND;
    return rv;
}

apr_status_t prov_favorite_add(prov_store_t *s, apr_int64_t user_id, const char *public_id,
                               apr_pool_t *p)
{
    prov_model_t *m = NULL;
    apr_status_t rv = favorite_model(&m, s, public_id, 1, p);
    if (rv != APR_SUCCESS)
        return rv;
    return prov_store_exec(s, NULL, "favorite_add",
                           PROV_ARGS(prov_i64(user_id, p), prov_i64(m->id, p),
                                     prov_i64(prov_now(), p)), p);
}

apr_status_t prov_favorite_remove(prov_store_t *s, apr_int64_t user_id, const char *public_id,
                                  apr_pool_t *p)
{
    prov_model_t *m = NULL;
    apr_status_t rv = favorite_model(&m, s, public_id, 0, p);
    if (rv != APR_SUCCESS)
        return rv;
    return prov_store_exec(s, NULL, "favorite_remove",
                           PROV_ARGS(prov_i64(user_id, p), prov_i64(m->id, p)), p);
}

apr_status_t prov_favorite_list(apr_array_header_t **models, prov_store_t *s,
                                apr_int64_t user_id, int enabled_only, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_status_t rv = prov_store_select(s, &res, "favorite_list",
                                        PROV_ARGS(prov_i64(user_id, p),
                                                  enabled_only ? "1" : "0"), p);
    return rv == APR_SUCCESS ? models_read(models, s, res, p) : rv;
}

apr_status_t prov_model_set(prov_store_t *s, const char *public_id,
                            const prov_model_change_t *c, apr_pool_t *p)
{
    const char *max_output;
    int n = 0;
    apr_status_t rv;

    if (!prov_model_id_valid(public_id))
        return APR_NOTFOUND;
    if ((c->display_name && !display_valid(c->display_name))
        || (c->upstream_id && !upstream_valid(c->upstream_id))
        || (c->family && !family_valid(c->family))
        || c->enabled < -1 || c->enabled > 1
        || c->messages_enabled < -1 || c->messages_enabled > 1
        || (c->max_output != PROV_MAX_OUTPUT_DEFAULT
            && (c->max_output < 0 || c->max_output > PROV_OUTPUT_TOKENS_MAX)))
        return APR_EINVAL;
    max_output = prov_i64(c->max_output, p);
    rv = prov_store_exec(s, &n, "model_set",
                         PROV_ARGS(c->display_name, c->upstream_id, c->family,
                                   flag_arg(c->enabled), flag_arg(c->messages_enabled),
                                   max_output, max_output, max_output,
                                   prov_i64(prov_now(), p), public_id), p);
    if (rv != APR_SUCCESS)
        return rv;
    if (n == 0)
        return APR_NOTFOUND;
    prov_log(PROV_LOG_INFO, 0, "PROV02202: model %s changed", public_id);
    return APR_SUCCESS;
}

apr_status_t prov_model_price(prov_store_t *s, const char *public_id,
                              const prov_rate_change_t *c, apr_pool_t *p)
{
    prov_model_t *m = NULL;
    prov_rates_t r;
    int n = 0;
    apr_status_t rv;

    if ((c->set_input && !rate_valid(c->rates.input))
        || (c->set_output && !rate_valid(c->rates.output))
        || (c->set_cache && !rate_valid(c->rates.cache))
        || (c->set_reasoning && !rate_valid(c->rates.reasoning)))
        return APR_EINVAL;

    rv = prov_store_begin(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_model_find(&m, s, public_id, p);
    if (rv != APR_SUCCESS)
        goto fail;
    r = m->rates;
    if (c->set_input)
        r.input = c->rates.input;
    if (c->set_output)
        r.output = c->rates.output;
    if (c->set_cache)
        r.cache = c->rates.cache;
    if (c->set_reasoning)
        r.reasoning = c->rates.reasoning;
    rv = prov_store_exec(s, &n, "model_price",
                         PROV_ARGS(rate_arg(r.input, p), rate_arg(r.output, p),
                                   rate_arg(r.cache, p), rate_arg(r.reasoning, p),
                                   prov_i64(prov_now(), p), public_id), p);
    if (rv == APR_SUCCESS && n == 0)
        rv = APR_NOTFOUND;
    if (rv != APR_SUCCESS)
        goto fail;
    rv = prov_store_commit(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    prov_log(PROV_LOG_INFO, 0, "PROV02203: model %s repriced", public_id);
    return APR_SUCCESS;

fail:
    prov_store_rollback(s, p);
    return rv;
}
