/* HTTP Basic credentials (RFC 7617) from an untrusted header. See
 * basic_auth.h for the contract. */
#include "broker/http/basic_auth.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "protocol/kp_base64.h"

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
    size_t n = 0;
    int rc = kp_b64_decode(hdr + p, end - p, dec, sizeof dec, &n);
    if (rc == KP_ERR_OVERFLOW)
        return KP_ERR_TOO_LARGE;
    if (rc != KP_OK || n == 0)
        return KP_ERR_BAD_VALUE;
    const unsigned char *colon = memchr(dec, ':', n);
    if (colon == NULL || colon == dec)
        return KP_ERR_BAD_VALUE;
    for (size_t i = 0; i < n; i++)
        if (dec[i] < 0x20 || dec[i] == 0x7f)
            return KP_ERR_BAD_VALUE;
    size_t ul = (size_t)(colon - dec);
    size_t pl = n - ul - 1;
    if (ul > BK_HTTP_BASIC_USER_MAX || pl > BK_HTTP_BASIC_PASSWORD_MAX)
        return KP_ERR_TOO_LARGE;
    memcpy(user, dec, ul);
    user[ul] = '\0';
    memcpy(password, colon + 1, pl);
    password[pl] = '\0';
    return KP_OK;
}
