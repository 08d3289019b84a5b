/* broker/config/ip_overrides.c — see ip_overrides.h. */
#include "broker/config/ip_overrides.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool blank(char ch) { return ch == ' ' || ch == '\t'; }

/* One "addr:count" entry of `len` bytes at p. */
static bool parse_one(const char *p, size_t len, bk_cfg_ip_override_t *o, char *why, size_t why_len) {
    while (len > 0 && blank(*p)) p++, len--;
    while (len > 0 && blank(p[len - 1])) len--;
    size_t colon = len;
    for (size_t i = 0; i < len; i++)
        if (p[i] == ':') colon = i;             /* the last one: IPv6 addresses hold colons */
    if (colon == len || colon == 0 || colon + 1 == len) {
        snprintf(why, why_len, "entry '%.*s' is not address:count", (int)(len > 64 ? 64 : len), p);
        return false;
    }
    const char *h = p;
    size_t hl = colon;
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') h++, hl -= 2;
    char host[INET6_ADDRSTRLEN + 1];
    if (hl >= sizeof host) {
        snprintf(why, why_len, "address '%.*s' is too long", (int)(hl > 64 ? 64 : hl), h);
        return false;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (inet_pton(AF_INET, host, o->addr) == 1) o->addr_len = 4;
    else if (inet_pton(AF_INET6, host, o->addr) == 1) o->addr_len = 16;
    else {
        snprintf(why, why_len, "'%s' is not a numeric IP address (host names are not resolved)", host);
        return false;
    }
    int64_t v = 0;
    for (size_t i = colon + 1; i < len; i++) {
        if (p[i] < '0' || p[i] > '9' || v > INT32_MAX) {
            snprintf(why, why_len, "count of '%s' is not a number from 0 to %d", host, INT32_MAX);
            return false;
        }
        v = v * 10 + (p[i] - '0');
    }
    if (v > INT32_MAX) {
        snprintf(why, why_len, "count of '%s' is not a number from 0 to %d", host, INT32_MAX);
        return false;
    }
    o->max = v;
    return true;
}

int bk_cfg_ip_overrides_parse(const char *s, bk_cfg_ip_override_t out[BK_CFG_IP_OVERRIDES_MAX], size_t *n,
                              char *why, size_t why_len) {
    bk_cfg_ip_override_t tmp[BK_CFG_IP_OVERRIDES_MAX];
    size_t k = 0;
    const char *p = s ? s : "";
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        bool empty = true;
        for (size_t i = 0; i < len; i++) empty = empty && blank(p[i]);
        if (!empty) {
            if (k == BK_CFG_IP_OVERRIDES_MAX) {
                snprintf(why, why_len, "more than %d entries", BK_CFG_IP_OVERRIDES_MAX);
                return KP_ERR_BAD_VALUE;
            }
            if (!parse_one(p, len, &tmp[k], why, why_len)) return KP_ERR_BAD_VALUE;
            k++;
        }
        if (!end) break;
        p = end + 1;
    }
    memcpy(out, tmp, k * sizeof *tmp);
    *n = k;
    return KP_OK;
}
