/* libFuzzer target: the small files storage reads at start-up.
 *
 * Byte 0 picks the file (low 3 bits) and options; the rest is the file:
 *   0 offset checkpoint   st_offset_ckpt_read (recovery point, HW, ...)
 *   1 meta.properties     st_meta_read, byte 1 = cluster id buffer size
 *   2 leader-epoch-checkpoint  st_epoch_cache_open (+ assign/truncate)
 *   3 producer snapshot   st_ps_snapshot_read (bit 7: append a valid
 *                         CRC-32C so that mutations reach the parser)
 *   4 .txnindex           st_txn_index_load / st_txn_index_truncate
 *   5 partition.metadata  st_log_read_topic_id
 *   6 log dir             st_logdir_load (bytes as every checkpoint file)
 * Reading must never crash, and whatever is read must be within the
 * format's bounds and survive write -> read unchanged. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/kp_crc32c.h"
#include "storage/st_checkpoint.h"
#include "storage/st_epoch_cache.h"
#include "storage/st_io.h"
#include "storage/st_log.h"
#include "storage/st_logdirs.h"
#include "storage/st_producer_state.h"
#include "storage/st_status.h"
#include "storage/st_txn_index.h"

static char g_dir[64];

static void quiet(void *ctx, st_log_level_t lvl, const char *msg) {
    (void)ctx; (void)lvl; (void)msg;
}

static void path_of(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", g_dir, name);
}

static void put(const char *name, const uint8_t *p, size_t n, const uint8_t *tail, size_t tn) {
    char path[256];
    path_of(path, sizeof path, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) abort();
    if (n && write(fd, p, n) != (ssize_t)n) abort();
    if (tn && write(fd, tail, tn) != (ssize_t)tn) abort();
    close(fd);
}

static void rm(const char *name) {
    char path[256];
    path_of(path, sizeof path, name);
    unlink(path);
}

static void cleanup(void) {
    static const char *names[] = { "ckpt", "ckpt2", "meta.properties", "leader-epoch-checkpoint", "in.snapshot",
                                   "00000000000000000007.snapshot", "a.txnindex", "b.txnindex",
                                   "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                                   "log-start-offset-checkpoint", "cleaner-offset-checkpoint" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) rm(names[i]);
    rmdir(g_dir);
}

static bool same_tp(const st_tp_offset_t *a, const st_tp_offset_t *b) {
    return strcmp(a->topic, b->topic) == 0 && a->partition == b->partition && a->offset == b->offset;
}

static void check_tps(const st_tp_offset_t *e, size_t n) {
    if (n > ST_CKPT_ENTRIES_MAX) abort();
    for (size_t i = 0; i < n; i++) {
        size_t tl = strnlen(e[i].topic, sizeof e[i].topic);
        if (tl == 0 || tl > ST_TOPIC_MAX || strchr(e[i].topic, ' ') || strchr(e[i].topic, '\n')) abort();
        if (e[i].partition < 0 || e[i].offset < -1) abort();
    }
}

static void offset_ckpt(const uint8_t *d, size_t n) {
    put("ckpt", d, n, NULL, 0);
    char p1[256], p2[256];
    path_of(p1, sizeof p1, "ckpt");
    path_of(p2, sizeof p2, "ckpt2");
    st_tp_offset_t *e, *e2;
    size_t ne, ne2;
    if (st_offset_ckpt_read(p1, &e, &ne) != KP_OK) {
        if (e != NULL || ne != 0) abort();
        return;
    }
    check_tps(e, ne);
    if (st_offset_ckpt_write(p2, e, ne) != KP_OK) abort();
    if (st_offset_ckpt_read(p2, &e2, &ne2) != KP_OK || ne2 != ne) abort();
    for (size_t i = 0; i < ne; i++)
        if (!same_tp(&e[i], &e2[i])) abort();
    free(e);
    free(e2);
}

static void meta_props(const uint8_t *d, size_t n) {
    if (n < 1) return;
    size_t cap = 1 + d[0];
    put("meta.properties", d + 1, n - 1, NULL, 0);
    char id[257], id2[257];
    memset(id, 0x55, sizeof id);
    id[cap] = '\0';
    int32_t node = -7, node2;
    if (st_meta_read(g_dir, id, cap, &node) != KP_OK) return;
    size_t l = strlen(id);
    if (l == 0 || l >= cap || strchr(id, '\n') || node < 0) abort();
    if (st_meta_write(g_dir, id, node) != KP_OK) abort();
    if (st_meta_read(g_dir, id2, cap, &node2) != KP_OK) abort();
    if (strcmp(id, id2) != 0 || node != node2) abort();
}

static void check_epochs(const st_epoch_cache_t *c) {
    if (c->n > ST_EPOCH_ENTRIES_MAX) abort();
    for (size_t i = 0; i < c->n; i++) {
        if (c->e[i].epoch < 0 || c->e[i].start_offset < 0) abort();
        if (i > 0 && (c->e[i].epoch <= c->e[i - 1].epoch || c->e[i].start_offset < c->e[i - 1].start_offset))
            abort();
    }
}

/* The file on disk holds what the cache holds. */
static void epochs_persisted(const st_epoch_cache_t *c) {
    st_epoch_cache_t r;
    if (st_epoch_cache_open(&r, g_dir) != KP_OK) abort();
    if (r.n != c->n) abort();
    for (size_t i = 0; i < c->n; i++)
        if (r.e[i].epoch != c->e[i].epoch || r.e[i].start_offset != c->e[i].start_offset) abort();
    st_epoch_cache_free(&r);
}

static void epoch_ckpt(const uint8_t *d, size_t n) {
    if (n < 1) return;
    uint8_t op = d[0];
    put("leader-epoch-checkpoint", d + 1, n - 1, NULL, 0);
    st_epoch_cache_t c;
    if (st_epoch_cache_open(&c, g_dir) != KP_OK) abort(); /* malformed = empty, never an error */
    check_epochs(&c);
    for (int32_t req = -1; req < 4; req++) {
        int32_t ep;
        int64_t end;
        st_epoch_cache_end_offset(&c, c.n ? c.e[c.n / 2].epoch + req : req, 1000, &ep, &end);
        if ((ep == -1) != (end == -1)) abort();
    }
    int64_t last = c.n ? c.e[c.n - 1].start_offset : 0, delta = op >> 2;
    if (last > INT64_MAX - delta) last = INT64_MAX - delta; /* keep the harness's sums defined */
    int rc = KP_OK;
    switch (op & 3) {
    case 0:
        if (st_epoch_cache_latest(&c) < INT32_MAX)
            rc = st_epoch_cache_assign(&c, st_epoch_cache_latest(&c) + 1, last + delta);
        break;
    case 1: rc = st_epoch_cache_truncate_end(&c, last - delta); break;
    case 2: rc = st_epoch_cache_truncate_start(&c, last + delta); break;
    default: break; /* read only */
    }
    if (rc != KP_OK) abort();
    check_epochs(&c);
    if ((op & 3) != 3) epochs_persisted(&c);
    st_epoch_cache_free(&c);
}

static bool same_ps(const st_ps_entry_t *a, const st_ps_entry_t *b) {
    if (a->producer_id != b->producer_id || a->epoch != b->epoch || a->coordinator_epoch != b->coordinator_epoch ||
        a->txn_first_offset != b->txn_first_offset || a->last_timestamp_ms != b->last_timestamp_ms ||
        a->n_batches != b->n_batches)
        return false;
    return memcmp(a->batches, b->batches, sizeof a->batches) == 0;
}

static void ps_snapshot(const uint8_t *d, size_t n, bool fix_crc) {
    uint8_t crc[4];
    uint32_t c = kp_crc32c(0, d, n);
    crc[0] = (uint8_t)(c >> 24); crc[1] = (uint8_t)(c >> 16); crc[2] = (uint8_t)(c >> 8); crc[3] = (uint8_t)c;
    put("in.snapshot", d, n, crc, fix_crc ? 4 : 0);
    char path[256], out[256];
    path_of(path, sizeof path, "in.snapshot");
    path_of(out, sizeof out, "00000000000000000007.snapshot");
    st_producer_state_t ps, ps2;
    if (st_ps_init(&ps) != KP_OK || st_ps_init(&ps2) != KP_OK) abort();
    int rc = st_ps_snapshot_read(&ps, path);
    if (rc != KP_OK) {
        if (rc == KP_ERR_CORRUPT && ps.count != 0) abort(); /* a failed read leaves no half state */
    } else {
        if (ps.count > ST_PS_PRODUCERS_MAX) abort();
        if (st_ps_snapshot_write(&ps, g_dir, 7) != KP_OK) abort();
        if (st_ps_snapshot_read(&ps2, out) != KP_OK || ps2.count != ps.count) abort();
        size_t seen = 0;
        for (size_t i = 0; i < ps.cap; i++) {
            const st_ps_entry_t *e = &ps.slots[i];
            if (e->producer_id == -1) continue;
            if (e->producer_id < 0 || e->n_batches > ST_PS_BATCHES_KEPT) abort();
            const st_ps_entry_t *f = st_ps_get(&ps2, e->producer_id);
            if (!f || !same_ps(e, f)) abort();
            seen++;
        }
        if (seen != ps.count) abort();
    }
    st_ps_free(&ps);
    st_ps_free(&ps2);
}

static void txn_index(const uint8_t *d, size_t n) {
    rm("b.txnindex");
    put("a.txnindex", d, n, NULL, 0);
    char pa[256], pb[256];
    path_of(pa, sizeof pa, "a.txnindex");
    path_of(pb, sizeof pb, "b.txnindex");
    st_aborted_txn_t *a = NULL, *b = NULL;
    size_t na = 0, ca = 0, nb = 0, cb = 0;
    if (st_txn_index_load(pa, &a, &na, &ca) != KP_OK) {
        free(a);
        return;
    }
    if (na != n / ST_TXN_ENTRY_BYTES || na > ca) abort();
    for (size_t i = 0; i < na; i++)
        if (st_txn_index_append(pb, &a[i]) != KP_OK) abort();
    if (st_txn_index_load(pb, &b, &nb, &cb) != KP_OK || nb != na) abort();
    if (na && memcmp(a, b, na * sizeof *a) != 0) abort();
    size_t keep = na / 2;
    if (st_txn_index_truncate(pb, keep) != KP_OK) abort();
    nb = 0;
    if (st_txn_index_load(pb, &b, &nb, &cb) != KP_OK || nb != keep) abort();
    if (keep && memcmp(a, b, keep * sizeof *a) != 0) abort();
    free(a);
    free(b);
}

static void topic_id(const uint8_t *d, size_t n) {
    char pdir[128];
    snprintf(pdir, sizeof pdir, "%s/t-0", g_dir);
    mkdir(pdir, 0755);
    put("t-0/partition.metadata", d, n, NULL, 0);
    st_log_config_t cfg;
    st_log_config_default(&cfg);
    st_log_open_opts_t o = { .recovery_point = 0 };
    st_log_t *log;
    if (st_log_open(g_dir, "t", 0, &cfg, &o, &log) != KP_OK) abort();
    kp_uuid_t id, id2;
    int rc = st_log_read_topic_id(log, &id);
    if (rc == KP_OK) {
        if (st_log_write_topic_id(log, &id) != KP_OK) abort();
        if (st_log_read_topic_id(log, &id2) != KP_OK || memcmp(&id, &id2, sizeof id) != 0) abort();
    } else if (rc != KP_ERR_CORRUPT && rc != KP_ERR_TOO_LARGE) {
        abort();
    }
    if (st_log_delete(log) != KP_OK) abort();
}

static void log_dir(const uint8_t *d, size_t n, bool clean) {
    static const char *files[] = { "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                                   "log-start-offset-checkpoint", "cleaner-offset-checkpoint" };
    for (size_t i = 0; i < 4; i++) put(files[i], d, n, NULL, 0);
    if (clean) put(ST_CLEAN_MARKER, NULL, 0, NULL, 0);
    st_logdir_t ld;
    if (st_logdir_load(&ld, g_dir) != KP_OK) abort(); /* malformed checkpoints are ignored */
    if (ld.was_clean != clean) abort();
    check_tps(ld.rp, ld.n_rp);
    check_tps(ld.hw, ld.n_hw);
    check_tps(ld.start, ld.n_start);
    check_tps(ld.cleaner, ld.n_cleaner);
    st_log_open_opts_t o;
    for (size_t i = 0; i < ld.n_rp && i < 4; i++) st_logdir_opts_for(&ld, ld.rp[i].topic, ld.rp[i].partition, 0, &o);
    st_logdir_free(&ld);
    rm(ST_CLEAN_MARKER);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_dir[0]) {
        strcpy(g_dir, "/tmp/fuzz_ckpt_XXXXXX");
        if (!mkdtemp(g_dir)) abort();
        atexit(cleanup);
        st_set_log_fn(quiet, NULL);
        st_io_set_sync(false);
    }
    if (size < 1) return 0;
    uint8_t op = data[0];
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    switch (op & 7) {
    case 0: offset_ckpt(d, n); break;
    case 1: meta_props(d, n); break;
    case 2: epoch_ckpt(d, n); break;
    case 3: ps_snapshot(d, n, op & 0x80); break;
    case 4: txn_index(d, n); break;
    case 5: topic_id(d, n); break;
    case 6: log_dir(d, n, op & 0x80); break;
    default: break;
    }
    return 0;
}
