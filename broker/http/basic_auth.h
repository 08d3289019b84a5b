/* broker/http/basic_auth.h — the `Authorization: Basic` header of the admin
 * port (RFC 7617), parsed from untrusted bytes.
 *
 * Pure: no allocation, no I/O; the header text is read through explicit
 * lengths only, so the fuzz target (test/fuzz/fuzz_http_basic.c) can feed
 * any bytes. */
#ifndef SKIFF_BK_HTTP_BASIC_AUTH_H
#define SKIFF_BK_HTTP_BASIC_AUTH_H

#include <stddef.h>

#include "protocol/kp_wire.h"

/* Bounds: a user name and a password (decoded bytes, without the NUL);
 * SASL user names and passwords beyond these are refused at creation
 * anyway, and they keep the decode buffer on the stack. */
#define BK_HTTP_BASIC_USER_MAX 250 /* "User:" + 250 fits a 255-byte principal */
#define BK_HTTP_BASIC_PASSWORD_MAX 255
/* the base64 text of user ":" password at those sizes, rounded up */
#define BK_HTTP_BASIC_B64_MAX (((BK_HTTP_BASIC_USER_MAX + 1 + BK_HTTP_BASIC_PASSWORD_MAX + 2) / 3) * 4)

/* Parses the value of an Authorization header, `hdr[0..len)`:
 * "Basic" (any case) followed by one or more spaces and the standard base64
 * (RFC 4648, '=' padding required when the length is not a multiple of 4,
 * the bits padding drops zero;
 * trailing spaces allowed) of "user:password". The user is the text before
 * the first ':' and must be non-empty; the password may be empty and may
 * contain ':'. Neither may contain a NUL or a control byte (< 0x20, 0x7f).
 * On KP_OK, `user` and `password` hold NUL-terminated copies
 * (user_cap > BK_HTTP_BASIC_USER_MAX, password_cap > BK_HTTP_BASIC_PASSWORD_MAX
 * are required). Returns KP_ERR_BAD_VALUE for another scheme or malformed
 * text, KP_ERR_TOO_LARGE when a part exceeds its bound; `user` and
 * `password` are then empty strings. Constant work per byte; never reads
 * hdr beyond len. */
KP_MUST_CHECK int bk_http_basic_parse(const char *hdr, size_t len, char *user, size_t user_cap,
                                      char *password, size_t password_cap);

#endif
