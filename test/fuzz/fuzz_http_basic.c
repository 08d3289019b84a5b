/* libFuzzer target: the admin port's `Authorization: Basic` parser
 * (broker/http/basic_auth.c), fed any bytes as the header value.
 *
 * Properties: no crash, no read past the input (the input is copied into an
 * exactly-sized heap buffer so ASan sees any overrun); the status is one of
 * the three documented; on success the user is non-empty, both parts are
 * within their bounds, hold no control byte, and re-encoding "user:password"
 * gives back the base64 text of the input (the parse lost nothing); on
 * failure both outputs are empty strings. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/http/basic_auth.h"
#include "protocol/kp_base64.h"

static void no_controls(const char *s) {
    for (; *s; s++)
        assert((unsigned char)*s >= 0x20 && *s != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *hdr = malloc(size ? size : 1);
    if (hdr == NULL)
        return 0;
    memcpy(hdr, data, size);
    char user[BK_HTTP_BASIC_USER_MAX + 1], pw[BK_HTTP_BASIC_PASSWORD_MAX + 1];
    int rc = bk_http_basic_parse(hdr, size, user, sizeof user, pw, sizeof pw);
    assert(rc == KP_OK || rc == KP_ERR_BAD_VALUE || rc == KP_ERR_TOO_LARGE);
    if (rc != KP_OK) {
        assert(user[0] == '\0' && pw[0] == '\0');
        free(hdr);
        return 0;
    }
    size_t ul = strlen(user), pl = strlen(pw);
    assert(ul > 0 && ul <= BK_HTTP_BASIC_USER_MAX && pl <= BK_HTTP_BASIC_PASSWORD_MAX);
    assert(strchr(user, ':') == NULL);
    no_controls(user);
    no_controls(pw);
    unsigned char joined[BK_HTTP_BASIC_USER_MAX + 1 + BK_HTTP_BASIC_PASSWORD_MAX];
    memcpy(joined, user, ul);
    joined[ul] = ':';
    memcpy(joined + ul + 1, pw, pl);
    char enc[BK_HTTP_BASIC_B64_MAX + 8];
    size_t el = 0;
    int erc = kp_b64_encode(joined, ul + 1 + pl, enc, sizeof enc, &el);
    assert(erc == KP_OK);
    (void)erc;
    /* the base64 text sits after "basic" and spaces, before trailing spaces */
    size_t p = 5;
    while (p < size && (hdr[p] == ' ' || hdr[p] == '\t')) p++;
    assert(p + el <= size && memcmp(hdr + p, enc, el) == 0);
    for (size_t i = p + el; i < size; i++)
        assert(hdr[i] == ' ' || hdr[i] == '\t');
    free(hdr);
    return 0;
}
