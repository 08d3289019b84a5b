/* broker/quorum/quorum_hold.c — see quorum_hold.h. */
#include "broker/quorum/quorum_hold.h"

#include <string.h>

int64_t bk_quorum_hold_wait_ms(int64_t fetch_timeout_ms, int64_t request_timeout_ms) {
    int64_t w = BK_QUORUM_HOLD_WAIT_MAX_MS;
    if (fetch_timeout_ms / 4 < w) w = fetch_timeout_ms / 4;
    if (request_timeout_ms / 4 < w) w = request_timeout_ms / 4;
    return w < 1 ? 0 : w;
}

void bk_quorum_hold_init(bk_quorum_hold_t *h, int64_t wait_ms) {
    memset(h, 0, sizeof *h);
    h->wait_ms = wait_ms < 0 ? 0 : wait_ms;
}

void bk_quorum_hold_forget(bk_quorum_hold_t *h) { h->ntold = 0; }

/* Index of peer in told[], or ntold. */
static size_t told_index(const bk_quorum_hold_t *h, int32_t peer) {
    size_t i = 0;
    while (i < h->ntold && h->told[i].id != peer) i++;
    return i;
}

void bk_quorum_hold_told(bk_quorum_hold_t *h, int32_t peer, int64_t hw) {
    size_t i = told_index(h, peer);
    if (i == h->ntold) {
        if (h->ntold == BK_QUORUM_HOLD_PEERS_MAX) {
            memmove(&h->told[0], &h->told[1], (BK_QUORUM_HOLD_PEERS_MAX - 1) * sizeof h->told[0]);
            h->ntold--;
        }
        i = h->ntold++;
        h->told[i].id = peer;
    }
    h->told[i].hw = hw;
}

bool bk_quorum_hold_should_hold(const bk_quorum_hold_t *h, const raft_msg_t *resp) {
    if (h->wait_ms <= 0 || h->n == BK_QUORUM_HOLD_MAX) return false;
    if (resp->type != RAFT_MSG_FETCH_RESP || resp->error != 0) return false;
    if (resp->u.fetch_resp.n_entries || resp->u.fetch_resp.diverging || resp->u.fetch_resp.need_snapshot)
        return false;
    size_t i = told_index(h, resp->to);
    return i < h->ntold && h->told[i].hw == resp->u.fetch_resp.high_watermark;
}

bool bk_quorum_hold_add(bk_quorum_hold_t *h, const bk_quorum_hold_entry_t *e) {
    if (h->n == BK_QUORUM_HOLD_MAX) return false;
    h->v[h->n++] = *e;
    h->held_total++;
    return true;
}

bool bk_quorum_hold_take_peer(bk_quorum_hold_t *h, int32_t peer, bk_quorum_hold_entry_t *out) {
    for (size_t i = 0; i < h->n; i++) {
        if (h->v[i].req.from != peer) continue;
        *out = h->v[i];
        memmove(&h->v[i], &h->v[i + 1], (h->n - i - 1) * sizeof h->v[0]);
        h->n--;
        return true;
    }
    return false;
}

bool bk_quorum_hold_take_due(bk_quorum_hold_t *h, int64_t now_ms, int64_t log_end, int64_t hw, int32_t epoch,
                       bool leader, bk_quorum_hold_entry_t *out) {
    for (size_t i = 0; i < h->n; i++) {
        const bk_quorum_hold_entry_t *e = &h->v[i];
        bool due = now_ms >= e->deadline_ms || !leader || e->log_end != log_end || e->hw != hw ||
                   e->epoch != epoch;
        if (!due) continue;
        *out = *e;
        memmove(&h->v[i], &h->v[i + 1], (h->n - i - 1) * sizeof h->v[0]);
        h->n--;
        return true;
    }
    return false;
}
