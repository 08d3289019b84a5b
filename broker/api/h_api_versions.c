/* broker/api/h_api_versions.c — ApiVersions: every API this node serves, with
 * min..max_stable_version (the dispatch table). Advertising the full ranges
 * matters: librdkafka turns on MsgVer2 / zstd / LZ4 / group coordination
 * only when our ranges overlap its fixed ones, and kafka-python guesses the
 * broker release (and so its Produce/Fetch versions) from them (INDEX.md
 * "What a broker has to accept"). */
#include <ctype.h>
#include <string.h>

#include "broker/api/dispatch.h"
#include "protocol/kp_errors.h"

/* KIP-511: [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? */
static bool software_field_ok(kp_str_t s) {
    if (s.len == 0) return false;
    if (!isalnum(s.p[0]) || !isalnum(s.p[s.len - 1])) return false;
    for (size_t i = 0; i < s.len; i++)
        if (!isalnum(s.p[i]) && s.p[i] != '-' && s.p[i] != '.') return false;
    return true;
}

void bk_api_h_api_versions(bk_api_req_t *req) {
    const kp_api_versions_request_t *q = req->body;
    size_t n = 0;
    const bk_api_entry_t *t = bk_api_dispatch_table(&n);
    kp_api_versions_response_t r;
    memset(&r, 0, sizeof r);
    kp_api_versions_response_init(&r);
    kp_api_versions_response_api_version_t *av = bk_api_req_alloc(req, n, sizeof *av);
    if (!av) { bk_api_req_close(req, "out of memory"); return; }
    for (size_t i = 0; i < n; i++) {
        av[i].api_key = t[i].api_key;
        av[i].min_version = t[i].min_version;
        av[i].max_version = t[i].max_version;
    }
    r.api_keys.items = av;
    r.api_keys.count = (int32_t)n;
    if (req->hdr.api_version >= 3 &&
        (!software_field_ok(q->client_software_name) || !software_field_ok(q->client_software_version)))
        r.error_code = KP_ERROR_INVALID_REQUEST;
    bk_api_req_respond(req, &r);
}
