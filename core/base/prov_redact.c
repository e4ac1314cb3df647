/* prov_redact.c: masking secrets in text that came from outside before it
 * reaches a log line. One pass over the text; at each position the rules
 * are tried in a fixed order (the caller's literal secrets, a URL, a
 * credential-like name with its value, an auth scheme with its credential,
 * an "sk-" key, a long token-like run) and the first that matches writes its
 * mask and skips what it masked; anything else is copied, control characters
 * as spaces. The output is bounded, and a secret is never copied in part: a
 * secret cut off by the end of the text is masked too. Over-masking a word
 * now and then is the price of never logging a credential. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "prov_redact.h"

#define MIN_SECRET 4
#define LONG_RUN 32
#define MIN_SK 8

struct prov_redactor_t {
    const char **secrets;        /* longest first, so a URL goes before its host */
    apr_size_t *lens;
    int n;
};

/* Names whose value (after ':' or '=') is a credential. Longer names that
 * end in a shorter one come first. */
static const char *const cred_names[] = {
    "proxy-authorization", "authorization", "x-api-key", "api-key", "api_key", "apikey",
    "access_token", "refresh_token", "id_token", "client_secret", "token", "password",
    "passwd", "secret", NULL
};
/* Auth schemes: the word after them is a credential. */
static const char *const schemes[] = { "bearer", "basic", NULL };

static int is_alpha(unsigned char c)
{
    return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int is_alnum(unsigned char c)
{
    return is_alpha(c) || is_digit(c);
}

static int is_tok(unsigned char c)
{
    return is_alnum(c) || c == '-' || c == '_' || c == '+' || c == '=';
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t';
}

static int is_ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* Where a credential or a URL ends. */
static int ends_value(unsigned char c)
{
    return is_ctl(c) || is_space(c) || c == '"' || c == '\'' || c == '<' || c == '>'
        || c == '`' || c == ')' || c == ']' || c == '}' || c == '\\' || c == ',' || c == ';';
}

static int word_start(const char *t, apr_size_t i)
{
    return i == 0 || (!is_alnum((unsigned char)t[i - 1]) && t[i - 1] != '_');
}

static int by_length_desc(const void *a, const void *b)
{
    apr_size_t la = strlen(*(const char *const *)a), lb = strlen(*(const char *const *)b);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

prov_redactor_t *prov_redactor_create(const char *const *secrets, apr_pool_t *p)
{
    prov_redactor_t *rd = apr_pcalloc(p, sizeof(*rd));
    apr_array_header_t *a = apr_array_make(p, 4, sizeof(const char *));
    int i;

    for (i = 0; secrets && secrets[i]; i++) {
        const char *s = secrets[i], *host, *end, *at;
        if (strlen(s) < MIN_SECRET)
            continue;
        APR_ARRAY_PUSH(a, const char *) = apr_pstrdup(p, s);
        if (!(host = strstr(s, "://")))
            continue;
        host += 3;
        end = host + strcspn(host, "/?#");
        at = memchr(host, '@', (apr_size_t)(end - host));
        if (at)
            host = at + 1;
        if (end - host >= MIN_SECRET)
            APR_ARRAY_PUSH(a, const char *) = apr_pstrndup(p, host, (apr_size_t)(end - host));
    }
    qsort(a->elts, (size_t)a->nelts, sizeof(const char *), by_length_desc);
    rd->secrets = (const char **)a->elts;
    rd->n = a->nelts;
    rd->lens = apr_palloc(p, sizeof(apr_size_t) * (apr_size_t)(a->nelts + 1));
    for (i = 0; i < rd->n; i++)
        rd->lens[i] = strlen(rd->secrets[i]);
    return rd;
}

/* ---- the output -------------------------------------------------------------- */

typedef struct out_t {
    char *buf;
    apr_size_t len, cap;
    int full;
} out_t;

/* Appends s whole, or nothing (and marks the output full). */
static void put(out_t *o, const char *s, apr_size_t n)
{
    if (o->full || o->len + n > o->cap) {
        o->full = 1;
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

/* put for text from outside: control characters (a tab after a name) as
 * spaces, as everywhere else in the output. */
static void put_text(out_t *o, const char *s, apr_size_t n)
{
    apr_size_t k;
    if (o->full || o->len + n > o->cap) {
        o->full = 1;
        return;
    }
    for (k = 0; k < n; k++)
        o->buf[o->len + k] = is_ctl((unsigned char)s[k]) ? ' ' : s[k];
    o->len += n;
}

/* Cuts a truncated output back to a whole UTF-8 character and marks it. */
static void finish_cut(out_t *o)
{
    apr_size_t k;
    unsigned char lead;
    apr_size_t need;
    if (o->len > 0) {
        k = o->len - 1;
        while (k > 0 && ((unsigned char)o->buf[k] & 0xC0) == 0x80)
            k--;
        lead = (unsigned char)o->buf[k];
        need = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (k + need > o->len)
            o->len = k;
    }
    memcpy(o->buf + o->len, "...", 3);
    o->len += 3;
}

/* ---- the rules: each returns how many bytes of text it consumed (0: no match) -- */

static apr_size_t rule_secret(const prov_redactor_t *rd, const char *t, apr_size_t i,
                              apr_size_t len, out_t *o)
{
    int k;
    for (k = 0; rd && k < rd->n; k++) {
        apr_size_t n = rd->lens[k], left = len - i;
        /* A secret cut off by the end of the text counts as well. */
        if (n > left && (left < MIN_SECRET || strncasecmp(t + i, rd->secrets[k], left)))
            continue;
        if (n <= left && strncasecmp(t + i, rd->secrets[k], n))
            continue;
        put(o, PROV_REDACT_MASK, sizeof(PROV_REDACT_MASK) - 1);
        return n <= left ? n : left;
    }
    return 0;
}

static apr_size_t rule_url(const char *t, apr_size_t i, apr_size_t len, out_t *o)
{
    apr_size_t j = i;
    if (!word_start(t, i) || !is_alpha((unsigned char)t[i]))
        return 0;
    while (j < len && j - i < 20 && (is_alnum((unsigned char)t[j]) || t[j] == '+'
                                     || t[j] == '.' || t[j] == '-'))
        j++;
    if (len - j < 3 || memcmp(t + j, "://", 3))
        return 0;
    j += 3;
    while (j < len && !ends_value((unsigned char)t[j]))
        j++;
    put(o, PROV_REDACT_URL, sizeof(PROV_REDACT_URL) - 1);
    return j - i;
}

/* "name: value", "name=value", "\"name\": \"value\"": the name, the separator
 * and an opening quote stay, the value is masked. */
static apr_size_t rule_cred_name(const char *t, apr_size_t i, apr_size_t len, out_t *o)
{
    const char *const *name;
    apr_size_t j = 0, v;
    char quote = 0;

    if (!word_start(t, i))
        return 0;
    for (name = cred_names; *name; name++) {
        apr_size_t n = strlen(*name);
        if (len - i >= n && !strncasecmp(t + i, *name, n)
            && (i + n == len || (!is_alnum((unsigned char)t[i + n]) && t[i + n] != '_'))) {
            j = i + n;
            break;
        }
    }
    if (!*name)
        return 0;
    if (j < len && (t[j] == '"' || t[j] == '\''))
        j++;
    while (j < len && is_space((unsigned char)t[j]))
        j++;
    if (j >= len || (t[j] != ':' && t[j] != '='))
        return 0;
    j++;
    while (j < len && is_space((unsigned char)t[j]))
        j++;
    if (j < len && (t[j] == '"' || t[j] == '\''))
        quote = t[j++];
    for (v = j; v < len && t[v] != '\r' && t[v] != '\n'; v++) {
        if (quote ? t[v] == quote
                  : (t[v] == '"' || t[v] == '\'' || t[v] == ',' || t[v] == ';' || t[v] == '&'
                     || t[v] == '}' || t[v] == ']'))
            break;
    }
    if (v == j)
        return 0;
    put_text(o, t + i, j - i);
    put(o, PROV_REDACT_MASK, sizeof(PROV_REDACT_MASK) - 1);
    return v - i;
}

static apr_size_t rule_scheme(const char *t, apr_size_t i, apr_size_t len, out_t *o)
{
    const char *const *s;
    apr_size_t j, v;
    if (!word_start(t, i))
        return 0;
    for (s = schemes; *s; s++) {
        apr_size_t n = strlen(*s);
        if (len - i <= n || strncasecmp(t + i, *s, n) || !is_space((unsigned char)t[i + n]))
            continue;
        for (j = i + n; j < len && is_space((unsigned char)t[j]); j++)
            ;
        for (v = j; v < len && !ends_value((unsigned char)t[v]); v++)
            ;
        if (v == j)
            return 0;
        put_text(o, t + i, j - i);
        put(o, PROV_REDACT_MASK, sizeof(PROV_REDACT_MASK) - 1);
        return v - i;
    }
    return 0;
}

static apr_size_t rule_sk(const char *t, apr_size_t i, apr_size_t len, out_t *o)
{
    apr_size_t j = i + 3;
    if (!word_start(t, i) || len - i < 3 || memcmp(t + i, "sk-", 3))
        return 0;
    while (j < len && (is_alnum((unsigned char)t[j]) || t[j] == '-' || t[j] == '_'))
        j++;
    if (j - i - 3 < MIN_SK)
        return 0;
    put(o, "sk-" PROV_REDACT_MASK, sizeof("sk-" PROV_REDACT_MASK) - 1);
    return j - i;
}

static apr_size_t rule_long_run(const char *t, apr_size_t i, apr_size_t len, out_t *o)
{
    apr_size_t j = i;
    int alpha = 0, digit = 0;
    if (i > 0 && is_tok((unsigned char)t[i - 1]))
        return 0;
    for (; j < len && is_tok((unsigned char)t[j]); j++) {
        alpha |= is_alpha((unsigned char)t[j]);
        digit |= is_digit((unsigned char)t[j]);
    }
    if (j - i < LONG_RUN || !alpha || !digit)
        return 0;
    put(o, PROV_REDACT_MASK, sizeof(PROV_REDACT_MASK) - 1);
    return j - i;
}

const char *prov_redact(const prov_redactor_t *rd, const char *text, apr_size_t len,
                        apr_size_t max, apr_pool_t *p)
{
    out_t o;
    apr_size_t i = 0;

    if (max < 16)
        max = 16;
    o.buf = apr_palloc(p, max + 4);
    o.len = 0;
    o.cap = max;
    o.full = 0;
    while (text && i < len && !o.full) {
        unsigned char c = (unsigned char)text[i];
        apr_size_t n;
        if ((n = rule_secret(rd, text, i, len, &o))
            || (n = rule_url(text, i, len, &o))
            || (n = rule_cred_name(text, i, len, &o))
            || (n = rule_scheme(text, i, len, &o))
            || (n = rule_sk(text, i, len, &o))
            || (n = rule_long_run(text, i, len, &o))) {
            i += n;
            continue;
        }
        put(&o, is_ctl(c) ? " " : (const char *)&text[i], 1);
        if (!o.full)
            i++;
    }
    if (o.full || (text && i < len))
        finish_cut(&o);
    o.buf[o.len] = '\0';
    return o.buf;
}
