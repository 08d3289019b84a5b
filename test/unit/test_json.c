/* Unit tests for broker/json.c: exact output for every escape, invalid UTF-8
 * replacement, nesting, numbers, misuse asserts, and documents parsed back by
 * an independent JSON parser (/usr/bin/python3's json module). */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "broker/http/json.h"

/* Returns the evbuffer's bytes as a malloc'd NUL-terminated string. */
static char *take(struct evbuffer *b) {
    size_t n = evbuffer_get_length(b);
    char *s = malloc(n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(evbuffer_remove(b, s, n), (int)n);
    s[n] = '\0';
    return s;
}

/* One string value rendered as a top-level document. */
static char *render_str(const char *s, size_t n) {
    struct evbuffer *b = evbuffer_new();
    bk_http_json_t j;
    bk_http_json_init(&j, b);
    bk_http_json_str_n(&j, s, n);
    ck_assert_int_eq(bk_http_json_finish(&j), KP_OK);
    char *out = take(b);
    evbuffer_free(b);
    return out;
}

START_TEST(test_every_control_byte_escaped) {
    for (int c = 0; c < 0x80; c++) {
        char in[1] = { (char)c };
        char want[16];
        const char *shortf = NULL;
        switch (c) {
        case 0x08: shortf = "\\b"; break;
        case 0x0c: shortf = "\\f"; break;
        case 0x0a: shortf = "\\n"; break;
        case 0x0d: shortf = "\\r"; break;
        case 0x09: shortf = "\\t"; break;
        case '"': shortf = "\\\""; break;
        case '\\': shortf = "\\\\"; break;
        }
        if (shortf)
            snprintf(want, sizeof want, "\"%s\"", shortf);
        else if (c < 0x20 || c == 0x7f)
            snprintf(want, sizeof want, "\"\\u%04x\"", c);
        else
            snprintf(want, sizeof want, "\"%c\"", c);
        char *got = render_str(in, 1);
        ck_assert_msg(strcmp(got, want) == 0, "byte 0x%02x: got %s want %s", c, got, want);
        free(got);
    }
}
END_TEST

START_TEST(test_escapes_inside_text) {
    const char in[] = "a\"b\\c\nd\x01" "e/f";
    char *got = render_str(in, sizeof in - 1);
    ck_assert_str_eq(got, "\"a\\\"b\\\\c\\nd\\u0001e/f\"");
    free(got);
    char nul[] = { 'x', '\0', 'y' };
    got = render_str(nul, 3);
    ck_assert_str_eq(got, "\"x\\u0000y\"");
    free(got);
}
END_TEST

START_TEST(test_utf8_valid_passes_invalid_replaced) {
    struct { const char *in; const char *want; } cases[] = {
        { "\xc3\xa9", "\"\xc3\xa9\"" },                 /* é */
        { "\xe2\x82\xac", "\"\xe2\x82\xac\"" },         /* € */
        { "\xf0\x9d\x84\x9e", "\"\xf0\x9d\x84\x9e\"" }, /* U+1D11E */
        { "\x80", "\"\xef\xbf\xbd\"" },                 /* stray continuation */
        { "a\xc3", "\"a\xef\xbf\xbd\"" },               /* truncated 2-byte */
        { "\xe2\x82", "\"\xef\xbf\xbd\"" },             /* truncated 3-byte: one U+FFFD */
        { "\xe2\x82x", "\"\xef\xbf\xbdx\"" },
        { "\xc0\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\"" }, /* overlong '/' */
        { "\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" }, /* surrogate */
        { "\xf4\x90\x80\x80",
          "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" },     /* > U+10FFFF */
        { "\xff", "\"\xef\xbf\xbd\"" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = render_str(cases[i].in, strlen(cases[i].in));
        ck_assert_msg(strcmp(got, cases[i].want) == 0, "case %zu: got %s", i, got);
        free(got);
    }
}
END_TEST

START_TEST(test_nesting_and_scalars) {
    struct evbuffer *b = evbuffer_new();
    bk_http_json_t j;
    bk_http_json_init(&j, b);
    bk_http_json_obj_begin(&j);
    bk_http_json_kv_str(&j, "name", "t");
    bk_http_json_kv_i64(&j, "min", INT64_MIN);
    bk_http_json_kv_u64(&j, "max", UINT64_MAX);
    bk_http_json_kv_f64(&j, "half", 0.5);
    bk_http_json_kv_f64(&j, "nan", NAN);
    bk_http_json_kv_f64(&j, "inf", -INFINITY);
    bk_http_json_kv_bool(&j, "t", true);
    bk_http_json_kv_null(&j, "n");
    bk_http_json_kv_str(&j, "nullstr", NULL);
    bk_http_json_key(&j, "a");
    bk_http_json_arr_begin(&j);
    bk_http_json_i64(&j, 1);
    bk_http_json_arr_begin(&j);
    bk_http_json_arr_end(&j);
    bk_http_json_obj_begin(&j);
    bk_http_json_obj_end(&j);
    bk_http_json_bool(&j, false);
    bk_http_json_arr_end(&j);
    bk_http_json_key_n(&j, "k\"ey", 4);
    bk_http_json_obj_begin(&j);
    bk_http_json_kv_i64(&j, "x", -7);
    bk_http_json_obj_end(&j);
    bk_http_json_obj_end(&j);
    ck_assert_int_eq(bk_http_json_finish(&j), KP_OK);
    char *got = take(b);
    ck_assert_str_eq(got,
        "{\"name\":\"t\",\"min\":-9223372036854775808,\"max\":18446744073709551615,"
        "\"half\":0.5,\"nan\":null,\"inf\":null,\"t\":true,\"n\":null,\"nullstr\":null,"
        "\"a\":[1,[],{},false],\"k\\\"ey\":{\"x\":-7}}");
    free(got);
    evbuffer_free(b);
}
END_TEST

START_TEST(test_max_depth_allowed) {
    struct evbuffer *b = evbuffer_new();
    bk_http_json_t j;
    bk_http_json_init(&j, b);
    for (int i = 0; i < BK_HTTP_JSON_DEPTH_MAX; i++)
        bk_http_json_arr_begin(&j);
    for (int i = 0; i < BK_HTTP_JSON_DEPTH_MAX; i++)
        bk_http_json_arr_end(&j);
    ck_assert_int_eq(bk_http_json_finish(&j), KP_OK);
    ck_assert_uint_eq(evbuffer_get_length(b), 2 * BK_HTTP_JSON_DEPTH_MAX);
    evbuffer_free(b);
}
END_TEST

/* Misuse: each must abort (assert). */
static bk_http_json_t mj;
static struct evbuffer *mb;
static void misuse_setup(void) { mb = evbuffer_new(); bk_http_json_init(&mj, mb); }

START_TEST(test_value_without_key_aborts) {
    misuse_setup();
    bk_http_json_obj_begin(&mj);
    bk_http_json_i64(&mj, 1);
}
END_TEST

START_TEST(test_key_in_array_aborts) {
    misuse_setup();
    bk_http_json_arr_begin(&mj);
    bk_http_json_key(&mj, "k");
}
END_TEST

START_TEST(test_mismatched_close_aborts) {
    misuse_setup();
    bk_http_json_obj_begin(&mj);
    bk_http_json_arr_end(&mj);
}
END_TEST

START_TEST(test_unbalanced_finish_aborts) {
    misuse_setup();
    bk_http_json_arr_begin(&mj);
    int rc = bk_http_json_finish(&mj);
    (void)rc;
}
END_TEST

START_TEST(test_close_after_key_aborts) {
    misuse_setup();
    bk_http_json_obj_begin(&mj);
    bk_http_json_key(&mj, "k");
    bk_http_json_obj_end(&mj);
}
END_TEST

START_TEST(test_two_top_values_abort) {
    misuse_setup();
    bk_http_json_i64(&mj, 1);
    bk_http_json_i64(&mj, 2);
}
END_TEST

START_TEST(test_too_deep_aborts) {
    misuse_setup();
    for (int i = 0; i <= BK_HTTP_JSON_DEPTH_MAX; i++)
        bk_http_json_arr_begin(&mj);
}
END_TEST

START_TEST(test_close_without_open_aborts) {
    misuse_setup();
    bk_http_json_obj_end(&mj);
}
END_TEST

/* Random byte strings (all 256 values, heavy on UTF-8 edge bytes) and nested
 * containers, checked by python's json module. The oracle for replacement is
 * python's bytes.decode('utf-8', 'replace'), which also substitutes maximal
 * subparts, so it is independent of our decoder. */
static void write_hex(FILE *f, const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", s[i]);
}

START_TEST(test_parsed_back_by_python) {
    if (access("/usr/bin/python3", X_OK) != 0) {
        fprintf(stderr, "skip: /usr/bin/python3 missing\n");
        return;
    }
    char dir[] = "/tmp/skiff-json-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char jpath[128], hpath[128];
    snprintf(jpath, sizeof jpath, "%s/doc.json", dir);
    snprintf(hpath, sizeof hpath, "%s/hex.txt", dir);
    FILE *hex = fopen(hpath, "w");
    ck_assert_ptr_nonnull(hex);
    struct evbuffer *b = evbuffer_new();
    bk_http_json_t j;
    bk_http_json_init(&j, b);
    bk_http_json_arr_begin(&j);
    static const unsigned char edge[] = { 0x00, 0x1f, 0x22, 0x5c, 0x7f, 0x80, 0xbf, 0xc0,
                                          0xc2, 0xdf, 0xe0, 0xa0, 0xed, 0x9f, 0xef, 0xf0,
                                          0x90, 0xf4, 0x8f, 0xf5, 0xff, 'a', '/' };
    srand(12345);
    for (int i = 0; i < 400; i++) {
        unsigned char s[24];
        size_t n = (size_t)(rand() % 24);
        for (size_t k = 0; k < n; k++)
            s[k] = rand() % 2 ? edge[rand() % sizeof edge] : (unsigned char)(rand() % 256);
        bk_http_json_obj_begin(&j);
        bk_http_json_key_n(&j, (const char *)s, n); /* keys are escaped the same way */
        bk_http_json_arr_begin(&j);
        bk_http_json_str_n(&j, (const char *)s, n);
        bk_http_json_i64(&j, (int64_t)i * -1000003);
        bk_http_json_arr_end(&j);
        bk_http_json_obj_end(&j);
        write_hex(hex, s, n);
        fprintf(hex, "\n");
    }
    bk_http_json_arr_end(&j);
    ck_assert_int_eq(bk_http_json_finish(&j), KP_OK);
    fclose(hex);
    FILE *f = fopen(jpath, "w");
    ck_assert_ptr_nonnull(f);
    char *doc = take(b);
    fputs(doc, f);
    fclose(f);
    free(doc);
    evbuffer_free(b);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import json,sys\n"
             "doc=json.load(open(sys.argv[1],encoding=\"utf-8\"))\n"
             "hx=open(sys.argv[2]).read().split(\"\\n\")[:-1]\n"
             "assert len(doc)==len(hx)\n"
             "for i,(o,h) in enumerate(zip(doc,hx)):\n"
             " want=bytes.fromhex(h).decode(\"utf-8\",\"replace\")\n"
             " assert list(o.keys())==[want],(i,o,want)\n"
             " assert o[want]==[want,i*-1000003],(i,o,want)\n"
             "' %s %s",
             jpath, hpath);
    int rc = system(cmd);
    ck_assert_int_eq(rc, 0);
    unlink(jpath);
    unlink(hpath);
    rmdir(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("writer");
    tcase_add_test(tc, test_every_control_byte_escaped);
    tcase_add_test(tc, test_escapes_inside_text);
    tcase_add_test(tc, test_utf8_valid_passes_invalid_replaced);
    tcase_add_test(tc, test_nesting_and_scalars);
    tcase_add_test(tc, test_max_depth_allowed);
    tcase_add_test(tc, test_parsed_back_by_python);
    tcase_add_test_raise_signal(tc, test_value_without_key_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_key_in_array_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_mismatched_close_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_unbalanced_finish_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_close_after_key_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_two_top_values_abort, SIGABRT);
    tcase_add_test_raise_signal(tc, test_too_deep_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_close_without_open_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
