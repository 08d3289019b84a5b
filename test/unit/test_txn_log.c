/* Unit tests for the __transaction_state record format (broker/txn_log.c):
 * known bytes assembled by hand from TransactionLogKey/Value.json and
 * NOTES.md §5.4, decoding of version 1, malformed input at every byte,
 * tombstones, and replay order. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/txn/txn.h"
#include "kp_msgs.h"
#include "protocol/kp_arena.h"
#include "protocol/kp_errors.h"

static void meta_with(bk_txn_meta_t *m, bk_txn_state_t st, const bk_txn_tp_t *tps, size_t n) {
    memset(m, 0, sizeof *m);
    m->state = st;
    m->producer_id = 5;
    m->prev_producer_id = -1;
    m->producer_epoch = 2;
    m->last_producer_epoch = -1;
    m->timeout_ms = 60000;
    m->last_update_ms = 100;
    m->start_ms = 50;
    m->parts = (bk_txn_tp_t *)tps;   /* read-only use: sorted by the caller */
    m->nparts = n;
}

static const bk_txn_tp_t TPS[3] = { { "t", 0 }, { "t", 1 }, { "u", 3 } };

static const uint8_t KEY_TX[] = { 0x00, 0x00, 0x00, 0x02, 't', 'x' };
static const uint8_t VALUE_ONGOING[] = {
    0x00, 0x00,                                         /* value version 0 */
    0, 0, 0, 0, 0, 0, 0, 5,                             /* ProducerId */
    0x00, 0x02,                                         /* ProducerEpoch */
    0x00, 0x00, 0xea, 0x60,                             /* TransactionTimeoutMs 60000 */
    0x01,                                               /* TransactionStatus Ongoing */
    0x00, 0x00, 0x00, 0x02,                             /* 2 topics */
    0x00, 0x01, 't', 0x00, 0x00, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 1,
    0x00, 0x01, 'u', 0x00, 0x00, 0x00, 0x01, 0, 0, 0, 3,
    0, 0, 0, 0, 0, 0, 0, 100,                           /* LastUpdateTimestamp */
    0, 0, 0, 0, 0, 0, 0, 50,                            /* StartTimestamp */
};

START_TEST(test_known_bytes) {
    bk_txn_meta_t m;
    meta_with(&m, BK_TXN_ONGOING, TPS, 3);
    bk_txn_rec_t rec;
    ck_assert_int_eq(bk_txn_rec_encode("tx", &m, &rec), KP_OK);
    ck_assert_uint_eq(rec.key_len, sizeof KEY_TX);
    ck_assert_mem_eq(rec.key, KEY_TX, sizeof KEY_TX);
    ck_assert_uint_eq(rec.value_len, sizeof VALUE_ONGOING);
    ck_assert_mem_eq(rec.value, VALUE_ONGOING, sizeof VALUE_ONGOING);
    bk_txn_rec_free(&rec);

    /* Empty writes a null partition array */
    meta_with(&m, BK_TXN_EMPTY, NULL, 0);
    m.start_ms = -1;
    ck_assert_int_eq(bk_txn_rec_encode("tx", &m, &rec), KP_OK);
    ck_assert_uint_eq(rec.value_len, 2 + 8 + 2 + 4 + 1 + 4 + 8 + 8);
    static const uint8_t null_arr[] = { 0x00, 0xff, 0xff, 0xff, 0xff };
    ck_assert_mem_eq(rec.value + 2 + 8 + 2 + 4, null_arr, sizeof null_arr);  /* status 0, then -1 */
    bk_txn_rec_free(&rec);

    /* CompleteCommit writes an empty (not null) array */
    meta_with(&m, BK_TXN_COMPLETE_COMMIT, NULL, 0);
    ck_assert_int_eq(bk_txn_rec_encode("tx", &m, &rec), KP_OK);
    static const uint8_t empty_arr[] = { 0x04, 0x00, 0x00, 0x00, 0x00 };
    ck_assert_mem_eq(rec.value + 2 + 8 + 2 + 4, empty_arr, sizeof empty_arr);
    bk_txn_rec_free(&rec);

    /* tombstone: key only */
    ck_assert_int_eq(bk_txn_rec_encode("tx", NULL, &rec), KP_OK);
    ck_assert_ptr_null(rec.value);
    ck_assert_mem_eq(rec.key, KEY_TX, sizeof KEY_TX);
    bk_txn_rec_free(&rec);
}
END_TEST

START_TEST(test_decode_known_bytes) {
    char *id;
    bk_txn_meta_t m;
    bool dead;
    ck_assert_int_eq(bk_txn_rec_decode(KEY_TX, sizeof KEY_TX, VALUE_ONGOING, sizeof VALUE_ONGOING, &id, &m, &dead),
                     KP_OK);
    ck_assert_str_eq(id, "tx");
    ck_assert(!dead);
    ck_assert_int_eq(m.state, BK_TXN_ONGOING);
    ck_assert_int_eq(m.producer_id, 5);
    ck_assert_int_eq(m.producer_epoch, 2);
    ck_assert_int_eq(m.timeout_ms, 60000);
    ck_assert_int_eq(m.last_update_ms, 100);
    ck_assert_int_eq(m.start_ms, 50);
    ck_assert_uint_eq(m.nparts, 3);
    for (size_t i = 0; i < 3; i++) {
        ck_assert_str_eq(m.parts[i].topic, TPS[i].topic);
        ck_assert_int_eq(m.parts[i].partition, TPS[i].partition);
    }
    bk_txn_meta_free(&m);
    free(id);
    ck_assert_int_eq(bk_txn_rec_decode(KEY_TX, sizeof KEY_TX, NULL, 0, &id, &m, &dead), KP_OK);
    ck_assert(dead);
    ck_assert_str_eq(id, "tx");
    free(id);
}
END_TEST

START_TEST(test_truncated_and_malformed) {
    char *id;
    bk_txn_meta_t m;
    bool dead;
    for (size_t n = 0; n < sizeof VALUE_ONGOING; n++)
        ck_assert_int_ne(bk_txn_rec_decode(KEY_TX, sizeof KEY_TX, VALUE_ONGOING, n, &id, &m, &dead), KP_OK);
    for (size_t n = 0; n < sizeof KEY_TX; n++)
        ck_assert_int_ne(bk_txn_rec_decode(KEY_TX, n, NULL, 0, &id, &m, &dead), KP_OK);
    ck_assert_int_ne(bk_txn_rec_decode(NULL, 0, NULL, 0, &id, &m, &dead), KP_OK);
    uint8_t v[sizeof VALUE_ONGOING + 1];
    memcpy(v, VALUE_ONGOING, sizeof VALUE_ONGOING);
    v[sizeof VALUE_ONGOING] = 0;   /* a trailing byte */
    ck_assert_int_eq(bk_txn_rec_decode(KEY_TX, sizeof KEY_TX, v, sizeof v, &id, &m, &dead), KP_ERR_BAD_LENGTH);
    static const size_t status_at = 2 + 8 + 2 + 4;
    const int8_t bad_status[] = { 8, -1, 127 };
    for (size_t i = 0; i < 3; i++) {
        memcpy(v, VALUE_ONGOING, sizeof VALUE_ONGOING);
        v[status_at] = (uint8_t)bad_status[i];
        ck_assert_int_eq(bk_txn_rec_decode(KEY_TX, sizeof KEY_TX, v, sizeof VALUE_ONGOING, &id, &m, &dead),
                         KP_ERR_BAD_VALUE);
    }
    static const size_t neg_at[] = { 10, 12, 2 + 8 + 2 + 4 + 1 + 4 + 3 + 4 + 8 + 3 + 4 + 4,
                                     2 + 8 + 2 + 4 + 1 + 4 + 3 + 4 + 8 + 3 + 4 + 4 + 8 };
    for (size_t i = 0; i < 4; i++) {   /* epoch, timeout, last update, start < -1 */
        memcpy(v, VALUE_ONGOING, sizeof VALUE_ONGOING);
        v[neg_at[i]] = 0x80;
        ck_assert_int_eq(bk_txn_rec_decode(KEY_TX, sizeof KEY_TX, v, sizeof VALUE_ONGOING, &id, &m, &dead),
                         KP_ERR_BAD_VALUE);
    }
    memcpy(v, VALUE_ONGOING, sizeof VALUE_ONGOING);
    v[1] = 2;   /* value version 2 */
    ck_assert_int_eq(bk_txn_rec_decode(KEY_TX, sizeof KEY_TX, v, sizeof VALUE_ONGOING, &id, &m, &dead),
                     KP_ERR_UNSUPPORTED);
    memcpy(v, VALUE_ONGOING, sizeof VALUE_ONGOING);
    v[2 + 8 + 2 + 4 + 1 + 4 + 3 + 4] = 0xff;   /* first partition id negative */
    ck_assert_int_eq(bk_txn_rec_decode(KEY_TX, sizeof KEY_TX, v, sizeof VALUE_ONGOING, &id, &m, &dead),
                     KP_ERR_BAD_VALUE);
    memcpy(v, VALUE_ONGOING, sizeof VALUE_ONGOING);
    v[2 + 8 + 2 + 4 + 1 + 4 + 2] = 0;   /* NUL in a topic name */
    ck_assert_int_eq(bk_txn_rec_decode(KEY_TX, sizeof KEY_TX, v, sizeof VALUE_ONGOING, &id, &m, &dead),
                     KP_ERR_BAD_VALUE);
    const uint8_t key_v1[] = { 0x00, 0x01, 0x00, 0x02, 't', 'x' };
    ck_assert_int_ne(bk_txn_rec_decode(key_v1, sizeof key_v1, NULL, 0, &id, &m, &dead), KP_OK);
    const uint8_t key_empty[] = { 0x00, 0x00, 0x00, 0x00 };
    ck_assert_int_ne(bk_txn_rec_decode(key_empty, sizeof key_empty, NULL, 0, &id, &m, &dead), KP_OK);
    /* every single-byte corruption either decodes or fails cleanly */
    for (size_t i = 0; i < sizeof VALUE_ONGOING; i++) {
        for (int b = 0; b < 256; b += 51) {
            memcpy(v, VALUE_ONGOING, sizeof VALUE_ONGOING);
            v[i] ^= (uint8_t)(b + 1);
            if (bk_txn_rec_decode(KEY_TX, sizeof KEY_TX, v, sizeof VALUE_ONGOING, &id, &m, &dead) == KP_OK) {
                ck_assert_uint_le(m.nparts, 3);
                bk_txn_meta_free(&m);
                free(id);
            }
        }
    }
    /* a failed load leaves the coordinator unchanged */
    bk_txn_coord_t c;
    bk_txn_config_t cfg;
    bk_txn_config_defaults(&cfg);
    bk_txn_coord_init(&c, &cfg, 0, (bk_txn_alloc_pid_fn)1, NULL);
    ck_assert_int_ne(bk_txn_load(&c, KEY_TX, sizeof KEY_TX, VALUE_ONGOING, 10), KP_OK);
    ck_assert_uint_eq(c.n, 0);
    bk_txn_coord_free(&c);
}
END_TEST

/* Version 1 (flexible, with tagged fields) as Kafka 3.x+ may write it:
 * produced by the protocol codec, read by ours. */
START_TEST(test_reads_version_1) {
    ck_assert_ptr_eq(kp_message_desc("TransactionLogKey"), &kp_transaction_log_key_desc);
    ck_assert_ptr_eq(kp_message_desc("TransactionLogValue"), &kp_transaction_log_value_desc);
    kp_transaction_log_value_t v;
    kp_transaction_log_value_init(&v);
    v.producer_id = 77;
    v.previous_producer_id = 76;
    v.next_producer_id = 78;
    v.producer_epoch = 3;
    v.transaction_timeout_ms = 1234;
    v.transaction_status = BK_TXN_PREPARE_COMMIT;
    kp_transaction_log_value_partitions_schema_t ps;
    kp_transaction_log_value_partitions_schema_init(&ps);
    int32_t ids[2] = { 4, 2 };   /* unsorted on purpose */
    ps.topic = kp_slice_cstr("z");
    ps.partition_ids.items = ids;
    ps.partition_ids.count = 2;
    v.transaction_partitions.items = &ps;
    v.transaction_partitions.count = 1;
    v.transaction_last_update_timestamp_ms = 9;
    v.transaction_start_timestamp_ms = 8;
    v.client_transaction_version = 1;
    uint8_t buf[256];
    kp_wr_t w;
    kp_wr_init(&w, buf, sizeof buf);
    ck_assert_int_eq(kp_wr_i16(&w, 1), KP_OK);
    ck_assert_int_eq(kp_transaction_log_value_encode(&w, 1, &v), KP_OK);
    char *id;
    bk_txn_meta_t m;
    bool dead;
    ck_assert_int_eq(bk_txn_rec_decode(KEY_TX, sizeof KEY_TX, buf, w.pos, &id, &m, &dead), KP_OK);
    ck_assert_int_eq(m.state, BK_TXN_PREPARE_COMMIT);
    ck_assert_int_eq(m.producer_id, 77);
    ck_assert_int_eq(m.prev_producer_id, 76);
    ck_assert_int_eq(m.producer_epoch, 3);
    ck_assert_uint_eq(m.nparts, 2);
    ck_assert_int_eq(m.parts[0].partition, 2);
    ck_assert_int_eq(m.parts[1].partition, 4);
    bk_txn_meta_free(&m);
    free(id);
}
END_TEST

START_TEST(test_random_round_trip) {
    uint64_t seed = 12345;
    char topics[4][8] = { "a", "bb", "orders", "z" };
    for (int iter = 0; iter < 500; iter++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        bk_txn_tp_t tps[16];
        size_t n = 0;
        bk_txn_state_t st = (bk_txn_state_t)((seed >> 33) % 8);
        if (st != BK_TXN_EMPTY) {
            /* sorted, unique: topics in order, partitions increasing */
            for (int t = 0; t < 4; t++)
                for (int p = 0; p < 4; p++)
                    if ((seed >> (t * 4 + p)) & 1) tps[n++] = (bk_txn_tp_t){ topics[t], p * 3 };
        }
        bk_txn_meta_t m;
        meta_with(&m, st, tps, n);
        m.producer_id = (int64_t)(seed >> 20);
        m.producer_epoch = (int16_t)((seed >> 48) % 32768);
        bk_txn_rec_t rec;
        ck_assert_int_eq(bk_txn_rec_encode("id-x", &m, &rec), KP_OK);
        char *id;
        bk_txn_meta_t d;
        bool dead;
        ck_assert_int_eq(bk_txn_rec_decode(rec.key, rec.key_len, rec.value, rec.value_len, &id, &d, &dead), KP_OK);
        ck_assert_str_eq(id, "id-x");
        ck_assert_int_eq(d.state, st);
        ck_assert_int_eq(d.producer_id, m.producer_id);
        ck_assert_int_eq(d.producer_epoch, m.producer_epoch);
        ck_assert_uint_eq(d.nparts, n);
        for (size_t i = 0; i < n; i++) {
            ck_assert_str_eq(d.parts[i].topic, tps[i].topic);
            ck_assert_int_eq(d.parts[i].partition, tps[i].partition);
        }
        bk_txn_meta_free(&d);
        free(id);
        bk_txn_rec_free(&rec);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("txn_log");
    TCase *tc = tcase_create("records");
    tcase_add_test(tc, test_known_bytes);
    tcase_add_test(tc, test_decode_known_bytes);
    tcase_add_test(tc, test_truncated_and_malformed);
    tcase_add_test(tc, test_reads_version_1);
    tcase_add_test(tc, test_random_round_trip);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
