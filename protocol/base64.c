/* base64.c — RFC 4648 base64, standard and URL-safe; see kp_base64.h. */
#include <assert.h>
#include <stdbool.h>

#include "protocol/kp_base64.h"

static const char STD[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Value of c in the alphabet whose two last characters are c62, c63; -1 if none. */
static int val(unsigned char c, char c62, char c63) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == (unsigned char)c62) return 62;
    if (c == (unsigned char)c63) return 63;
    return -1;
}

static int encode(const char *tab, bool pad, const uint8_t *in, size_t len, char *out, size_t cap,
                  size_t *out_len) {
    assert(out_len && (in || len == 0) && (out || cap == 0));
    size_t need = pad ? KP_B64_LEN(len) : KP_B64URL_LEN(len);
    if (cap < need + 1) return KP_ERR_OVERFLOW;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < len) v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < len) v |= in[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        if (i + 1 < len) out[o++] = tab[(v >> 6) & 63];
        else if (pad) out[o++] = '=';
        if (i + 2 < len) out[o++] = tab[v & 63];
        else if (pad) out[o++] = '=';
    }
    assert(o == need);
    out[o] = '\0';
    *out_len = o;
    return KP_OK;
}

/* Decodes groups of four characters; the last group may be short by `pad`
 * characters (written as '=' in the standard form, absent in the URL form). */
static int decode(const char *tab, bool padded, const char *in, size_t len, uint8_t *out, size_t cap,
                  size_t *out_len) {
    assert(out_len && (in || len == 0));
    if (padded ? len % 4 != 0 : len % 4 == 1) return KP_ERR_BAD_VALUE;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        size_t group = len - i < 4 ? len - i : 4;   /* 2..4: a short group only unpadded, last */
        bool last = i + group == len;
        int v[4] = { 0, 0, 0, 0 };
        size_t pad = 0;
        for (size_t k = 0; k < group; k++) {
            unsigned char c = (unsigned char)in[i + k];
            if (padded && c == '=' && last && k >= 2) {
                pad++;
                continue;
            }
            if (pad) return KP_ERR_BAD_VALUE; /* data after '=' */
            v[k] = val(c, tab[62], tab[63]);
            if (v[k] < 0) return KP_ERR_BAD_VALUE;
        }
        pad += 4 - group;
        /* the bits the missing characters would complete must be zero */
        if ((pad == 2 && (v[1] & 15) != 0) || (pad == 1 && (v[2] & 3) != 0)) return KP_ERR_BAD_VALUE;
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        size_t n = 3 - pad;
        if (o > cap || cap - o < n) return KP_ERR_OVERFLOW;
        out[o++] = (uint8_t)(w >> 16);
        if (n > 1) out[o++] = (uint8_t)(w >> 8);
        if (n > 2) out[o++] = (uint8_t)w;
    }
    *out_len = o;
    return KP_OK;
}

int kp_b64_encode(const uint8_t *in, size_t len, char *out, size_t cap, size_t *out_len) {
    return encode(STD, true, in, len, out, cap, out_len);
}

int kp_b64_decode(const char *in, size_t len, uint8_t *out, size_t cap, size_t *out_len) {
    return decode(STD, true, in, len, out, cap, out_len);
}

int kp_b64url_encode(const uint8_t *in, size_t len, char *out, size_t cap, size_t *out_len) {
    return encode(URL, false, in, len, out, cap, out_len);
}

int kp_b64url_decode(const char *in, size_t len, uint8_t *out, size_t cap, size_t *out_len) {
    return decode(URL, false, in, len, out, cap, out_len);
}
