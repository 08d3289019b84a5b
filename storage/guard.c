/* guard.c — the loop-thread guard (see st_guard.h). */
#include "storage/st_guard.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "storage/st_status.h"

static _Thread_local bool t_loop;
static _Thread_local unsigned t_allow;
static atomic_uint_fast64_t g_violations;
static atomic_bool g_fatal;

void st_guard_enter_loop(void) { t_loop = true; }
void st_guard_leave_loop(void) { t_loop = false; }
bool st_guard_on_loop(void) { return t_loop; }

void st_guard_allow_begin(void) { t_allow++; }

void st_guard_allow_end(void) {
    assert(t_allow > 0);
    t_allow--;
}

void st_guard_set_fatal(bool on) { atomic_store(&g_fatal, on); }
uint64_t st_guard_violations(void) { return (uint64_t)atomic_load(&g_violations); }
void st_guard_reset(void) { atomic_store(&g_violations, 0); }

void st_guard_blocking(const char *what, const char *subject) {
    if (!t_loop || t_allow > 0) return;
    uint64_t n = (uint64_t)atomic_fetch_add(&g_violations, 1) + 1;
    bool fatal = atomic_load(&g_fatal);
    /* bounded logging: a violation on a hot path must not flood the log */
    if (fatal || n <= ST_GUARD_LOG_MAX || n % 1000 == 0)
        st_logf(ST_LOG_ERROR, "blocking %s (%s) on the event loop thread (violation %llu); it belongs on the "
                "worker pool", what, subject ? subject : "-", (unsigned long long)n);
    if (fatal) abort();
}
