/* logdirs.c — per-log-dir checkpoints and partition placement. */
#include "storage/st_logdirs.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/st_guard.h"
#include "storage/st_status.h"

static void ckpt_path(char *buf, size_t cap, const char *dir, const char *name) {
    int n = snprintf(buf, cap, "%s/%s", dir, name);
    assert(n > 0 && (size_t)n < cap);
}

static void load_one(const char *dir, const char *name, st_tp_offset_t **e, size_t *n) {
    char p[ST_PATH_MAX + 64];
    ckpt_path(p, sizeof p, dir, name);
    if (st_offset_ckpt_read(p, e, n) != KP_OK) {
        *e = NULL;
        *n = 0; /* logged by the reader; offsets then default to 0 (full recovery) */
    }
}

/* Temporary files of st_atomic_write ("<name>.<pid>-<seq>.tmp") that a
 * crash left in the dir: nothing reads them, and with a name per writer they
 * would pile up. Only called before any writer of this dir runs. */
static void sweep_tmp(const char *path) {
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 4 || strcmp(e->d_name + l - 4, ".tmp") != 0) continue;
        char p[ST_PATH_MAX + 260];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        if (unlink(p) != 0) st_logf(ST_LOG_WARN, "cannot remove %s: %s", p, strerror(errno));
    }
    closedir(d);
}

int st_logdir_load(st_logdir_t *ld, const char *path) {
    memset(ld, 0, sizeof *ld);
    size_t l = strlen(path);
    if (l >= sizeof ld->path) return KP_ERR_TOO_LARGE;
    memcpy(ld->path, path, l + 1);
    int rc = st_clean_marker_take(path, &ld->was_clean);
    if (rc != KP_OK) return rc;
    sweep_tmp(path);
    load_one(path, "recovery-point-offset-checkpoint", &ld->rp, &ld->n_rp);
    load_one(path, "replication-offset-checkpoint", &ld->hw, &ld->n_hw);
    load_one(path, "log-start-offset-checkpoint", &ld->start, &ld->n_start);
    load_one(path, "cleaner-offset-checkpoint", &ld->cleaner, &ld->n_cleaner);
    return KP_OK;
}

void st_logdir_free(st_logdir_t *ld) {
    free(ld->rp);
    free(ld->hw);
    free(ld->start);
    free(ld->cleaner);
    memset(ld, 0, sizeof *ld);
}

/* Linear: called once per partition at start-up; a hash would pay off
 * only beyond tens of thousands of partitions per dir. */
static int64_t find(const st_tp_offset_t *e, size_t n, const char *topic, int32_t partition, bool *found) {
    for (size_t i = 0; i < n; i++)
        if (e[i].partition == partition && strcmp(e[i].topic, topic) == 0) {
            *found = true;
            return e[i].offset;
        }
    *found = false;
    return 0;
}

void st_logdir_opts_for(const st_logdir_t *ld, const char *topic, int32_t partition, int64_t now_ms,
                        st_log_open_opts_t *opts) {
    bool have_rp, f;
    memset(opts, 0, sizeof *opts);
    opts->recovery_point = find(ld->rp, ld->n_rp, topic, partition, &have_rp);
    opts->high_watermark = find(ld->hw, ld->n_hw, topic, partition, &f);
    opts->log_start_offset = find(ld->start, ld->n_start, topic, partition, &f);
    opts->cleaner_offset = find(ld->cleaner, ld->n_cleaner, topic, partition, &f);
    /* without a recovery point the clean marker cannot vouch for this log */
    opts->clean_shutdown = ld->was_clean && have_rp;
    opts->create = true;
    opts->now_ms = now_ms;
}

int st_logdir_checkpoint(const char *dir, const st_logdir_entry_t *e, size_t n) {
    st_guard_blocking("checkpoint write (fsync, rename)", dir);
    st_tp_offset_t *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) return KP_ERR_NOMEM;
    const char *names[4] = { "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                             "log-start-offset-checkpoint", "cleaner-offset-checkpoint" };
    int rc = KP_OK;
    for (int f = 0; f < 4 && rc == KP_OK; f++) {
        for (size_t i = 0; i < n; i++) {
            size_t tl = strlen(e[i].topic);
            assert(tl <= ST_TOPIC_MAX);
            memcpy(rows[i].topic, e[i].topic, tl + 1);
            rows[i].partition = e[i].partition;
            rows[i].offset = f == 0 ? e[i].offsets.recovery_point
                             : f == 1 ? e[i].offsets.high_watermark
                             : f == 2 ? e[i].offsets.log_start_offset
                                      : e[i].offsets.cleaner_offset;
        }
        char p[ST_PATH_MAX + 64];
        ckpt_path(p, sizeof p, dir, names[f]);
        rc = st_offset_ckpt_write(p, rows, n);
    }
    free(rows);
    return rc;
}

/* A partition directory is "<topic>-<digits>". */
static bool is_partition_dir(const char *name) {
    const char *dash = strrchr(name, '-');
    if (!dash || dash == name || !dash[1]) return false;
    for (const char *c = dash + 1; *c; c++)
        if (*c < '0' || *c > '9') return false;
    return true;
}

int st_logdirs_pick(const char *const *dirs, size_t n) {
    int best = -1;
    size_t best_count = 0;
    for (size_t i = 0; i < n; i++) {
        DIR *d = opendir(dirs[i]);
        if (!d) {
            st_logf(ST_LOG_WARN, "log dir %s unreadable; not placing partitions there", dirs[i]);
            continue;
        }
        size_t count = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.' && is_partition_dir(e->d_name)) count++;
        closedir(d);
        if (best < 0 || count < best_count) {
            best = (int)i;
            best_count = count;
        }
    }
    return best;
}
