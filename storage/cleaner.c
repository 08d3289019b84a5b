/* cleaner.c — log compaction pass and crash-safe segment swap. */
#include "storage/st_cleaner.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/kp_compress.h"
#include "storage/log_internal.h"
#include "storage/st_guard.h"
#include "storage/st_io.h"
#include "storage/st_offset_map.h"

#ifdef SKIFF_FAULT_INJECTION
static int g_crash_step;

void st_cleaner_set_crash_step(int step) { g_crash_step = step; }

static void crash_point(int step) {
    if (g_crash_step == step) raise(SIGKILL);
}
#else
/* The shipped build never kills itself (st_cleaner.h, test hook). */
static void crash_point(int step) { (void)step; }
#endif

#define PLAN_SEGMENTS_MAX 4096 /* segments per pass; the rest waits for the next */

typedef struct plan_seg {
    st_segment_t view;        /* log_fd is our dup(); no indexes */
    char cleaned[ST_PATH_MAX];
    bool built;
    /* the build's product: the cleaned segment opened from X.log.cleaned,
     * with indexes built into X.index.cleaned / X.timeindex.cleaned, ready
     * to be put in the log's array by the commit (no disk work left) */
    st_segment_t fresh;
    bool prepared;            /* fresh is open and owned by the plan */
    bool installed;           /* fresh moved into the log; old is the plan's */
    st_segment_t old;         /* the segment it replaced, closed by finish */
    int64_t *gone_aborts;     /* pairs (pid, marker offset): ABORT markers the
                               * build removed here; their .txnindex entries
                               * go with them (X.txnindex.cleaned) */
    size_t n_gone, cap_gone;
} plan_seg_t;

struct st_clean_plan {
    char dir[ST_PATH_MAX];
    char name[ST_TOPIC_MAX + 16];
    int64_t now_ms;
    int64_t delete_retention_ms;
    size_t dedupe_buffer_bytes;
    size_t records_max_bytes; /* decompression cap per batch (log config) */
    st_cleaner_io_fn io_fn;   /* throttle / stop hook (may be NULL) */
    void *io_ctx;
    size_t first_dirty;       /* index into segs of the first dirty segment */
    size_t n;                 /* segments to clean (may shrink when the map fills) */
    plan_seg_t *segs;
    uint32_t index_max_bytes;      /* the log's, for the cleaned segments' indexes */
    uint32_t index_interval_bytes;
    int64_t end_offset;       /* base of the first segment not cleaned */
    int64_t next_base_after;  /* base of segment n in the log at prepare */
    uint64_t trunc_gen;       /* the log's at prepare: a truncation meanwhile
                               * may have re-created a segment under the same
                               * name and size, so nothing is swapped in */
    size_t next;              /* commit: segs[next..n) not yet swapped in */
    int commit_rc;            /* commit: first error of the steps so far */
    bool commit_all;          /* commit: every segment so far swapped in */
    bool committed;           /* commit_some said done: only finish is left */
    st_aborted_txn_t *aborted;
    size_t n_aborted;
    int64_t *producer_last;   /* pairs (pid, last offset of its last batch), sorted by pid */
    size_t n_producers;
};

/* True when b is the last batch the producer state knows for its producer:
 * such a batch is kept (emptied if need be) so that a replay of the log still
 * finds the producer's last sequence, as Kafka does. */
static bool is_producer_last(const st_clean_plan_t *pl, const kp_batch_t *b) {
    if (b->producer_id < 0) return false;
    size_t lo = 0, hi = pl->n_producers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t pid = pl->producer_last[2 * mid];
        if (pid == b->producer_id) return pl->producer_last[2 * mid + 1] == kp_batch_last_offset(b);
        if (pid < b->producer_id) lo = mid + 1;
        else hi = mid;
    }
    return false;
}

static int cmp_pair(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int copy_producers(st_clean_plan_t *pl, const st_producer_state_t *ps) {
    pl->producer_last = malloc((ps->count ? ps->count : 1) * 2 * sizeof(int64_t));
    if (!pl->producer_last) return KP_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < ps->cap; i++) {
        const st_ps_entry_t *e = &ps->slots[i];
        if (e->producer_id < 0 || e->n_batches == 0) continue;
        pl->producer_last[2 * n] = e->producer_id;
        pl->producer_last[2 * n + 1] = e->batches[e->n_batches - 1].last_offset;
        n++;
    }
    qsort(pl->producer_last, n, 2 * sizeof(int64_t), cmp_pair);
    pl->n_producers = n;
    return KP_OK;
}

static bool is_aborted(const st_clean_plan_t *pl, const kp_batch_t *b) {
    if (!kp_batch_is_transactional(b) || kp_batch_is_control(b)) return false;
    for (size_t i = 0; i < pl->n_aborted; i++) {
        const st_aborted_txn_t *t = &pl->aborted[i];
        if (t->producer_id == b->producer_id && t->first_offset <= b->base_offset && b->base_offset <= t->last_offset)
            return true;
    }
    return false;
}

/* Number of leading segments that may be cleaned (never the active one). */
static size_t cleanable_segments(const st_log_t *log, int64_t now_ms) {
    int64_t limit = log_active(log)->base_offset;
    if (log->hw < limit) limit = log->hw;
    int64_t fu = st_ps_first_unstable_offset(&log->ps);
    if (fu >= 0 && fu < limit) limit = fu;
    size_t k = 0;
    while (k + 1 < log->nsegs && log->segs[k + 1].base_offset <= limit) {
        const st_segment_t *s = &log->segs[k];
        if (log->cfg.min_compaction_lag_ms > 0 && s->max_ts > now_ms - log->cfg.min_compaction_lag_ms) break;
        k++;
    }
    return k;
}

static double ratio_of(const st_log_t *log, size_t k) {
    uint64_t clean = 0, dirty = 0;
    for (size_t i = 0; i < k; i++) {
        if (log->segs[i + 1].base_offset <= log->cleaned_upto) clean += log->segs[i].size_bytes;
        else dirty += log->segs[i].size_bytes;
    }
    return clean + dirty ? (double)dirty / (double)(clean + dirty) : 0.0;
}

double st_log_dirty_ratio(const st_log_t *log, int64_t now_ms) {
    return ratio_of(log, cleanable_segments(log, now_ms));
}

int64_t st_log_first_dirty_timestamp(const st_log_t *log, int64_t now_ms) {
    size_t k = cleanable_segments(log, now_ms);
    for (size_t i = 0; i < k; i++)
        if (log->segs[i + 1].base_offset > log->cleaned_upto) return log->segs[i].max_ts;
    return -1;
}

/* The build step's buffers, reused across batches: the batch read from the
 * segment, the arena holding its decompressed records and the rebuilt batch
 * (reset per batch), and the records kept. */
typedef struct scratch {
    uint8_t *in;
    size_t in_cap;
    kp_arena_t arena;
    kp_record_t *recs;
    size_t recs_cap;
} scratch_t;

/* Room for the decompressed records, the rebuilt batch's records section
 * and its compressed form: each at most about records_max_bytes. */
static void scratch_init(scratch_t *sc, size_t records_max_bytes) {
    memset(sc, 0, sizeof *sc);
    kp_arena_init(&sc->arena, 3 * records_max_bytes + ((size_t)1 << 20));
}

static void scratch_free(scratch_t *sc) {
    free(sc->in);
    free(sc->recs);
    kp_arena_free(&sc->arena);
}

/* The records section of b (decompressed into the arena when compressed).
 * KP_ERR_TOO_LARGE when it is over records_max_bytes, compressed or not (the
 * arena is sized for that): the caller keeps the batch as it is, its keys
 * neither mapped nor dropped. */
static int batch_records(const st_clean_plan_t *pl, const kp_batch_t *b, scratch_t *sc, const uint8_t **recs,
                         size_t *len) {
    kp_arena_reset(&sc->arena);
    if (b->size - KP_BATCH_HEADER_BYTES > pl->records_max_bytes) return KP_ERR_TOO_LARGE;
    return kp_batch_records(b, &sc->arena, pl->records_max_bytes, recs, len);
}

/* Whether the cleaner reads b's records at all: control batches and
 * aborted data are never mapped. */
static bool has_keys(const st_clean_plan_t *pl, const kp_batch_t *b) {
    return !kp_batch_is_control(b) && !is_aborted(pl, b);
}

/* Adds keys of segment s to the map; *full when the map filled. A compressed
 * batch is decompressed here and again when filtered: the cost of not
 * holding a segment's records in memory (Kafka does the same). */
static int map_segment(const st_clean_plan_t *pl, const st_segment_t *s, st_offset_map_t *m, scratch_t *sc,
                       st_cleaner_stats_t *st, bool *full) {
    *full = false;
    for (uint64_t pos = 0; pos < s->size_bytes;) {
        kp_batch_t h, b;
        int rc = st_seg_read_header(s, pos, &h);
        if (rc == KP_OK) rc = log_load_batch(s, pos, h.size, &sc->in, &sc->in_cap, &b);
        if (rc != KP_OK) return rc == KP_ERR_TRUNCATED ? KP_ERR_CORRUPT : rc;
        st->bytes_read += h.size;
        pos += h.size;
        if (pl->io_fn && (rc = pl->io_fn(pl->io_ctx, h.size)) != KP_OK) return rc;
        if (!has_keys(pl, &b)) continue;
        const uint8_t *recs;
        size_t len;
        rc = batch_records(pl, &b, sc, &recs, &len);
        if (rc == KP_ERR_TOO_LARGE) continue;
        if (rc != KP_OK) return rc;
        kp_record_iter_t it;
        kp_record_t rec;
        kp_record_iter_init(&it, &b, recs, len);
        while ((rc = kp_record_iter_next(&it, &rec)) == 1) {
            if (kp_slice_is_null(rec.key)) continue;
            if (!st_offset_map_put(m, rec.key.p, rec.key.len, rec.offset)) {
                *full = true;
                return KP_OK;
            }
        }
        if (rc < 0) return rc;
    }
    return KP_OK;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return KP_OK;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, nc * elem);
    if (!np) return KP_ERR_NOMEM;
    *p = np;
    *cap = nc;
    return KP_OK;
}

/* ---- transaction markers ----------------------------------------------
 * A COMMIT/ABORT marker goes, as in Kafka (KIP-98, KIP-534), once its
 * delete horizon (set by the first pass that sees it) has passed and no
 * batch of its transaction is left before it: the build walks the plan in
 * offset order and notes, per producer, whether the transaction in progress
 * kept a batch (an aborted transaction's data is always dropped; a committed
 * one's when all its records were superseded; a producer's last batch is
 * kept for its sequence, so its marker stays too). One more rule is ours: a
 * producer snapshot (written at each roll and at close) that shows the
 * transaction open would, if a restart or truncation replays from it, leave
 * that transaction open for ever without its marker (the last stable offset
 * stuck); such a marker is kept. */

typedef struct txn_slot {
    int64_t pid;              /* -1 = free */
    int64_t last_marker;      /* offset of the producer's last marker seen, -1 */
    bool retained;            /* its transaction in progress kept a batch */
    bool read;                /* ... had a batch in this pass's input */
} txn_slot_t;

typedef struct txn_track {
    txn_slot_t *slots;        /* open addressing, linear probing */
    size_t cap, count;
    bool snaps_loaded;
    int64_t *open;            /* triples (pid, txn first offset, snapshot offset), sorted by pid */
    size_t n_open, cap_open;
    plan_seg_t *cur;          /* the segment being written */
} txn_track_t;

static void track_free(txn_track_t *tr) {
    free(tr->slots);
    free(tr->open);
    memset(tr, 0, sizeof *tr);
}

static size_t pid_hash(int64_t pid, size_t cap) {
    uint64_t x = (uint64_t)pid * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 17) & (cap - 1);
}

static int track_rehash(txn_track_t *tr, size_t cap) {
    txn_slot_t *ns = malloc(cap * sizeof *ns);
    if (!ns) return KP_ERR_NOMEM;
    for (size_t i = 0; i < cap; i++) ns[i].pid = -1;
    for (size_t i = 0; i < tr->cap; i++) {
        if (tr->slots[i].pid < 0) continue;
        size_t h = pid_hash(tr->slots[i].pid, cap);
        while (ns[h].pid >= 0) h = (h + 1) & (cap - 1);
        ns[h] = tr->slots[i];
    }
    free(tr->slots);
    tr->slots = ns;
    tr->cap = cap;
    return KP_OK;
}

/* The producer's slot, added when new (one per producer id seen in a batch
 * read: memory follows the bytes read). */
static int track_slot(txn_track_t *tr, int64_t pid, txn_slot_t **out) {
    assert(pid >= 0);
    if (2 * (tr->count + 1) > tr->cap) {
        int rc = track_rehash(tr, tr->cap ? 2 * tr->cap : 64);
        if (rc != KP_OK) return rc;
    }
    size_t h = pid_hash(pid, tr->cap);
    while (tr->slots[h].pid >= 0 && tr->slots[h].pid != pid) h = (h + 1) & (tr->cap - 1);
    if (tr->slots[h].pid < 0) {
        tr->slots[h] = (txn_slot_t){ .pid = pid, .last_marker = -1, .retained = false, .read = false };
        tr->count++;
    }
    *out = &tr->slots[h];
    return KP_OK;
}

static int cmp_triple(const void *a, const void *b) { return cmp_pair(a, b); }

/* Collects, from the log's producer snapshots at or below the plan's end,
 * the transactions each shows open. Read once per build, on the first
 * marker that could go. An unreadable snapshot is skipped (open skips it
 * too, falling back to an older one, which is read here as well). */
static int load_open_txns(const st_clean_plan_t *pl, txn_track_t *tr) {
    tr->snaps_loaded = true;
    DIR *d = opendir(pl->dir);
    if (!d) return ST_ERR_IO;
    st_producer_state_t ps;
    int rc = st_ps_init(&ps);
    if (rc != KP_OK) {
        closedir(d);
        return rc;
    }
    struct dirent *e;
    while (rc == KP_OK && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l != 29 || strcmp(e->d_name + 20, ".snapshot") != 0) continue;
        char *end;
        long long v = strtoll(e->d_name, &end, 10);
        if (end != e->d_name + 20 || v < 0 || v > pl->end_offset) continue;
        char path[ST_PATH_MAX];
        st_seg_path(path, sizeof path, pl->dir, v, ".snapshot");
        /* a corrupt or vanished snapshot is never loaded at open either;
         * any other failure (memory, I/O) fails the build: skipping a
         * snapshot that shows a transaction open could drop its marker */
        rc = st_ps_snapshot_read(&ps, path);
        if (rc == KP_ERR_CORRUPT || rc == ST_ERR_NOT_FOUND) { rc = KP_OK; continue; }
        if (rc != KP_OK) break;
        for (size_t i = 0; i < ps.cap && rc == KP_OK; i++) {
            const st_ps_entry_t *pe = &ps.slots[i];
            if (pe->producer_id < 0 || pe->txn_first_offset < 0 || pe->txn_first_offset >= v) continue;
            rc = grow((void **)&tr->open, &tr->cap_open, 3 * (tr->n_open + 1), sizeof *tr->open);
            if (rc != KP_OK) break;
            tr->open[3 * tr->n_open] = pe->producer_id;
            tr->open[3 * tr->n_open + 1] = pe->txn_first_offset;
            tr->open[3 * tr->n_open + 2] = v;
            tr->n_open++;
        }
    }
    closedir(d);
    st_ps_free(&ps);
    if (rc == KP_OK && tr->n_open) qsort(tr->open, tr->n_open, 3 * sizeof(int64_t), cmp_triple);
    return rc;
}

/* Whether a snapshot shows pid's transaction that marker offset M ends
 * open: its first offset after the producer's previous marker (prev), the
 * snapshot at or below M. */
static int open_in_snapshot(const st_clean_plan_t *pl, txn_track_t *tr, int64_t pid, int64_t prev, int64_t m,
                            bool *open) {
    *open = false;
    if (!tr->snaps_loaded) {
        int rc = load_open_txns(pl, tr);
        if (rc != KP_OK) return rc;
    }
    size_t lo = 0, hi = tr->n_open;
    while (lo < hi) { /* first triple of pid */
        size_t mid = lo + (hi - lo) / 2;
        if (tr->open[3 * mid] < pid) lo = mid + 1;
        else hi = mid;
    }
    for (size_t i = lo; i < tr->n_open && tr->open[3 * i] == pid; i++)
        if (tr->open[3 * i + 1] > prev && tr->open[3 * i + 2] <= m) *open = true;
    return KP_OK;
}

/* The control type of marker batch b (its first record's key). */
static int marker_type(const kp_batch_t *b, int16_t *type) {
    if (kp_batch_codec(b) != KP_CODEC_NONE || b->records_count < 1) return KP_ERR_CORRUPT;
    kp_record_iter_t it;
    kp_record_t rec;
    kp_record_iter_init(&it, b, b->data + KP_BATCH_HEADER_BYTES, b->size - KP_BATCH_HEADER_BYTES);
    if (kp_record_iter_next(&it, &rec) != 1) return KP_ERR_CORRUPT;
    return kp_control_key_read(rec.key, type);
}

/* What filtering decided for one batch. */
typedef struct kept {
    int32_t n;                /* records kept (in sc->recs) */
    bool need_horizon;        /* a kept tombstone has no delete horizon yet */
} kept_t;

/* Picks b's records to keep: the latest per key in the map, tombstones
 * until their batch's delete horizon has passed. */
static int pick_records(const st_clean_plan_t *pl, const kp_batch_t *b, const uint8_t *recs, size_t len,
                        const st_offset_map_t *m, scratch_t *sc, kept_t *k, st_cleaner_stats_t *st) {
    int rc = grow((void **)&sc->recs, &sc->recs_cap, (size_t)b->records_count + 1, sizeof *sc->recs);
    if (rc != KP_OK) return rc;
    bool has_horizon = (b->attributes & KP_BATCH_DELETE_HORIZON) != 0;
    k->n = 0;
    k->need_horizon = false;
    kp_record_iter_t it;
    kp_record_t rec;
    kp_record_iter_init(&it, b, recs, len);
    while ((rc = kp_record_iter_next(&it, &rec)) == 1) {
        if (!kp_slice_is_null(rec.key) && st_offset_map_get(m, rec.key.p, rec.key.len) > rec.offset) {
            st->records_dropped++;
            continue;
        }
        if (kp_slice_is_null(rec.value)) {
            if (has_horizon && b->base_timestamp <= pl->now_ms) {
                st->tombstones_dropped++;
                continue;
            }
            if (!has_horizon) k->need_horizon = true;
            st->tombstones_kept++;
        }
        sc->recs[k->n++] = rec;
    }
    if (rc < 0) return rc;
    st->records_kept += k->n;
    return KP_OK;
}

/* Rebuilds b with the kept records and b's header (same offsets, producer
 * fields, last offset, codec: compressed batches are re-compressed with
 * their own codec, as Kafka does). Output in the arena. */
static int rebuild(const st_clean_plan_t *pl, const kp_batch_t *b, size_t records_len, const kept_t *k,
                   scratch_t *sc, const uint8_t **out, size_t *out_len) {
    kp_batch_opts_t o = kp_batch_opts_from(b);
    if (k->n == 0) o.codec = KP_CODEC_NONE; /* an emptied batch: header only, as Kafka */
    if (k->need_horizon) o.delete_horizon_ms = pl->now_ms + pl->delete_retention_ms;
    /* kept records re-encode to their old size, but for timestamp deltas
     * that grow (up to 10 bytes) against a new base timestamp */
    o.max_bytes = records_len + (size_t)k->n * 10 + 16;
    kp_batch_builder_t bb;
    kp_batch_builder_init(&bb, &o);
    int rc = KP_OK;
    for (int32_t i = 0; i < k->n && rc == KP_OK; i++) rc = kp_batch_builder_add_record(&bb, &sc->recs[i]);
    if (rc == KP_OK) rc = kp_batch_builder_finish(&bb, &sc->arena, out, out_len);
    kp_batch_builder_free(&bb);
    return rc;
}

/* Filters control batch b (see "transaction markers" above): kept whole,
 * rebuilt with a delete horizon, or dropped (*out_len 0). Control batches
 * other than COMMIT/ABORT are kept whole. */
static int filter_marker(const st_clean_plan_t *pl, txn_track_t *tr, const kp_batch_t *b, scratch_t *sc,
                         const uint8_t **out, size_t *out_len, st_cleaner_stats_t *st) {
    int16_t type;
    if (b->producer_id < 0 || marker_type(b, &type) != KP_OK ||
        (type != KP_CONTROL_ABORT && type != KP_CONTROL_COMMIT))
        return KP_OK;
    txn_slot_t *slot;
    int rc = track_slot(tr, b->producer_id, &slot);
    if (rc != KP_OK) return rc;
    bool retained = slot->retained, read = slot->read;
    int64_t prev = slot->last_marker;
    slot->retained = slot->read = false; /* the transaction ends here */
    slot->last_marker = b->base_offset;
    if (!(b->attributes & KP_BATCH_DELETE_HORIZON)) {
        /* first pass over it: the horizon, as for a tombstone; the record
         * is copied as it is */
        const uint8_t *recs;
        size_t len;
        rc = batch_records(pl, b, sc, &recs, &len);
        if (rc == KP_OK) rc = grow((void **)&sc->recs, &sc->recs_cap, (size_t)b->records_count + 1, sizeof *sc->recs);
        if (rc != KP_OK) return rc == KP_ERR_TOO_LARGE ? KP_OK : rc;
        kept_t k = { .n = 0, .need_horizon = true };
        kp_record_iter_t it;
        kp_record_t rec;
        kp_record_iter_init(&it, b, recs, len);
        while ((rc = kp_record_iter_next(&it, &rec)) == 1) sc->recs[k.n++] = rec;
        if (rc < 0) return rc;
        st->markers_kept++;
        st->tombstones_kept++; /* the broker schedules a pass after the horizon */
        return rebuild(pl, b, len, &k, sc, out, out_len);
    }
    if (b->base_timestamp > pl->now_ms) {
        st->markers_kept++;
        st->tombstones_kept++;
        return KP_OK;
    }
    if (retained || is_producer_last(pl, b)) return KP_OK;
    /* an ABORT goes only on a pass after the one that dropped its data:
     * its .txnindex entry is removed first at the install, and a crash in
     * between must not leave aborted data without its entry */
    if (type == KP_CONTROL_ABORT && read) {
        st->markers_kept++;
        st->tombstones_kept++; /* goes on the next pass: let the broker run one */
        return KP_OK;
    }
    bool open;
    if ((rc = open_in_snapshot(pl, tr, b->producer_id, prev, b->base_offset, &open)) != KP_OK) return rc;
    if (open) return KP_OK;
    if (type == KP_CONTROL_ABORT) {
        plan_seg_t *ps = tr->cur;
        rc = grow((void **)&ps->gone_aborts, &ps->cap_gone, 2 * (ps->n_gone + 1), sizeof *ps->gone_aborts);
        if (rc != KP_OK) return rc;
        ps->gone_aborts[2 * ps->n_gone] = b->producer_id;
        ps->gone_aborts[2 * ps->n_gone + 1] = b->base_offset;
        ps->n_gone++;
    }
    st->markers_dropped++;
    *out_len = 0;
    return KP_OK;
}

/* Filters one batch: out and out_len say what to write (b itself, or a
 * rebuilt batch in the arena); *out_len 0 = drop it. */
static int filter_batch(const st_clean_plan_t *pl, txn_track_t *tr, const kp_batch_t *b, const st_offset_map_t *m,
                        scratch_t *sc, const uint8_t **out, size_t *out_len, st_cleaner_stats_t *st) {
    *out = b->data;
    *out_len = b->size;
    if (kp_batch_is_control(b)) return filter_marker(pl, tr, b, sc, out, out_len, st);
    if (is_aborted(pl, b)) {
        st->records_dropped += b->records_count;
        *out_len = 0;
        return KP_OK;
    }
    const uint8_t *recs;
    size_t len;
    int rc = batch_records(pl, b, sc, &recs, &len);
    if (rc == KP_ERR_TOO_LARGE) {
        st->batches_kept_whole++;
        return KP_OK;
    }
    kept_t k;
    if (rc == KP_OK) rc = pick_records(pl, b, recs, len, m, sc, &k, st);
    if (rc != KP_OK) return rc;
    if (k.n == b->records_count && !k.need_horizon) return KP_OK;
    if (k.n == 0 && !is_producer_last(pl, b)) {
        *out_len = 0;
        return KP_OK;
    }
    if (kp_batch_codec(b) != KP_CODEC_NONE && k.n > 0) st->batches_recompressed++;
    return rebuild(pl, b, len, &k, sc, out, out_len);
}

/* Writes the cleaned copy of segment s to <base>.log.cleaned (fsynced). */
static int write_cleaned(const st_clean_plan_t *pl, txn_track_t *tr, const st_segment_t *s, const st_offset_map_t *m,
                         scratch_t *sc, st_cleaner_stats_t *st, const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ST_ERR_IO;
    uint64_t wpos = 0;
    int rc = KP_OK;
    for (uint64_t pos = 0; pos < s->size_bytes && rc == KP_OK;) {
        kp_batch_t h, b;
        rc = st_seg_read_header(s, pos, &h);
        if (rc == KP_OK) rc = log_load_batch(s, pos, h.size, &sc->in, &sc->in_cap, &b);
        if (rc != KP_OK) break;
        pos += h.size;
        const uint8_t *out;
        size_t len;
        rc = filter_batch(pl, tr, &b, m, sc, &out, &len, st);
        if (rc == KP_OK && b.producer_id >= 0 && kp_batch_is_transactional(&b) && !kp_batch_is_control(&b)) {
            txn_slot_t *slot; /* a batch of its transaction stays: so does the marker */
            rc = track_slot(tr, b.producer_id, &slot);
            if (rc == KP_OK) {
                slot->read = true;
                if (len > 0) slot->retained = true;
            }
        }
        if (rc == KP_OK && len > 0) {
            rc = st_io_pwrite(fd, out, len, wpos);
            wpos += len;
        }
        if (rc == KP_OK && pl->io_fn) rc = pl->io_fn(pl->io_ctx, h.size + len);
    }
    if (rc == KP_OK) rc = st_io_fsync(fd);
    close(fd);
    st->bytes_written += wpos;
    return rc;
}

static void suffixed(char *out, size_t cap, const char *dir, int64_t base, const char *suffix) {
    st_seg_path(out, cap, dir, base, suffix);
}

/* The three files a build leaves for segment base: the cleaned log and the
 * indexes built for it, all "*.cleaned" (st_log_open removes such files). */
static const char *const k_cleaned[] = { ".log.cleaned", ".index.cleaned", ".timeindex.cleaned" };
/* ... and the live names each replaces, in the same order. */
static const char *const k_live[] = { ".log", ".index", ".timeindex" };
#define N_CLEANED 3

static void unlink_cleaned(const char *dir, int64_t base) {
    char p[ST_PATH_MAX];
    for (size_t f = 0; f < N_CLEANED; f++) {
        suffixed(p, sizeof p, dir, base, k_cleaned[f]);
        unlink(p);
    }
    suffixed(p, sizeof p, dir, base, ".txnindex.cleaned");
    unlink(p);
}

static bool is_gone(const plan_seg_t *ps, const st_aborted_txn_t *t) {
    for (size_t g = 0; g < ps->n_gone; g++)
        if (ps->gone_aborts[2 * g] == t->producer_id && ps->gone_aborts[2 * g + 1] == t->last_offset) return true;
    return false;
}

/* X.txnindex.cleaned: segment X's aborted-transaction entries (markers in
 * [base, next_base)) but those of the ABORT markers removed (fsynced). */
static int write_txnindex(const st_clean_plan_t *pl, const plan_seg_t *ps, int64_t next_base) {
    char p[ST_PATH_MAX];
    suffixed(p, sizeof p, pl->dir, ps->view.base_offset, ".txnindex.cleaned");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ST_ERR_IO;
    close(fd);
    int rc = KP_OK;
    for (size_t i = 0; i < pl->n_aborted && rc == KP_OK; i++) {
        const st_aborted_txn_t *t = &pl->aborted[i];
        if (t->last_offset < ps->view.base_offset || t->last_offset >= next_base || is_gone(ps, t)) continue;
        rc = st_txn_index_append(p, t);
    }
    if (rc != KP_OK) return rc;
    fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ST_ERR_IO;
    rc = st_io_fsync(fd);
    close(fd);
    return rc;
}

/* Closes (munmap, close) a segment struct the plan owns; on the thread that
 * runs finish or abort, since the last close of an unlinked file frees its
 * blocks. Read-only indexes: nothing is written. */
static void close_owned(st_segment_t *s) {
    if (s->log_fd < 0) return;
    if (st_seg_close(s) != KP_OK) { /* read-only files: nothing lost */ }
    s->log_fd = -1;
}

/* Opens the just-written X.log.cleaned as a closed segment and builds its
 * indexes into X.index.cleaned / X.timeindex.cleaned (any thread: only
 * files of the plan's own names). The commit then only renames and swaps
 * the struct in. */
static int prepare_fresh(st_clean_plan_t *pl, plan_seg_t *ps) {
    st_segment_t *f = &ps->fresh;
    int64_t base = ps->view.base_offset;
    memset(f, 0, sizeof *f);
    f->base_offset = f->next_offset = base;
    f->oidx.fd = f->tidx.fd = -1;
    f->max_ts = -1;
    f->max_ts_offset = base;
    f->last_tidx_ts = INT64_MIN;
    f->dir = pl->dir;
    f->log_fd = open(ps->cleaned, O_RDWR | O_CLOEXEC);
    struct stat sb;
    if (f->log_fd < 0 || fstat(f->log_fd, &sb) != 0) {
        if (f->log_fd >= 0) close(f->log_fd);
        f->log_fd = -1;
        return ST_ERR_IO;
    }
    f->log_ref = st_fdref_new(f->log_fd);   /* as every live segment's (st_fdref.h) */
    if (!f->log_ref) {
        close(f->log_fd);
        f->log_fd = -1;
        return KP_ERR_NOMEM;
    }
    f->size_bytes = (uint64_t)sb.st_size;
    /* as st_seg_open: the file's mtime stands for its creation */
    f->created_ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
    char oi[ST_PATH_MAX], ti[ST_PATH_MAX];
    suffixed(oi, sizeof oi, pl->dir, base, k_cleaned[1]);
    suffixed(ti, sizeof ti, pl->dir, base, k_cleaned[2]);
    unlink(oi); /* a leftover would be taken for entries */
    unlink(ti);
    int rc = st_index_open(&f->oidx, oi, ST_OIDX_ENTRY_BYTES, true, pl->index_max_bytes);
    if (rc == KP_OK) rc = st_index_open(&f->tidx, ti, ST_TIDX_ENTRY_BYTES, true, pl->index_max_bytes);
    if (rc != KP_OK) {
        close_owned(f);
        return ST_ERR_IO;
    }
    f->active = true; /* writable indexes while they are built, sealed after */
    st_scan_result_t res;
    rc = st_seg_scan(f, 0, true, false, pl->index_interval_bytes, &res);
    if (rc == KP_OK && res.status != KP_OK) rc = KP_ERR_CORRUPT;
    int rc2 = st_seg_seal(f);
    if (rc == KP_OK) rc = rc2;
    if (rc != KP_OK) {
        close_owned(f);
        return rc;
    }
    ps->prepared = true;
    return KP_OK;
}

void st_cleaner_abort(st_clean_plan_t *pl) {
    if (!pl) return;
    st_guard_blocking("cleaner abort (unlinks, closes)", pl->name);
    for (size_t i = 0; i < pl->n; i++) {
        plan_seg_t *ps = &pl->segs[i];
        free(ps->gone_aborts);
        ps->gone_aborts = NULL;
        if (ps->view.log_fd >= 0) close(ps->view.log_fd);
        ps->view.log_fd = -1;
        if (ps->installed) {
            close_owned(&ps->old);
            continue;
        }
        if (ps->prepared) close_owned(&ps->fresh);
        /* after the commit, skipped segments' files were unlinked there */
        if (!pl->committed) unlink_cleaned(pl->dir, ps->view.base_offset);
    }
    free(pl->segs);
    free(pl->aborted);
    free(pl->producer_last);
    free(pl);
}

int st_cleaner_prepare(st_log_t *log, const st_cleaner_config_t *cc, int64_t now_ms, st_clean_plan_t **plan,
                       st_cleaner_stats_t *st) {
    memset(st, 0, sizeof *st);
    *plan = NULL;
    st->skipped = true;
    if (log->offline) return ST_ERR_OFFLINE;
    if (!(log->cfg.cleanup_policy & ST_CLEANUP_COMPACT)) return KP_OK;
    size_t k = cleanable_segments(log, now_ms);
    if (k == 0) return KP_OK;
    double ratio = ratio_of(log, k);
    if (ratio < log->cfg.min_cleanable_dirty_ratio && !cc->ignore_dirty_ratio) return KP_OK;
    if (k > PLAN_SEGMENTS_MAX) k = PLAN_SEGMENTS_MAX;
    st_clean_plan_t *pl = calloc(1, sizeof *pl);
    if (!pl) return KP_ERR_NOMEM;
    pl->segs = calloc(k, sizeof *pl->segs);
    pl->aborted = malloc((log->n_aborted ? log->n_aborted : 1) * sizeof *pl->aborted);
    if (!pl->segs || !pl->aborted) {
        st_cleaner_abort(pl);
        return KP_ERR_NOMEM;
    }
    memcpy(pl->dir, log->dir, sizeof pl->dir);
    memcpy(pl->name, log->name, sizeof pl->name);
    pl->now_ms = now_ms;
    pl->delete_retention_ms = log->cfg.delete_retention_ms;
    pl->dedupe_buffer_bytes = cc->dedupe_buffer_bytes;
    pl->records_max_bytes = (size_t)log->cfg.records_max_bytes;
    pl->io_fn = cc->io_fn;
    pl->io_ctx = cc->io_ctx;
    pl->trunc_gen = log->trunc_gen;
    pl->index_max_bytes = log->cfg.index_max_bytes;
    pl->index_interval_bytes = log->cfg.index_interval_bytes;
    pl->commit_all = true;
    if (log->n_aborted) memcpy(pl->aborted, log->aborted, log->n_aborted * sizeof *pl->aborted);
    pl->n_aborted = log->n_aborted;
    if (copy_producers(pl, &log->ps) != KP_OK) {
        st_cleaner_abort(pl);
        return KP_ERR_NOMEM;
    }
    for (size_t i = 0; i < k; i++) {
        plan_seg_t *ps = &pl->segs[i];
        ps->view = log->segs[i];
        ps->view.oidx.fd = ps->view.tidx.fd = -1;
        ps->view.oidx.map = ps->view.tidx.map = NULL;
        ps->view.dir = pl->dir;
        ps->view.log_fd = dup(log->segs[i].log_fd);
        ps->view.log_ref = NULL;   /* the dup is the plan's alone */
        ps->fresh.log_fd = ps->old.log_fd = -1;
        ps->fresh.log_ref = ps->old.log_ref = NULL;
        pl->n = i + 1;
        if (ps->view.log_fd < 0) {
            st_cleaner_abort(pl);
            return ST_ERR_IO;
        }
        st_seg_path(ps->cleaned, sizeof ps->cleaned, pl->dir, ps->view.base_offset, ".log.cleaned");
    }
    pl->first_dirty = 0;
    while (pl->first_dirty < k && log->segs[pl->first_dirty + 1].base_offset <= log->cleaned_upto) pl->first_dirty++;
    if (pl->first_dirty == k) pl->first_dirty = 0; /* all clean: refresh tombstone horizons */
    pl->end_offset = log->segs[k].base_offset;
    *plan = pl;
    st->skipped = false;
    return KP_OK;
}

/* The map never needs more slots than the dirty section has records (a
 * record takes at least 7 bytes of a batch; a slot 24 bytes at 3/4 fill):
 * a small dirty section gets a small map rather than the whole
 * log.cleaner.dedupe.buffer.size, which would be written in full (cleared)
 * on every pass. */
static size_t map_bytes(const st_clean_plan_t *pl) {
    uint64_t dirty = 0;
    for (size_t i = pl->first_dirty; i < pl->n; i++) dirty += pl->segs[i].view.size_bytes;
    uint64_t need = dirty / 7 * 32 + 64 * sizeof(st_offset_map_slot_t);
    return need < pl->dedupe_buffer_bytes ? (size_t)need : pl->dedupe_buffer_bytes;
}

int st_cleaner_build(st_clean_plan_t *pl, st_cleaner_stats_t *st) {
    st_guard_blocking("cleaner build", pl->name);
    st_offset_map_t m;
    int rc = st_offset_map_init(&m, map_bytes(pl));
    if (rc != KP_OK) return rc;
    scratch_t sc;
    scratch_init(&sc, pl->records_max_bytes);
    for (size_t i = pl->first_dirty; i < pl->n && rc == KP_OK; i++) {
        bool full;
        rc = map_segment(pl, &pl->segs[i].view, &m, &sc, st, &full);
        if (rc == KP_OK && full) {
            if (i == pl->first_dirty) {
                rc = KP_ERR_TOO_LARGE;
                break;
            }
            /* clean only what the map covers */
            for (size_t j = i; j < pl->n; j++) close(pl->segs[j].view.log_fd);
            pl->end_offset = pl->segs[i].view.base_offset;
            pl->n = i;
        }
    }
    txn_track_t tr;
    memset(&tr, 0, sizeof tr);
    for (size_t i = 0; i < pl->n && rc == KP_OK; i++) {
        tr.cur = &pl->segs[i];
        rc = write_cleaned(pl, &tr, &pl->segs[i].view, &m, &sc, st, pl->segs[i].cleaned);
        if (rc == KP_OK && pl->segs[i].n_gone)
            rc = write_txnindex(pl, &pl->segs[i], i + 1 < pl->n ? pl->segs[i + 1].view.base_offset : pl->end_offset);
        if (rc == KP_OK) rc = prepare_fresh(pl, &pl->segs[i]);
        pl->segs[i].built = rc == KP_OK;
    }
    track_free(&tr);
    scratch_free(&sc);
    st_offset_map_free(&m);
    return rc;
}

/* Installs prepared segment ps at log index j: metadata operations only
 * (two unlinks, three renames; no fsync, no open, no read), then the
 * in-memory swap. Order, for a crash at any point (each prefix of these
 * operations is a state st_log_open recovers):
 *  1. unlink X.index, X.timeindex: they describe the old layout; a missing
 *     index is rebuilt at open, a stale one next to the new log could pass
 *     its sanity check by chance;
 *  2. rename X.log.cleaned over X.log: atomic, so X.log is always a whole
 *     segment, the old or the cleaned one (its data was fsynced by the
 *     build); the old file lives on through the descriptors the log and
 *     in-flight sends hold, until they are closed;
 *  3. rename the built indexes in (a failure leaves them missing: rebuilt).
 * The directory is fsynced by st_cleaner_finish, off the owner's thread.
 * Returns false when X.log could not be replaced (nothing changed but the
 * old indexes' names: the log keeps its open maps of them). */
static bool install(st_log_t *log, plan_seg_t *ps, size_t j, bool first) {
    int64_t base = ps->view.base_offset;
    char from[ST_PATH_MAX], to[ST_PATH_MAX];
    st_guard_blocking("segment rename (cleaner install)", log->name);
    if (ps->n_gone) {
        /* 0. the aborted-transaction index without the removed ABORTs'
         * entries, first: their data was gone before this pass, so the old
         * log with the new index is consistent too */
        suffixed(from, sizeof from, log->dir, base, ".txnindex.cleaned");
        suffixed(to, sizeof to, log->dir, base, ".txnindex");
        if (st_io_rename(from, to) != KP_OK) {
            st_logf(ST_LOG_WARN, "partition %s: cannot install %s: %s; segment kept uncleaned", log->name, to,
                    strerror(errno));
            return false;
        }
        size_t k = 0;
        for (size_t i = 0; i < log->n_aborted; i++)
            if (!is_gone(ps, &log->aborted[i])) log->aborted[k++] = log->aborted[i];
        log->n_aborted = k;
    }
    if (first) crash_point(1);
    for (size_t f = 1; f < N_CLEANED; f++) {
        suffixed(to, sizeof to, log->dir, base, k_live[f]);
        unlink(to);
    }
    if (first) crash_point(2);
    for (size_t f = 0; f < N_CLEANED; f++) {
        suffixed(from, sizeof from, log->dir, base, k_cleaned[f]);
        suffixed(to, sizeof to, log->dir, base, k_live[f]);
        if (st_io_rename(from, to) != KP_OK) {
            if (f == 0) {
                st_logf(ST_LOG_WARN, "partition %s: cannot install cleaned segment %s: %s; kept uncleaned",
                        log->name, to, strerror(errno));
                return false;
            }
            st_logf(ST_LOG_WARN, "partition %s: cannot rename %s: %s (rebuilt at the next open)", log->name,
                    from, strerror(errno));
        }
        if (first && f == 0) crash_point(3);
    }
    if (first) crash_point(4);
    ps->old = log->segs[j];
    log->segs[j] = ps->fresh;
    log->segs[j].dir = log->dir;
    /* the indexes' own record of their file: the live names from now on */
    suffixed(log->segs[j].oidx.path, sizeof log->segs[j].oidx.path, log->dir, base, k_live[1]);
    suffixed(log->segs[j].tidx.path, sizeof log->segs[j].tidx.path, log->dir, base, k_live[2]);
    /* the cleaned copy may have lost its last batches: offsets run on to
     * the next segment's base, as before */
    log->segs[j].next_offset = log->segs[j + 1].base_offset;
    ps->prepared = false;
    ps->installed = true;
    /* finish fsyncs the directory; should the plan be aborted before (a
     * stop between two steps), the log's next flush or close does */
    log_mark_dir_dirty(log);
    return true;
}

/* Installs segments in ascending order, each after checking it is still
 * the one planned (retention, DeleteRecords, truncation may have changed
 * the log since prepare). A segment the check refuses is left alone on
 * disk and in memory; its .cleaned files are unlinked (their open copy is
 * closed in finish). */
int st_cleaner_commit_some(st_log_t *log, st_clean_plan_t *pl, size_t max_segments, st_cleaner_stats_t *st,
                           bool *done) {
    assert(!pl->committed);
    int rc = log->offline ? ST_ERR_OFFLINE : pl->commit_rc;
    bool all = pl->commit_all;
    size_t end = pl->n - pl->next <= max_segments || max_segments == 0 ? pl->n : pl->next + max_segments;
    if (rc != KP_OK) end = pl->n; /* the rest is dropped */
    for (size_t i = pl->next; i < end; i++) {
        plan_seg_t *ps = &pl->segs[i];
        size_t j = log_seg_for(log, ps->view.base_offset);
        bool same = rc == KP_OK && ps->built && ps->prepared && pl->trunc_gen == log->trunc_gen &&
                    j + 1 < log->nsegs && log->segs[j].base_offset == ps->view.base_offset &&
                    log->segs[j].size_bytes == ps->view.size_bytes;
        if (!same || !install(log, ps, j, st->segments_cleaned == 0)) {
            /* here rather than in finish: a name in the log's directory is
             * only ever touched on the owner's thread once the plan is
             * built (a re-created log may reuse the directory) */
            unlink_cleaned(log->dir, ps->view.base_offset);
            all = false;
            continue;
        }
        st->segments_cleaned++;
    }
    pl->next = end;
    pl->commit_rc = rc;
    pl->commit_all = all;
    *done = end == pl->n || rc != KP_OK;
    if (!*done) return KP_OK;
    pl->committed = true;
    if (rc == KP_OK) {
        st->end_offset = pl->end_offset;
        if (all && pl->end_offset > log->cleaned_upto) log->cleaned_upto = pl->end_offset;
        st_logf(ST_LOG_INFO,
                "partition %s: compacted %d segment(s) below offset %" PRId64 ": %" PRIu64 " bytes mapped, %" PRIu64
                " bytes written, %" PRId64 " records dropped, %" PRId64 " tombstones expired, %" PRId64
                " transaction marker(s) removed, %" PRId64 " compressed batch(es) rebuilt, %" PRId64
                " batch(es) over records_max_bytes kept whole",
                log->name, st->segments_cleaned, st->end_offset, st->bytes_read, st->bytes_written,
                st->records_dropped, st->tombstones_dropped, st->markers_dropped, st->batches_recompressed,
                st->batches_kept_whole);
    }
    return rc;
}

int st_cleaner_finish(st_clean_plan_t *pl) {
    assert(pl->committed);
    st_guard_blocking("cleaner finish (directory fsync, closes)", pl->name);
    bool any = false;
    for (size_t i = 0; i < pl->n; i++) any |= pl->segs[i].installed;
    int rc = KP_OK;
    if (any) {
        crash_point(5);
        rc = st_io_fsync_dir(pl->dir);
        if (rc != KP_OK)
            st_logf(ST_LOG_ERROR, "partition %s: directory fsync after compaction failed: %s", pl->name,
                    strerror(errno));
    }
    st_cleaner_abort(pl); /* closes what the plan owns (committed: no unlink) */
    return rc;
}

int st_cleaner_commit(st_log_t *log, st_clean_plan_t *pl, st_cleaner_stats_t *st) {
    bool done = false;
    int rc = KP_OK;
    while (!done) rc = st_cleaner_commit_some(log, pl, 0, st, &done);
    int rc2 = st_cleaner_finish(pl);
    if (rc2 != KP_OK) st_log_mark_offline(log, "directory fsync after compaction failed"); /* as any failed fsync */
    return rc != KP_OK ? rc : rc2;
}

int st_log_compact(st_log_t *log, const st_cleaner_config_t *cc, int64_t now_ms, st_cleaner_stats_t *st) {
    st_clean_plan_t *pl;
    int rc = st_cleaner_prepare(log, cc, now_ms, &pl, st);
    if (rc != KP_OK || !pl) return rc;
    rc = st_cleaner_build(pl, st);
    if (rc != KP_OK) {
        st_logf(ST_LOG_ERROR, "partition %s: compaction failed: %s", log->name, st_status_str(rc));
        st_cleaner_abort(pl);
        return rc;
    }
    return st_cleaner_commit(log, pl, st);
}
