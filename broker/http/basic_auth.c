/* HTTP Basic credentials (RFC 7617) from an untrusted header. See
 * basic_auth.h for the contract. */
#include "broker/http/basic_auth.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static int b64val(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decodes base64 text s[0..n) (n a multiple of 4, padding only at the end)
 * into out[0..cap), canonical text only. Returns the decoded length, -1 if malformed, -2 if it
 * would not fit. */
static long b64_decode(const char *s, size_t n, unsigned char *out, size_t cap) {
    if (n == 0 || n % 4 != 0)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        size_t pad = 0;
        for (size_t k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=') {
                /* '=' only in the last group's last one or two places */
                if (i + 4 != n || k < 2)
                    return -1;
                pad++;
                v[k] = 0;
                continue;
            }
            if (pad)
                return -1; /* data after padding */
            v[k] = b64val(c);
            if (v[k] < 0)
                return -1;
        }
        /* the bits padding drops must be zero: one text per byte string
         * (RFC 4648 3.5 lets a decoder refuse others) */
        if ((pad == 2 && (v[1] & 15) != 0) || (pad == 1 && (v[2] & 3) != 0))
            return -1;
        uint32_t w = ((uint32_t)v[0] << 18) | ((uint32_t)v[1] << 12) | ((uint32_t)v[2] << 6) | (uint32_t)v[3];
        size_t emit = 3 - pad;
        if (o + emit > cap)
            return -2;
        out[o++] = (unsigned char)(w >> 16);
        if (emit > 1) out[o++] = (unsigned char)(w >> 8);
        if (emit > 2) out[o++] = (unsigned char)w;
    }
    return (long)o;
}

static bool is_space(char c) { return c == ' ' || c == '\t'; }

int bk_http_basic_parse(const char *hdr, size_t len, char *user, size_t user_cap, char *password,
                        size_t password_cap) {
    assert(user != NULL && password != NULL);
    assert(user_cap > BK_HTTP_BASIC_USER_MAX && password_cap > BK_HTTP_BASIC_PASSWORD_MAX);
    user[0] = '\0';
    password[0] = '\0';
    if (hdr == NULL)
        return KP_ERR_BAD_VALUE;
    static const char scheme[] = "basic";
    size_t sl = sizeof scheme - 1;
    if (len <= sl || !is_space(hdr[sl]))
        return KP_ERR_BAD_VALUE;
    for (size_t i = 0; i < sl; i++) {
        char c = hdr[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != scheme[i])
            return KP_ERR_BAD_VALUE;
    }
    size_t p = sl;
    while (p < len && is_space(hdr[p])) p++;
    size_t end = len;
    while (end > p && is_space(hdr[end - 1])) end--;
    if (end - p > BK_HTTP_BASIC_B64_MAX)
        return KP_ERR_TOO_LARGE;
    unsigned char dec[BK_HTTP_BASIC_USER_MAX + 1 + BK_HTTP_BASIC_PASSWORD_MAX + 2];
    long n = b64_decode(hdr + p, end - p, dec, sizeof dec);
    if (n == -2)
        return KP_ERR_TOO_LARGE;
    if (n < 0)
        return KP_ERR_BAD_VALUE;
    const unsigned char *colon = memchr(dec, ':', (size_t)n);
    if (colon == NULL || colon == dec)
        return KP_ERR_BAD_VALUE;
    for (long i = 0; i < n; i++)
        if (dec[i] < 0x20 || dec[i] == 0x7f)
            return KP_ERR_BAD_VALUE;
    size_t ul = (size_t)(colon - dec);
    size_t pl = (size_t)n - ul - 1;
    if (ul > BK_HTTP_BASIC_USER_MAX || pl > BK_HTTP_BASIC_PASSWORD_MAX)
        return KP_ERR_TOO_LARGE;
    memcpy(user, dec, ul);
    user[ul] = '\0';
    memcpy(password, colon + 1, pl);
    password[pl] = '\0';
    return KP_OK;
}
