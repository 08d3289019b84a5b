/* index.c — mmap'd sparse offset and time indexes. */
#include "storage/st_index.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "storage/st_io.h"
#include "storage/st_status.h"

static int map_file(st_index_t *idx, int fd, size_t bytes) {
    idx->map = NULL;
    idx->map_bytes = bytes;
    if (bytes == 0) return KP_OK;
    int prot = PROT_READ | (idx->writable ? PROT_WRITE : 0);
    void *m = mmap(NULL, bytes, prot, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        idx->map_bytes = 0;
        return ST_ERR_IO;
    }
    idx->map = m;
    /* The writable map of an active segment covers segment.index.bytes of a
     * sparse file of which only the head is used. On a fault the kernel reads
     * around the faulting page (up to the device's read_ahead_kb, 8 MB on
     * some virtual disks), zero-filling and caching megabytes of holes for
     * every new index page we store to: ~9 % of the broker's CPU in the
     * 6-partition produce benchmark. Entries are appended one page at a time,
     * so ask for no read-around. Advice only: if it fails, faults just read
     * ahead more. Read-only maps keep the default (recovery reads them
     * whole). */
    if (idx->writable && madvise(m, bytes, MADV_RANDOM) != 0) { /* advice only, see above */ }
    return KP_OK;
}

static void unmap(st_index_t *idx) {
    if (idx->map) munmap(idx->map, idx->map_bytes);
    idx->map = NULL;
    idx->map_bytes = 0;
}

/* Truncates the file at idx->path to bytes and maps `map_bytes` of it. */
static int resize_and_map(st_index_t *idx, uint64_t file_bytes, size_t map_bytes) {
    int fd = open(idx->path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return ST_ERR_IO;
    int rc = st_io_ftruncate(fd, file_bytes);
    if (rc == KP_OK) rc = map_file(idx, fd, map_bytes);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int st_index_open(st_index_t *idx, const char *path, uint32_t entry_bytes, bool writable, uint32_t max_bytes) {
    size_t plen = strlen(path);
    assert(plen < sizeof idx->path);
    memcpy(idx->path, path, plen + 1);
    idx->map = NULL;
    idx->map_bytes = 0;
    idx->entry_bytes = entry_bytes;
    idx->count = 0;
    idx->writable = writable;
    idx->ragged = false;
    idx->trim_unsynced = false;
    idx->fd = -1;
    int fd = open(path, (writable ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0644);
    if (fd < 0) return ST_ERR_IO;
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? KP_OK : ST_ERR_IO;
    size_t file_bytes = rc == KP_OK ? (size_t)st.st_size : 0;
    idx->count = (uint32_t)(file_bytes / entry_bytes);
    idx->ragged = file_bytes % entry_bytes != 0;
    size_t want = file_bytes - file_bytes % entry_bytes;
    if (rc == KP_OK && writable) {
        size_t max = max_bytes - max_bytes % entry_bytes;
        assert(max >= entry_bytes);
        if (idx->count > max / entry_bytes) idx->count = (uint32_t)(max / entry_bytes);
        rc = st_io_ftruncate(fd, max);
        want = max;
    }
    if (rc == KP_OK) rc = map_file(idx, fd, want);
    int saved = errno;
    close(fd);
    errno = saved;
    if (rc != KP_OK) {
        idx->count = 0;
        return ST_ERR_IO;
    }
    idx->fd = 1;
    return KP_OK;
}

int st_index_seal(st_index_t *idx) {
    assert(idx->fd >= 0);
    if (!idx->writable) return KP_OK;
    size_t used = (size_t)idx->count * idx->entry_bytes;
    unmap(idx);
    idx->writable = false;
    int rc = resize_and_map(idx, used, used);
    if (rc != KP_OK) idx->count = 0; /* unusable; lookups fall back to scans */
    /* the fsync is left to the next flush (st_index_flush), off the roll */
    idx->trim_unsynced = true;
    return rc;
}

int st_index_close(st_index_t *idx) {
    if (idx->fd < 0) return KP_OK;
    int rc = KP_OK;
    bool was_writable = idx->writable;
    size_t used = (size_t)idx->count * idx->entry_bytes;
    unmap(idx);
    if (was_writable) {
        idx->writable = false;
        rc = resize_and_map(idx, used, 0);
    }
    idx->fd = -1;
    idx->count = 0;
    return rc;
}

void st_index_release(st_index_t *idx) {
    unmap(idx);
    idx->fd = -1;
    idx->count = 0;
    idx->writable = false;
}

void st_index_reset(st_index_t *idx) { idx->count = 0; }

void st_index_truncate(st_index_t *idx, uint32_t n) {
    assert(n <= idx->count);
    idx->count = n;
}

int st_index_flush(st_index_t *idx) {
    if (idx->fd < 0) return KP_OK;
    if (idx->writable) return idx->map ? st_io_msync(idx->map, idx->map_bytes) : KP_OK;
    if (!idx->trim_unsynced) return KP_OK;
    /* the mapping is read-only now: the file's pages and its trimmed size
     * are written back by an fsync through a descriptor of the same file */
    int fd = open(idx->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ST_ERR_IO;
    int rc = st_io_fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    if (rc == KP_OK) idx->trim_unsynced = false;
    return rc;
}

static const uint8_t *entry(const st_index_t *idx, uint32_t i) {
    assert(i < idx->count);
    assert((size_t)(i + 1) * idx->entry_bytes <= idx->map_bytes);
    return idx->map + (size_t)i * idx->entry_bytes;
}

void st_oidx_get(const st_index_t *idx, uint32_t i, uint32_t *rel, uint32_t *pos) {
    const uint8_t *e = entry(idx, i);
    *rel = kp_load_be32(e);
    *pos = kp_load_be32(e + 4);
}

void st_oidx_append(st_index_t *idx, uint32_t rel, uint32_t pos) {
    assert(idx->writable);
    assert(!st_index_full(idx));
    if (idx->count > 0) {
        uint32_t lr, lp;
        st_oidx_get(idx, idx->count - 1, &lr, &lp);
        assert(rel > lr);
        assert(pos > lp);
    }
    uint8_t *e = idx->map + (size_t)idx->count * ST_OIDX_ENTRY_BYTES;
    kp_store_be32(e, rel);
    kp_store_be32(e + 4, pos);
    idx->count++;
}

/* Last entry for which `holds` is true, given that it holds for a prefix
 * of the entries (they are sorted): its index, or -1. Binary search, O(log
 * n) probes of the mapped entries. Kafka keeps a "warm" tail section for
 * page-cache friendliness; not done here because the index of the active
 * segment is small and hot anyway. */
typedef bool (*entry_pred_t)(const st_index_t *idx, uint32_t i, const void *arg);
static int64_t last_holding(const st_index_t *idx, entry_pred_t holds, const void *arg) {
    int64_t lo = 0, hi = (int64_t)idx->count - 1, found = -1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (holds(idx, (uint32_t)mid, arg)) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

static bool rel_at_most(const st_index_t *idx, uint32_t i, const void *arg) {
    uint32_t rel, pos;
    st_oidx_get(idx, i, &rel, &pos);
    return rel <= *(const uint32_t *)arg;
}

static bool pos_at_most(const st_index_t *idx, uint32_t i, const void *arg) {
    uint32_t rel, pos;
    st_oidx_get(idx, i, &rel, &pos);
    return pos <= *(const uint32_t *)arg;
}

static bool ts_below(const st_index_t *idx, uint32_t i, const void *arg) {
    int64_t ts;
    uint32_t rel;
    st_tidx_get(idx, i, &ts, &rel);
    return ts < *(const int64_t *)arg;
}

int64_t st_oidx_lookup(const st_index_t *idx, uint32_t target_rel) {
    return last_holding(idx, rel_at_most, &target_rel);
}

int64_t st_oidx_lookup_pos(const st_index_t *idx, uint32_t pos_limit) {
    return last_holding(idx, pos_at_most, &pos_limit);
}

uint32_t st_oidx_count_below_pos(const st_index_t *idx, uint32_t pos_limit) {
    uint32_t n = 0;
    while (n < idx->count) {
        uint32_t rel, pos;
        st_oidx_get(idx, n, &rel, &pos);
        if (pos >= pos_limit) break;
        n++;
    }
    return n;
}

bool st_oidx_sane(const st_index_t *idx, uint64_t log_size, uint64_t rel_limit) {
    for (uint32_t i = 0; i < idx->count; i++) {
        uint32_t rel, pos;
        st_oidx_get(idx, i, &rel, &pos);
        if (pos >= log_size || rel >= rel_limit) return false;
        if (i > 0) {
            uint32_t pr, pp;
            st_oidx_get(idx, i - 1, &pr, &pp);
            if (rel <= pr || pos <= pp) return false;
        }
    }
    return true;
}

void st_tidx_get(const st_index_t *idx, uint32_t i, int64_t *ts, uint32_t *rel) {
    const uint8_t *e = entry(idx, i);
    *ts = (int64_t)kp_load_be64(e);
    *rel = kp_load_be32(e + 8);
}

void st_tidx_append(st_index_t *idx, int64_t ts, uint32_t rel) {
    assert(idx->writable);
    assert(!st_index_full(idx));
    if (idx->count > 0) {
        int64_t lt;
        uint32_t lr;
        st_tidx_get(idx, idx->count - 1, &lt, &lr);
        assert(ts > lt);
        assert(rel > lr);
    }
    uint8_t *e = idx->map + (size_t)idx->count * ST_TIDX_ENTRY_BYTES;
    kp_store_be64(e, (uint64_t)ts);
    kp_store_be32(e + 8, rel);
    idx->count++;
}

int64_t st_tidx_lookup_before(const st_index_t *idx, int64_t target_ts) {
    return last_holding(idx, ts_below, &target_ts);
}

uint32_t st_tidx_count_below_rel(const st_index_t *idx, uint32_t rel_limit) {
    uint32_t n = 0;
    while (n < idx->count) {
        int64_t ts;
        uint32_t rel;
        st_tidx_get(idx, n, &ts, &rel);
        if (rel >= rel_limit) break;
        n++;
    }
    return n;
}

bool st_tidx_sane(const st_index_t *idx, uint64_t rel_limit) {
    for (uint32_t i = 0; i < idx->count; i++) {
        int64_t ts;
        uint32_t rel;
        st_tidx_get(idx, i, &ts, &rel);
        if (rel >= rel_limit) return false;
        if (i > 0) {
            int64_t pt;
            uint32_t pr;
            st_tidx_get(idx, i - 1, &pt, &pr);
            if (ts <= pt || rel <= pr) return false;
        }
    }
    return true;
}
