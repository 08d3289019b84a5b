/* broker/quorum/quorum_state.c — quorum-state file (see quorum_state.h). */
#include "broker/quorum/quorum_state.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/st_checkpoint.h"
#include "storage/st_status.h"

int bk_quorum_state_format(const raft_hard_state_t *hs, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "{\"leader_id\":%" PRId32 ",\"leader_epoch\":%" PRId32
                     ",\"voted_id\":%" PRId32 ",\"data_version\":0}\n",
                     hs->leader_id, hs->epoch, hs->voted_for);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

/* A tiny cursor over the text: the file is ours, so only a flat object of
 * integer values is accepted. */
typedef struct {
    const char *p, *end;
} cur_t;

static void skip_ws(cur_t *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static bool eat(cur_t *c, char ch) {
    skip_ws(c);
    if (c->p >= c->end || *c->p != ch) return false;
    c->p++;
    return true;
}

/* "key" -> out (at most cap-1 chars, no escapes). */
static bool read_key(cur_t *c, char *out, size_t cap) {
    if (!eat(c, '"')) return false;
    size_t n = 0;
    while (c->p < c->end && *c->p != '"') {
        if (*c->p == '\\' || (unsigned char)*c->p < 0x20 || n + 1 >= cap) return false;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return false;
    c->p++;
    out[n] = '\0';
    return true;
}

/* A JSON integer within int32. */
static bool read_i32(cur_t *c, int32_t *out) {
    skip_ws(c);
    bool neg = false;
    if (c->p < c->end && *c->p == '-') { neg = true; c->p++; }
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return false;
    if (*c->p == '0' && c->p + 1 < c->end && c->p[1] >= '0' && c->p[1] <= '9') return false;
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        v = v * 10 + (*c->p++ - '0');
        if (v > (int64_t)INT32_MAX + 1) return false;
    }
    if (neg) v = -v;
    if (v < INT32_MIN || v > INT32_MAX) return false;
    *out = (int32_t)v;
    return true;
}

static int bad(char *why, size_t len, const char *msg) {
    snprintf(why, len, "%s", msg);
    return KP_ERR_CORRUPT;
}

int bk_quorum_state_parse(const char *text, size_t len, raft_hard_state_t *hs, char *why, size_t why_len) {
    cur_t c = { text, text + len };
    raft_hard_state_t v = { 0, RAFT_NO_NODE, RAFT_NO_NODE };
    bool have_leader = false, have_epoch = false, have_vote = false;
    if (!eat(&c, '{')) return bad(why, why_len, "not a JSON object");
    size_t keys = 0;
    if (!eat(&c, '}')) {
        do {
            char key[32];
            int32_t x;
            if (++keys > 16) return bad(why, why_len, "too many keys");
            if (!read_key(&c, key, sizeof key)) return bad(why, why_len, "bad key");
            if (!eat(&c, ':')) return bad(why, why_len, "missing ':'");
            if (!read_i32(&c, &x)) return bad(why, why_len, "value is not a 32-bit integer");
            if (strcmp(key, "leader_id") == 0) { v.leader_id = x; have_leader = true; }
            else if (strcmp(key, "leader_epoch") == 0) { v.epoch = x; have_epoch = true; }
            else if (strcmp(key, "voted_id") == 0) { v.voted_for = x; have_vote = true; }
            else if (strcmp(key, "data_version") == 0 && x != 0) return bad(why, why_len, "unknown data_version");
        } while (eat(&c, ','));
        if (!eat(&c, '}')) return bad(why, why_len, "missing '}'");
    }
    skip_ws(&c);
    if (c.p != c.end) return bad(why, why_len, "trailing bytes");
    if (!have_leader || !have_epoch || !have_vote) return bad(why, why_len, "missing leader_id, leader_epoch or voted_id");
    if (v.epoch < 0 || v.leader_id < -1 || v.voted_for < -1) return bad(why, why_len, "negative epoch or id");
    *hs = v;
    return KP_OK;
}

int bk_quorum_state_read(const char *dir, raft_hard_state_t *hs, char *why, size_t why_len) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, BK_QUORUM_STATE_FILE) >= (int)sizeof path)
        return bad(why, why_len, "path too long");
    char *text = NULL;
    size_t len = 0;
    int rc = st_read_small_file(path, BK_QUORUM_STATE_MAX_BYTES, &text, &len);
    if (rc == ST_ERR_NOT_FOUND) {
        hs->epoch = 0;
        hs->voted_for = RAFT_NO_NODE;
        hs->leader_id = RAFT_NO_NODE;
        return KP_OK;
    }
    if (rc != KP_OK) {
        snprintf(why, why_len, "%s: cannot read: %s", path, st_status_str(rc));
        return rc;
    }
    char reason[128];
    rc = bk_quorum_state_parse(text, len, hs, reason, sizeof reason);
    free(text);
    if (rc != KP_OK) snprintf(why, why_len, "%s: corrupt: %s", path, reason);
    return rc;
}

int bk_quorum_state_write(const char *dir, const raft_hard_state_t *hs) {
    char path[4096], buf[256];
    if (snprintf(path, sizeof path, "%s/%s", dir, BK_QUORUM_STATE_FILE) >= (int)sizeof path) return KP_ERR_TOO_LARGE;
    int n = bk_quorum_state_format(hs, buf, sizeof buf);

    if (n < 0) return KP_ERR_TOO_LARGE;
    return st_atomic_write(path, buf, (size_t)n);
}
