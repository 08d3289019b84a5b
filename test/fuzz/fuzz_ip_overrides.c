/* libFuzzer target: max.connections.per.ip.overrides
 * (bk_cfg_ip_overrides_parse), text from a config file or --set.
 *
 * Properties: a refused list leaves the output untouched and gives a
 * reason; an accepted one has at most BK_CFG_IP_OVERRIDES_MAX entries, each
 * a 4- or 16-byte address with a count in 0..INT32_MAX; written back as
 * "[addr]:count,..." it parses to the same entries (a fixed point). */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/config/ip_overrides.h"

static void must(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_ip_overrides: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 8192) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';      /* a config value is a C string: cut at a NUL */
    bk_cfg_ip_override_t v[BK_CFG_IP_OVERRIDES_MAX];
    memset(v, 0xA5, sizeof v);
    size_t n = 12345;
    char why[160] = "";
    int rc = bk_cfg_ip_overrides_parse(text, v, &n, why, sizeof why);
    if (rc != KP_OK) {
        must(n == 12345, "refused list changed the count");
        must(why[0] != '\0', "refused list without a reason");
        free(text);
        return 0;
    }
    must(n <= BK_CFG_IP_OVERRIDES_MAX, "too many entries");
    char out[BK_CFG_IP_OVERRIDES_MAX * 64 + 1] = "";
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        must(v[i].addr_len == 4 || v[i].addr_len == 16, "bad address length");
        must(v[i].max >= 0 && v[i].max <= INT32_MAX, "count out of range");
        char host[INET6_ADDRSTRLEN];
        must(inet_ntop(v[i].addr_len == 4 ? AF_INET : AF_INET6, v[i].addr, host, sizeof host) != NULL, "ntop");
        len += (size_t)snprintf(out + len, sizeof out - len, "%s[%s]:%lld", i ? "," : "", host, (long long)v[i].max);
    }
    bk_cfg_ip_override_t w[BK_CFG_IP_OVERRIDES_MAX];
    size_t m = 0;
    must(bk_cfg_ip_overrides_parse(out, w, &m, why, sizeof why) == KP_OK, "written back, refused");
    must(m == n, "written back, other count");
    for (size_t i = 0; i < n; i++) {
        must(w[i].addr_len == v[i].addr_len && w[i].max == v[i].max, "written back, other entry");
        must(memcmp(w[i].addr, v[i].addr, v[i].addr_len) == 0, "written back, other address");
    }
    free(text);
    return 0;
}
