/* Unit tests for storage's building blocks: index files, the batch encoder,
 * segment header parsing at every byte, meta.properties, log dir placement. */
#include "test/unit/st_test_util.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "storage/st_checkpoint.h"
#include "storage/st_index.h"
#include "storage/st_logdirs.h"
#include "storage/st_segment.h"

START_TEST(test_offset_index_lookups) {
    char *dir = tu_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/x.index", dir);
    st_index_t idx;
    ck_assert_int_eq(st_index_open(&idx, p, ST_OIDX_ENTRY_BYTES, true, 8 * 10 + 5), KP_OK);
    ck_assert_uint_eq(idx.count, 0);
    ck_assert_int_eq(st_oidx_lookup(&idx, 5), -1);
    for (uint32_t i = 0; i < 10; i++) {
        ck_assert(!st_index_full(&idx));
        st_oidx_append(&idx, 10 + i * 10, 100 + i * 1000);
    }
    ck_assert(st_index_full(&idx)); /* 85 bytes hold 10 entries */
    ck_assert_int_eq(st_oidx_lookup(&idx, 9), -1);
    ck_assert_int_eq(st_oidx_lookup(&idx, 10), 0);
    ck_assert_int_eq(st_oidx_lookup(&idx, 19), 0);
    ck_assert_int_eq(st_oidx_lookup(&idx, 20), 1);
    ck_assert_int_eq(st_oidx_lookup(&idx, 100), 9);
    ck_assert_int_eq(st_oidx_lookup(&idx, UINT32_MAX), 9);
    ck_assert_int_eq(st_oidx_lookup_pos(&idx, 99), -1);
    ck_assert_int_eq(st_oidx_lookup_pos(&idx, 100), 0);
    ck_assert_int_eq(st_oidx_lookup_pos(&idx, 1099), 0);
    ck_assert_int_eq(st_oidx_lookup_pos(&idx, 1100), 1);
    ck_assert_uint_eq(st_oidx_count_below_pos(&idx, 1100), 1);
    ck_assert_uint_eq(st_oidx_count_below_pos(&idx, 1101), 2);
    ck_assert(st_oidx_sane(&idx, 100000, 1000));
    ck_assert(!st_oidx_sane(&idx, 9100, 1000));  /* a position past the log */
    ck_assert(!st_oidx_sane(&idx, 100000, 100)); /* a relative offset too big */
    st_index_truncate(&idx, 4);
    ck_assert_int_eq(st_oidx_lookup(&idx, 100), 3);
    st_oidx_append(&idx, 45, 3500);
    ck_assert_int_eq(st_index_close(&idx), KP_OK);
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_size, 5 * 8); /* trimmed on close */
    ck_assert_int_eq(st_index_open(&idx, p, ST_OIDX_ENTRY_BYTES, false, 0), KP_OK);
    ck_assert_uint_eq(idx.count, 5);
    uint32_t rel, pos;
    st_oidx_get(&idx, 4, &rel, &pos);
    ck_assert_uint_eq(rel, 45);
    ck_assert_uint_eq(pos, 3500);
    /* big-endian on disk */
    ck_assert_int_eq(st_index_close(&idx), KP_OK);
    int fd = open(p, O_RDONLY);
    uint8_t raw[8];
    ck_assert_int_eq(pread(fd, raw, 8, 32), 8);
    close(fd);
    ck_assert_uint_eq(kp_load_be32(raw), 45);
    ck_assert_uint_eq(kp_load_be32(raw + 4), 3500);
    /* a ragged tail is ignored */
    ck_assert_int_eq(truncate(p, 5 * 8 + 3), 0);
    ck_assert_int_eq(st_index_open(&idx, p, ST_OIDX_ENTRY_BYTES, false, 0), KP_OK);
    ck_assert_uint_eq(idx.count, 5);
    ck_assert_int_eq(st_index_close(&idx), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_time_index_lookups) {
    char *dir = tu_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/x.timeindex", dir);
    st_index_t idx;
    ck_assert_int_eq(st_index_open(&idx, p, ST_TIDX_ENTRY_BYTES, true, 4096), KP_OK);
    for (uint32_t i = 0; i < 20; i++) st_tidx_append(&idx, 1000 + i * 100, i * 3 + 1);
    ck_assert_int_eq(st_tidx_lookup_before(&idx, 1000), -1);
    ck_assert_int_eq(st_tidx_lookup_before(&idx, 1001), 0);
    ck_assert_int_eq(st_tidx_lookup_before(&idx, 1100), 0);
    ck_assert_int_eq(st_tidx_lookup_before(&idx, 1101), 1);
    ck_assert_int_eq(st_tidx_lookup_before(&idx, INT64_MAX), 19);
    ck_assert_uint_eq(st_tidx_count_below_rel(&idx, 4), 1);
    ck_assert_uint_eq(st_tidx_count_below_rel(&idx, 5), 2);
    ck_assert(st_tidx_sane(&idx, 100));
    ck_assert(!st_tidx_sane(&idx, 50));
    ck_assert_int_eq(st_index_seal(&idx), KP_OK);
    ck_assert(!idx.writable);
    ck_assert_uint_eq(idx.map_bytes, 20 * 12);
    int64_t ts;
    uint32_t rel;
    st_tidx_get(&idx, 19, &ts, &rel);
    ck_assert_int_eq(ts, 2900);
    ck_assert_uint_eq(rel, 58);
    ck_assert_int_eq(st_index_close(&idx), KP_OK);
    /* an absent file cannot be opened read-only */
    snprintf(p, sizeof p, "%s/missing.timeindex", dir);
    ck_assert_int_eq(st_index_open(&idx, p, ST_TIDX_ENTRY_BYTES, false, 0), ST_ERR_IO);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_segment_header_every_cut) {
    char *dir = tu_tmpdir();
    st_segment_t s;
    ck_assert_int_eq(st_seg_create(&s, dir, 100, 4096, 0), KP_OK);
    uint8_t buf[4096];
    size_t len = tu_batch(buf, sizeof buf, 3, 10, 1, 20);
    kp_batch_patch_base_offset(buf, 100);
    ck_assert_int_eq(pwrite(s.log_fd, buf, len, 0), (ssize_t)len);
    for (size_t cut = 0; cut <= len; cut++) {
        s.size_bytes = cut;
        kp_batch_t h;
        int rc = st_seg_read_header(&s, 0, &h);
        if (cut == len) {
            ck_assert_int_eq(rc, KP_OK);
            ck_assert_int_eq(h.base_offset, 100);
            ck_assert_uint_eq(h.size, len);
        } else {
            ck_assert_msg(rc == KP_ERR_TRUNCATED, "cut %zu: %d", cut, rc);
        }
    }
    s.size_bytes = len;
    /* garbage in each header field is refused, never over-read */
    for (size_t at = 8; at < KP_BATCH_HEADER_BYTES; at++) {
        uint8_t save = buf[at];
        buf[at] = 0xff;
        ck_assert_int_eq(pwrite(s.log_fd, buf, len, 0), (ssize_t)len);
        kp_batch_t h;
        int rc = st_seg_read_header(&s, 0, &h);
        if (rc == KP_OK) ck_assert_uint_le(h.size, len);
        buf[at] = save;
    }
    st_scan_result_t res;
    ck_assert_int_eq(pwrite(s.log_fd, buf, len, 0), (ssize_t)len);
    ck_assert_int_eq(st_seg_scan(&s, 0, true, true, 100, &res), KP_OK);
    ck_assert_int_eq(res.status, KP_OK);
    ck_assert_int_eq(s.next_offset, 103);
    ck_assert_int_eq(s.max_ts, 12);
    ck_assert_int_eq(st_seg_close(&s), KP_OK);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_meta_properties_malformed) {
    char *dir = tu_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/meta.properties", dir);
    const char *bad[] = { "version=1\ncluster.id=abc\n", "version=1\nnode.id=3\n", "cluster.id=\nnode.id=3\n",
                          "cluster.id=a\nnode.id=x\n", "cluster.id=a\nnode.id=-1\n" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(p, "w");
        fputs(bad[i], f);
        fclose(f);
        char cid[32];
        int32_t node;
        ck_assert_msg(st_meta_read(dir, cid, sizeof cid, &node) == KP_ERR_CORRUPT, "accepted %s", bad[i]);
    }
    char big[64];
    memset(big, 'x', sizeof big);
    big[63] = 0;
    ck_assert_int_eq(st_meta_write(dir, big, 1), KP_OK);
    char small[8];
    int32_t node;
    ck_assert_int_eq(st_meta_read(dir, small, sizeof small, &node), KP_ERR_CORRUPT); /* does not fit: refused */
    tu_rmrf(dir);
    free(dir);
}
END_TEST

START_TEST(test_logdirs_pick_edges) {
    char *a = tu_tmpdir(), *b = tu_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/orders-0", a);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/not-a-partition-x", b);   /* ignored: no numeric suffix */
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/other-3", b);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/other-4", b);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    const char *dirs[3] = { "/nonexistent/skiff", a, b };
    ck_assert_int_eq(st_logdirs_pick(dirs, 3), 1);
    ck_assert_int_eq(st_logdirs_pick(dirs, 1), -1);
    const char *two[2] = { b, a };
    ck_assert_int_eq(st_logdirs_pick(two, 2), 1);
    tu_rmrf(a);
    tu_rmrf(b);
    free(a);
    free(b);
}
END_TEST

int main(void) {
    tu_log_capture();
    Suite *s = suite_create("st_parts");
    TCase *tc = tcase_create("parts");
    tcase_add_test(tc, test_offset_index_lookups);
    tcase_add_test(tc, test_time_index_lookups);
    tcase_add_test(tc, test_segment_header_every_cut);
    tcase_add_test(tc, test_meta_properties_malformed);
    tcase_add_test(tc, test_logdirs_pick_edges);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
