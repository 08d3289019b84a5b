/* epoch_cache.c — leader epoch cache and its checkpoint file. */
#include "storage/st_epoch_cache.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/st_checkpoint.h"
#include "storage/st_status.h"

static int persist(const st_epoch_cache_t *c) {
    size_t cap = 32 + c->n * 40;
    char *buf = malloc(cap);
    if (!buf) return KP_ERR_NOMEM;
    size_t len = (size_t)snprintf(buf, cap, "0\n%zu\n", c->n);
    for (size_t i = 0; i < c->n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%" PRId32 " %" PRId64 "\n", c->e[i].epoch, c->e[i].start_offset);
    assert(len < cap);
    int rc = st_atomic_write(c->path, buf, len);
    free(buf);
    return rc;
}

static int parse(st_epoch_cache_t *c, char *buf) {
    char *save = NULL;
    size_t line_no = 0, want = 0;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        char *end;
        errno = 0;
        if (line_no == 1) {
            if (strcmp(line, "0") != 0) return KP_ERR_CORRUPT;
            continue;
        }
        if (line_no == 2) {
            unsigned long long w = strtoull(line, &end, 10);
            if (*end || end == line || w > ST_EPOCH_ENTRIES_MAX) return KP_ERR_CORRUPT;
            want = (size_t)w;
            c->e = calloc(ST_EPOCH_ENTRIES_MAX, sizeof *c->e);
            if (!c->e) return KP_ERR_NOMEM;
            continue;
        }
        if (c->n >= want) return KP_ERR_CORRUPT;
        long long ep = strtoll(line, &end, 10);
        if (errno || end == line || *end != ' ' || ep < 0 || ep > INT32_MAX) return KP_ERR_CORRUPT;
        char *o = end + 1;
        long long off = strtoll(o, &end, 10);
        if (errno || end == o || *end || off < 0) return KP_ERR_CORRUPT;
        if (c->n > 0 && (ep <= c->e[c->n - 1].epoch || off < c->e[c->n - 1].start_offset)) return KP_ERR_CORRUPT;
        c->e[c->n].epoch = (int32_t)ep;
        c->e[c->n].start_offset = off;
        c->n++;
    }
    return line_no >= 2 && c->n == want ? KP_OK : KP_ERR_CORRUPT;
}

int st_epoch_cache_open(st_epoch_cache_t *c, const char *dir) {
    int n = snprintf(c->path, sizeof c->path, "%s/leader-epoch-checkpoint", dir);
    assert(n > 0 && (size_t)n < sizeof c->path);
    c->e = NULL;
    c->n = 0;
    char *buf;
    size_t len;
    int rc = st_read_small_file(c->path, 64 * ST_EPOCH_ENTRIES_MAX, &buf, &len);
    if (rc == ST_ERR_NOT_FOUND || rc == KP_OK) {
        if (rc == KP_OK) {
            rc = parse(c, buf);
            free(buf);
            if (rc == KP_ERR_CORRUPT) {
                st_logf(ST_LOG_WARN, "leader epoch checkpoint %s is malformed; starting with an empty cache", c->path);
                c->n = 0;
                rc = KP_OK;
            }
        } else {
            rc = KP_OK;
        }
    }
    if (rc == KP_OK && !c->e) {
        c->e = calloc(ST_EPOCH_ENTRIES_MAX, sizeof *c->e);
        if (!c->e) rc = KP_ERR_NOMEM;
    }
    if (rc != KP_OK) st_epoch_cache_free(c);
    return rc;
}

void st_epoch_cache_free(st_epoch_cache_t *c) {
    free(c->e);
    c->e = NULL;
    c->n = 0;
}

int32_t st_epoch_cache_latest(const st_epoch_cache_t *c) { return c->n ? c->e[c->n - 1].epoch : -1; }

int st_epoch_cache_assign(st_epoch_cache_t *c, int32_t epoch, int64_t start_offset) {
    assert(epoch >= 0);
    assert(start_offset >= 0);
    if (c->n && c->e[c->n - 1].epoch == epoch && c->e[c->n - 1].start_offset <= start_offset) return KP_OK;
    while (c->n && (c->e[c->n - 1].epoch >= epoch || c->e[c->n - 1].start_offset >= start_offset)) c->n--;
    if (c->n == ST_EPOCH_ENTRIES_MAX) {
        memmove(c->e, c->e + 1, (c->n - 1) * sizeof *c->e);
        c->n--;
    }
    c->e[c->n].epoch = epoch;
    c->e[c->n].start_offset = start_offset;
    c->n++;
    return persist(c);
}

void st_epoch_cache_end_offset(const st_epoch_cache_t *c, int32_t requested, int64_t log_end_offset,
                               int32_t *epoch, int64_t *end_offset) {
    *epoch = -1;
    *end_offset = -1;
    for (size_t i = c->n; i-- > 0;) {
        if (c->e[i].epoch > requested) continue;
        *epoch = c->e[i].epoch;
        *end_offset = i + 1 < c->n ? c->e[i + 1].start_offset : log_end_offset;
        return;
    }
}

int st_epoch_cache_truncate_end(st_epoch_cache_t *c, int64_t end_offset) {
    size_t n = c->n;
    while (c->n && c->e[c->n - 1].start_offset >= end_offset) c->n--;
    return n == c->n ? KP_OK : persist(c);
}

/* True when something changed. */
static bool trim_start(st_epoch_cache_t *c, int64_t start_offset) {
    size_t drop = 0;
    while (drop + 1 < c->n && c->e[drop + 1].start_offset <= start_offset) drop++;
    bool changed = drop > 0;
    if (drop) {
        memmove(c->e, c->e + drop, (c->n - drop) * sizeof *c->e);
        c->n -= drop;
    }
    if (c->n && c->e[0].start_offset < start_offset) {
        c->e[0].start_offset = start_offset;
        changed = true;
    }
    return changed;
}

int st_epoch_cache_truncate_start(st_epoch_cache_t *c, int64_t start_offset) {
    return trim_start(c, start_offset) ? persist(c) : KP_OK;
}

void st_epoch_cache_trim_start(st_epoch_cache_t *c, int64_t start_offset) { (void)trim_start(c, start_offset); }
