/* prov_json.c: strict JSON parsing (RFC 8259, for client bodies and gateway
 * answers alike) with json-c objects tied to APR pools, typed getters, and
 * credit amounts written as exact decimal JSON numbers. */
#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "prov_json.h"
#include "prov_money.h"

static apr_status_t json_put_cleanup(void *data)
{
    json_object_put((json_object *)data);
    return APR_SUCCESS;
}

json_object *prov_json_own(json_object *obj, apr_pool_t *p)
{
    if (obj)
        apr_pool_cleanup_register(p, obj, json_put_cleanup, apr_pool_cleanup_null);
    return obj;
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

/* A json-c tokener is about 1.5 KB in two allocations, and allocating it
 * made malloc consolidate its free lists on every parse: parses reuse up to
 * TOK_KEEP of them (a process-wide stack; they live as long as it). Only a
 * tokener whose parse succeeded is kept: json_tokener_reset does not clear
 * all of json-c's state (see parse_strict). */
#define TOK_KEEP 64
static pthread_mutex_t tok_mutex = PTHREAD_MUTEX_INITIALIZER;
static json_tokener *tok_kept[TOK_KEEP];
static int tok_n;

static json_tokener *tok_get(void)
{
    json_tokener *tok = NULL;
    pthread_mutex_lock(&tok_mutex);
    if (tok_n)
        tok = tok_kept[--tok_n];
    pthread_mutex_unlock(&tok_mutex);
    if (!tok)
        return json_tokener_new();
    json_tokener_reset(tok);
    return tok;
}

static void tok_put(json_tokener *tok)
{
    pthread_mutex_lock(&tok_mutex);
    if (tok_n < TOK_KEEP) {
        tok_kept[tok_n++] = tok;
        tok = NULL;
    }
    pthread_mutex_unlock(&tok_mutex);
    if (tok)
        json_tokener_free(tok);
}

/* What json-c's strict mode still lets through (json-c 0.16): single-quoted
 * member names, NaN and Infinity, a number ending in its decimal point, and
 * raw control characters inside strings. Run over text json-c has parsed, so
 * its structure is known to be sound; returns why it is not JSON, or NULL. */
static const char *strict_rest(const char *buf, apr_size_t len)
{
    apr_size_t i;
    int in_string = 0;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
            else if (c < 0x20)
                return "control character inside a string (escape it)";
        }
        else if (c == '"')
            in_string = 1;
        else if (c == '\'')
            return "single quotes are not JSON (use double quotes)";
        else if (c == 'N' || c == 'I')
            return "NaN and Infinity are not JSON numbers";
        else if (c == '.' && (i + 1 == len || buf[i + 1] < '0' || buf[i + 1] > '9'))
            return "a number needs digits after its decimal point";
    }
    return NULL;
}

/* Parses buf strictly (RFC 8259: no comments, single quotes, trailing
 * commas, NaN or raw control characters; valid UTF-8). Sets *obj (NULL for
 * the literal null) or returns why not. */
static const char *parse_strict(json_object **pobj, const char *buf, apr_size_t len)
{
    json_tokener *tok;
    json_object *obj;
    enum json_tokener_error jerr;
    const char *why = NULL;

    if (len > (apr_size_t)0x7fffffff)
        return "body too large";
    /* json-c switches to the C locale around every parse, duplicating the
     * thread's locale under glibc's global locale lock: a thread already in
     * the static C locale makes that free (and httpd runs in "C" anyway). */
    pthread_once(&c_locale_once, c_locale_init);
    if (c_locale && uselocale((locale_t)0) != c_locale)
        uselocale(c_locale);
    if (!(tok = tok_get()))
        return "out of memory";
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    obj = json_tokener_parse_ex(tok, buf, (int)len);
    jerr = json_tokener_get_error(tok);
    if (jerr == json_tokener_continue) {
        /* A value at the top level that is not an object or an array
         * (null, 123, true) ends only at a delimiter: the end of the text. */
        obj = json_tokener_parse_ex(tok, "", 1);
        jerr = json_tokener_get_error(tok);
        if (jerr != json_tokener_success)
            why = "unexpected end of JSON";
    }
    else if (jerr != json_tokener_success) {
        why = json_tokener_error_desc(jerr);
    }
    else if (json_tokener_get_parse_end(tok) < len) {
        /* Trailing non-space bytes after the value are an error too. */
        const char *rest = buf + json_tokener_get_parse_end(tok);
        const char *end = buf + len;
        while (rest < end && (*rest == ' ' || *rest == '\n' || *rest == '\r' || *rest == '\t'))
            rest++;
        if (rest < end)
            why = "unexpected data after the JSON value";
    }
    if (!why)
        why = strict_rest(buf, len);
    /* A tokener whose parse failed is not kept: json_tokener_reset forgets a
     * pending \ud800 (a text cut after a high surrogate), which would join
     * the next, unrelated parse's text. */
    if (why)
        json_tokener_free(tok);
    else
        tok_put(tok);
    if (why) {
        if (obj)
            json_object_put(obj);
        return why;
    }
    *pobj = obj;
    return NULL;
}

json_object *prov_json_parse_raw(const char *buf, apr_size_t len, const char **err)
{
    json_object *obj = NULL;
    const char *why = parse_strict(&obj, buf, len);
    if (!why && !obj)
        why = "the JSON value is null";
    if (why) {
        *err = why;
        return NULL;
    }
    return obj;
}

json_object *prov_json_parse(const char *buf, apr_size_t len, const char **err, apr_pool_t *p)
{
    return prov_json_own(prov_json_parse_raw(buf, len, err), p);
}

json_object *prov_json_parse_body(const char *buf, apr_size_t len, const char **err,
                                  apr_pool_t *p)
{
    json_object *obj = NULL;
    const char *why = parse_strict(&obj, buf, len);
    if (why) {
        *err = apr_pstrcat(p, "The request body is not valid JSON: ", why, NULL);
        return NULL;
    }
    if (!obj || !json_object_is_type(obj, json_type_object)) {
        if (obj)
            json_object_put(obj);
        *err = "The request body must be a JSON object";
        return NULL;
    }
    return prov_json_own(obj, p);
}

const char *prov_json_dump(json_object *obj, apr_pool_t *p)
{
    return apr_pstrdup(p, json_object_to_json_string_ext(
        obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

json_object *prov_json_get(json_object *obj, const char *key, json_type type)
{
    json_object *v = NULL;
    if (!obj || !json_object_is_type(obj, json_type_object))
        return NULL;
    if (!json_object_object_get_ex(obj, key, &v) || !v)
        return NULL;
    return json_object_is_type(v, type) ? v : NULL;
}

const char *prov_json_get_str(json_object *obj, const char *key)
{
    json_object *v = prov_json_get(obj, key, json_type_string);
    return v ? json_object_get_string(v) : NULL;
}

apr_status_t prov_json_get_count(apr_int64_t *v, json_object *obj, const char *key)
{
    json_object *m = NULL;
    *v = 0;
    if (!obj || !json_object_is_type(obj, json_type_object)
        || !json_object_object_get_ex(obj, key, &m) || !m)
        return APR_NOTFOUND;
    if (!json_object_is_type(m, json_type_int) || json_object_get_int64(m) < 0)
        return APR_EINVAL;
    *v = json_object_get_int64(m);
    return APR_SUCCESS;
}

static int credits_serializer(json_object *jso, struct printbuf *pb, int level, int flags)
{
    char buf[PROV_MONEY_BUFSIZE];
    (void)level;
    (void)flags;
    prov_money_format_buf(buf, (prov_micro_t)(intptr_t)json_object_get_userdata(jso));
    return printbuf_memappend(pb, buf, (int)strlen(buf));
}

json_object *prov_json_credits(prov_micro_t v)
{
    /* Stored as an int64 too, so readers get a number; printed exactly. */
    json_object *o = json_object_new_int64(v);
    json_object_set_serializer(o, credits_serializer, (void *)(intptr_t)v, NULL);
    return o;
}
