/* partition_meta.c — partition.metadata: the topic id, Kafka's text format. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_base64.h"
#include "storage/log_internal.h"

/* 16 bytes <-> 22 chars of unpadded base64url (Kafka's Uuid.toString). */
static void encode(const kp_uuid_t *id, char out[23]) {
    size_t o = 0;
    int rc = kp_b64url_encode(id->b, sizeof id->b, out, 23, &o);
    assert(rc == KP_OK && o == 22);
    (void)rc;
}

/* Strict: 22 characters of the alphabet, trailing bits zero (one text per id). */
static int decode(const char *in, size_t len, kp_uuid_t *id) {
    size_t n = 0;
    if (len != 22 || kp_b64url_decode(in, len, id->b, sizeof id->b, &n) != KP_OK || n != sizeof id->b)
        return KP_ERR_CORRUPT;
    return KP_OK;
}

int st_log_write_topic_id(const st_log_t *log, const kp_uuid_t *id) {
    char path[ST_PATH_MAX + 32], body[64], enc[23];
    snprintf(path, sizeof path, "%s/partition.metadata", log->dir);
    encode(id, enc);
    int n = snprintf(body, sizeof body, "version: 0\ntopic_id: %s\n", enc);
    return st_atomic_write(path, body, (size_t)n);
}

int st_log_read_topic_id(const st_log_t *log, kp_uuid_t *id) {
    char path[ST_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/partition.metadata", log->dir);
    char *buf;
    size_t len;
    int rc = st_read_small_file(path, 256, &buf, &len);
    if (rc != KP_OK) return rc;
    rc = KP_ERR_CORRUPT;
    const char *v = "version: 0\ntopic_id: ";
    size_t vl = strlen(v);
    if (len >= vl && memcmp(buf, v, vl) == 0) {
        const char *t = buf + vl;
        size_t tl = strcspn(t, "\n");
        if (t[tl] == '\n' && t[tl + 1] == '\0') rc = decode(t, tl, id);
    }
    free(buf);
    return rc;
}
