/* txn_index.c — .txnindex files. */
#include "storage/st_txn_index.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/st_checkpoint.h"
#include "storage/st_io.h"
#include "storage/st_status.h"

int st_txn_index_append(const char *path, const st_aborted_txn_t *t) {
    uint8_t e[ST_TXN_ENTRY_BYTES];
    kp_store_be16(e, 0);
    kp_store_be64(e + 2, (uint64_t)t->producer_id);
    kp_store_be64(e + 10, (uint64_t)t->first_offset);
    kp_store_be64(e + 18, (uint64_t)t->last_offset);
    kp_store_be64(e + 26, (uint64_t)t->last_stable_offset);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return ST_ERR_IO;
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? KP_OK : ST_ERR_IO;
    /* a torn earlier entry is overwritten: append at a whole-entry boundary */
    uint64_t at = rc == KP_OK ? (uint64_t)st.st_size - (uint64_t)st.st_size % ST_TXN_ENTRY_BYTES : 0;
    if (rc == KP_OK) rc = st_io_pwrite(fd, e, sizeof e, at);
    close(fd);
    return rc;
}

int st_txn_index_load(const char *path, st_aborted_txn_t **arr, size_t *n, size_t *cap) {
    char *raw;
    size_t len;
    int rc = st_read_small_file(path, (size_t)ST_TXN_ENTRIES_MAX * ST_TXN_ENTRY_BYTES, &raw, &len);
    if (rc == ST_ERR_NOT_FOUND) return KP_OK;
    if (rc != KP_OK) return rc;
    kp_rd_t r;
    kp_rd_init(&r, raw, len - len % ST_TXN_ENTRY_BYTES);
    while (kp_rd_remaining(&r) >= ST_TXN_ENTRY_BYTES) {
        int16_t ver;
        st_aborted_txn_t t;
        if (kp_rd_i16(&r, &ver) || kp_rd_i64(&r, &t.producer_id) || kp_rd_i64(&r, &t.first_offset) ||
            kp_rd_i64(&r, &t.last_offset) || kp_rd_i64(&r, &t.last_stable_offset) || ver != 0) {
            rc = KP_ERR_CORRUPT;
            break;
        }
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            if (nc > ST_TXN_ENTRIES_MAX) {
                rc = KP_ERR_TOO_LARGE;
                break;
            }
            st_aborted_txn_t *na = realloc(*arr, nc * sizeof *na);
            if (!na) {
                rc = KP_ERR_NOMEM;
                break;
            }
            *arr = na;
            *cap = nc;
        }
        (*arr)[(*n)++] = t;
    }
    free(raw);
    return rc;
}

int st_txn_index_truncate(const char *path, size_t keep) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? KP_OK : ST_ERR_IO;
    int rc = st_io_ftruncate(fd, (uint64_t)keep * ST_TXN_ENTRY_BYTES);
    close(fd);
    return rc;
}
