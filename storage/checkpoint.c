/* checkpoint.c — atomic small-file writes and the checkpoint text formats. */
#include "storage/st_checkpoint.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/st_io.h"
#include "storage/st_segment.h"
#include "storage/st_status.h"

static void dir_of(const char *path, char *dir, size_t cap) {
    size_t n = strlen(path);
    assert(n < cap);
    memcpy(dir, path, n + 1);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else if (slash == dir) {
        dir[1] = '\0';
    } else {
        *slash = '\0';
    }
}

/* Each write has its own temporary file: two writers of one path at once
 * (the periodic checkpoint on the pool and another job, two threads, two
 * processes) once shared "<path>.tmp", and one's O_TRUNC plus shorter write
 * under the other's longer one was renamed into place as a file of mixed
 * lines ("malformed at line N"). Now the last rename wins and each rename
 * installs one writer's whole file. The name keeps the ".tmp" suffix that
 * st_log_open and st_logdir_load sweep after a crash. */
static _Atomic unsigned long g_tmp_seq;

int st_atomic_write(const char *path, const void *data, size_t len) {
    char tmp[ST_PATH_MAX + 128], dir[ST_PATH_MAX + 64];
    unsigned long seq = ++g_tmp_seq;
    int n = snprintf(tmp, sizeof tmp, "%s.%ld-%lu.tmp", path, (long)getpid(), seq);
    assert(n > 0 && (size_t)n < sizeof tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) goto fail_open;
    if (st_io_pwrite(fd, data, len, 0) != KP_OK || st_io_fsync(fd) != KP_OK) goto fail;
    close(fd);
    fd = -1;
    if (st_io_rename(tmp, path) != KP_OK) goto fail;
    dir_of(path, dir, sizeof dir);
    if (st_io_fsync_dir(dir) != KP_OK) goto fail;
    return KP_OK;
fail:;
    int saved = errno;
    if (fd >= 0) close(fd);
    unlink(tmp);
    errno = saved;
fail_open:
    st_logf(ST_LOG_ERROR, "cannot write %s atomically: %s", path, strerror(errno));
    return ST_ERR_IO;
}

int st_read_small_file(const char *path, size_t max_bytes, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? ST_ERR_NOT_FOUND : ST_ERR_IO;
    struct stat st;
    if (fstat(fd, &st) != 0) goto io_fail;
    if ((uint64_t)st.st_size > max_bytes) {
        close(fd);
        return KP_ERR_TOO_LARGE;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return KP_ERR_NOMEM;
    }
    ssize_t r = pread(fd, buf, (size_t)st.st_size, 0);
    if (r < 0) {
        free(buf);
        goto io_fail;
    }
    buf[r] = '\0';
    close(fd);
    *out = buf;
    *len = (size_t)r;
    return KP_OK;
io_fail:
    close(fd);
    return ST_ERR_IO;
}

int st_offset_ckpt_write(const char *path, const st_tp_offset_t *e, size_t n) {
    size_t cap = 32 + n * (ST_TOPIC_MAX + 48);
    char *buf = malloc(cap);
    if (!buf) return KP_ERR_NOMEM;
    size_t len = (size_t)snprintf(buf, cap, "0\n%zu\n", n);
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(buf + len, cap - len, "%s %" PRId32 " %" PRId64 "\n", e[i].topic, e[i].partition,
                         e[i].offset);
        assert(w > 0 && (size_t)w < cap - len);
        len += (size_t)w;
    }
    int rc = st_atomic_write(path, buf, len);
    free(buf);
    return rc;
}

/* Parses one "<topic> <partition> <offset>" line (no newline). */
static bool parse_entry(const char *line, st_tp_offset_t *e) {
    const char *sp = strchr(line, ' ');
    if (!sp || sp == line || (size_t)(sp - line) > ST_TOPIC_MAX) return false;
    memcpy(e->topic, line, (size_t)(sp - line));
    e->topic[sp - line] = '\0';
    char *end = NULL;
    errno = 0;
    long long p = strtoll(sp + 1, &end, 10);
    if (errno || end == sp + 1 || *end != ' ' || p < 0 || p > INT32_MAX) return false;
    const char *o = end + 1;
    long long off = strtoll(o, &end, 10);
    if (errno || end == o || *end != '\0' || off < -1) return false;
    e->partition = (int32_t)p;
    e->offset = off;
    return true;
}

int st_offset_ckpt_read(const char *path, st_tp_offset_t **out, size_t *n) {
    *out = NULL;
    *n = 0;
    char *buf;
    size_t len;
    int rc = st_read_small_file(path, (size_t)ST_CKPT_ENTRIES_MAX * (ST_TOPIC_MAX + 48), &buf, &len);
    if (rc == ST_ERR_NOT_FOUND) return KP_OK;
    if (rc != KP_OK) return rc;
    st_tp_offset_t *arr = NULL;
    size_t count = 0, line_no = 0, want = 0;
    char *save = NULL;
    rc = KP_ERR_CORRUPT;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        if (line_no == 1) {
            if (strcmp(line, "0") != 0) goto bad;
        } else if (line_no == 2) {
            char *end;
            unsigned long long w = strtoull(line, &end, 10);
            /* every entry line takes at least 5 bytes ("t 0 0"), so a count the
             * file cannot hold is corrupt: never allocate from it */
            if (*end || end == line || w > ST_CKPT_ENTRIES_MAX || w > len / 5) goto bad;
            want = (size_t)w;
            arr = calloc(want ? want : 1, sizeof *arr);
            if (!arr) {
                rc = KP_ERR_NOMEM;
                goto done;
            }
        } else {
            if (count >= want || !parse_entry(line, &arr[count])) goto bad;
            count++;
        }
    }
    if (line_no < 2 || count != want) goto bad;
    *out = arr;
    *n = count;
    free(buf);
    return KP_OK;
bad:
    st_logf(ST_LOG_ERROR, "checkpoint file %s is malformed at line %zu; ignoring it", path, line_no);
done:
    free(arr);
    free(buf);
    return rc;
}

int st_meta_write(const char *dir, const char *cluster_id, int32_t node_id) {
    char path[ST_PATH_MAX], body[512];
    int n = snprintf(path, sizeof path, "%s/meta.properties", dir);
    assert(n > 0 && (size_t)n < sizeof path);
    int len = snprintf(body, sizeof body, "version=1\ncluster.id=%s\nnode.id=%" PRId32 "\n", cluster_id, node_id);
    if (len < 0 || (size_t)len >= sizeof body) return KP_ERR_TOO_LARGE;
    return st_atomic_write(path, body, (size_t)len);
}

int st_meta_read(const char *dir, char *cluster_id, size_t cap, int32_t *node_id) {
    char path[ST_PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/meta.properties", dir);
    assert(n > 0 && (size_t)n < sizeof path);
    char *buf;
    size_t len;
    int rc = st_read_small_file(path, 4096, &buf, &len);
    if (rc != KP_OK) return rc;
    bool have_id = false, have_node = false;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "cluster.id=", 11) == 0) {
            size_t l = strlen(line + 11);
            if (l == 0 || l >= cap) break;
            memcpy(cluster_id, line + 11, l + 1);
            have_id = true;
        } else if (strncmp(line, "node.id=", 8) == 0) {
            char *end;
            long v = strtol(line + 8, &end, 10);
            if (*end || end == line + 8 || v < 0 || v > INT32_MAX) break;
            *node_id = (int32_t)v;
            have_node = true;
        }
    }
    free(buf);
    return have_id && have_node ? KP_OK : KP_ERR_CORRUPT;
}

int st_clean_marker_write(const char *dir) {
    char path[ST_PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", dir, ST_CLEAN_MARKER);
    assert(n > 0 && (size_t)n < sizeof path);
    return st_atomic_write(path, "", 0);
}

int st_clean_marker_take(const char *dir, bool *was_clean) {
    char path[ST_PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", dir, ST_CLEAN_MARKER);
    assert(n > 0 && (size_t)n < sizeof path);
    *was_clean = access(path, F_OK) == 0;
    if (!*was_clean) return KP_OK;
    if (unlink(path) != 0) return ST_ERR_IO;
    return st_io_fsync_dir(dir);
}
