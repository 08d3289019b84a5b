/* kpbatch — decode record data files for scripted tests.
 *
 *   kpbatch FILE           FILE = concatenated v2 record batches
 *   kpbatch --legacy FILE  FILE = a magic 0/1 message set
 *
 * Validates every batch (CRC, structure, record count, ...), decompresses,
 * and prints one JSON object per record per line:
 *   {"offset":N,"timestamp":N,"key":"<hex>"|null,"value":"<hex>"|null,
 *    "headers":[["<key hex>","<value hex>"|null],...]}
 * Exit 0 on success, 1 on any validation or decode error (message on stderr),
 * 2 on usage or I/O errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_arena.h"
#include "protocol/kp_batch.h"
#include "protocol/kp_compress.h"
#include "protocol/kp_msgset.h"

#define MAX_FILE_BYTES ((size_t)256 << 20)
#define CAP_BYTES ((size_t)64 << 20)

static void put_hex(kp_slice_t s) {
    if (kp_slice_is_null(s)) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (size_t i = 0; i < s.len; i++) printf("%02x", s.p[i]);
    putchar('"');
}

static int put_record(const kp_record_t *r) {
    printf("{\"offset\":%lld,\"timestamp\":%lld,\"key\":", (long long)r->offset, (long long)r->timestamp);
    put_hex(r->key);
    fputs(",\"value\":", stdout);
    put_hex(r->value);
    fputs(",\"headers\":[", stdout);
    kp_rd_t h;
    kp_rd_init(&h, r->headers.p, r->headers.len);
    kp_str_t hk;
    kp_bytes_t hv;
    int rc, i = 0;
    while ((rc = kp_record_header_next(&h, &hk, &hv)) == 1) {
        fputs(i++ ? ",[" : "[", stdout);
        put_hex(hk);
        putchar(',');
        put_hex(hv);
        putchar(']');
    }
    fputs("]}\n", stdout);
    return rc;
}

static int fail(const char *what, long long where, int rc) {
    fprintf(stderr, "kpbatch: %s at byte %lld: %s\n", what, where, kp_status_str(rc));
    return 1;
}

static int dump_batches(const uint8_t *buf, size_t len, kp_arena_t *a) {
    kp_rd_t r;
    kp_rd_init(&r, buf, len);
    while (kp_rd_remaining(&r) > 0) {
        size_t at = r.pos;
        kp_batch_t b;
        kp_batch_info_t info;
        int rc = kp_batch_read(&r, &b);
        if (rc) return fail("bad batch header", (long long)at, rc);
        if ((rc = kp_batch_validate(&b, 0, a, CAP_BYTES, &info))) return fail("invalid batch", (long long)at, rc);
        kp_record_iter_t it;
        kp_record_t rec;
        kp_record_iter_init(&it, &b, info.records, info.records_len);
        while ((rc = kp_record_iter_next(&it, &rec)) == 1)
            if ((rc = put_record(&rec)) < 0) return fail("bad header", (long long)at, rc);
        if (rc < 0) return fail("bad record", (long long)at, rc);
        kp_arena_reset(a);
    }
    return 0;
}

static int dump_legacy(const uint8_t *buf, size_t len, kp_arena_t *a) {
    kp_msgset_iter_t it;
    kp_legacy_msg_t m;
    int rc;
    kp_msgset_iter_init(&it, buf, len, a, CAP_BYTES);
    while ((rc = kp_msgset_iter_next(&it, &m)) == 1) {
        printf("{\"offset\":%lld,\"timestamp\":%lld,\"key\":", (long long)m.offset, (long long)m.timestamp);
        put_hex(m.key);
        fputs(",\"value\":", stdout);
        put_hex(m.value);
        fputs(",\"headers\":[]}\n", stdout);
    }
    return rc < 0 ? fail("invalid message set", (long long)it.outer.pos, rc) : 0;
}

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    uint8_t *buf = NULL;
    if (size >= 0 && (size_t)size <= MAX_FILE_BYTES && fseek(f, 0, SEEK_SET) == 0)
        buf = malloc((size_t)size + 1);
    if (buf != NULL && fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)size;
    return buf;
}

int main(int argc, char **argv) {
    int legacy = argc == 3 && strcmp(argv[1], "--legacy") == 0;
    if (argc != 2 && !legacy) {
        fprintf(stderr, "usage: kpbatch [--legacy] FILE\n");
        return 2;
    }
    size_t len = 0;
    uint8_t *buf = slurp(argv[argc - 1], &len);
    if (buf == NULL) {
        fprintf(stderr, "kpbatch: cannot read %s (missing, unreadable or over %zu bytes)\n", argv[argc - 1],
                MAX_FILE_BYTES);
        return 2;
    }
    kp_arena_t a;
    kp_arena_init(&a, KP_ARENA_DEFAULT_CAP_BYTES);
    int rc = legacy ? dump_legacy(buf, len, &a) : dump_batches(buf, len, &a);
    kp_arena_free(&a);
    free(buf);
    fflush(stdout);
    return rc;
}
