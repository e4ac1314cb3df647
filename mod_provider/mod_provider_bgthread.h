/* mod_provider_bgthread.h: the API of mod_provider_bgthread.c, a child's
 * periodic background thread (the purge's, the alerts'). */
#ifndef MOD_PROVIDER_BGTHREAD_H
#define MOD_PROVIDER_BGTHREAD_H

#include "mod_provider.h"

typedef struct provider_bgthread_t provider_bgthread_t;

/* One tick of the thread's work; p is the thread's scratch pool, cleared
 * after each tick (a tick may clear it itself between its own steps). */
typedef void (*provider_bgthread_tick_fn)(provider_bgthread_t *t, void *baton,
                                          apr_pool_t *p);

/* Starts a thread in pchild that calls tick(baton) every `every` (it waits
 * first), until pchild's pre-cleanup stops it: wakes it from its wait and
 * joins it (a tick under way finishes first). *t (t may be NULL) set on
 * success; the caller logs a failure. */
apr_status_t provider_bgthread_start(provider_bgthread_t **t, provider_bgthread_tick_fn tick,
                                     void *baton, apr_interval_time_t every,
                                     apr_pool_t *pchild);
/* Non-zero once the thread is asked to stop: a long tick checks it between
 * its steps. */
int provider_bgthread_stopping(const provider_bgthread_t *t);

#endif
