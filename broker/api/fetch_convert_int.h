/* broker/api/fetch_convert_int.h — the copy path of Fetch below v10, as a
 * job for the worker pool (fetch_convert.c). Private to broker/api/.
 *
 * Fetch below v10 cannot send the log's bytes as they are: v4-9 must stop
 * before a zstd batch (UNSUPPORTED_COMPRESSION_TYPE when it is the first),
 * v0-3 get every batch decompressed and down-converted to a magic 0/1
 * message set. That work (pread, decompression, conversion: CPU bound up to
 * the 64 MiB copy cap per partition) runs on the worker pool so that the
 * state loop, which serves every other connection, never waits for it.
 *
 * Split of the work:
 * - state loop (h_fetch.c): per partition, st_log_read gives the file ranges
 *   of whole batches (state: segment table, HW/LSO, the budget); their fds
 *   are dup()ed so that retention, compaction or a close meanwhile cannot
 *   make the job read a reused descriptor.
 * - job (fconv_run, any thread): reads the ranges, checks and converts;
 *   touches nothing but the fconv_t.
 * - done (state loop): the partitions take the job's records and the answer
 *   is built as before (h_fetch.c fill_partition), splicing them as file
 *   ranges (v4-9 the log's checked ranges, v0-3 a memfd of the converted
 *   sets): the loop copies no record byte.
 *
 * The budget problem. A partition's read depends on the bytes the earlier
 * partitions of the answer put in it (max_bytes, KIP-74's "first partition
 * with data reads at least one batch"), and for v0-3 that is the size after
 * conversion, known only once the job ran. The loop therefore reads each
 * partition with the budget it would have if every earlier partition sent
 * exactly what was read (`spec_total`); the job walks the partitions in
 * order with the real running total and for each one:
 * - real == assumed: the read is exactly the inline one;
 * - real > assumed (conversion grew the bytes, the common case for v0-3):
 *   the budget is smaller and the read holds every batch the smaller read
 *   would take (st_log_read takes a greedy prefix of whole batches), so the
 *   job cuts the prefix itself (fconv_prefix);
 * - real < assumed (a zstd stop, an error, a conversion that shrank: the
 *   partition could take more than was read): the job stops there
 *   (`next`), and the loop reads the partitions from `next` on again with
 *   the real total (another round). Each round decides at least its first
 *   partition, so there are at most as many rounds as partitions; in the
 *   usual answer there is one.
 * The bytes answered are thus those of the former inline path
 * (st_log_read_copy into the request arena on the loop) for every version,
 * limit and codec. */
#ifndef SKIFF_BK_API_FETCH_CONVERT_INT_H
#define SKIFF_BK_API_FETCH_CONVERT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/st_log.h"

#define FCONV_COPY_CAP_BYTES ((size_t)64 << 20)   /* read per partition (and one decompressed batch) */
#define FCONV_COPY_MIN_BYTES ((size_t)4096)       /* the copy buffer's least size (former inline rule) */
/* The converted message sets of one partition: beyond it the answer stops
 * before the batch that would pass it (the client asks again from there),
 * or CORRUPT_MESSAGE when it is the first. The former inline path met the
 * same bound as the request arena's cap (256 MiB) and failed the partition. */
#define FCONV_OUT_MAX_BYTES ((size_t)256 << 20)

/* One partition of the answer. Loop-side fields are written before the
 * job is submitted and only read by it; job-side fields are written by the
 * job and read on the loop after its done callback. */
typedef struct {
    /* loop side (h_fetch.c, per round) */
    bool wants;               /* resolved, no error, fetch offset below the bound:
                                 records asked for */
    bool read;                /* st_log_read succeeded: ranges below */
    bool read_failed;         /* st_log_read failed (KAFKA_STORAGE_ERROR if exact) */
    bool oversize;            /* the read was one batch larger than the copy
                                 cap (MIN_ONE): never read, nothing or an error */
    bool fds_owned;           /* references (ref[k]) or dup()s the job gives up;
                                 else the log's own fds (inline) */
    uint64_t part_max;        /* partition_max_bytes (0: none) */
    uint64_t spec_total;      /* answer bytes assumed before this partition */
    uint64_t total;           /* bytes of the ranges */
    int nranges;
    int fd[ST_READ_RANGES_MAX];
    st_fdref_t *ref[ST_READ_RANGES_MAX]; /* the segment fd's holder (storage/st_fdref.h):
                                 held while owned, so no dup(); NULL: fd is a dup() */
    uint64_t pos[ST_READ_RANGES_MAX], len[ST_READ_RANGES_MAX];
    /* job side */
    bool decided;             /* records (or their error) below are final */
    int16_t error;            /* Kafka error code, 0 = none */
    const uint8_t *bytes;     /* records answered from memory (NULL: none, or `ext`) */
    size_t bytes_len;         /* records answered, in memory or in `ext` */
    uint64_t sent;            /* bytes counted against max_bytes (= bytes_len) */
    uint8_t *mem;             /* owns `bytes` (malloc) */
    /* Records answered as file ranges (ext.n > 0; fconv_answer_ranges):
     * v4-9 the checked prefix of the ranges read (fd[], kept open until
     * fconv_free), v0-3 a memfd holding the converted sets (out_fd). The
     * loop then splices them into the answer (sendfile) instead of copying
     * them twice (encode buffer, evbuffer). */
    st_read_result_t ext;
    int out_fd;               /* memfd of the converted sets, or -1 */
} fconv_part_t;

typedef struct {
    int16_t version;          /* Fetch version, < 10 */
    uint64_t max_total;       /* the answer's record budget (response_max_bytes) */
    uint64_t total;           /* real answer bytes before parts[next] */
    size_t next;              /* first partition not decided; n = all done */
    size_t n;
    fconv_part_t *parts;      /* n entries */
    uint64_t sets_read;       /* partitions whose bytes the last run read */
    /* the loop's (h_fetch.c): never touched by the job */
    struct bk_api_req *req;
    void *plan;
    bool paused;              /* its connection is paused (bk_net_conn_pause) until the answer */
} fconv_t;

/* A context for n partitions (all undecided, no fds), or NULL. */
fconv_t *fconv_new(int16_t version, uint64_t max_total, size_t n);
/* Closes the owned fds left, frees every partition's bytes and c. NULL ok. */
void fconv_free(fconv_t *c);
/* Forgets partition i's loop-side fields of a previous round (closes
 * its owned fds) before it is planned again. */
void fconv_part_reset(fconv_part_t *p);
/* The copy buffer's size for a budget of max bytes (former inline rule:
 * max, at least FCONV_COPY_MIN_BYTES, at most FCONV_COPY_CAP_BYTES). */
size_t fconv_cap(uint64_t max);

/* bk_net_job_fn: decides partitions from c->next on (see above), closes
 * the owned fds it read, leaves c->next at the first partition a new
 * round must read again (c->n when all are decided). Always KP_OK. */
int fconv_run(void *arg);

/* The length of the greedy prefix of whole batches in buf[0, len) that
 * st_log_read would return for max_bytes and flags (ST_READ_MIN_ONE), or
 * -1 when a batch header does not parse (the caller reads again). */
long long fconv_prefix(const uint8_t *buf, size_t len, uint64_t max_bytes, unsigned flags);

/* Moves p's records (decided, no error) out of memory into file ranges
 * (p->ext): v4-9 the first bytes_len bytes of p's ranges when they are the
 * job's own dup()s, v0-3 a new memfd holding them. Left in memory when the
 * memfd cannot be made or the fds are the log's (inline). */
void fconv_answer_ranges(int16_t version, fconv_part_t *p);

/* The former inline inspection of one partition's bytes buf[0, len)
 * (whole batches): zstd check, and for version < 4 the down-conversion.
 * Sets p->error, p->bytes/bytes_len/sent (p->mem owns them; buf is taken:
 * freed or kept as p->mem). */
void fconv_convert(int16_t version, uint8_t *buf, size_t len, fconv_part_t *p);

#endif
