/* log_append.c — leader and replica appends: one write per batch set. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "storage/log_internal.h"
#include "storage/st_io.h"

/* Parses every batch of the set (header, sizes, CRC). The set must be
 * whole batches only. Bounded by len / 61 iterations. */
static int validate_set(const uint8_t *buf, size_t len, bool check_crc, int32_t *n) {
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    *n = 0;
    while (kp_rd_remaining(&r) > 0) {
        kp_batch_t b;
        int rc = kp_batch_read(&r, &b);
        if (rc != KP_OK) return rc;
        if (check_crc && (rc = kp_batch_verify_crc(&b)) != KP_OK) return rc;
        if (b.base_offset < 0) return KP_ERR_BAD_VALUE;
        (*n)++;
    }
    return *n > 0 ? KP_OK : KP_ERR_TRUNCATED;
}

static bool should_roll(const st_log_t *log, const st_segment_t *s, size_t len, int64_t first, int64_t last,
                        int64_t now_ms) {
    if (last - s->base_offset > ST_REL_OFFSET_MAX || first < s->base_offset) return true;
    if (s->size_bytes == 0) return false;
    if (s->size_bytes + len > log->cfg.segment_bytes) return true;
    if (s->created_ms >= 0 && now_ms - s->created_ms >= log->cfg.segment_ms) return true;
    return st_index_full(&s->oidx) || st_index_full(&s->tidx);
}

static void go_offline(st_log_t *log, const char *what) {
    log->offline = true;
    st_logf(ST_LOG_ERROR, "partition %s: %s failed (%s); the log is now offline until restart", log->name, what,
            strerror(errno));
}

/* Writes the (already offset-stamped) set and updates every derived
 * structure. */
static int append_common(st_log_t *log, const uint8_t *buf, size_t len, int64_t now_ms, st_append_info_t *info) {
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    kp_batch_t first, b;
    int rc = kp_batch_read(&r, &first);
    assert(rc == KP_OK);
    int64_t last = kp_batch_last_offset(&first);
    int64_t max_ts = first.max_timestamp;
    int32_t batches = 1;
    while (kp_rd_remaining(&r) > 0) {
        rc = kp_batch_read(&r, &b);
        assert(rc == KP_OK);
        last = kp_batch_last_offset(&b);
        if (b.max_timestamp > max_ts) max_ts = b.max_timestamp;
        batches++;
    }
    if (len > ST_SEGMENT_BYTES_MAX) return KP_ERR_TOO_LARGE;
    if (should_roll(log, log_active(log), len, first.base_offset, last, now_ms)) {
        if ((rc = log_roll_at(log, first.base_offset, now_ms)) != KP_OK) return rc;
    }
    st_segment_t *seg = log_active(log);
    uint64_t pos = seg->size_bytes;
    if (st_io_pwrite(seg->log_fd, buf, len, pos) != KP_OK) {
        int saved = errno;
        st_logf(ST_LOG_ERROR, "partition %s: write of %zu bytes to segment %020" PRId64 " failed: %s", log->name,
                len, seg->base_offset, strerror(saved));
        if (st_io_ftruncate(seg->log_fd, pos) != KP_OK) go_offline(log, "truncating a failed write");
        errno = saved;
        return ST_ERR_IO;
    }
    seg->size_bytes += len;
    kp_rd_init(&r, buf, len);
    while (kp_rd_remaining(&r) > 0) {
        uint64_t at = pos + r.pos;
        rc = kp_batch_read(&r, &b);
        assert(rc == KP_OK);
        st_seg_note_batch(seg, &b, at, log->cfg.index_interval_bytes);
        if (b.partition_leader_epoch >= 0 && b.partition_leader_epoch > st_epoch_cache_latest(&log->epochs)) {
            rc = st_epoch_cache_assign(&log->epochs, b.partition_leader_epoch, b.base_offset);
            if (rc != KP_OK) go_offline(log, "writing leader-epoch-checkpoint");
        }
        rc = log_track_batch(log, &b, now_ms, true);
        if (rc != KP_OK)
            st_logf(ST_LOG_WARN, "partition %s: producer state update at offset %" PRId64 " failed: %s", log->name,
                    b.base_offset, st_status_str(rc));
    }
    assert(seg->next_offset == last + 1);
    info->base_offset = first.base_offset;
    info->last_offset = last;
    info->max_timestamp = max_ts;
    info->batches = batches;
    info->bytes = len;
    /* no fsync here: the owner asks st_log_flush_due after the append and
     * runs the flush where it may block (the broker: on its worker pool) */
    log->unflushed_msgs += last - first.base_offset + 1;
    return log->offline ? ST_ERR_OFFLINE : KP_OK;
}

static int leader_append(st_log_t *log, uint8_t *buf, size_t len, int32_t leader_epoch, int64_t now_ms,
                         bool check_crc, st_append_info_t *info) {
    if (log->offline) return ST_ERR_OFFLINE;
    int32_t n;
    int rc = validate_set(buf, len, check_crc, &n);
    if (rc != KP_OK) return rc;
    int64_t next = st_log_end_offset(log);
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    for (int32_t i = 0; i < n; i++) {
        size_t at = r.pos;
        kp_batch_t b;
        rc = kp_batch_read(&r, &b);
        assert(rc == KP_OK);
        uint8_t *p = buf + at;
        kp_batch_patch_base_offset(p, next);
        kp_batch_patch_leader_epoch(p, leader_epoch);
        /* the timestamp is inside the CRC: only these topics pay a re-CRC */
        if (log->cfg.log_append_time) kp_batch_patch_log_append_time(p, b.size, now_ms);
        next += (int64_t)b.last_offset_delta + 1;
    }
    rc = append_common(log, buf, len, now_ms, info);
    info->log_append_time_ms = log->cfg.log_append_time ? now_ms : -1;
    return rc;
}

int st_log_append(st_log_t *log, uint8_t *buf, size_t len, int32_t leader_epoch, int64_t now_ms,
                  st_append_info_t *info) {
    return leader_append(log, buf, len, leader_epoch, now_ms, true, info);
}

int st_log_append_verified(st_log_t *log, uint8_t *buf, size_t len, int32_t leader_epoch, int64_t now_ms,
                           st_append_info_t *info) {
    return leader_append(log, buf, len, leader_epoch, now_ms, false, info);
}

int st_log_append_replica(st_log_t *log, const uint8_t *buf, size_t len, int64_t now_ms, st_append_info_t *info) {
    if (log->offline) return ST_ERR_OFFLINE;
    int32_t n;
    int rc = validate_set(buf, len, true, &n);
    if (rc != KP_OK) return rc;
    int64_t next = st_log_end_offset(log);
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    for (int32_t i = 0; i < n; i++) {
        kp_batch_t b;
        rc = kp_batch_read(&r, &b);
        assert(rc == KP_OK);
        if (b.base_offset < next) return ST_ERR_BAD_OFFSET;
        next = kp_batch_last_offset(&b) + 1;
    }
    rc = append_common(log, buf, len, now_ms, info);
    info->log_append_time_ms = -1;
    return rc;
}

st_ps_verdict_t st_log_producer_check(const st_log_t *log, const kp_batch_t *b, int64_t *dup_first,
                                      int64_t *dup_last) {
    if (b->producer_id < 0 || b->base_sequence < 0) return ST_PS_OK;
    int32_t last_seq = (int32_t)(((int64_t)b->base_sequence + b->last_offset_delta) % ((int64_t)INT32_MAX + 1));
    return st_ps_check(&log->ps, b->producer_id, b->producer_epoch, b->base_sequence, last_seq, dup_first,
                       dup_last);
}
