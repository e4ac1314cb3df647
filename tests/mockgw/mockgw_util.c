/*
 * mockgw_util.c — the small shared pieces of the mock gateway.
 *
 * Owns the growable buffer and allocation wrappers, the id counter, strict JSON
 * parsing, the usage override grammar (x-mock-usage header, "mock_usage" body
 * field and the "USAGE:" line of the last user text, which may report absurd
 * counts), and the text rules both API families share: UTF-8-safe truncation
 * and streaming pieces, counting the bytes of message content, and the
 * "ARGS: <json>" convention.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mockgw.h"

/* ---- memory and buffers ---- */

void *mgw_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("mockgw: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *mgw_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("mockgw: out of memory\n", stderr);
        abort();
    }
    return q;
}

char *mgw_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(mgw_xmalloc(n), s, n);
}

static void buf_reserve(mgw_buf_t *b, size_t extra)
{
    if (b->len + extra + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + extra + 1)
            cap *= 2;
        b->p = mgw_xrealloc(b->p, cap);
        b->cap = cap;
    }
}

void mgw_buf_append(mgw_buf_t *b, const void *data, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void mgw_buf_puts(mgw_buf_t *b, const char *s)
{
    mgw_buf_append(b, s, strlen(s));
}

void mgw_buf_printf(mgw_buf_t *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        mgw_buf_append(b, small, (size_t)n);
        return;
    }
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void mgw_buf_json(mgw_buf_t *b, json_object *o)
{
    size_t len;
    const char *s = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    mgw_buf_append(b, s, len);
}

void mgw_buf_free(mgw_buf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static atomic_ulong id_counter;

unsigned long mgw_next_id(void)
{
    return atomic_fetch_add(&id_counter, 1) + 1;
}

/* ---- JSON ---- */

int mgw_json_parse(const char *s, size_t len, json_object **out)
{
    json_tokener *tok = json_tokener_new_ex(128);
    json_object *o;
    size_t off;

    *out = NULL;
    if (!tok)
        return -1;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    o = json_tokener_parse_ex(tok, s, (int)len);
    if (json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(o);
        json_tokener_free(tok);
        return -1;
    }
    off = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    for (; off < len; off++) {
        if (s[off] != ' ' && s[off] != '\t' && s[off] != '\r' && s[off] != '\n') {
            json_object_put(o);
            return -1;
        }
    }
    *out = o;
    return 0;
}

const char *mgw_json_str(json_object *o, const char *key)
{
    json_object *v = mgw_json_get(o, key, json_type_string);
    return v ? json_object_get_string(v) : NULL;
}

json_object *mgw_json_get(json_object *o, const char *key, json_type t)
{
    json_object *v;

    if (!o || !json_object_is_type(o, json_type_object)
        || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, t))
        return NULL;
    return v;
}

void mgw_jset(json_object *o, const char *key, json_object *v)
{
    json_object_object_add_ex(o, key, v, JSON_C_OBJECT_ADD_KEY_IS_NEW
                              | JSON_C_OBJECT_ADD_CONSTANT_KEY);
}

/* ---- usage override ---- */

void mgw_usage_init(mgw_usage_override_t *u)
{
    u->prompt = u->completion = u->cached = u->reasoning = u->creation = MGW_USAGE_UNSET;
}

static long *usage_field(mgw_usage_override_t *u, const char *k, size_t len)
{
    static const char *const keys[] = {
        "prompt", "completion", "cached", "reasoning", "creation"
    };
    long *fields[] = {
        &u->prompt, &u->completion, &u->cached, &u->reasoning, &u->creation
    };

    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strlen(keys[i]) == len && memcmp(keys[i], k, len) == 0)
            return fields[i];
    return NULL;
}

/* "k=v,k=v" up to the end of s or a newline. Plain: values of 1 to 9
 * digits. Wide (the USAGE: line): any 64-bit value, a '-' allowed, and only
 * fields not given yet are set. */
static int usage_parse_list(mgw_usage_override_t *u, const char *s, bool wide)
{
    const char *p = s;

    while (*p && *p != '\n') {
        while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\r')
            p++;
        if (!*p || *p == '\n')
            break;
        const char *k = p;
        while (*p && *p != '=' && *p != ',' && *p != ' ' && *p != '\n')
            p++;
        long *field = usage_field(u, k, (size_t)(p - k));
        while (*p == ' ')
            p++;
        if (!field || *p != '=')
            return -1;
        p++;
        while (*p == ' ')
            p++;
        const char *v = p;
        long n = -1;
        if (wide) {
            char *end = NULL;
            errno = 0;
            n = strtol(v, &end, 10);
            if (end == v || errno == ERANGE)
                return -1;
            p = end;
            if (*field == MGW_USAGE_UNSET)
                *field = n;
        } else {
            while (*p >= '0' && *p <= '9')
                p++;
            n = p - v > 0 && p - v < 10 ? strtol(v, NULL, 10) : -1;
            if (n < 0)
                return -1;
            *field = n;
        }
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (*p && *p != ',' && *p != '\n')
            return -1;
    }
    return 0;
}

int mgw_usage_parse_header(mgw_usage_override_t *u, const char *s)
{
    return strchr(s, '\n') ? -1 : usage_parse_list(u, s, false);
}

int mgw_usage_from_text(mgw_usage_override_t *u, const char *text)
{
    const char *line = text;

    while (line && *line) {
        const char *p = line, *end = strchr(line, '\n');
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "USAGE:", 6) == 0) {
            mgw_usage_override_t w;
            mgw_usage_init(&w);
            if (usage_parse_list(&w, p + 6, true))
                return -1;
            if (u->prompt == MGW_USAGE_UNSET) u->prompt = w.prompt;
            if (u->completion == MGW_USAGE_UNSET) u->completion = w.completion;
            if (u->cached == MGW_USAGE_UNSET) u->cached = w.cached;
            if (u->reasoning == MGW_USAGE_UNSET) u->reasoning = w.reasoning;
            if (u->creation == MGW_USAGE_UNSET) u->creation = w.creation;
            return 0;
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

long mgw_sum_sat(long a, long b)
{
    long r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? LONG_MAX : LONG_MIN;
    return r;
}

int mgw_usage_parse_json(mgw_usage_override_t *u, json_object *o)
{
    if (!json_object_is_type(o, json_type_object))
        return -1;
    json_object_object_foreach(o, k, v) {
        long *field = usage_field(u, k, strlen(k));
        if (!field || !json_object_is_type(v, json_type_int)
            || json_object_get_int64(v) < 0
            || json_object_get_int64(v) > 1000000000L)
            return -1;
        *field = (long)json_object_get_int64(v);
    }
    return 0;
}

/* ---- text ---- */

size_t mgw_utf8_prefix(const char *s, size_t len, size_t max)
{
    size_t n;

    if (len <= max)
        return len;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

size_t mgw_utf8_piece(const char *s, size_t len, size_t want)
{
    size_t n = want < len ? want : len;

    if (n == 0 && len > 0)
        n = 1;
    while (n < len && ((unsigned char)s[n] & 0xC0) == 0x80)
        n++;
    return n;
}

size_t mgw_content_bytes(json_object *content)
{
    size_t n = 0, i, len;

    if (!content)
        return 0;
    if (json_object_is_type(content, json_type_string))
        return (size_t)json_object_get_string_len(content);
    if (!json_object_is_type(content, json_type_array))
        return 0;
    len = json_object_array_length(content);
    for (i = 0; i < len; i++) {
        json_object *part = json_object_array_get_idx(content, i);
        const char *type = mgw_json_str(part, "type");
        json_object *text = mgw_json_get(part, "text", json_type_string);
        json_object *inner;
        if (type && strcmp(type, "tool_result") == 0
            && json_object_object_get_ex(part, "content", &inner))
            n += mgw_content_bytes(inner);
        else if (text)
            n += (size_t)json_object_get_string_len(text);
    }
    return n;
}

void mgw_content_text(json_object *content, mgw_buf_t *out)
{
    size_t i, len;
    bool first = true;

    if (!content)
        return;
    if (json_object_is_type(content, json_type_string)) {
        mgw_buf_append(out, json_object_get_string(content),
                       (size_t)json_object_get_string_len(content));
        return;
    }
    if (!json_object_is_type(content, json_type_array))
        return;
    len = json_object_array_length(content);
    for (i = 0; i < len; i++) {
        json_object *part = json_object_array_get_idx(content, i);
        const char *type = mgw_json_str(part, "type");
        json_object *text = mgw_json_get(part, "text", json_type_string);
        if (!text || (type && strcmp(type, "tool_result") == 0))
            continue;
        if (!first)
            mgw_buf_append(out, "\n", 1);
        first = false;
        mgw_buf_append(out, json_object_get_string(text),
                       (size_t)json_object_get_string_len(text));
    }
}

json_object *mgw_args_from_text(const char *text)
{
    const char *line = text;

    while (line && *line) {
        const char *p = line, *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        while (*p == ' ' || *p == '\t')
            p++;
        if ((size_t)(p - line) + 5 <= len && strncmp(p, "ARGS:", 5) == 0) {
            json_object *o;
            const char *j = p + 5;
            size_t jl = len - (size_t)(j - line);
            if (mgw_json_parse(j, jl, &o) == 0 && o)
                return o;
            return NULL;
        }
        line = end ? end + 1 : NULL;
    }
    return NULL;
}

void mgw_reply_text(mgw_buf_t *out, const char *prefix, const char *text, size_t len)
{
    mgw_buf_puts(out, prefix);
    mgw_buf_append(out, text, mgw_utf8_prefix(text, len, MGW_TRUNCATE_BYTES));
}
