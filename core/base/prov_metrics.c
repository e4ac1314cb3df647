/* prov_metrics.c: the server's counters in one flat block (prov_metrics.h)
 * and their Prometheus text rendering. The block holds only fixed-size
 * arrays of 64-bit integers and the model table, so it can live in shared
 * memory that children inherit: updates are relaxed __atomic adds (a
 * counter needs no ordering with anything else), the model table's slots
 * are claimed once with a compare-and-swap. A gauge is a counter that also
 * goes down: its two's complement sum reads back signed. */
#include <string.h>
#include <apr_strings.h>
#include <apr_tables.h>
#include "prov_metrics.h"

#define MODEL_OTHER PROV_MX_MODELS
#define MODEL_NONE (PROV_MX_MODELS + 1)
#define MODEL_ROWS (PROV_MX_MODELS + 2)
#define CLASSES 5                          /* 1xx .. 5xx */

typedef struct hist_t {
    apr_uint64_t bucket[PROV_MX_BUCKETS_MAX + 1];   /* not cumulative; last: +Inf */
    apr_uint64_t count;
    apr_uint64_t sum;
} hist_t;

struct prov_metrics_t {
    apr_uint32_t model_state[PROV_MX_MODELS];       /* 0 free, 1 being named, 2 named */
    char model_name[PROV_MX_MODELS][PROV_MX_MODEL_LEN];
    apr_uint64_t requests[PROV_MX_TRANSPORTS][MODEL_ROWS][CLASSES];
    apr_uint64_t scalar[PROV_MX_SCALARS];
    apr_uint64_t refused[PROV_MX_REFUSALS];
    apr_uint64_t gwerror[PROV_MX_GW_ERRORS];
    hist_t hist[PROV_MX_HISTOGRAMS];
};

static prov_metrics_t *current;

static const char *const transports[PROV_MX_TRANSPORTS] = { "chat", "messages", "responses" };

static const char *const refusals[PROV_MX_REFUSED_RATE_LIMIT] = {
    "key", "blocked", "budget", "window", "balance"
};

static const char *const gwerrors[PROV_MX_GW_ERRORS] = {
    "timeout", "unreachable", "auth", "rate_limit", "overloaded", "client_error",
    "server_error", "stream_error", "malformed"
};

/* One family of scalars: its name, help, type, the label and value of each
 * member (consecutive in prov_mx_scalar_e), and whether it is micro-credits. */
typedef struct family_t {
    const char *name, *help, *type, *label;
    prov_mx_scalar_e first;
    int n, micro;
    const char *values[4];
} family_t;

static const family_t families[] = {
    { "provider_credits_charged_total", "Credits charged by settled requests, by what paid "
      "them.", "counter", "source", PROV_MX_CREDITS_PLAN, 2, 1, { "plan", "balance" } },
    { "provider_tokens_total", "Tokens charged for, by kind.", "counter", "kind",
      PROV_MX_TOKENS_INPUT, 4, 0, { "input", "output", "cache", "reasoning" } },
    { "provider_holds_total", "Holds taken, by where they were drawn from.", "counter", "from",
      PROV_MX_HOLDS_LEASE, 2, 0, { "lease", "database" } },
    { "provider_holds_in_flight", "Holds of requests in progress.", "gauge", NULL,
      PROV_MX_HOLDS_IN_FLIGHT, 1, 0, { NULL } },
    { "provider_credits_held_in_flight", "Credits held by requests in progress.", "gauge",
      NULL, PROV_MX_HELD_IN_FLIGHT, 1, 1, { NULL } },
    { "provider_inference_requests_started_total", "Inference requests begun.", "counter",
      NULL, PROV_MX_INFER_STARTED, 1, 0, { NULL } },
    { "provider_inference_requests_in_flight", "Inference requests in progress.", "gauge",
      NULL, PROV_MX_INFER_IN_FLIGHT, 1, 0, { NULL } },
    { "provider_streams_open", "Streams open to clients.", "gauge", NULL,
      PROV_MX_STREAMS_OPEN, 1, 0, { NULL } },
    { "provider_journal_unwritten_records", "Settlements journaled and not yet committed "
      "to the database.", "gauge", NULL, PROV_MX_JOURNAL_UNWRITTEN, 1, 0, { NULL } },
    { "provider_billing_writers", "Billing writer threads running.", "gauge", NULL,
      PROV_MX_WRITERS, 1, 0, { NULL } },
    { "provider_signins_total", "Sign-ins completed through an identity provider.",
      "counter", NULL, PROV_MX_SIGNINS, 1, 0, { NULL } },
    { "provider_oauth_tokens_issued_total", "OAuth token responses issued (MCP clients).",
      "counter", NULL, PROV_MX_OAUTH_TOKENS, 1, 0, { NULL } },
};

/* Upper bounds of each histogram's buckets, in its stored unit. */
static const apr_int64_t gw_bounds[] = {
    5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000,
    10000000, 30000000, 60000000, 120000000, 300000000
};
static const apr_int64_t db_bounds[] = {
    100, 1000, 5000, 10000, 50000, 100000, 500000, 1000000, 5000000
};
static const apr_int64_t batch_bounds[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256 };

typedef struct histdef_t {
    const char *name, *help;
    const apr_int64_t *bounds;
    int n;
    int seconds;                 /* stored in microseconds, shown in seconds */
} histdef_t;

static const histdef_t histdefs[PROV_MX_HISTOGRAMS] = {
    { "provider_gateway_request_duration_seconds", "Duration of gateway calls (a stream: "
      "until its end).", gw_bounds, (int)(sizeof(gw_bounds) / sizeof(gw_bounds[0])), 1 },
    { "provider_db_connection_wait_seconds", "Time spent waiting for a database connection "
      "from mod_dbd.", db_bounds, (int)(sizeof(db_bounds) / sizeof(db_bounds[0])), 1 },
    { "provider_billing_batch_operations", "Operations (reservations, settlements, lease "
      "entries) per committed billing batch.", batch_bounds,
      (int)(sizeof(batch_bounds) / sizeof(batch_bounds[0])), 0 },
};

#define ADD(slot, v) __atomic_fetch_add((slot), (apr_uint64_t)(v), __ATOMIC_RELAXED)
#define READ(slot) __atomic_load_n((slot), __ATOMIC_RELAXED)

apr_size_t prov_metrics_size(void)
{
    return sizeof(prov_metrics_t);
}

prov_metrics_t *prov_metrics_init(void *mem)
{
    memset(mem, 0, sizeof(prov_metrics_t));
    return mem;
}

void prov_metrics_use(prov_metrics_t *m)
{
    current = m;
}

prov_metrics_t *prov_metrics_current(void)
{
    return current;
}

prov_mx_transport_e prov_metrics_transport(const char *name)
{
    int i;
    for (i = 0; name && i < PROV_MX_TRANSPORTS; i++)
        if (!strcmp(name, transports[i]))
            return (prov_mx_transport_e)i;
    return PROV_MX_TRANSPORTS;
}

/* How often model_row looks at a slot another thread is naming. */
#define NAMING_SPINS 100000

/* The row of model id: its slot (claimed on first use), "other" when the
 * table is full or the id too long, "none" without one. */
static int model_row(prov_metrics_t *m, const char *id)
{
    apr_size_t len;
    int i, spins;
    if (!id || !*id)
        return MODEL_NONE;
    if ((len = strlen(id)) >= PROV_MX_MODEL_LEN)
        return MODEL_OTHER;
    for (i = 0; i < PROV_MX_MODELS; i++) {
        apr_uint32_t st = __atomic_load_n(&m->model_state[i], __ATOMIC_ACQUIRE);
        if (st == 0) {
            apr_uint32_t zero = 0;
            if (__atomic_compare_exchange_n(&m->model_state[i], &zero, 1, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                memcpy(m->model_name[i], id, len + 1);
                __atomic_store_n(&m->model_state[i], 2, __ATOMIC_RELEASE);
                return i;
            }
            st = zero;
        }
        /* another thread is naming it: a copy of under 64 bytes. A
         * process killed in between leaves the slot half named for good:
         * after NAMING_SPINS looks it is passed over. */
        for (spins = 0; st == 1 && spins < NAMING_SPINS; spins++)
            st = __atomic_load_n(&m->model_state[i], __ATOMIC_ACQUIRE);
        if (st == 2 && !strcmp(m->model_name[i], id))
            return i;
    }
    return MODEL_OTHER;
}

void prov_metrics_request(prov_metrics_t *m, prov_mx_transport_e t, const char *model,
                          int status)
{
    int cls = status / 100 - 1;
    if (!m || t >= PROV_MX_TRANSPORTS || cls < 0 || cls >= CLASSES)
        return;
    ADD(&m->requests[t][model_row(m, model)][cls], 1);
}

void prov_metrics_add(prov_metrics_t *m, prov_mx_scalar_e s, apr_int64_t v)
{
    if (m && s < PROV_MX_SCALARS)
        ADD(&m->scalar[s], v);
}

void prov_metrics_refused(prov_metrics_t *m, prov_mx_refusal_e why)
{
    if (m && why < PROV_MX_REFUSALS)
        ADD(&m->refused[why], 1);
}

void prov_metrics_gateway_error(prov_metrics_t *m, prov_mx_gwerror_e cls)
{
    if (m && cls < PROV_MX_GW_ERRORS)
        ADD(&m->gwerror[cls], 1);
}

int prov_metrics_bucket(const apr_int64_t *bounds, int n, apr_int64_t v)
{
    int i;
    for (i = 0; i < n; i++)
        if (v <= bounds[i])
            return i;
    return n;
}

void prov_metrics_observe(prov_metrics_t *m, prov_mx_hist_e h, apr_int64_t v)
{
    hist_t *x;
    if (!m || h >= PROV_MX_HISTOGRAMS)
        return;
    x = &m->hist[h];
    if (v < 0)
        v = 0;
    ADD(&x->bucket[prov_metrics_bucket(histdefs[h].bounds, histdefs[h].n, v)], 1);
    ADD(&x->sum, v);
    ADD(&x->count, 1);
}

apr_int64_t prov_metrics_get(const prov_metrics_t *m, prov_mx_scalar_e s)
{
    return m && s < PROV_MX_SCALARS ? (apr_int64_t)READ(&m->scalar[s]) : 0;
}

/* ---- rendering ------------------------------------------------------------ */

typedef struct out_t {
    apr_array_header_t *parts;
    apr_pool_t *p;
} out_t;

static void put(out_t *o, const char *s)
{
    APR_ARRAY_PUSH(o->parts, const char *) = s;
}

static void head(out_t *o, const char *name, const char *help, const char *type)
{
    put(o, apr_psprintf(o->p, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type));
}

/* v in a unit of 10^-6 as a decimal, exactly. */
static const char *micro(apr_int64_t v, apr_pool_t *p)
{
    const char *sign = v < 0 ? "-" : "";
    apr_uint64_t u = v < 0 ? (apr_uint64_t)0 - (apr_uint64_t)v : (apr_uint64_t)v;
    return apr_psprintf(p, "%s%" APR_UINT64_T_FMT ".%06" APR_UINT64_T_FMT, sign,
                        u / 1000000, u % 1000000);
}

/* A label value with Prometheus's escapes (backslash, quote, newline). */
static const char *escape(const char *v, apr_pool_t *p)
{
    char *out = apr_palloc(p, strlen(v) * 2 + 1), *d = out;
    for (; *v; v++) {
        if (*v == '\\' || *v == '"' || *v == '\n') {
            *d++ = '\\';
            *d++ = *v == '\n' ? 'n' : *v;
        }
        else
            *d++ = *v;
    }
    *d = '\0';
    return out;
}

static void render_requests(out_t *o, const prov_metrics_t *m)
{
    int t, row, c;
    head(o, "provider_requests_total", "Inference requests answered, by transport, model "
         "(none: refused before a model was found) and HTTP status class.", "counter");
    for (t = 0; t < PROV_MX_TRANSPORTS; t++)
        for (row = 0; row < MODEL_ROWS; row++)
            for (c = 0; c < CLASSES; c++) {
                apr_uint64_t v = READ(&m->requests[t][row][c]);
                const char *model;
                if (!v)
                    continue;
                model = row == MODEL_OTHER ? "other" : row == MODEL_NONE ? "none"
                      : escape(m->model_name[row], o->p);
                put(o, apr_psprintf(o->p, "provider_requests_total{transport=\"%s\",model="
                                    "\"%s\",code=\"%dxx\"} %" APR_UINT64_T_FMT "\n",
                                    transports[t], model, c + 1, v));
            }
}

static void render_scalars(out_t *o, const prov_metrics_t *m)
{
    apr_size_t f;
    int i;
    for (f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
        const family_t *fm = &families[f];
        head(o, fm->name, fm->help, fm->type);
        for (i = 0; i < fm->n; i++) {
            apr_int64_t v = (apr_int64_t)READ(&m->scalar[fm->first + i]);
            const char *val = fm->micro ? micro(v, o->p) : apr_psprintf(o->p, "%"
                                                                      APR_INT64_T_FMT, v);
            if (fm->label)
                put(o, apr_psprintf(o->p, "%s{%s=\"%s\"} %s\n", fm->name, fm->label,
                                    fm->values[i], val));
            else
                put(o, apr_psprintf(o->p, "%s %s\n", fm->name, val));
        }
    }
}

static void render_labelled(out_t *o, const char *name, const char *help, const char *label,
                            const char *const *values, const apr_uint64_t *v, int n)
{
    int i;
    head(o, name, help, "counter");
    for (i = 0; i < n; i++)
        put(o, apr_psprintf(o->p, "%s{%s=\"%s\"} %" APR_UINT64_T_FMT "\n", name, label,
                            values[i], READ(&v[i])));
}

static void render_refused(out_t *o, const prov_metrics_t *m)
{
    const char *names[PROV_MX_REFUSALS];
    int i;
    for (i = 0; i < PROV_MX_REFUSALS; i++)
        names[i] = i < PROV_MX_REFUSED_RATE_LIMIT ? refusals[i]
                 : apr_pstrcat(o->p, "rate_limit_",
                               prov_rl_class_name((prov_rl_class_e)(i - PROV_MX_REFUSED_RATE_LIMIT)),
                               NULL);
    render_labelled(o, "provider_refused_total", "Requests refused by a check: the key, a "
                    "blocked user, the key's budget, a plan's window, the balance, or an "
                    "anonymous endpoint's rate limit (rate_limit_CLASS).", "check", names,
                    m->refused, PROV_MX_REFUSALS);
}

static void render_hist(out_t *o, const prov_metrics_t *m, prov_mx_hist_e h)
{
    const histdef_t *d = &histdefs[h];
    const hist_t *x = &m->hist[h];
    apr_uint64_t cum = 0;
    int i;
    head(o, d->name, d->help, "histogram");
    for (i = 0; i <= d->n; i++) {
        const char *le = i == d->n ? "+Inf"
                       : d->seconds ? micro(d->bounds[i], o->p)
                       : apr_psprintf(o->p, "%" APR_INT64_T_FMT, d->bounds[i]);
        cum += READ(&x->bucket[i]);
        put(o, apr_psprintf(o->p, "%s_bucket{le=\"%s\"} %" APR_UINT64_T_FMT "\n", d->name, le,
                            cum));
    }
    put(o, apr_psprintf(o->p, "%s_sum %s\n%s_count %" APR_UINT64_T_FMT "\n", d->name,
                        d->seconds ? micro((apr_int64_t)READ(&x->sum), o->p)
                                   : apr_psprintf(o->p, "%" APR_UINT64_T_FMT, READ(&x->sum)),
                        d->name, READ(&x->count)));
}

const char *prov_metrics_render(const prov_metrics_t *m, apr_pool_t *p)
{
    out_t o;
    int h;
    o.p = p;
    o.parts = apr_array_make(p, 256, sizeof(const char *));
    render_requests(&o, m);
    render_scalars(&o, m);
    render_refused(&o, m);
    render_labelled(&o, "provider_gateway_errors_total", "Gateway calls that failed or were "
                    "refused, by class.", "class", gwerrors, m->gwerror, PROV_MX_GW_ERRORS);
    for (h = 0; h < PROV_MX_HISTOGRAMS; h++)
        render_hist(&o, m, (prov_mx_hist_e)h);
    return apr_array_pstrcat(p, o.parts, 0);
}
