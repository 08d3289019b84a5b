/* kpdump — decode one Kafka frame, print it as JSON, check it re-encodes.
 *
 *   kpdump --frame FILE                       request frame (with 4-byte size)
 *   kpdump --response API_KEY VERSION FILE    response frame (with 4-byte size)
 *   kpdump --default-request API_KEY VERSION  prints a request frame instead
 *
 * --default-request writes the schema's default request of (key, version)
 * (every field at its default, arrays empty), correlation id 7, client id
 * "kpdump", as one line of lowercase hex with its 4-byte size: raw-frame
 * tests use it to reach every API and version without a Python encoder.
 * Exit 1 for an unknown key or version.
 *
 * Prints one JSON object to stdout:
 *   request:  {"api_key":N,"api_version":N,"correlation_id":N,"client_id":"...","body":{...}}
 *   response: {"api_key":N,"api_version":N,"correlation_id":N,"body":{...}}
 * then re-encodes header + body and compares with the input bytes.
 * Exit 0: identical; 2: re-encoding differs (first differing offset on
 * stderr); 1: usage, I/O or decoding error (message on stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_msgs.h"
#include "protocol/kp_header.h"

#define KPDUMP_MAX_FRAME_BYTES ((size_t)128 << 20)

static int read_file(const char *path, uint8_t **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "kpdump: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 65536, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            if (cap >= KPDUMP_MAX_FRAME_BYTES) {
                fprintf(stderr, "kpdump: %s: larger than %zu bytes\n", path, KPDUMP_MAX_FRAME_BYTES);
                free(buf);
                fclose(f);
                return -1;
            }
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    bool err = ferror(f);
    fclose(f);
    if (!buf || err) {
        fprintf(stderr, "kpdump: %s: read failed\n", path);
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* Checks the size prefix; returns the frame body or NULL. */
static const uint8_t *frame_body(const uint8_t *buf, size_t len, size_t *body_len) {
    if (len < 4) {
        fprintf(stderr, "kpdump: file shorter than the 4-byte size\n");
        return NULL;
    }
    uint32_t size = kp_load_be32(buf);
    if (size != len - 4) {
        fprintf(stderr, "kpdump: size prefix %u but %zu bytes follow\n", size, len - 4);
        return NULL;
    }
    *body_len = len - 4;
    return buf + 4;
}

static int compare(const uint8_t *in, size_t in_len, const uint8_t *out, size_t out_len) {
    size_t n = in_len < out_len ? in_len : out_len;
    for (size_t i = 0; i < n; i++) {
        if (in[i] != out[i]) {
            fprintf(stderr, "kpdump: re-encoding differs at offset %zu (input 0x%02x, encoded 0x%02x)\n",
                    i, in[i], out[i]);
            return 2;
        }
    }
    if (in_len != out_len) {
        fprintf(stderr, "kpdump: re-encoding differs at offset %zu (input %zu bytes, encoded %zu)\n",
                n, in_len, out_len);
        return 2;
    }
    return 0;
}

static void print_json_str(kp_str_t s) {
    putchar('"');
    for (size_t i = 0; i < s.len; i++) {
        uint8_t c = s.p[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static int dump_request(const uint8_t *buf, size_t len, kp_arena_t *a) {
    size_t blen = 0;
    const uint8_t *body = frame_body(buf, len, &blen);
    if (!body) return 1;
    kp_request_header_t h;
    void *msg = NULL;
    int rc = kp_request_decode(body, blen, &h, &msg, a);
    if (rc) {
        fprintf(stderr, "kpdump: request decode failed: %s\n", kp_status_str(rc));
        return 1;
    }
    const kp_api_info_t *api = kp_api_info(h.api_key);
    char *json = NULL;
    if (kp_dump_json(api->request, h.api_version, msg, &json)) {
        fprintf(stderr, "kpdump: out of memory\n");
        return 1;
    }
    printf("{\"api_key\":%d,\"api_version\":%d,\"correlation_id\":%d,\"client_id\":",
           h.api_key, h.api_version, h.correlation_id);
    print_json_str(h.client_id);
    printf(",\"body\":%s}\n", json);
    free(json);
    /* the header API reads a null client id as ""; restore the null so that
     * the byte comparison checks the rest of the frame */
    if (h.client_id.len == 0 && kp_request_header_version(h.api_key, h.api_version) >= 1 &&
        blen >= 10 && body[8] == 0xff && body[9] == 0xff)
        h.client_id = kp_slice_null();
    uint8_t *out = malloc(len + 1);
    kp_wr_t w;
    kp_wr_init(&w, out, len + 1);
    rc = out ? kp_request_encode(&w, &h, msg) : KP_ERR_NOMEM;
    if (rc) {
        fprintf(stderr, "kpdump: re-encoding failed: %s\n", kp_status_str(rc));
        free(out);
        return 2;
    }
    rc = compare(buf, len, out, w.pos);
    free(out);
    return rc;
}

static int dump_response(int16_t key, int16_t ver, const uint8_t *buf, size_t len, kp_arena_t *a) {
    size_t blen = 0;
    const uint8_t *body = frame_body(buf, len, &blen);
    if (!body) return 1;
    int32_t corr = 0;
    void *msg = NULL;
    int rc = kp_response_decode(key, ver, body, blen, &corr, &msg, a);
    if (rc) {
        fprintf(stderr, "kpdump: response decode failed: %s\n", kp_status_str(rc));
        return 1;
    }
    char *json = NULL;
    if (kp_dump_json(kp_api_info(key)->response, ver, msg, &json)) {
        fprintf(stderr, "kpdump: out of memory\n");
        return 1;
    }
    printf("{\"api_key\":%d,\"api_version\":%d,\"correlation_id\":%d,\"body\":%s}\n", key, ver, corr,
           json);
    free(json);
    uint8_t *out = malloc(len + 1);
    kp_wr_t w;
    kp_wr_init(&w, out, len + 1);
    rc = out ? kp_response_encode(&w, key, ver, corr, msg, NULL) : KP_ERR_NOMEM;
    if (rc) {
        fprintf(stderr, "kpdump: re-encoding failed: %s\n", kp_status_str(rc));
        free(out);
        return 2;
    }
    rc = compare(buf, len, out, w.pos);
    free(out);
    return rc;
}

static int parse_i16(const char *s, int16_t *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !*s || *end || v < INT16_MIN || v > INT16_MAX) return -1;
    *out = (int16_t)v;
    return 0;
}

static int default_request(int16_t key, int16_t ver, kp_arena_t *a) {
    const kp_api_info_t *api = kp_api_info(key);
    if (!api || !kp_ver_in(ver, api->min_version, api->max_version)) {
        fprintf(stderr, "kpdump: no request for api key %d version %d\n", key, ver);
        return 1;
    }
    void *msg = kp_arena_alloc(a, api->request->size_bytes);
    if (!msg) return 1;
    memset(msg, 0, api->request->size_bytes);
    kp_msg_init(api->request, msg);
    kp_request_header_t h = { .api_key = key, .api_version = ver, .correlation_id = 7,
                              .client_id = kp_slice_cstr("kpdump") };
    uint8_t out[4096];   /* a default request is a header and empty fields */
    kp_wr_t w;
    kp_wr_init(&w, out, sizeof out);
    int rc = kp_request_encode(&w, &h, msg);
    if (rc) {
        fprintf(stderr, "kpdump: encoding failed: %s\n", kp_status_str(rc));
        return 1;
    }
    for (size_t i = 0; i < w.pos; i++) printf("%02x", out[i]);
    putchar('\n');
    return 0;
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int16_t key = 0, ver = 0;
    bool response = false;
    if (argc == 4 && strcmp(argv[1], "--default-request") == 0 && parse_i16(argv[2], &key) == 0 &&
        parse_i16(argv[3], &ver) == 0) {
        kp_arena_t a;
        kp_arena_init(&a, KP_ARENA_DEFAULT_CAP_BYTES);
        int rc = default_request(key, ver, &a);
        kp_arena_free(&a);
        return rc;
    }
    if (argc == 3 && strcmp(argv[1], "--frame") == 0) {
        path = argv[2];
    } else if (argc == 5 && strcmp(argv[1], "--response") == 0 && parse_i16(argv[2], &key) == 0 &&
               parse_i16(argv[3], &ver) == 0) {
        path = argv[4];
        response = true;
    } else {
        fprintf(stderr, "usage: kpdump --frame FILE | kpdump --response API_KEY VERSION FILE | "
                        "kpdump --default-request API_KEY VERSION\n");
        return 1;
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    if (read_file(path, &buf, &len)) return 1;
    kp_arena_t a;
    kp_arena_init(&a, KP_ARENA_DEFAULT_CAP_BYTES);
    int rc = response ? dump_response(key, ver, buf, len, &a) : dump_request(buf, len, &a);
    kp_arena_free(&a);
    free(buf);
    return rc;
}
