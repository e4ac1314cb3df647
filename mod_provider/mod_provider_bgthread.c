/* mod_provider_bgthread.c: a child's periodic background thread, started at
 * child_init on pchild (mod_provider_purge.c's and mod_provider_alert.c's):
 * its loop (a wait, then one tick with a scratch pool of its own, cleared
 * after each tick), its stop flag, and a pre-cleanup of pchild that sets
 * the flag, wakes the wait and joins the thread before pchild goes. What a
 * tick does (its database connection, its breaths between transactions, its
 * turn among the children) is the caller's. */
#include "apr_thread_proc.h"
#include "apr_thread_mutex.h"
#include "apr_thread_cond.h"
#include "mod_provider_bgthread.h"

struct provider_bgthread_t {
    apr_thread_t *thread;
    apr_thread_mutex_t *lock;    /* guards stop, for the wait and the wake */
    apr_thread_cond_t *wake;
    volatile int stop;
    apr_interval_time_t every;
    provider_bgthread_tick_fn tick;
    void *baton;
};

int provider_bgthread_stopping(const provider_bgthread_t *t)
{
    return t->stop;
}

/* Waits `every`, or less when asked to stop: non-zero to go on. */
static int bg_wait(provider_bgthread_t *t)
{
    apr_time_t until = apr_time_now() + t->every;
    apr_thread_mutex_lock(t->lock);
    while (!t->stop && apr_time_now() < until)
        apr_thread_cond_timedwait(t->wake, t->lock, until - apr_time_now());
    apr_thread_mutex_unlock(t->lock);
    return !t->stop;
}

static void *APR_THREAD_FUNC bg_main(apr_thread_t *thread, void *data)
{
    provider_bgthread_t *t = data;
    apr_pool_t *p = NULL;
    apr_pool_create(&p, NULL);
    while (bg_wait(t)) {
        t->tick(t, t->baton, p);
        apr_pool_clear(p);
    }
    apr_pool_destroy(p);
    /* a return, not apr_thread_exit: pthread_exit's unwinding trips ASan */
    (void)thread;
    return NULL;
}

static apr_status_t bg_stop(void *data)
{
    provider_bgthread_t *t = data;
    apr_status_t ignored;
    apr_thread_mutex_lock(t->lock);
    t->stop = 1;
    apr_thread_cond_signal(t->wake);
    apr_thread_mutex_unlock(t->lock);
    apr_thread_join(&ignored, t->thread);
    return APR_SUCCESS;
}

apr_status_t provider_bgthread_start(provider_bgthread_t **t, provider_bgthread_tick_fn tick,
                                     void *baton, apr_interval_time_t every,
                                     apr_pool_t *pchild)
{
    provider_bgthread_t *bg = apr_pcalloc(pchild, sizeof(*bg));
    apr_status_t rv;
    bg->tick = tick;
    bg->baton = baton;
    bg->every = every;
    if ((rv = apr_thread_mutex_create(&bg->lock, APR_THREAD_MUTEX_DEFAULT, pchild))
        != APR_SUCCESS
        || (rv = apr_thread_cond_create(&bg->wake, pchild)) != APR_SUCCESS
        || (rv = apr_thread_create(&bg->thread, NULL, bg_main, bg, pchild)) != APR_SUCCESS)
        return rv;
    apr_pool_pre_cleanup_register(pchild, bg, bg_stop);
    if (t)
        *t = bg;
    return APR_SUCCESS;
}
