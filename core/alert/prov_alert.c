/* prov_alert.c: what an alert is, without a database or a network: the
 * table of kinds, the crossing arithmetic (has a spend reached a percent of
 * its limit, which window a crossing belongs to, the retry backoff) and the
 * signature of a delivery (HMAC-SHA256 over "<t>.<body>", OpenSSL). The
 * outbox, the scan and the delivery build on these (prov_alert_*.c). */
#include <string.h>
#include <openssl/hmac.h>
#include <openssl/evp.h>
#include "prov_alert.h"

static const struct {
    const char *name;
    int percent;
} kinds[PROV_ALERT_KINDS] = {
    [PROV_ALERT_BUDGET_80] = { "budget_80", 80 },
    [PROV_ALERT_BUDGET_100] = { "budget_100", 100 },
    [PROV_ALERT_PLAN_5H_90] = { "plan_5h_90", 90 },
    [PROV_ALERT_PLAN_7D_90] = { "plan_7d_90", 90 },
    [PROV_ALERT_BALANCE_BELOW] = { "balance_below", 0 },
    [PROV_ALERT_USER_BLOCKED] = { "user_blocked", 0 },
};

const char *prov_alert_kind_name(prov_alert_kind_e k)
{
    return k >= 0 && k < PROV_ALERT_KINDS ? kinds[k].name : "unknown";
}

int prov_alert_kind_percent(prov_alert_kind_e k)
{
    return k >= 0 && k < PROV_ALERT_KINDS ? kinds[k].percent : 0;
}

int prov_alert_reached(prov_micro_t used, prov_micro_t limit, int percent)
{
    /* used * 100 >= limit * percent without the products: the threshold is
     * limit / 100 * percent plus the rounded-up share of limit % 100. */
    apr_int64_t threshold;
    if (limit <= 0 || percent <= 0 || percent > 100 || used < 0)
        return 0;
    threshold = limit / 100 * percent + (limit % 100 * percent + 99) / 100;
    return used >= threshold;
}

/* 1970-01-01 was a Thursday: Monday 00:00 UTC is 4 days after a multiple
 * of 7 days. */
#define WEEK (7 * 86400)
#define MONDAY_OFFSET (4 * 86400)
#define FIVE_HOURS (5 * 3600)

apr_int64_t prov_alert_window_start(prov_alert_kind_e k, apr_int64_t now)
{
    apr_int64_t day;
    switch (k) {
    case PROV_ALERT_BUDGET_80:
    case PROV_ALERT_BUDGET_100:
    case PROV_ALERT_PLAN_7D_90:
        return now - ((now - MONDAY_OFFSET) % WEEK + WEEK) % WEEK;
    case PROV_ALERT_PLAN_5H_90:
        /* Five-hour periods from each day's 00:00 UTC (the last is 4 hours). */
        day = now - (now % 86400 + 86400) % 86400;
        return day + (now - day) / FIVE_HOURS * FIVE_HOURS;
    default:
        return now;
    }
}

apr_int64_t prov_alert_backoff(int attempts)
{
    if (attempts < 1)
        return 0;
    if (attempts > 9)
        return PROV_ALERT_BACKOFF_MAX;
    return (apr_int64_t)1 << (attempts - 1) > PROV_ALERT_BACKOFF_MAX
               ? PROV_ALERT_BACKOFF_MAX : (apr_int64_t)1 << (attempts - 1);
}

apr_status_t prov_alert_sign(const char **value, const char *secret, apr_size_t secret_len,
                             apr_int64_t t, const char *body, apr_size_t len, apr_pool_t *p)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0, i;
    const char *ts = prov_i64(t, p);
    apr_size_t ts_len = strlen(ts);
    char *msg, *out;
    if (!secret || !secret_len || secret_len > (apr_size_t)2147483647)
        return APR_EINVAL;
    msg = apr_palloc(p, ts_len + 1 + len + 1);
    memcpy(msg, ts, ts_len);
    msg[ts_len] = '.';
    memcpy(msg + ts_len + 1, body, len);
    if (!HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)msg,
              ts_len + 1 + len, mac, &mac_len))
        return APR_EGENERAL;
    out = apr_palloc(p, mac_len * 2 + 1);
    for (i = 0; i < mac_len; i++) {
        out[2 * i] = hex[mac[i] >> 4];
        out[2 * i + 1] = hex[mac[i] & 15];
    }
    out[2 * mac_len] = '\0';
    *value = apr_psprintf(p, "t=%s,v1=%s", ts, out);
    return APR_SUCCESS;
}
