/* Unit tests for the pure parts of clients/: option parsing, murmur2
 * partitioner, retry policy, table and JSON output, percentiles, record
 * formatting, HTTP response splitting, error/exit-code mapping. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cl_args.h"
#include "clients/cl_consumer.h"
#include "clients/cl_ctl.h"
#include "clients/cl_err.h"
#include "clients/cl_group.h"
#include "clients/cl_http.h"
#include "clients/cl_out.h"
#include "clients/cl_partitioner.h"
#include "clients/cl_producer.h"
#include "clients/cl_retry.h"
#include "protocol/kp_errors.h"

/* ---- options ------------------------------------------------------------ */

static const cl_opt_t opts[] = {
    { "--brokers", "-b", "ADDR", false, "brokers" },
    { "--json", NULL, NULL, false, "json" },
    { "--config", "-c", "K=V", true, "config" },
    { "--count", "-n", "N", false, "count" },
};
#define NOPTS 4

static int parse(cl_args_t *a, cl_err_t *e, int argc, ...) {
    char *argv[32];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++) argv[i] = va_arg(ap, char *);
    va_end(ap);
    cl_err_clear(e);
    return cl_args_parse(argc, argv, opts, NOPTS, a, e);
}

START_TEST(test_args_forms) {
    cl_args_t a;
    cl_err_t e;
    ck_assert_int_eq(parse(&a, &e, 9, "create", "--brokers", "h:1", "-c", "a=1", "--config=b=2", "--json", "x", "-n"), CL_E_USAGE);
    ck_assert_ptr_nonnull(strstr(e.msg, "--count"));
    ck_assert_int_eq(parse(&a, &e, 9, "create", "--brokers", "h:1", "-c", "a=1", "--config=b=2", "--json", "x", "-n5"), CL_E_USAGE);
    ck_assert_int_eq(parse(&a, &e, 10, "create", "--brokers", "h:1", "-c", "a=1", "--config=b=2", "--json", "x", "-n", "-5"), CL_OK);
    ck_assert_int_eq(a.npos, 2);
    ck_assert_str_eq(a.pos[0], "create");
    ck_assert_str_eq(a.pos[1], "x");
    ck_assert_str_eq(cl_args_get(&a, "--brokers"), "h:1");
    ck_assert_int_eq(cl_args_count(&a, "--json"), 1);
    ck_assert_int_eq(cl_args_count(&a, "--config"), 2);
    ck_assert_str_eq(cl_args_at(&a, "--config", 0), "a=1");
    ck_assert_str_eq(cl_args_at(&a, "--config", 1), "b=2");
    ck_assert_ptr_null(cl_args_at(&a, "--config", 2));
    ck_assert_str_eq(cl_args_get(&a, "--count"), "-5"); /* negative numbers are values */
    ck_assert_ptr_null(cl_args_get(&a, "--nope"));
}
END_TEST

START_TEST(test_args_errors) {
    cl_args_t a;
    cl_err_t e;
    ck_assert_int_eq(parse(&a, &e, 2, "x", "--bogus"), CL_E_USAGE);
    ck_assert_ptr_nonnull(strstr(e.msg, "--bogus"));
    ck_assert_int_eq(parse(&a, &e, 1, "--json=1"), CL_E_USAGE);  /* a flag takes no value */
    ck_assert_int_eq(parse(&a, &e, 1, "--brokers"), CL_E_USAGE); /* missing value */
    ck_assert_ptr_nonnull(strstr(e.msg, "needs a value"));
    ck_assert_int_eq(parse(&a, &e, 3, "--", "--json", "-"), CL_OK); /* after "--" all positional */
    ck_assert_int_eq(a.npos, 2);
    ck_assert_int_eq(cl_args_count(&a, "--json"), 0);
    /* the last value of a non-repeatable option wins */
    ck_assert_int_eq(parse(&a, &e, 4, "-b", "a:1", "--brokers", "b:2"), CL_OK);
    ck_assert_str_eq(cl_args_get(&a, "--brokers"), "b:2");
    /* bounds: positionals and repeats */
    char *many[CL_ARGS_POS_MAX + 1];
    for (int i = 0; i <= CL_ARGS_POS_MAX; i++) many[i] = "p";
    ck_assert_int_eq(cl_args_parse(CL_ARGS_POS_MAX + 1, many, opts, NOPTS, &a, &e), CL_E_USAGE);
    char *reps[2 * (CL_ARGS_REPEAT_MAX + 1)];
    for (int i = 0; i <= CL_ARGS_REPEAT_MAX; i++) { reps[2 * i] = "-c"; reps[2 * i + 1] = "k=v"; }
    ck_assert_int_eq(cl_args_parse(2 * (CL_ARGS_REPEAT_MAX + 1), reps, opts, NOPTS, &a, &e), CL_E_USAGE);
    ck_assert_int_eq(cl_args_parse(2 * CL_ARGS_REPEAT_MAX, reps, opts, NOPTS, &a, &e), CL_OK);
}
END_TEST

START_TEST(test_parse_numbers) {
    cl_err_t e;
    int64_t v = 0;
    ck_assert_int_eq(cl_parse_i64("42", 0, 100, &v, "n", &e), CL_OK);
    ck_assert_int_eq(v, 42);
    ck_assert_int_eq(cl_parse_i64("101", 0, 100, &v, "n", &e), CL_E_USAGE);
    ck_assert_int_eq(cl_parse_i64("4x", 0, 100, &v, "n", &e), CL_E_USAGE);
    ck_assert_int_eq(cl_parse_i64("", 0, 100, &v, "n", &e), CL_E_USAGE);
    ck_assert_int_eq(cl_parse_i64("99999999999999999999", 0, INT64_MAX, &v, "n", &e), CL_E_USAGE);
    ck_assert_int_eq(cl_parse_size("64k", &v, "s", &e), CL_OK);
    ck_assert_int_eq(v, 65536);
    ck_assert_int_eq(cl_parse_size("2M", &v, "s", &e), CL_OK);
    ck_assert_int_eq(v, 2097152);
    ck_assert_int_eq(cl_parse_size("k", &v, "s", &e), CL_E_USAGE);
    ck_assert_int_eq(cl_parse_size("9223372036854775807g", &v, "s", &e), CL_E_USAGE);
    int16_t acks = 5;
    ck_assert_int_eq(cl_parse_acks("all", &acks, &e), CL_OK);
    ck_assert_int_eq(acks, -1);
    ck_assert_int_eq(cl_parse_acks("1", &acks, &e), CL_OK);
    ck_assert_int_eq(acks, 1);
    ck_assert_int_eq(cl_parse_acks("2", &acks, &e), CL_E_USAGE);
    ck_assert_int_eq(cl_codec_parse("zstd"), KP_CODEC_ZSTD);
    ck_assert_int_eq(cl_codec_parse("snappy"), KP_CODEC_SNAPPY);
    ck_assert_int_eq(cl_codec_parse("brotli"), -1);
}
END_TEST

START_TEST(test_hostport) {
    char host[64];
    int port = 0;
    cl_err_t e;
    ck_assert_int_eq(cl_parse_hostport("127.0.0.1:9092", host, sizeof host, &port, &e), CL_OK);
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_int_eq(port, 9092);
    ck_assert_int_eq(cl_parse_hostport("[::1]:19092", host, sizeof host, &port, &e), CL_OK);
    ck_assert_str_eq(host, "::1");
    ck_assert_int_eq(port, 19092);
    const char *bad[] = { "nohost", ":9092", "h:", "h:0", "h:65536", "h:12x", "[::1]9092", "[::1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(cl_parse_hostport(bad[i], host, sizeof host, &port, &e) == CL_E_USAGE, "%s accepted", bad[i]);
    char tiny[4];
    ck_assert_int_eq(cl_parse_hostport("longhost:1", tiny, sizeof tiny, &port, &e), CL_E_USAGE);
}
END_TEST

/* ---- partitioner ---------------------------------------------------------- */

/* Known answers from kafka-python's murmur2 (an independent
 * implementation of the Java client's), as unsigned 32-bit values. */
START_TEST(test_murmur2_known_answers) {
    static const struct { const char *key; uint32_t h; } cases[] = {
        { "21", 3321034988u }, { "foobar", 3504634814u }, { "a-little-bit-long-string", 3308985760u },
        { "a-little-bit-longer-string", 2808662467u },
        { "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", 4236069325u },
        { "abc", 479470107u }, { "", 275646681u }, { "k", 2727470560u },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg((uint32_t)cl_murmur2(cases[i].key, strlen(cases[i].key)) == cases[i].h, "key '%s'", cases[i].key);
}
END_TEST

START_TEST(test_partition_for_key) {
    /* toPositive(h) % n with h = 3321034988 ("21"): 3321034988 & 0x7fffffff = 1173551340 */
    ck_assert_int_eq(cl_partition_for_key("21", 2, 1), 0);
    ck_assert_int_eq(cl_partition_for_key("21", 2, 7), 1173551340 % 7);
    ck_assert_int_eq(cl_partition_for_key("21", 2, 1000), 1173551340 % 1000);
    /* "abc": 479470107 has no sign bit */
    ck_assert_int_eq(cl_partition_for_key("abc", 3, 6), 479470107 % 6);
    for (int32_t n = 1; n < 50; n++) {
        int32_t p = cl_partition_for_key("some-key", 8, n);
        ck_assert(p >= 0 && p < n);
    }
}
END_TEST

/* Kafka's RangeAssignor rule: n/m each, the first n%m members one more. */
START_TEST(test_range_assignor) {
    static const struct { int32_t m, n, idx, first, count; } cases[] = {
        { 2, 3, 0, 0, 2 }, { 2, 3, 1, 2, 1 },
        { 3, 7, 0, 0, 3 }, { 3, 7, 1, 3, 2 }, { 3, 7, 2, 5, 2 },
        { 4, 2, 0, 0, 1 }, { 4, 2, 1, 1, 1 }, { 4, 2, 2, 2, 0 }, { 4, 2, 3, 2, 0 },
        { 1, 5, 0, 0, 5 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t first = -1, count = -1;
        cl_range_assign(cases[i].m, cases[i].n, cases[i].idx, &first, &count);
        ck_assert_msg(first == cases[i].first && count == cases[i].count, "case %zu: %d+%d", i, first, count);
    }
    /* every partition exactly once, for many shapes */
    for (int32_t m = 1; m < 9; m++)
        for (int32_t n = 0; n < 20; n++) {
            int32_t next = 0;
            for (int32_t i = 0; i < m; i++) {
                int32_t first, count;
                cl_range_assign(m, n, i, &first, &count);
                ck_assert_int_eq(first, next);
                next += count;
            }
            ck_assert_int_eq(next, n);
        }
}
END_TEST

/* ---- retry policy --------------------------------------------------------- */

START_TEST(test_retry_policy) {
    cl_retry_t p = { 5, 100, 1000 };
    ck_assert_int_eq(cl_retry_backoff_ms(&p, 1), 0);
    ck_assert_int_eq(cl_retry_backoff_ms(&p, 2), 100);
    ck_assert_int_eq(cl_retry_backoff_ms(&p, 3), 200);
    ck_assert_int_eq(cl_retry_backoff_ms(&p, 4), 400);
    ck_assert_int_eq(cl_retry_backoff_ms(&p, 5), 800);
    ck_assert_int_eq(cl_retry_backoff_ms(&p, 6), 1000);
    ck_assert_int_eq(cl_retry_backoff_ms(&p, 1000000), 1000);
    /* retriable Kafka errors and network failures, up to attempts_max tries */
    ck_assert(cl_retry_again(&p, 1, CL_E_KAFKA, KP_ERROR_NOT_LEADER_OR_FOLLOWER));
    ck_assert(cl_retry_again(&p, 4, CL_E_KAFKA, KP_ERROR_LEADER_NOT_AVAILABLE));
    ck_assert(!cl_retry_again(&p, 5, CL_E_KAFKA, KP_ERROR_LEADER_NOT_AVAILABLE));
    ck_assert(cl_retry_again(&p, 1, CL_E_CONNECT, 0));
    ck_assert(cl_retry_again(&p, 1, CL_E_NETWORK, 0));
    ck_assert(cl_retry_again(&p, 1, CL_E_TIMEOUT, 0));
    ck_assert(!cl_retry_again(&p, 1, CL_E_KAFKA, KP_ERROR_TOPIC_ALREADY_EXISTS));
    ck_assert(!cl_retry_again(&p, 1, CL_E_KAFKA, KP_ERROR_INVALID_PARTITIONS));
    ck_assert(!cl_retry_again(&p, 1, CL_E_KAFKA, 9999)); /* unknown code */
    ck_assert(!cl_retry_again(&p, 1, CL_E_USAGE, 0));
    ck_assert(!cl_retry_again(&p, 1, CL_E_PROTO, 0));
    cl_retry_t one = { 1, 100, 1000 };
    ck_assert(!cl_retry_again(&one, 1, CL_E_CONNECT, 0));
}
END_TEST

START_TEST(test_errors_and_exit_codes) {
    cl_err_t e;
    ck_assert_int_eq(cl_err_kafka(&e, KP_ERROR_TOPIC_ALREADY_EXISTS, "topic '%s'", "t"), CL_E_KAFKA);
    ck_assert_str_eq(e.msg, "TOPIC_ALREADY_EXISTS: topic 't'");
    ck_assert_int_eq(e.kafka_code, 36);
    ck_assert_int_eq(cl_exit_code(CL_OK), 0);
    ck_assert_int_eq(cl_exit_code(CL_E_KAFKA), 1);
    ck_assert_int_eq(cl_exit_code(CL_E_PROTO), 1);
    ck_assert_int_eq(cl_exit_code(CL_E_NETWORK), 1);
    ck_assert_int_eq(cl_exit_code(CL_E_TIMEOUT), 1);
    ck_assert_int_eq(cl_exit_code(CL_E_USAGE), 2);
    ck_assert_int_eq(cl_exit_code(CL_E_CONNECT), 3);
    char big[2 * CL_ERR_MSG_BYTES];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cl_err_set(&e, CL_E_IO, "%s", big); /* truncated, terminated */
    ck_assert_uint_eq(strlen(e.msg), CL_ERR_MSG_BYTES - 1);
}
END_TEST

/* ---- output ------------------------------------------------------------- */

static void capture_begin(FILE **f, char **buf, size_t *len) {
    *buf = NULL;
    *f = open_memstream(buf, len);
    ck_assert_ptr_nonnull(*f);
}

START_TEST(test_json_writer) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cl_json_t j;
    cl_json_init(&j, f);
    cl_json_obj(&j);
    cl_json_key(&j, "s"); cl_json_str(&j, "a\"b\\c\n\x01\x7f\xc3\xa9");
    cl_json_key(&j, "n"); cl_json_null(&j);
    cl_json_key(&j, "i"); cl_json_int(&j, -9007199254740993LL);
    cl_json_key(&j, "arr"); cl_json_arr(&j);
    cl_json_int(&j, 1); cl_json_bool(&j, true); cl_json_str(&j, NULL); cl_json_obj(&j); cl_json_obj_end(&j);
    cl_json_arr_end(&j);
    cl_json_key(&j, "e"); cl_json_arr(&j); cl_json_arr_end(&j);
    cl_json_key(&j, "raw"); cl_json_strn(&j, "x\0y", 3);
    cl_json_obj_end(&j);
    cl_json_end(&j);
    fclose(f);
    ck_assert_str_eq(buf, "{\"s\":\"a\\\"b\\\\c\\n\\u0001\\u007f\xc3\xa9\",\"n\":null,\"i\":-9007199254740993,"
                          "\"arr\":[1,true,null,{}],\"e\":[],\"raw\":\"x\\u0000y\"}\n");
    free(buf);
}
END_TEST

START_TEST(test_table) {
    FILE *f;
    size_t len;
    char *buf;
    capture_begin(&f, &buf, &len);
    static const char *hdr[] = { "id", "host", "rack" };
    cl_table_t t;
    cl_table_init(&t, 3, hdr);
    const char *r1[] = { "1", "127.0.0.1", NULL };
    const char *r2[] = { "10", "h", "r1" };
    cl_table_add(&t, r1);
    cl_table_add(&t, r2);
    cl_table_print(&t, f);
    cl_table_free(&t);
    fclose(f);
    ck_assert_str_eq(buf, "ID  HOST       RACK\n"
                          "1   127.0.0.1  -\n"
                          "10  h          r1\n");
    free(buf);
}
END_TEST

START_TEST(test_percentile) {
    cl_sample_t s[100];
    for (int i = 0; i < 100; i++) s[i] = (cl_sample_t){ (double)(100 - i), 1 }; /* 100..1, unsorted */
    ck_assert(cl_ctl_percentile(s, 100, 50) == 50.0);
    ck_assert(cl_ctl_percentile(s, 100, 99) == 99.0);
    ck_assert(cl_ctl_percentile(s, 100, 99.9) == 100.0);
    ck_assert(cl_ctl_percentile(s, 100, 100) == 100.0);
    ck_assert(cl_ctl_percentile(s, 0, 50) == 0.0);
    /* weights: one slow batch of 1 record vs a fast batch of 99 */
    cl_sample_t w[2] = { { 9.0, 1 }, { 1.0, 99 } };
    ck_assert(cl_ctl_percentile(w, 2, 50) == 1.0);
    ck_assert(cl_ctl_percentile(w, 2, 99) == 1.0);
    ck_assert(cl_ctl_percentile(w, 2, 99.9) == 9.0);
}
END_TEST

START_TEST(test_format_msg) {
    /* headers in record wire form: varint key len, key, varint value len, value */
    static const uint8_t hdrs[] = { 0x04, 'h', '1', 0x04, 'v', '1', 0x04, 'h', '2', 0x01 };
    cl_msg_t m = { "orders", 3, 42, 1700000000000LL, { (const uint8_t *)"k", 1 }, { (const uint8_t *)"val", 3 }, 2,
                   { hdrs, sizeof hdrs } };
    FILE *f;
    size_t len;
    char *buf;
    capture_begin(&f, &buf, &len);
    cl_ctl_format_msg(f, "%t/%p@%o %T %k=%v K%K V%V [%h] 100%% %x\\t\\n", &m);
    m.key = kp_slice_null();
    m.value = kp_slice_null();
    cl_ctl_format_msg(f, "%k|%v|%K|%V", &m);
    fclose(f);
    ck_assert_str_eq(buf, "orders/3@42 1700000000000 k=val K1 V3 [h1=v1,h2=] 100% %x\t\n||-1|-1");
    free(buf);
}
END_TEST

START_TEST(test_http_parse) {
    cl_err_t e;
    int status = 0;
    size_t off = 0;
    const char *ok = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":1}";
    ck_assert_int_eq(cl_http_parse_response(ok, strlen(ok), &status, &off, &e), CL_OK);
    ck_assert_int_eq(status, 200);
    ck_assert_str_eq(ok + off, "{\"a\":1}");
    const char *nf = "HTTP/1.1 404 Not Found\r\n\r\n";
    ck_assert_int_eq(cl_http_parse_response(nf, strlen(nf), &status, &off, &e), CL_OK);
    ck_assert_int_eq(status, 404);
    ck_assert_uint_eq(off, strlen(nf));
    /* every truncation of a valid response before the blank line fails */
    size_t head = strstr(ok, "\r\n\r\n") - ok + 4;
    for (size_t n = 0; n < head; n++)
        ck_assert_msg(cl_http_parse_response(ok, n, &status, &off, &e) == CL_E_PROTO, "prefix %zu accepted", n);
    const char *bad[] = { "HTTP/1.0 2x0 OK\r\n\r\n", "HTTX/1.0 200 OK\r\n\r\n", "garbage\r\n\r\n" };
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(cl_http_parse_response(bad[i], strlen(bad[i]), &status, &off, &e), CL_E_PROTO);
}
END_TEST

/* ---- skiffctl usage paths (no network) ------------------------------------ */

static int run_ctl(char **out, char **err, int argc, char **argv) {
    size_t ol = 0, el = 0;
    cl_ctl_t ctx = { .brokers = "127.0.0.1:1", .admin = "127.0.0.1:1", .timeout_ms = 1000 };
    ctx.out = open_memstream(out, &ol);
    ctx.err = open_memstream(err, &el);
    ctx.in = stdin;
    int rc = cl_ctl_main(&ctx, argc, argv);
    fclose(ctx.out);
    fclose(ctx.err);
    return rc;
}

START_TEST(test_ctl_usage_exit_codes) {
    char *out = NULL, *err = NULL;
    struct { int argc; char *argv[6]; int want; const char *err_has; } cases[] = {
        { 0, { NULL }, 2, "usage" },
        { 1, { "nope" }, 2, "unknown command 'nope'" },
        { 1, { "topic" }, 2, "subcommand" },
        { 2, { "topic", "frob" }, 2, "unknown topic subcommand" },
        { 2, { "topic", "create" }, 2, "one topic name" },
        { 4, { "topic", "create", "t", "--bogus" }, 2, "--bogus" },
        { 5, { "topic", "create", "t", "-p", "zero" }, 2, "--partitions" },
        { 5, { "topic", "create", "t", "-r", "0" }, 2, "--replicas" },
        { 3, { "topic", "add-partitions", "t" }, 2, "--count" },
        { 2, { "cluster", "stats" }, 2, "info, quorum" },
        { 1, { "produce" }, 2, "one topic name" },
        { 4, { "produce", "t", "--acks", "2" }, 2, "--acks" },
        { 4, { "produce", "t", "-z", "brotli" }, 2, "codec" },
        { 4, { "consume", "t", "--count", "0" }, 2, "--count" },
        { 6, { "consume", "t", "--offset", "1", "--timestamp", "2" }, 2, "exclude" },
        { 2, { "group", "reset-offsets" }, 2, "one group id" },
        { 3, { "group", "reset-offsets", "g" }, 2, "--topic" },
        { 2, { "perf", "produce" }, 2, "produce|consume" },
        { 4, { "broker", "list", "--timeout-ms", "0" }, 2, "--timeout-ms" },
        { 4, { "topic", "list", "--command-config", "/nonexistent/client.properties" }, 2,
          "/nonexistent/client.properties: No such file" },
        { 1, { "user" }, 2, "add, delete, list" },
        { 2, { "user", "add" }, 2, "one user name" },
        { 3, { "user", "add", "u" }, 2, "--mechanism" },
        { 5, { "user", "add", "u", "-m", "PLAIN" }, 2, "SCRAM-SHA-256 or SCRAM-SHA-512" },
        { 5, { "user", "add", "u", "-m", "SCRAM-SHA-256" }, 2, "--password" },
        { 5, { "user", "delete", "u", "--password", "x" }, 2, "takes no --password" },
        { 3, { "user", "list", "u" }, 2, "takes no name" },
        { 5, { "user", "delete", "u", "-m", "scram-sha-512" }, 3, "127.0.0.1:1" },
        { 4, { "consume", "t", "--offset", "-3" }, 2, "--offset" },
        { 4, { "consume", "t", "--timestamp", "x" }, 2, "--timestamp" },
        { 3, { "consume", "t", "--join" }, 2, "--join needs --group" },
        { 5, { "group", "reset-offsets", "g", "--topic", "t" }, 2, "exactly one" },
        { 6, { "group", "reset-offsets", "g", "-t", "t", "--to-earliest" }, 3, "127.0.0.1:1" },
        { 6, { "group", "reset-offsets", "g", "-t", "t", "--shift-by" }, 2, "needs a value" },
        { 4, { "perf", "produce", "t", "--size" }, 2, "needs a value" },
        { 5, { "perf", "produce", "t", "--size", "-1" }, 2, "--size" },
        { 5, { "perf", "produce", "t", "-z", "brotli" }, 2, "codec" },
        { 5, { "perf", "consume", "t", "--count", "0" }, 2, "--count" },
        { 1, { "txn" }, 2, "subcommand" },
        { 2, { "txn", "abort" }, 2, "unknown txn subcommand" },
        { 2, { "txn", "describe" }, 2, "one transactional id" },
        { 3, { "txn", "list", "x" }, 2, "takes no name" },
        { 5, { "txn", "describe", "x", "--state", "Ongoing" }, 2, "go with txn list" },
        { 4, { "txn", "list", "--producer-id", "-1" }, 2, "--producer-id" },
        { 4, { "txn", "list", "--producer-id", "x" }, 2, "--producer-id" },
        { 2, { "txn", "list" }, 3, "127.0.0.1:1" },
        { 3, { "txn", "describe", "x" }, 3, "127.0.0.1:1" },
        { 1, { "producers" }, 2, "one topic name" },
        { 3, { "producers", "a", "b" }, 2, "one topic name" },
        { 4, { "producers", "t", "-p", "-1" }, 2, "--partition" },
        { 2, { "producers", "t" }, 3, "127.0.0.1:1" },
        { 1, { "quota" }, 2, "set, list" },
        { 2, { "quota", "frob" }, 2, "unknown quota subcommand" },
        { 2, { "quota", "set" }, 2, "--user U, --client-id C or --default" },
        { 4, { "quota", "set", "--user", "u" }, 2, "at least one rate" },
        { 6, { "quota", "set", "--user", "u", "--producer-byte-rate", "1.5" }, 2, "whole number" },
        { 6, { "quota", "set", "--user", "u", "--consumer-byte-rate", "-1" }, 2, "--consumer-byte-rate" },
        { 6, { "quota", "set", "--default", "--user", "u", "--producer-byte-rate" }, 2, "needs a value" },
        { 5, { "quota", "set", "--default", "--request-percentage", "x" }, 2, "--request-percentage" },
        { 4, { "quota", "list", "--user", "u" }, 2, "takes no entity" },
        { 4, { "quota", "list", "--producer-byte-rate", "5" }, 2, "takes no --producer-byte-rate" },
        { 6, { "quota", "set", "--client-id", "c", "--request-percentage", "2.5" }, 3, "127.0.0.1:1" },
        { 2, { "quota", "list" }, 3, "127.0.0.1:1" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = run_ctl(&out, &err, cases[i].argc, cases[i].argv);
        ck_assert_msg(rc == cases[i].want, "case %zu: exit %d, want %d (%s)", i, rc, cases[i].want, err);
        if (cases[i].err_has) ck_assert_msg(strstr(err, cases[i].err_has), "case %zu: stderr '%s'", i, err);
        free(out);
        free(err);
    }
}
END_TEST

START_TEST(test_ctl_help_everywhere) {
    char *out = NULL, *err = NULL;
    const char *fams[] = { "cluster", "broker", "topic", "produce", "consume", "group", "perf", "txn", "producers", "user", "quota" };
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
        char *argv[] = { (char *)fams[i], "--help" };
        ck_assert_int_eq(run_ctl(&out, &err, 2, argv), 0);
        ck_assert_msg(strstr(out, "usage: skiffctl") && strstr(out, "--brokers") && strstr(out, "--command-config") &&
                          strstr(out, "exit codes"),
                      "%s", out);
        ck_assert_str_eq(err, "");
        free(out);
        free(err);
    }
    char *argv[] = { "--help" };
    ck_assert_int_eq(run_ctl(&out, &err, 1, argv), 0);
    ck_assert_ptr_nonnull(strstr(out, "3 cannot connect"));
    free(out);
    free(err);
}
END_TEST

/* Nothing listens on port 1 of 127.0.0.1: exit 3 with the address named. */
START_TEST(test_ctl_cannot_connect) {
    char *out = NULL, *err = NULL;
    char *argv[] = { "topic", "list" };
    ck_assert_int_eq(run_ctl(&out, &err, 2, argv), 3);
    ck_assert_msg(strstr(err, "127.0.0.1:1"), "%s", err);
    free(out);
    free(err);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cl_pure");
    TCase *tc = tcase_create("all");
    tcase_add_test(tc, test_args_forms);
    tcase_add_test(tc, test_args_errors);
    tcase_add_test(tc, test_parse_numbers);
    tcase_add_test(tc, test_hostport);
    tcase_add_test(tc, test_murmur2_known_answers);
    tcase_add_test(tc, test_partition_for_key);
    tcase_add_test(tc, test_range_assignor);
    tcase_add_test(tc, test_retry_policy);
    tcase_add_test(tc, test_errors_and_exit_codes);
    tcase_add_test(tc, test_json_writer);
    tcase_add_test(tc, test_table);
    tcase_add_test(tc, test_percentile);
    tcase_add_test(tc, test_format_msg);
    tcase_add_test(tc, test_http_parse);
    tcase_add_test(tc, test_ctl_usage_exit_codes);
    tcase_add_test(tc, test_ctl_help_everywhere);
    tcase_add_test(tc, test_ctl_cannot_connect);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
