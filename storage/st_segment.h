/* st_segment.h — one log segment: <base>.log plus its .index/.timeindex.
 *
 * A segment holds whole batches back to back, exactly as received. Its base
 * offset names its files (20 digits). Only the last segment of a log (the
 * active one) is appended to; the others are immutable until retention or
 * the cleaner replaces them. Owned and used by one thread at a time.
 */
#ifndef SKIFF_ST_SEGMENT_H
#define SKIFF_ST_SEGMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/kp_batch.h"
#include "storage/st_fdref.h"
#include "storage/st_index.h"

#define ST_PATH_MAX 512
#define ST_REL_OFFSET_MAX INT32_MAX   /* offsets in a segment: base .. base+this */
#define ST_SEGMENT_BYTES_MAX ((uint64_t)INT32_MAX) /* positions are u32 in the index */

typedef struct st_segment {
    int64_t base_offset;
    int64_t next_offset;      /* last offset of the last batch + 1 (base when empty) */
    int log_fd;
    st_fdref_t *log_ref;      /* holds log_fd (the segment's reference); NULL when closed */
    uint64_t size_bytes;
    st_index_t oidx;
    st_index_t tidx;
    bool active;
    int64_t max_ts;           /* largest batch max timestamp; -1 when empty */
    int64_t max_ts_offset;    /* base offset of the batch holding max_ts */
    int64_t last_tidx_ts;     /* timestamp of the last time index entry, or INT64_MIN */
    uint64_t bytes_since_index;
    int64_t created_ms;       /* wall time of the first append (segment.ms) */
    const char *dir;          /* the log's directory (borrowed) */
} st_segment_t;

/* "<dir>/<20-digit base><suffix>" into buf (asserts it fits). */
void st_seg_path(char *buf, size_t cap, const char *dir, int64_t base, const char *suffix);

/* Creates a new, empty, active segment (files must not exist). */
KP_MUST_CHECK int st_seg_create(st_segment_t *s, const char *dir, int64_t base, uint32_t index_max_bytes,
                                int64_t now_ms);
/* Opens an existing segment's files; active => indexes writable. Sets
 * size_bytes; next_offset/max_ts are NOT known yet (see st_seg_scan). */
KP_MUST_CHECK int st_seg_open(st_segment_t *s, const char *dir, int64_t base, bool active,
                              uint32_t index_max_bytes);
/* Closes files; active segments get their final time index entry and
 * trimmed indexes. Returns the first error but always closes. */
KP_MUST_CHECK int st_seg_close(st_segment_t *s);
/* Drops the segment's reference to its .log descriptor (closed when no
 * send holds it any more); log_fd = -1. */
void st_seg_release_fd(st_segment_t *s);
/* Turns the active segment into a closed one (roll). */
KP_MUST_CHECK int st_seg_seal(st_segment_t *s);

/* Reads and checks the 61-byte header of the batch at pos, without its
 * body. KP_OK; KP_ERR_TRUNCATED when the file ends inside the batch;
 * KP_ERR_BAD_* / KP_ERR_UNSUPPORTED for garbage; ST_ERR_IO. h->data is NULL. */
KP_MUST_CHECK int st_seg_read_header(const st_segment_t *s, uint64_t pos, kp_batch_t *h);

/* A read-ahead window over one segment's bytes for walks over consecutive
 * batch headers. A walk of ~100-200 B batches used to cost one pread per
 * 61-byte header (the offset index only names a batch every
 * index.interval.bytes, so a find walked up to ~40 headers, and a Fetch
 * walked every batch it returned): st_seg_read_header_win parses a header
 * from the window when all its 61 bytes are there, else refills the window
 * with one pread of up to ST_HDR_WIN_BYTES from pos. It lives on the
 * caller's stack (no allocation), and holds copies: it is only for one walk
 * over a log that nothing changes meanwhile (a truncation or a cleaner swap
 * would leave stale bytes in it); zero it or call st_hdr_win_reset to start
 * another. Results are exactly st_seg_read_header's. */
#define ST_HDR_WIN_BYTES 16384
typedef struct st_hdr_win {
    const st_segment_t *seg;   /* whose bytes buf holds; NULL when empty */
    int fd;                    /* seg's log_fd at the fill */
    uint64_t pos;              /* file position of buf[0] */
    size_t len;                /* bytes held */
    uint64_t fills;            /* preads made through this window (tests, bench) */
    uint8_t buf[ST_HDR_WIN_BYTES];
} st_hdr_win_t;

void st_hdr_win_reset(st_hdr_win_t *w);
/* st_seg_read_header through window w (w may be NULL: a plain read). */
KP_MUST_CHECK int st_seg_read_header_win(const st_segment_t *s, uint64_t pos, kp_batch_t *h, st_hdr_win_t *w);

/* Records a batch just written at pos in the segment's in-memory state and
 * indexes (index entry every interval bytes; time entry when max ts grew). */
void st_seg_note_batch(st_segment_t *s, const kp_batch_t *h, uint64_t pos, uint32_t interval_bytes);

typedef struct st_scan_result {
    uint64_t valid_bytes;     /* end of the last good batch */
    int64_t first_bad_offset; /* base offset the bad batch claimed, or -1 if unreadable */
    int status;               /* KP_OK when the whole file was good, else why it stopped */
} st_scan_result_t;

/* Walks batches from pos to the end of the file. rebuild: indexes are reset
 * first and re-made for every batch from 0 (pos must be 0). verify_crc: each
 * batch's CRC is checked (reads whole batches). Updates next_offset, max_ts,
 * bytes_since_index. Never truncates: the caller decides. Bounded by the
 * file size (each step advances >= 61 bytes). */
KP_MUST_CHECK int st_seg_scan(st_segment_t *s, uint64_t pos, bool rebuild, bool verify_crc,
                              uint32_t interval_bytes, st_scan_result_t *res);

/* Re-derives next_offset, max_ts and bytes_since_index from the last index
 * entries plus a walk of the batches after them (bounded by about
 * index.interval.bytes in a healthy segment). verify_crc checks those batches. */
KP_MUST_CHECK int st_seg_load_tail(st_segment_t *s, bool verify_crc, uint32_t interval_bytes,
                                   st_scan_result_t *res);

/* True when the indexes look consistent with the log: files of whole
 * entries, entries increasing and in range, the last offset entry pointing
 * at a batch with that offset, the last time entry at the batch with that
 * max timestamp (a closed non-empty segment has one), and no batch after the
 * last offset entry that should have had one (st_seg_note_batch's rule).
 * rel_limit bounds relative offsets (next segment base - base, or
 * ST_REL_OFFSET_MAX+1). */
bool st_seg_indexes_ok(const st_segment_t *s, uint64_t rel_limit, uint32_t interval_bytes);

/* Deletes and rebuilds both indexes from the log (walking every batch;
 * verify_crc checks each). Closed segments are sealed again after. */
KP_MUST_CHECK int st_seg_reindex(st_segment_t *s, uint32_t index_max_bytes, bool verify_crc,
                                 uint32_t interval_bytes, st_scan_result_t *res);

/* Position of the first batch whose last offset >= offset (size_bytes when
 * none), via the offset index then a header walk; fills *h when found. */
KP_MUST_CHECK int st_seg_find(const st_segment_t *s, int64_t offset, uint64_t *pos, kp_batch_t *h);
/* st_seg_find walking through window w (the caller's walk may go on with
 * the same window from *pos). */
KP_MUST_CHECK int st_seg_find_win(const st_segment_t *s, int64_t offset, uint64_t *pos, kp_batch_t *h,
                                  st_hdr_win_t *w);

/* Cuts the segment at byte pos (a batch boundary), drops index entries at or
 * after it, sets next_offset and re-derives max_ts from what remains. */
KP_MUST_CHECK int st_seg_truncate(st_segment_t *s, uint64_t pos, int64_t next_offset, uint32_t interval_bytes);

/* Renames every file of the segment from suffix-less names to name+suffix
 * (e.g. ".deleted"); files that do not exist are skipped. */
KP_MUST_CHECK int st_seg_rename_all(const char *dir, int64_t base, const char *suffix);
/* Unlinks every file of the segment carrying suffix ("" for the live ones). */
void st_seg_unlink_all(const char *dir, int64_t base, const char *suffix);

#endif
