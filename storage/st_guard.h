/* st_guard.h — "no blocking file work on the event loop", checked at run time.
 *
 * The broker's loop thread must never wait on the disk: fsync, opening or
 * creating a log, renaming or unlinking segment files run on its worker pool
 * (ARCHITECTURE.md, "Threading model"). Storage has no threads of its own and
 * cannot know which thread calls it, so the broker marks its loop thread
 * (st_guard_enter_loop) and the storage functions that block call
 * st_guard_blocking first. A call on a marked thread is a violation: counted
 * (process-wide), logged (the first ST_GUARD_LOG_MAX of them, then every
 * 1000th) and, when fatal mode is on (tests; `SKIFF_LOOP_GUARD=abort` for the
 * broker), the process aborts with the log line naming the call.
 *
 * Known, documented exceptions (a small CreateTopics opening its logs on
 * the loop, a job the full worker pool refused) run inside
 * st_guard_allow_begin/_end on the calling thread; every such scope carries
 * a comment saying why.
 *
 * Threading: the loop mark and the allow depth are thread-local; the
 * counter and the fatal switch are process-wide atomics. Safe from any thread.
 */
#ifndef SKIFF_ST_GUARD_H
#define SKIFF_ST_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#define ST_GUARD_LOG_MAX 20   /* violations logged one by one; then every 1000th */

/* Marks / unmarks the calling thread as the event loop. */
void st_guard_enter_loop(void);
void st_guard_leave_loop(void);
bool st_guard_on_loop(void);

/* Opens / closes a scope in which blocking calls on the loop are allowed
 * (nested scopes count). Unbalanced ends are a bug (asserted). */
void st_guard_allow_begin(void);
void st_guard_allow_end(void);

/* Process-wide: a violation aborts the process (tests, SKIFF_LOOP_GUARD). */
void st_guard_set_fatal(bool on);

/* Violations counted since start (or the last reset). */
uint64_t st_guard_violations(void);
/* Test hook: back to zero. */
void st_guard_reset(void);

/* Called first by every storage function that blocks on the disk: `what`
 * names the operation ("fsync", "segment rename", ...), `subject` the file or
 * partition (may be NULL). No effect off the loop or inside an allow scope. */
void st_guard_blocking(const char *what, const char *subject);

#endif
