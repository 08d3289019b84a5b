/* test/bench/callpath/hooks.c — -finstrument-functions hooks for counting
 * the source files a request passes through (see README.md here).
 *
 * For each call into instrumented code that returns to depth 1 (a libevent
 * callback under main's loop, a job under a worker thread's loop), one
 * line: "T<tid>" then every distinct (function, call site) pair entered,
 * as offsets from __cyg_profile_func_enter (position independent).
 * Measurement only: never linked into skiff by the Makefile. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NI __attribute__((no_instrument_function))
#define PAIRS_MAX 8192                 /* per callback; more are dropped */

static __thread int depth;
static __thread void *fns[PAIRS_MAX], *sites[PAIRS_MAX];
static __thread int npairs;
static FILE *out;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void __cyg_profile_func_enter(void *fn, void *site) NI;
void __cyg_profile_func_exit(void *fn, void *site) NI;

void __cyg_profile_func_enter(void *fn, void *site) {
    int i;
    for (i = 0; i < npairs; i++)
        if (fns[i] == fn && sites[i] == site) break;
    if (i == npairs && npairs < PAIRS_MAX) {
        fns[npairs] = fn;
        sites[npairs] = site;
        npairs++;
    }
    depth++;
}

void __cyg_profile_func_exit(void *fn, void *site) {
    (void)fn;
    (void)site;
    if (--depth > 1) return;   /* depth 1: main() / a thread's loop function */
    pthread_mutex_lock(&mu);
    if (!out) {
        const char *p = getenv("SKIFF_TRACE_OUT");
        out = p ? fopen(p, "w") : NULL;
    }
    if (out) {
        char *base = (char *)__cyg_profile_func_enter;
        fprintf(out, "T%ld", (long)gettid());
        for (int i = 0; i < npairs; i++)
            fprintf(out, " %lx:%lx", (unsigned long)((char *)fns[i] - base), (unsigned long)((char *)sites[i] - base));
        fputc('\n', out);
        fflush(out);
    }
    pthread_mutex_unlock(&mu);
    npairs = 0;
}
