/* partition_meta.c — partition.metadata: the topic id, Kafka's text format. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/log_internal.h"

static const char k_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* 16 bytes -> 22 chars of unpadded base64url (Kafka's Uuid.toString). */
static void encode(const kp_uuid_t *id, char out[23]) {
    size_t o = 0;
    for (size_t i = 0; i < 16; i += 3) {
        uint32_t v = (uint32_t)id->b[i] << 16;
        if (i + 1 < 16) v |= (uint32_t)id->b[i + 1] << 8;
        if (i + 2 < 16) v |= id->b[i + 2];
        size_t chars = i + 2 < 16 ? 4 : 2; /* last group holds one byte */
        for (size_t c = 0; c < chars; c++) out[o++] = k_b64[(v >> (18 - 6 * c)) & 63];
    }
    assert(o == 22);
    out[22] = '\0';
}

static int decode(const char *in, size_t len, kp_uuid_t *id) {
    if (len != 22) return KP_ERR_CORRUPT;
    uint8_t vals[22];
    for (size_t i = 0; i < 22; i++) {
        const char *p = memchr(k_b64, in[i], 64);
        if (!p || !in[i]) return KP_ERR_CORRUPT;
        vals[i] = (uint8_t)(p - k_b64);
    }
    size_t o = 0;
    for (size_t i = 0; i < 22; i += 4) {
        uint32_t v = (uint32_t)vals[i] << 18 | (uint32_t)vals[i + 1] << 12;
        if (i + 2 < 22) v |= (uint32_t)vals[i + 2] << 6 | vals[i + 3];
        id->b[o++] = (uint8_t)(v >> 16);
        if (o < 16) id->b[o++] = (uint8_t)(v >> 8);
        if (o < 16) id->b[o++] = (uint8_t)v;
    }
    kp_uuid_t check;
    char again[23];
    check = *id;
    encode(&check, again);
    return memcmp(again, in, 22) == 0 ? KP_OK : KP_ERR_CORRUPT; /* non-canonical trailing bits */
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
