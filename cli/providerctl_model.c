/* providerctl_model.c: the `model` group: the catalog (public id, display
 * name, the gateway's upstream id, the family, the enabled and messages flags)
 * and its rate card in credits per 1M tokens of each kind; `none` clears a
 * rate (the catalog then shows null); its maximum output (`default`: the
 * server's ProviderDefaultMaxTokens). */
#include <stdio.h>
#include <string.h>
#include "providerctl.h"

#define ID_RULES "1-128 of A-Z a-z 0-9 . _ : / -, starting with a letter or digit"
#define FIELD_RULES "the upstream id is up to 256 characters without spaces; the name " \
                    "up to 200 without control characters; the family up to 64 of " \
                    "a-z 0-9 . _ -"

static json_object *rate_json(prov_micro_t r)
{
    return r == PROV_RATE_UNSET ? NULL : prov_json_credits(r);
}

json_object *ctl_model_json(const void *rec)
{
    const prov_model_t *m = rec;
    json_object *o = json_object_new_object(), *pr = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(m->id));
    json_object_object_add(o, "publicId", json_object_new_string(m->public_id));
    json_object_object_add(o, "display_name", json_object_new_string(m->display_name));
    json_object_object_add(o, "upstream_id", json_object_new_string(m->upstream_id));
    json_object_object_add(o, "family", json_object_new_string(m->family));
    json_object_object_add(o, "enabled", json_object_new_boolean(m->enabled));
    json_object_object_add(o, "messages_enabled", json_object_new_boolean(m->messages_enabled));
    json_object_object_add(pr, "input", rate_json(m->rates.input));
    json_object_object_add(pr, "output", rate_json(m->rates.output));
    json_object_object_add(pr, "cache", rate_json(m->rates.cache));
    json_object_object_add(pr, "reasoning", rate_json(m->rates.reasoning));
    json_object_object_add(o, "pricing", pr);
    /* null: the server's default (ProviderDefaultMaxTokens) */
    json_object_object_add(o, "max_output_tokens",
                           m->max_output > 0 ? json_object_new_int64(m->max_output) : NULL);
    return o;
}

static const char *max_output_text(const prov_model_t *m, apr_pool_t *p)
{
    return m->max_output > 0 ? prov_i64(m->max_output, p) : "default";
}

static const char *rate_text(prov_micro_t r, apr_pool_t *p)
{
    return r == PROV_RATE_UNSET ? "-" : ctl_credits(r, p);
}

static int model_print(ctl_t *ctl, const prov_model_t *m)
{
    apr_pool_t *p = ctl->pool;
    if (ctl->json) {
        ctl_json_print(ctl_model_json(m));
        return CTL_OK;
    }
    ctl_kv("public id:", m->public_id);
    ctl_kv("display name:", m->display_name);
    ctl_kv("upstream id:", m->upstream_id);
    ctl_kv("family:", *m->family ? m->family : "-");
    ctl_kv("enabled:", m->enabled ? "yes" : "no");
    ctl_kv("messages:", m->messages_enabled ? "on" : "off");
    ctl_kv("input rate:", rate_text(m->rates.input, p));
    ctl_kv("output rate:", rate_text(m->rates.output, p));
    ctl_kv("cache rate:", rate_text(m->rates.cache, p));
    ctl_kv("reasoning rate:", rate_text(m->rates.reasoning, p));
    ctl_kv("max output:", max_output_text(m, p));
    printf("(rates in credits per 1M tokens; '-' = not set: cache falls back to input,\n"
           " reasoning to output; a model without input and output rates is not served;\n"
           " max output in tokens, 'default' = the server's ProviderDefaultMaxTokens)\n");
    return CTL_OK;
}

/* Re-reads a model after a change and prints it. */
static int show_after(ctl_t *ctl, const char *public_id, const char *what)
{
    prov_model_t *m = NULL;
    int rc = ctl_find_model(ctl, &m, public_id);
    if (rc != CTL_OK)
        return rc;
    if (!ctl->json)
        printf("model %s %s\n", public_id, what);
    return ctl->json ? model_print(ctl, m) : CTL_OK;
}

static int parse_onoff(ctl_t *ctl, int *out, const char *v, const char *opt)
{
    if (!strcmp(v, "on") || !strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
        *out = 1;
    else if (!strcmp(v, "off") || !strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
        *out = 0;
    else
        return ctl_usage(ctl, "--%s takes on or off, not '%s'", opt, v);
    return CTL_OK;
}

static int model_add(ctl_t *ctl)
{
    const char *id = ctl->argv[0];
    prov_model_t *m = NULL;
    apr_status_t rv;

    if (!prov_model_id_valid(id))
        return ctl_usage(ctl, "'%s' is not a valid model id (%s)", id, ID_RULES);
    rv = prov_model_add(&m, ctl->store, id, ctl_opt(ctl, "upstream"), ctl_opt(ctl, "name"),
                        ctl_opt(ctl, "family"), ctl->pool);
    if (rv == APR_EEXIST)
        return ctl_fail(ctl, "model '%s' already exists", id);
    if (rv == APR_EINVAL)
        return ctl_usage(ctl, "invalid --upstream, --name, --family or --max-output (%s)",
                         FIELD_RULES);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "add the model");
    if (ctl_flag(ctl, "messages")) {
        prov_model_change_t c = { NULL, NULL, NULL, -1, 1 };
        rv = prov_model_set(ctl->store, id, &c, ctl->pool);
        if (rv != APR_SUCCESS)
            return ctl_db_fail(ctl, rv, "enable the messages transport");
        m->messages_enabled = 1;
    }
    if (ctl->json)
        return model_print(ctl, m);
    printf("model %s added (upstream %s)%s\n", m->public_id, m->upstream_id,
           m->messages_enabled ? ", messages transport on" : "");
    printf("it has no prices yet: set them with 'providerctl model price %s --input R "
           "--output R'\n", m->public_id);
    return CTL_OK;
}

static void model_row(ctl_table_t *t, const void *rec, apr_pool_t *p)
{
    const prov_model_t *m = rec;
    ctl_table_row(t, m->public_id, m->display_name, m->upstream_id,
                  *m->family ? m->family : "-", m->enabled ? "yes" : "no",
                  m->messages_enabled ? "on" : "off", rate_text(m->rates.input, p),
                  rate_text(m->rates.output, p), rate_text(m->rates.cache, p),
                  rate_text(m->rates.reasoning, p), max_output_text(m, p));
}

static int model_list(ctl_t *ctl)
{
    apr_array_header_t *models = NULL;
    apr_status_t rv;

    if (ctl_flag(ctl, "all") && ctl_flag(ctl, "enabled"))
        return ctl_usage(ctl, "--all and --enabled exclude each other");
    rv = prov_model_list(&models, ctl->store, ctl_flag(ctl, "enabled"), ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the models");
    return ctl_list_print(ctl, models, ctl_model_json,
                          ctl_table_make(ctl->pool, 11, "PUBLIC ID", "NAME", "UPSTREAM",
                                         "FAMILY", "ENABLED", "MESSAGES", "INPUT", "OUTPUT",
                                         "CACHE", "REASONING", "MAX OUTPUT"),
                          model_row, "no models");
}

static int model_show(ctl_t *ctl)
{
    prov_model_t *m = NULL;
    int rc = ctl_find_model(ctl, &m, ctl->argv[0]);
    return rc != CTL_OK ? rc : model_print(ctl, m);
}

/* Applies a change and reports it; NOTFOUND becomes "unknown model". */
static int apply_change(ctl_t *ctl, const prov_model_change_t *c, const char *what)
{
    const char *id = ctl->argv[0];
    apr_status_t rv = prov_model_set(ctl->store, id, c, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "unknown model '%s'", id);
    if (rv == APR_EINVAL)
        return ctl_usage(ctl, "invalid --upstream, --name, --family or --max-output (%s)",
                         FIELD_RULES);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "change the model");
    return show_after(ctl, id, what);
}

/* --max-output: `default`, or 1..PROV_OUTPUT_TOKENS_MAX tokens. */
static int parse_max_output(ctl_t *ctl, apr_int64_t *out, const char *v)
{
    if (!strcmp(v, "default")) {
        *out = PROV_MAX_OUTPUT_DEFAULT;
        return CTL_OK;
    }
    if (prov_parse_i64(out, v) != APR_SUCCESS || *out < 1 || *out > PROV_OUTPUT_TOKENS_MAX)
        return ctl_usage(ctl, "--max-output takes a number of tokens from 1 to %"
                         APR_INT64_T_FMT " or 'default', not '%s'", PROV_OUTPUT_TOKENS_MAX, v);
    return CTL_OK;
}

static int model_set(ctl_t *ctl)
{
    prov_model_change_t c = { ctl_opt(ctl, "name"), ctl_opt(ctl, "upstream"),
                              ctl_opt(ctl, "family"), -1, -1, 0 };
    const char *msg = ctl_opt(ctl, "messages");
    const char *max_output = ctl_opt(ctl, "max-output");
    int rc;

    if (msg && (rc = parse_onoff(ctl, &c.messages_enabled, msg, "messages")) != CTL_OK)
        return rc;
    if (max_output && (rc = parse_max_output(ctl, &c.max_output, max_output)) != CTL_OK)
        return rc;
    if (!c.display_name && !c.upstream_id && !c.family && !msg && !max_output)
        return ctl_usage(ctl, "nothing to change: give --name, --upstream, --family, "
                         "--messages or --max-output");
    return apply_change(ctl, &c, "changed");
}

static int model_enable(ctl_t *ctl)
{
    prov_model_change_t c = { NULL, NULL, NULL, 1, -1 };
    return apply_change(ctl, &c, "enabled");
}

static int model_disable(ctl_t *ctl)
{
    prov_model_change_t c = { NULL, NULL, NULL, 0, -1 };
    return apply_change(ctl, &c, "disabled: it leaves the catalog and is refused");
}

/* One --KIND option of `model price`: absent, `none`, or a rate. */
static int rate_opt(ctl_t *ctl, int *set, prov_micro_t *rate, const char *kind)
{
    const char *v = ctl_opt(ctl, kind);
    const char *what = apr_pstrcat(ctl->pool, "--", kind, NULL);
    int rc;
    if (!v)
        return CTL_OK;
    *set = 1;
    if (!strcmp(v, "none")) {
        *rate = PROV_RATE_UNSET;
        return CTL_OK;
    }
    if ((rc = ctl_parse_credits(ctl, rate, v, 0, what)) != CTL_OK)
        return rc;
    if (*rate > PROV_RATE_MAX)
        return ctl_usage(ctl, "%s %s is too large (at most %s credits per 1M tokens)", what, v,
                         ctl_credits(PROV_RATE_MAX, ctl->pool));
    return CTL_OK;
}

static int model_price(ctl_t *ctl)
{
    prov_rate_change_t c;
    apr_status_t rv;
    prov_model_t *m = NULL;
    int rc;

    memset(&c, 0, sizeof(c));
    if ((rc = rate_opt(ctl, &c.set_input, &c.rates.input, "input")) != CTL_OK
        || (rc = rate_opt(ctl, &c.set_output, &c.rates.output, "output")) != CTL_OK
        || (rc = rate_opt(ctl, &c.set_cache, &c.rates.cache, "cache")) != CTL_OK
        || (rc = rate_opt(ctl, &c.set_reasoning, &c.rates.reasoning, "reasoning")) != CTL_OK)
        return rc;
    if (!c.set_input && !c.set_output && !c.set_cache && !c.set_reasoning)
        return ctl_usage(ctl, "nothing to change: give --input, --output, --cache or "
                         "--reasoning");
    rv = prov_model_price(ctl->store, ctl->argv[0], &c, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "unknown model '%s'", ctl->argv[0]);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "set the prices");
    if ((rc = ctl_find_model(ctl, &m, ctl->argv[0])) != CTL_OK)
        return rc;
    return model_print(ctl, m);
}

static const ctl_opt_t add_opts[] = {
    { "upstream", "UPSTREAM_ID", 1, "the model's id at the gateway" },
    { "name", "DISPLAY", 0, "the display name (default: the public id)" },
    { "family", "FAMILY", 0, "the vendor family (decides the messages transport)" },
    { "messages", NULL, 0, "serve it on /v1/messages too (needs the messages family)" },
    { NULL, NULL, 0, NULL }
};

static const ctl_opt_t list_opts[] = {
    { "all", NULL, 0, "all models (the default)" },
    { "enabled", NULL, 0, "only the enabled models" },
    { NULL, NULL, 0, NULL }
};

static const ctl_opt_t set_opts[] = {
    { "name", "DISPLAY", 0, "a new display name" },
    { "upstream", "UPSTREAM_ID", 0, "a new upstream id" },
    { "family", "FAMILY", 0, "a new family ('' for none)" },
    { "messages", "on|off", 0, "serve it on /v1/messages or not" },
    { "max-output", "N|default", 0, "the most output tokens a request is forwarded with" },
    { NULL, NULL, 0, NULL }
};

static const ctl_opt_t price_opts[] = {
    { "input", "R", 0, "credits per 1M input tokens, or none" },
    { "output", "R", 0, "credits per 1M output tokens, or none" },
    { "cache", "R", 0, "credits per 1M cached input tokens, or none (then: input)" },
    { "reasoning", "R", 0, "credits per 1M reasoning tokens, or none (then: output)" },
    { NULL, NULL, 0, NULL }
};

const ctl_cmd_t ctl_model_cmds[] = {
    { "add", "PUBLIC_ID", 1, 1, add_opts, CTL_DB_READY, model_add,
      "add a model to the catalog (enabled, without prices)",
      "PUBLIC_ID is what clients send as `model`: " ID_RULES "." },
    { "list", "", 0, 0, list_opts, CTL_DB_READY, model_list,
      "list the models with their flags and rates", NULL },
    { "show", "PUBLIC_ID", 1, 1, NULL, CTL_DB_READY, model_show, "show one model", NULL },
    { "set", "PUBLIC_ID", 1, 1, set_opts, CTL_DB_READY, model_set,
      "change a model's name, upstream id, family, messages flag or maximum output",
      "--max-output N: every request of the model is forwarded with an output cap of\n"
      "at most N tokens (a client's larger cap is lowered to it; a request without a\n"
      "cap gets it, or less when its limits cannot pay for N). 'default': the\n"
      "server's ProviderDefaultMaxTokens (32768 unless configured)." },
    { "price", "PUBLIC_ID", 1, 1, price_opts, CTL_DB_READY, model_price,
      "set or clear a model's rates (credits per 1M tokens)",
      "Only the rates given change; 'none' clears one. A model is served only\n"
      "once it has input and output rates." },
    { "enable", "PUBLIC_ID", 1, 1, NULL, CTL_DB_READY, model_enable,
      "put a model in the catalog", NULL },
    { "disable", "PUBLIC_ID", 1, 1, NULL, CTL_DB_READY, model_disable,
      "take a model out of the catalog", NULL },
    { NULL }
};
