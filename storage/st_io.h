/* st_io.h — the syscalls that change files, behind a shim tests can break.
 *
 * Every write/fsync/msync/rename/ftruncate storage does goes through here so
 * that a test can make the Nth call of a kind fail with a chosen errno
 * (ENOSPC, EIO) and check that the log reports the error and stays
 * consistent.
 *
 * The hooks exist only in test programs: they are compiled in when
 * SKIFF_FAULT_INJECTION is defined, which the Makefile does for the copies
 * of the hook-holding storage files it links into test programs (FAULT_SRCS,
 * $(B)/obj/fault/) and for the test sources themselves. bin/skiff is built
 * from the plain objects: every call reaches the syscall, fsync is never
 * skipped, and no hook symbol is linked (test/integration/t_no_test_hooks.sh
 * checks with nm). The injection state is process-global and meant for
 * single-threaded tests only.
 */
#ifndef SKIFF_ST_IO_H
#define SKIFF_ST_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol/kp_wire.h"

typedef enum st_io_op {
    ST_IO_WRITE = 0,
    ST_IO_FSYNC = 1,
    ST_IO_RENAME = 2,
    ST_IO_TRUNCATE = 3,
    ST_IO_OP_COUNT = 4,
} st_io_op_t;

/* Writes all n bytes at the file offset (pwrite, retried on short writes and
 * EINTR; at most n/1 iterations). KP_OK or ST_ERR_IO with errno set. A failed
 * write may have written a prefix: callers truncate back. */
KP_MUST_CHECK int st_io_pwrite(int fd, const void *buf, size_t n, uint64_t off);
/* fsync(fd) -> KP_OK / ST_ERR_IO. */
KP_MUST_CHECK int st_io_fsync(int fd);
/* rename(from, to) -> KP_OK / ST_ERR_IO. */
KP_MUST_CHECK int st_io_rename(const char *from, const char *to);
/* ftruncate(fd, size) -> KP_OK / ST_ERR_IO. */
KP_MUST_CHECK int st_io_ftruncate(int fd, uint64_t size);
/* Opens dir and fsyncs it so that renames/creates inside are durable. */
KP_MUST_CHECK int st_io_fsync_dir(const char *dir);
/* msync(addr, len, MS_SYNC) of a shared mapping -> KP_OK / ST_ERR_IO. */
KP_MUST_CHECK int st_io_msync(void *addr, size_t len);

#ifdef SKIFF_FAULT_INJECTION

/* Test hook: the `after`-th next call of `op` (0 = the very next) fails with
 * `err`, once. after < 0 clears. A failing write first writes half its bytes
 * (a torn write), as a full disk can. */
void st_io_inject(st_io_op_t op, int after, int err);
/* Test hook: clears every injection. */
void st_io_inject_clear(void);
/* Test hook: when off, st_io_fsync / st_io_fsync_dir / st_io_msync
 * succeed without syncing (unit tests, fuzzers and benchmarks run faster).
 * Process-crash tests stay meaningful (the page cache survives SIGKILL);
 * only power loss is not covered. Default on. */
void st_io_set_sync(bool on);
bool st_io_sync_enabled(void);
#endif /* SKIFF_FAULT_INJECTION */

#endif
