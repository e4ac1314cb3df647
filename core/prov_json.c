/* prov_json.c: json-c objects tied to APR pools, typed getters, and credit
 * amounts written as exact decimal JSON numbers. */
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
 * TOK_KEEP of them (a process-wide stack; they live as long as it). */
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

json_object *prov_json_parse(const char *buf, apr_size_t len, const char **err, apr_pool_t *p)
{
    json_tokener *tok;
    json_object *obj;
    enum json_tokener_error jerr;

    if (len > (apr_size_t)0x7fffffff) {
        *err = "body too large";
        return NULL;
    }
    /* json-c switches to the C locale around every parse, duplicating the
     * thread's locale under glibc's global locale lock: a thread already in
     * the static C locale makes that free (and httpd runs in "C" anyway). */
    pthread_once(&c_locale_once, c_locale_init);
    if (c_locale && uselocale((locale_t)0) != c_locale)
        uselocale(c_locale);
    tok = tok_get();
    if (!tok) {
        *err = "out of memory";
        return NULL;
    }
    obj = json_tokener_parse_ex(tok, buf, (int)len);
    jerr = json_tokener_get_error(tok);
    if (!obj || jerr != json_tokener_success) {
        *err = jerr == json_tokener_continue ? "unexpected end of JSON"
                                              : json_tokener_error_desc(jerr);
        if (obj)
            json_object_put(obj);
        tok_put(tok);
        return NULL;
    }
    /* Trailing non-space bytes after the value are an error too. */
    if (json_tokener_get_parse_end(tok) < len) {
        const char *rest = buf + json_tokener_get_parse_end(tok);
        const char *end = buf + len;
        while (rest < end && (*rest == ' ' || *rest == '\n' || *rest == '\r' || *rest == '\t'))
            rest++;
        if (rest < end) {
            *err = "unexpected data after the JSON value";
            json_object_put(obj);
            tok_put(tok);
            return NULL;
        }
    }
    tok_put(tok);
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
