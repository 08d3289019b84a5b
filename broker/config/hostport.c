/* host:port parsing; see hostport.h. */
#include "broker/config/hostport.h"

#include <string.h>

static int fail(const char **why, const char *msg) {
    if (why)
        *why = msg;
    return KP_ERR_BAD_VALUE;
}

static int parse_port(const char *p, size_t n, uint16_t *port, const char **why) {
    uint32_t v = 0;
    if (n == 0)
        return fail(why, "missing port");
    if (n > 5)
        return fail(why, "port out of range 0..65535");
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return fail(why, "port is not a number");
        v = v * 10 + (uint32_t)(p[i] - '0');
    }
    if (v > 65535)
        return fail(why, "port out of range 0..65535");
    *port = (uint16_t)v;
    return KP_OK;
}

int bk_cfg_hostport_parse(const char *s, size_t len, char host[BK_CFG_HOST_MAX + 1],
                      uint16_t *port, const char **why) {
    const char *h = s;
    size_t hlen;
    size_t colon;
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (close == NULL)
            return fail(why, "missing ']' after IPv6 address");
        h = s + 1;
        hlen = (size_t)(close - h);
        colon = (size_t)(close - s) + 1;
        if (colon >= len || s[colon] != ':')
            return fail(why, "expected ':port' after ']'");
    } else {
        const char *c = NULL;
        for (size_t i = len; i > 0; i--)
            if (s[i - 1] == ':') { c = s + i - 1; break; }
        if (c == NULL)
            return fail(why, "expected host:port");
        colon = (size_t)(c - s);
        hlen = colon;
        if (memchr(s, ':', colon) != NULL)
            return fail(why, "IPv6 addresses need brackets: [addr]:port");
    }
    if (hlen > BK_CFG_HOST_MAX)
        return fail(why, "host name too long");
    for (size_t i = 0; i < hlen; i++)
        if (h[i] == ' ' || h[i] == '\t' || h[i] == '\0' || h[i] == '/' || h[i] == ',')
            return fail(why, "invalid character in host");
    if (parse_port(s + colon + 1, len - colon - 1, port, why) != KP_OK)
        return KP_ERR_BAD_VALUE;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    return KP_OK;
}
