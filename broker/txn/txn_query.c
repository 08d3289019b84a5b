/* txn_query.c — read-only views of the coordinator: state names,
 * DescribeTransactions, ListTransactions, partitionFor, error versions. */
#include <stdlib.h>
#include <string.h>

#include "broker/txn/txn_int.h"
#include "protocol/kp_errors.h"

static const char *const STATE_NAMES[BK_TXN_STATE_COUNT] = {
    "Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
    "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence",
};

const char *bk_txn_state_name(bk_txn_state_t s) {
    return (unsigned)s < BK_TXN_STATE_COUNT ? STATE_NAMES[s] : "Unknown";
}

bool bk_txn_state_parse(const char *name, bk_txn_state_t *s) {
    for (int i = 0; name && i < BK_TXN_STATE_COUNT; i++) {
        if (strcmp(name, STATE_NAMES[i]) == 0) {
            *s = (bk_txn_state_t)i;
            return true;
        }
    }
    return false;
}

const bk_txn_meta_t *bk_txn_get(const bk_txn_coord_t *c, const char *transactional_id) {
    const bk_txn_entry_t *e = transactional_id ? txn_find(c, transactional_id, NULL) : NULL;
    return e ? &e->cur : NULL;
}

int16_t bk_txn_describe(const bk_txn_coord_t *c, const char *transactional_id, const bk_txn_meta_t **meta) {
    *meta = bk_txn_get(c, transactional_id);
    return *meta ? KP_ERROR_NONE : KP_ERROR_TRANSACTIONAL_ID_NOT_FOUND;
}

void bk_txn_list(const bk_txn_coord_t *c, const char *const *states, size_t nstates, const int64_t *pids,
                 size_t npids, int64_t duration_ms, int64_t now_ms, bool *unknown, bk_txn_list_fn fn,
                 void *ctx) {
    bool want[BK_TXN_STATE_COUNT] = { false };
    size_t known = 0;
    for (size_t i = 0; i < nstates; i++) {
        bk_txn_state_t s;
        unknown[i] = !bk_txn_state_parse(states[i], &s);
        if (!unknown[i]) {
            want[s] = true;
            known++;
        }
    }
    /* Kafka: filters that are all unknown match nothing. */
    if (nstates > 0 && known == 0) return;
    for (size_t i = 0; i < c->n; i++) {
        const bk_txn_meta_t *m = &c->v[i]->cur;
        if (nstates > 0 && !want[m->state]) continue;
        bool pid_ok = npids == 0;
        for (size_t j = 0; j < npids && !pid_ok; j++) pid_ok = pids[j] == m->producer_id;
        if (!pid_ok) continue;
        if (duration_ms >= 0 && now_ms - m->start_ms <= duration_ms) continue;   /* Kafka's test */
        fn(ctx, c->v[i]->id, m);
    }
}

/* Next code point of UTF-8 text; malformed input yields U+FFFD for one byte
 * (what Java's decoder produces for the common cases). */
static uint32_t utf8_next(const unsigned char **pp) {
    const unsigned char *p = *pp;
    uint32_t c = p[0];
    int n = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : -1;
    *pp = p + 1;
    if (n == 0) return c;
    if (n < 0) return 0xFFFD;
    uint32_t cp = c & (0x3Fu >> n);
    for (int i = 1; i <= n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0xFFFD;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    static const uint32_t min[4] = { 0, 0x80, 0x800, 0x10000 };
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0xFFFD;
    *pp = p + 1 + n;
    return cp;
}

int32_t bk_txn_partition_for(const char *transactional_id, int32_t n) {
    uint32_t h = 0;   /* Java int arithmetic wraps: do it unsigned */
    const unsigned char *p = (const unsigned char *)transactional_id;
    while (*p) {
        uint32_t cp = utf8_next(&p);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            h = 31u * h + (0xD800u + (cp >> 10));
            h = 31u * h + (0xDC00u + (cp & 0x3FF));
        } else {
            h = 31u * h + cp;
        }
    }
    int32_t s = (int32_t)h;
    int32_t a = s == INT32_MIN ? 0 : s < 0 ? -s : s;
    return a % n;
}

int16_t bk_txn_fenced_error(int16_t api_key, int16_t api_version, int16_t error) {
    if (error != KP_ERROR_PRODUCER_FENCED) return error;
    int16_t first;
    switch (api_key) {
    case 22: first = 4; break;   /* InitProducerId */
    case 24: first = 2; break;   /* AddPartitionsToTxn */
    case 25: first = 2; break;   /* AddOffsetsToTxn */
    case 26: first = 2; break;   /* EndTxn */
    case 28: first = 3; break;   /* TxnOffsetCommit */
    default: return error;
    }
    return api_version < first ? KP_ERROR_INVALID_PRODUCER_EPOCH : error;
}
