/*
 * mockgw_fault.c — the fault grammar of the mock gateway and the faults that
 * change what an answer reports rather than how it travels.
 *
 * Owns the names of the faults ("delay-<ms>", "500", "cut", "greedy-<N>",
 * "usage-strings", ... as given in the x-mock-fault header or after "fault-"
 * in a model name, several parts allowed in one name), the process-wide
 * request counts of "first-<k>", the output cap the greedy fault writes to
 * and the size of its streamed pieces, and the malformed usage shapes
 * (counts as strings, as floats, a null or empty usage, the counts under
 * other names) that both API families apply to every usage object they
 * write.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mockgw.h"

#define MGW_MAX_FAULT_MS 600000L
#define MGW_MAX_FAULT_COUNT 1000000000L

void mgw_fault_init(mgw_fault_t *f)
{
    memset(f, 0, sizeof *f);
    f->kind = MGW_FAULT_NONE;
    f->delay_ms = -1;
    f->trickle_ms = -1;
    f->stall_ms = -1;
    f->cut_events = -1;
    f->pieces = -1;
    f->greedy = -1;
    f->reasoning = -1;
    f->shape = MGW_SHAPE_NORMAL;
    f->retry_after = -1;
    f->first = -1;
    f->event_error = MGW_FAULT_LEAK;
}

/* Parses the digits of s[0, len) as a number up to max. Returns it, or -1. */
static long parse_num(const char *s, size_t len, long max)
{
    long v = 0;

    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
        if (v > max)
            return -1;
    }
    return v;
}

/* The faults that are one word: a kind, a flag or a usage shape. Returns 0
 * if s[0, len) is one of them (and sets it), else -1. */
static int fault_word(mgw_fault_t *f, const char *s, size_t len)
{
    static const struct { const char *name; mgw_fault_kind_t kind; } kinds[] = {
        { "500", MGW_FAULT_500 },       { "429", MGW_FAULT_429 },
        { "reset", MGW_FAULT_RESET },   { "cut", MGW_FAULT_CUT },
        { "malformed", MGW_FAULT_MALFORMED },
        { "overflow", MGW_FAULT_OVERFLOW }, { "none", MGW_FAULT_NONE },
        { "404", MGW_FAULT_404 },       { "leak", MGW_FAULT_LEAK },
        { "error-event", MGW_FAULT_ERROR_EVENT },
        { "overloaded", MGW_FAULT_OVERLOADED }, { "529", MGW_FAULT_529 },
    };
    static const struct { const char *name; mgw_usage_shape_t shape; } shapes[] = {
        { "usage-strings", MGW_SHAPE_STRINGS }, { "usage-float", MGW_SHAPE_FLOAT },
        { "usage-null", MGW_SHAPE_NULL },       { "usage-empty", MGW_SHAPE_EMPTY },
        { "usage-renamed", MGW_SHAPE_RENAMED },
    };
    const struct { const char *name; bool *flag; } flags[] = {
        { "lockstep", &f->lockstep },       { "nousage", &f->no_usage },
        { "bytetok", &f->bytetok },         { "early-usage", &f->early_usage },
        { "zero-input", &f->zero_input },   { "after-delta", &f->after_delta },
    };
#define IS(name) (strlen(name) == len && memcmp(name, s, len) == 0)
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (IS(kinds[i].name))
            return (f->kind = kinds[i].kind), 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (IS(shapes[i].name))
            return (f->shape = shapes[i].shape), 0;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (IS(flags[i].name))
            return (*flags[i].flag = true), 0;
    if (IS("greedy"))
        return (f->greedy = MGW_GREEDY_UNCAPPED), 0;
#undef IS
    return -1;
}

/* "error-event-<kind>" and "error-first-<kind>", kind overflow | 429 |
 * overloaded. Returns 0 if s[0, len) is one of them (and sets it), else -1. */
static int fault_error_event(mgw_fault_t *f, const char *s, size_t len)
{
    static const struct { const char *name; mgw_fault_kind_t kind; } kinds[] = {
        { "overflow", MGW_FAULT_OVERFLOW }, { "429", MGW_FAULT_429 },
        { "overloaded", MGW_FAULT_OVERLOADED },
    };
    static const char *const prefixes[] = { "error-event-", "error-first-" };

    for (size_t p = 0; p < 2; p++) {
        size_t pl = strlen(prefixes[p]);
        if (len <= pl || memcmp(s, prefixes[p], pl) != 0)
            continue;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            if (strlen(kinds[i].name) == len - pl
                && memcmp(s + pl, kinds[i].name, len - pl) == 0) {
                f->kind = MGW_FAULT_ERROR_EVENT;
                f->event_error = kinds[i].kind;
                f->event_first = p == 1;
                return 0;
            }
        }
    }
    return -1;
}

static int fault_one(mgw_fault_t *f, const char *s, size_t len)
{
    const struct { const char *prefix; long *field; long max; } nums[] = {
        { "delay-", &f->delay_ms, MGW_MAX_FAULT_MS },
        { "trickle-", &f->trickle_ms, MGW_MAX_FAULT_MS },
        { "stall-", &f->stall_ms, MGW_MAX_FAULT_MS },
        { "cut-", &f->cut_events, MGW_MAX_FAULT_MS },
        { "pieces-", &f->pieces, MGW_MAX_FAULT_MS },
        { "greedy-", &f->greedy, MGW_MAX_FAULT_MS },
        { "reasoning-", &f->reasoning, MGW_MAX_FAULT_COUNT },
        { "429-", &f->retry_after, MGW_MAX_FAULT_MS },
        { "retry-after-", &f->retry_after, MGW_MAX_FAULT_MS },
        { "first-", &f->first, MGW_MAX_FAULT_COUNT },
    };

    if (fault_word(f, s, len) == 0 || fault_error_event(f, s, len) == 0)
        return 0;
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        size_t pl = strlen(nums[i].prefix);
        if (len > pl && memcmp(s, nums[i].prefix, pl) == 0) {
            if (nums[i].field == &f->cut_events)
                f->kind = MGW_FAULT_CUT;
            if (strcmp(nums[i].prefix, "429-") == 0)
                f->kind = MGW_FAULT_429;
            *nums[i].field = parse_num(s + pl, len - pl, nums[i].max);
            return *nums[i].field < 0 ? -1 : 0;
        }
    }
    return -1;
}

/* Parses spec[0, len) as a comma-separated list. */
static int fault_list(mgw_fault_t *f, const char *spec, size_t len)
{
    const char *p = spec, *end = spec + len;

    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
            p++;
        const char *e = p;
        while (e < end && *e != ',')
            e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if (t > p && fault_one(f, p, (size_t)(t - p)))
            return -1;
        p = e;
    }
    return 0;
}

int mgw_fault_parse(mgw_fault_t *f, const char *spec)
{
    return fault_list(f, spec, strlen(spec));
}

/* Returns the next "fault-" at or after from in model that starts the name
 * or follows a non-alphanumeric character (so that a model called
 * "default-model" has none), or NULL. */
static const char *next_fault(const char *model, const char *from)
{
    for (const char *m = from; (m = strstr(m, "fault-")) != NULL; m++) {
        char before = m == model ? '-' : m[-1];
        if (!((before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z')
              || (before >= '0' && before <= '9')))
            return m;
    }
    return NULL;
}

int mgw_fault_parse_model(mgw_fault_t *f, const char *model)
{
    const char *m = model ? next_fault(model, model) : NULL;

    while (m) {
        const char *spec = m + 6, *next = next_fault(model, spec);
        size_t len = next ? (size_t)(next - spec) : strlen(spec);
        if (next && len > 0)
            len--;          /* the separator before the next "fault-" part */
        if (fault_list(f, spec, len))
            return -1;
        m = next;
    }
    return 0;
}

/* ---- first-<k>: requests counted per distinct fault string ---- */

typedef struct first_count {
    struct first_count *next;
    long n;
    char key[];
} first_count_t;

static struct {
    pthread_mutex_t mu;
    first_count_t *head;
} firsts = { .mu = PTHREAD_MUTEX_INITIALIZER, .head = NULL };

bool mgw_fault_first_applies(const mgw_fault_t *f, const char *key)
{
    first_count_t *c;
    long n;

    if (f->first < 0)
        return true;
    pthread_mutex_lock(&firsts.mu);
    for (c = firsts.head; c && strcmp(c->key, key) != 0; c = c->next)
        ;
    if (!c) {
        size_t len = strlen(key) + 1;
        c = mgw_xmalloc(sizeof *c + len);
        memcpy(c->key, key, len);
        c->n = 0;
        c->next = firsts.head;
        firsts.head = c;
    }
    n = ++c->n;
    pthread_mutex_unlock(&firsts.mu);
    return n <= f->first;
}

long mgw_greedy_cap(const mgw_fault_t *f, json_object *body, bool chat)
{
    static const char *const keys[] = { "max_tokens", "max_completion_tokens" };
    long cap = -1;

    for (size_t i = 0; i < (chat ? 2u : 1u); i++) {
        json_object *v = mgw_json_get(body, keys[i], json_type_int);
        if (v && json_object_get_int64(v) >= 0 && json_object_get_int64(v) > cap)
            cap = (long)json_object_get_int64(v);
    }
    return cap >= 0 ? cap : f->greedy;
}

size_t mgw_piece_bytes(const mgw_fault_t *f, long greedy)
{
    if (greedy < 0)
        return MGW_PIECE_BYTES;
    if (f->pieces > 0)
        return greedy > f->pieces ? (size_t)((greedy + f->pieces - 1) / f->pieces) : 1;
    return MGW_GREEDY_PIECE_BYTES;
}

/* Returns a copy of v with every integer written as the shape says. */
static json_object *reshape(json_object *v, mgw_usage_shape_t shape)
{
    if (json_object_is_type(v, json_type_int)) {
        char num[32];
        int64_t n = json_object_get_int64(v);
        if (shape == MGW_SHAPE_FLOAT)
            return json_object_new_double((double)n);
        snprintf(num, sizeof num, "%lld", (long long)n);
        return json_object_new_string(num);
    }
    if (json_object_is_type(v, json_type_object)) {
        json_object *o = json_object_new_object();
        json_object_object_foreach(v, k, child)
            json_object_object_add(o, k, reshape(child, shape));
        return o;
    }
    return json_object_get(v);
}

json_object *mgw_usage_shaped(const mgw_fault_t *f, json_object *u, bool chat)
{
    static const char *const chat_names[][2] = {
        { "prompt_tokens", "input_tokens" }, { "completion_tokens", "output_tokens" },
    };
    json_object *o;

    switch (f->shape) {
    case MGW_SHAPE_STRINGS:
    case MGW_SHAPE_FLOAT:
        o = reshape(u, f->shape);
        json_object_put(u);
        return o;
    case MGW_SHAPE_NULL:
        json_object_put(u);
        return NULL;
    case MGW_SHAPE_EMPTY:
        json_object_put(u);
        return json_object_new_object();
    case MGW_SHAPE_RENAMED:
        o = json_object_new_object();
        json_object_object_foreach(u, k, v) {
            const char *name = k;
            for (size_t i = 0; i < 2; i++)
                if (strcmp(k, chat_names[i][chat ? 0 : 1]) == 0)
                    name = chat_names[i][chat ? 1 : 0];
            json_object_object_add(o, name, json_object_get(v));
        }
        json_object_put(u);
        return o;
    default:
        return u;
    }
}
