/* broker/quorum/quorum_snap.c — snapshot files (see quorum_snap.h). */
#include "broker/quorum/quorum_snap.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/kp_crc32c.h"
#include "storage/st_checkpoint.h"

#define PATH_BYTES 4400

static void snap_path(const char *dir, raft_snapshot_id_t id, char *out, size_t cap) {
    snprintf(out, cap, "%s/%020" PRId64 "-%010" PRId32 BK_QUORUM_SNAP_SUFFIX, dir, id.end_offset, id.epoch);
}

int bk_quorum_snap_write(const char *dir, raft_snapshot_id_t id, const uint8_t *data, size_t len) {
    uint8_t *buf = malloc(12 + len);
    if (!buf) return KP_ERR_NOMEM;
    uint32_t crc = kp_crc32c(0, data, len);
    for (int i = 0; i < 4; i++) buf[i] = (uint8_t)(crc >> (24 - 8 * i));
    for (int i = 0; i < 8; i++) buf[4 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
    if (len) memcpy(buf + 12, data, len);
    char path[PATH_BYTES];
    snap_path(dir, id, path, sizeof path);
    int rc = st_atomic_write(path, buf, 12 + len);
    free(buf);
    return rc;
}

void bk_quorum_snap_prune(const char *dir, raft_snapshot_id_t keep) {
    DIR *d = opendir(dir);
    if (!d) return;
    char want[64];
    snprintf(want, sizeof want, "%020" PRId64 "-%010" PRId32 BK_QUORUM_SNAP_SUFFIX, keep.end_offset, keep.epoch);
    size_t sl = strlen(BK_QUORUM_SNAP_SUFFIX);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < sl || strcmp(e->d_name + l - sl, BK_QUORUM_SNAP_SUFFIX) != 0 || strcmp(e->d_name, want) == 0) continue;
        char path[PATH_BYTES];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        (void)unlink(path);
    }
    closedir(d);
}

int bk_quorum_snap_load_latest(const char *dir, raft_snapshot_id_t *id, uint8_t **data, size_t *len) {
    id->end_offset = 0;
    id->epoch = 0;
    *data = NULL;
    *len = 0;
    DIR *d = opendir(dir);
    if (!d) return KP_OK;
    struct dirent *e;
    raft_snapshot_id_t best = { 0, 0 };
    while ((e = readdir(d)) != NULL) {
        long long end;
        int epoch;
        char tail[16];
        if (sscanf(e->d_name, "%20lld-%10d%15s", &end, &epoch, tail) != 3 || strcmp(tail, BK_QUORUM_SNAP_SUFFIX) != 0) continue;
        if (end > best.end_offset) { best.end_offset = end; best.epoch = epoch; }
    }
    closedir(d);
    if (best.end_offset == 0) return KP_OK;
    char path[PATH_BYTES];
    snap_path(dir, best, path, sizeof path);
    char *buf = NULL;
    size_t blen = 0;
    int rc = st_read_small_file(path, BK_QUORUM_SNAP_FILE_MAX_BYTES, &buf, &blen);
    if (rc != KP_OK) return rc;
    const uint8_t *b = (const uint8_t *)buf;
    uint64_t l = 0;
    if (blen >= 12)
        for (int i = 0; i < 8; i++) l = l << 8 | b[4 + i];
    uint32_t crc = blen >= 12 ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3] : 0;
    if (blen < 12 || l != blen - 12 || kp_crc32c(0, b + 12, l) != crc) { free(buf); return KP_ERR_CORRUPT; }
    *data = malloc(l ? l : 1);
    if (!*data) { free(buf); return KP_ERR_NOMEM; }
    memcpy(*data, b + 12, l);
    *len = l;
    *id = best;
    free(buf);
    return KP_OK;
}
