/* io.c — syscall shim; failure injection only in test builds (st_io.h). */
#include "storage/st_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "storage/st_status.h"

#ifdef SKIFF_FAULT_INJECTION
static int g_after[ST_IO_OP_COUNT] = { -1, -1, -1, -1 };
static int g_err[ST_IO_OP_COUNT];
static bool g_sync = true;

void st_io_set_sync(bool on) { g_sync = on; }
bool st_io_sync_enabled(void) { return g_sync; }

/* True when this call of `op` must fail; sets errno. */
static int injected(st_io_op_t op) {
    if (g_after[op] < 0) return 0;
    if (g_after[op]-- > 0) return 0;
    g_after[op] = -1;
    errno = g_err[op];
    return 1;
}

void st_io_inject(st_io_op_t op, int after, int err) {
    g_after[op] = after < 0 ? -1 : after;
    g_err[op] = err;
}

void st_io_inject_clear(void) {
    for (int i = 0; i < ST_IO_OP_COUNT; i++) g_after[i] = -1;
}
#else
/* The shipped build: no call fails on purpose and every sync syncs. The
 * compiler folds these away; the call sites stay identical in both builds so
 * the code a test exercises is the code that ships. */
static const bool g_sync = true;
static inline int injected(st_io_op_t op) {
    (void)op;
    return 0;
}
#endif

int st_io_pwrite(int fd, const void *buf, size_t n, uint64_t off) {
    const uint8_t *p = buf;
    if (injected(ST_IO_WRITE)) {
        int saved = errno;
        if (pwrite(fd, p, n / 2, (off_t)off) < 0) { /* torn prefix, best effort */ }
        errno = saved;
        return ST_ERR_IO;
    }
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return ST_ERR_IO;
        }
        if (w == 0) {
            errno = EIO;
            return ST_ERR_IO;
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return KP_OK;
}

int st_io_fsync(int fd) {
    if (injected(ST_IO_FSYNC)) return ST_ERR_IO;
    if (!g_sync) return KP_OK;
    return fsync(fd) == 0 ? KP_OK : ST_ERR_IO;
}

int st_io_rename(const char *from, const char *to) {
    if (injected(ST_IO_RENAME)) return ST_ERR_IO;
    return rename(from, to) == 0 ? KP_OK : ST_ERR_IO;
}

int st_io_ftruncate(int fd, uint64_t size) {
    if (injected(ST_IO_TRUNCATE)) return ST_ERR_IO;
    return ftruncate(fd, (off_t)size) == 0 ? KP_OK : ST_ERR_IO;
}

int st_io_msync(void *addr, size_t len) {
    if (injected(ST_IO_FSYNC)) return ST_ERR_IO;
    if (!g_sync) return KP_OK;
    return msync(addr, len, MS_SYNC) == 0 ? KP_OK : ST_ERR_IO;
}

int st_io_fsync_dir(const char *dir) {
    if (!g_sync) return injected(ST_IO_FSYNC) ? ST_ERR_IO : KP_OK;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ST_ERR_IO;
    int rc = st_io_fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}
