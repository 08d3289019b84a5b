/* broker/quorum/quorum.c — the raft driver (see quorum.h): persistence, timers,
 * ready handling, apply, proposals, snapshots. */
#include "broker/quorum/quorum.h"

#include <assert.h>
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "broker/meta/meta_log.h"
#include "broker/net/clock.h"
#include "broker/net/net.h"
#include "broker/net/quorum_client.h"
#include "broker/quorum/quorum_hold.h"
#include "broker/quorum/quorum_rpc.h"
#include "broker/quorum/quorum_snap.h"
#include "broker/quorum/quorum_state.h"
#include "broker/net/worker.h"
#include "storage/st_checkpoint.h"
#include "storage/st_log.h"
#include "storage/st_status.h"

typedef struct {
    int64_t first, last;         /* offsets given by the core, inclusive */
    int32_t epoch;
    int status;                  /* KP_OK unless a record failed to apply */
    bk_quorum_done_fn done;
    void *arg;
} proposal_t;

/* The server request being stepped, so that its response goes back on the
 * same connection (conn, or only its slot for a held Fetch stepped again). */
typedef struct {
    bk_net_conn_t *conn;                 /* NULL: answer through the slot */
    bk_net_slot_t slot;
    kp_request_header_t hdr;
    raft_msg_t req;
    int32_t max_wait_ms;             /* a Fetch's MaxWaitMs */
    bool may_hold;                   /* false once held: answered when stepped again */
    bool answered;
} srv_req_t;

struct bk_quorum {
    bk_quorum_env_t env;             /* the node around the driver (quorum.h) */
    bk_net_worker_pool_t *pool;          /* NULL until bk_quorum_set_pool */
    raft_t *r;
    st_log_t *log;
    char pdir[ST_PATH_MAX + 300];     /* <metadata.log.dir>/__cluster_metadata-0 */
    struct event *timer;
    bk_net_t *srv;
    bk_net_qc_peer_t *peers[RAFT_VOTERS_MAX];   /* raft RPCs */
    bk_net_qc_peer_t *lpeers[RAFT_VOTERS_MAX];  /* registration / heartbeats: their
                                               answers wait for a commit, and
                                               answers are ordered per
                                               connection, so they must not
                                               sit in front of raft answers */
    size_t npeers;
    int64_t applied;                  /* next offset to apply */
    int64_t bytes_since_snapshot;
    int64_t snapshot_every_bytes;
    raft_snapshot_id_t snap;          /* latest snapshot file */
    proposal_t *props;                /* FIFO [0, nprops) */
    size_t nprops, capprops;
    proposal_t *done_list;            /* completed in this step; called after advance */
    size_t ndone, capdone;
    bool busy;                        /* inside step..advance */
    bool was_leader;
    bool closing;
    srv_req_t *cur;                   /* the server request of this step */
    bool sync_busy;                   /* a log fsync job runs on the pool */
    int64_t sync_want;                /* appended end waiting for an fsync, or -1 */
    uint64_t sync_gen;                /* bumped by truncation / snapshot install */
    bk_meta_image_t *view;                 /* decision view (bk_quorum_decision_image) */
    int64_t view_end;                 /* the view holds the log up to here */
    uint64_t elections;               /* epochs this node ran for as a candidate */
    int32_t candidate_epoch;          /* the last of them (-1 none) */
    /* leader: Fetches held until something is new (quorum_hold.h) */
    bk_quorum_hold_t *hold;
    bool releasing;
    /* follower: one Fetch in flight per peer (the leader may hold it), each
     * asking MaxWaitMs fetch_wait_ms unless a prompt one was asked for */
    int32_t fetch_wait_ms;
    bool fetch_out[RAFT_VOTERS_MAX];
    int32_t fetch_out_corr[RAFT_VOTERS_MAX];
    int64_t fetch_out_ms[RAFT_VOTERS_MAX];
    uint64_t fetch_sent_seq;          /* Fetches sent so far */
    uint64_t fetch_answered_seq;      /* the latest of them answered without error */
    uint64_t prompt_upto_seq;         /* Fetches up to this one: no wait, no queueing */
};

bool bk_quorum_wanted(const bk_cfg_t *cfg) {
    size_t nv = 0;
    const bk_cfg_voter_t *v = bk_cfg_voters(cfg, &nv);
    if (nv > 1) return true;
    int32_t id = bk_cfg_node_id(cfg);
    for (size_t i = 0; i < nv; i++)
        if (v[i].id == id) return false;
    return nv > 0;
}

bool bk_quorum_is_leader(const bk_quorum_t *q) { return raft_role(q->r) == RAFT_LEADER; }
int32_t bk_quorum_leader(const bk_quorum_t *q) {
    /* a node campaigning or unattached has no leader it can name, even if
     * its epoch had one */
    raft_role_t role = raft_role(q->r);
    return role == RAFT_LEADER || role == RAFT_FOLLOWER ? raft_leader(q->r) : RAFT_NO_NODE;
}
int32_t bk_quorum_epoch(const bk_quorum_t *q) { return raft_epoch(q->r); }
uint64_t bk_quorum_elections(const bk_quorum_t *q) { return q->elections; }
const char *bk_quorum_role(const bk_quorum_t *q) { return raft_role_str(raft_role(q->r)); }
int64_t bk_quorum_next_offset(const bk_quorum_t *q) { return raft_log_end(q->r); }
void bk_quorum_describe(const bk_quorum_t *q, raft_quorum_info_t *out) { raft_describe_quorum(q->r, out); }

void bk_quorum_offsets(const bk_quorum_t *q, st_log_offsets_t *out) {
    out->log_start_offset = st_log_start_offset(q->log);
    out->recovery_point = st_log_recovery_point(q->log);
    out->high_watermark = raft_high_watermark(q->r);
    out->log_end_offset = st_log_end_offset(q->log);
}

static void drop_view(bk_quorum_t *q) {
    if (!q->view) return;
    bk_meta_image_free(q->view);
    free(q->view);
    q->view = NULL;
}

/* Applies the log [view_end, end) to the view; false when an entry is gone. */
static bool view_catch_up(bk_quorum_t *q, int64_t end) {
    for (; q->view_end < end; q->view_end++) {
        const raft_entry_t *e = raft_entry_at(q->r, q->view_end);
        if (!e) return false;
        /* a record the image refuses is refused identically at commit */
        if (e->type == RAFT_ENTRY_DATA && bk_meta_image_apply_bytes(q->view, e->data, e->len, e->offset) != KP_OK) {
        }
    }
    (void)bk_meta_image_take_changes(q->view, NULL, 0);   /* the view drives nothing */
    return true;
}

static bool view_build(bk_quorum_t *q) {
    q->view = bk_meta_image_copy(q->env.img);
    q->view_end = q->applied;
    return q->view != NULL;
}

/* The view is kept while the log only grows (it catches up from view_end,
 * also past entries already applied): a copy is made once per leadership,
 * not once per burst of decisions. */
const bk_meta_image_t *bk_quorum_decision_image(bk_quorum_t *q) {
    int64_t end = raft_log_end(q->r);
    if (q->view && q->view_end > end) drop_view(q);
    if (q->applied >= end && !q->view) return q->env.img;
    /* an entry the view still needs may be gone (snapshot): copy afresh */
    if (q->view && !view_catch_up(q, end)) drop_view(q);
    if (!q->view && (!view_build(q) || !view_catch_up(q, end))) {
        drop_view(q);
        return q->env.img;
    }
    return q->applied >= end ? q->env.img : q->view;
}

static void fatal(bk_quorum_t *q, const char *what, int rc) {
    /* The quorum's durability promise is broken if we go on: stop hard. */
    fprintf(stderr, "skiff: node %d: metadata quorum: %s failed: %s; exiting\n", q->env.id, what,
            st_status_str(rc));
    exit(1);
}

/* ---- the ready loop ------------------------------------------------------------ */

static void step(bk_quorum_t *q, const raft_event_t *ev);
static void release_held(bk_quorum_t *q);

static int64_t now_ms(void) { return bk_net_now_ms(); }

static bool trace_on(void) {
    static int on = -1;
    if (on < 0) on = getenv("SKIFF_RAFT_TRACE") != NULL;
    return on == 1;
}

static void trace(const bk_quorum_t *q, const char *dir, const raft_msg_t *m) {
    if (!trace_on()) return;
    fprintf(stderr, "raft %d %s %s %d->%d epoch %d leader %d err %d\n", q->env.id, dir, raft_msg_type_str(m->type),
            m->from, m->to, m->epoch, m->leader_id, m->error);
}

static size_t peer_index(const bk_quorum_t *q, int32_t id) {
    size_t i = 0;
    while (i < q->npeers && bk_net_qc_id(q->peers[i]) != id) i++;
    return i;
}

static void send_request(bk_quorum_t *q, const raft_msg_t *m) {
    trace(q, "send", m);
    size_t pi = peer_index(q, m->to);
    if (pi == q->npeers) return;   /* not a voter we know: raft retries */
    bk_net_qc_peer_t *p = q->peers[pi];
    int64_t now = now_ms();
    bk_net_qc_pending_t pend = { BK_NET_QC_RAFT, 0, *m, NULL, 0, 0 };
    /* a Fetch is held at most a quarter of this (quorum_hold.h): a silent
     * peer is still cut */
    pend.timeout_ms = (int32_t)bk_cfg_int(q->env.cfg, BK_CFG_CONTROLLER_QUORUM_REQUEST_TIMEOUT_MS);
    bool fetch = m->type == RAFT_MSG_FETCH_REQ;
    uint64_t seq = q->fetch_sent_seq + 1;
    bool prompt = fetch && seq <= q->prompt_upto_seq;
    /* the core re-sends on its fetch interval; while one may be held, a
     * second would only queue behind it (answers are ordered) */
    if (fetch && !prompt && q->fetch_out[pi] && now - q->fetch_out_ms[pi] < pend.timeout_ms) {
        trace(q, "queued", m);
        return;
    }
    pend.corr = bk_net_qc_next_corr(p);
    uint8_t *frame = NULL;
    size_t len = 0;
    int rc = fetch ? bk_quorum_rpc_encode_fetch(m, pend.corr, q->env.cluster_id, prompt ? 0 : q->fetch_wait_ms, &frame, &len)
                   : bk_quorum_rpc_encode_request(m, pend.corr, q->env.cluster_id, &frame, &len);
    if (rc != KP_OK) return;
    if (fetch) pend.arg = (void *)(uintptr_t)seq;
    if (bk_net_qc_send(p, frame, len, &pend, now) != 0) {
        if (trace_on()) fprintf(stderr, "raft %d: send dropped\n", q->env.id);
    } else if (fetch) {
        q->fetch_sent_seq = seq;
        q->fetch_out[pi] = true;
        q->fetch_out_corr[pi] = pend.corr;
        q->fetch_out_ms[pi] = now;
    }
    free(frame);
}

static void close_slot(bk_quorum_t *q, bk_net_slot_t slot) {
    bk_net_conn_t *conn = bk_net_conn(q->srv, slot.conn_id);
    if (conn) bk_net_conn_close(conn);   /* no answer to give: the peer re-sends */
}

/* Holds the current Fetch (true) when its answer m tells nothing new. */
static bool hold_current(bk_quorum_t *q, const srv_req_t *c, const raft_msg_t *m) {
    if (!c->may_hold || c->max_wait_ms <= 0 || !bk_quorum_hold_should_hold(q->hold, m)) return false;
    int64_t wait = c->max_wait_ms < q->hold->wait_ms ? c->max_wait_ms : q->hold->wait_ms;
    bk_quorum_hold_entry_t e = { c->slot, c->hdr.api_key, c->hdr.api_version, c->hdr.correlation_id, c->req,
                           now_ms() + wait, raft_log_end(q->r), m->u.fetch_resp.high_watermark, raft_epoch(q->r) };
    if (!bk_quorum_hold_add(q->hold, &e)) return false;
    trace(q, "hold", m);
    return true;
}

static void answer_current(bk_quorum_t *q, const raft_msg_t *m) {
    srv_req_t *c = q->cur;
    c->answered = true;
    if (m->type == RAFT_MSG_FETCH_RESP && m->error == 0) {
        if (hold_current(q, c, m)) return;
        bk_quorum_hold_told(q->hold, m->to, m->u.fetch_resp.high_watermark);
    }
    trace(q, "answer", m);
    uint8_t *frame = NULL;
    size_t len = 0;
    if (bk_quorum_rpc_encode_response(m, &c->hdr, &frame, &len) != KP_OK) {
        close_slot(q, c->slot);
        return;
    }
    /* the frame carries its size prefix; the net adds its own */
    /* a held Fetch's connection may have closed meanwhile: nobody to answer */
    bk_net_conn_t *conn = c->conn ? c->conn : bk_net_conn(q->srv, c->slot.conn_id);
    if (conn) (void)bk_net_conn_respond_bytes(conn, c->slot, frame + 4, len - 4);
    free(frame);
}

static void send_msgs(bk_quorum_t *q, const raft_ready_t *rd) {
    for (uint32_t i = 0; i < rd->n_msgs; i++) {
        const raft_msg_t *m = &rd->msgs[i];
        if (m->type % 2 == 0) send_request(q, m);
        else if (q->cur && !q->cur->answered && m->to == q->cur->req.from && m->type == q->cur->req.type + 1)
            answer_current(q, m);
        else trace(q, "drop", m);   /* no connection to go to: the peer retries */
    }
}

static void finish_proposal(bk_quorum_t *q, int status) {
    assert(q->nprops > 0);
    proposal_t p = q->props[0];
    memmove(q->props, q->props + 1, (q->nprops - 1) * sizeof *q->props);
    q->nprops--;
    if (status != KP_OK && p.status == KP_OK) p.status = status;
    if (q->ndone == q->capdone) {
        size_t nc = q->capdone ? q->capdone * 2 : 16;
        proposal_t *nd = realloc(q->done_list, nc * sizeof *nd);
        if (!nd) { p.done(p.arg, KP_ERR_NOMEM, -1); return; }   /* cannot defer: report now */
        q->done_list = nd;
        q->capdone = nc;
    }
    q->done_list[q->ndone++] = p;
}

/* Proposals whose offsets now hold an entry of another epoch were lost. */
static void check_proposals(bk_quorum_t *q, const raft_entry_t *e, int apply_status) {
    while (q->nprops > 0 && e->offset >= q->props[0].first) {
        proposal_t *p = &q->props[0];
        if (e->epoch != p->epoch) { finish_proposal(q, BK_QUORUM_NOT_LEADER); continue; }
        if (apply_status != KP_OK) p->status = KP_ERR_BAD_VALUE;
        if (e->offset == p->last) finish_proposal(q, KP_OK);
        break;
    }
}

static void apply_committed(bk_quorum_t *q, int64_t hw) {
    bool any = false;
    if (q->applied < raft_log_start(q->r)) q->applied = raft_log_start(q->r);
    while (q->applied < hw) {
        const raft_entry_t *e = raft_entry_at(q->r, q->applied);
        if (!e) break;
        int rc = KP_OK;
        if (e->type == RAFT_ENTRY_DATA) {
            rc = bk_meta_image_apply_bytes(q->env.img, e->data, e->len, e->offset);
            if (rc != KP_OK)
                fprintf(stderr, "skiff: node %d: metadata record at offset %" PRId64 " does not apply (%s); skipped\n",
                        q->env.id, e->offset, st_status_str(rc));
            q->bytes_since_snapshot += e->len;
            any = true;
        }
        check_proposals(q, e, rc);
        q->applied++;
    }
    if (any) q->env.after_apply(q->env.ctx);
}

static void maybe_snapshot(bk_quorum_t *q) {
    if (q->bytes_since_snapshot < q->snapshot_every_bytes || q->applied <= q->snap.end_offset) return;
    const raft_entry_t *last = raft_entry_at(q->r, q->applied - 1);
    if (!last) return;
    uint8_t *img = NULL;
    size_t len = 0;
    if (bk_meta_image_snapshot(q->env.img, &img, &len) != KP_OK) return;
    raft_snapshot_id_t id = { q->applied, last->epoch };
    if (len > UINT32_MAX || bk_quorum_snap_write(q->pdir, id, img, len) != KP_OK) {
        fprintf(stderr, "skiff: node %d: metadata snapshot at %" PRId64 " could not be written\n", q->env.id, id.end_offset);
        free(img);
        return;
    }
    raft_event_t ev = { .type = RAFT_EV_SNAPSHOT_TAKEN };
    ev.u.snapshot.id = id;
    ev.u.snapshot.data = img;
    ev.u.snapshot.len = (uint32_t)len;
    q->snap = id;
    q->bytes_since_snapshot = 0;
    step(q, &ev);
    free(img);
    bk_quorum_snap_prune(q->pdir, id);
    fprintf(stderr, "skiff: node %d: metadata snapshot at offset %" PRId64 " (%zu bytes)\n", q->env.id, id.end_offset, len);
}

static void install_snapshot(bk_quorum_t *q, const raft_ready_t *rd) {
    int rc = bk_quorum_snap_write(q->pdir, rd->snapshot, rd->snapshot_data, rd->snapshot_len);
    if (rc != KP_OK) fatal(q, "writing a downloaded snapshot", rc);
    rc = bk_meta_image_load(q->env.img, rd->snapshot_data, rd->snapshot_len);
    if (rc != KP_OK) fatal(q, "loading a downloaded snapshot", rc);
    rc = st_log_truncate_fully(q->log, rd->snapshot.end_offset, now_ms());
    if (rc != KP_OK) fatal(q, "emptying the log for a snapshot", rc);
    q->snap = rd->snapshot;
    q->applied = rd->snapshot.end_offset;
    q->bytes_since_snapshot = 0;
    bk_quorum_snap_prune(q->pdir, rd->snapshot);
    q->env.after_apply(q->env.ctx);
    fprintf(stderr, "skiff: node %d: installed metadata snapshot at offset %" PRId64 "\n", q->env.id,
            rd->snapshot.end_offset);
}

/* Appends are written on the loop; raft may count them only once they are
 * durable. The fsync runs on the worker pool when the log allows it (one
 * job at a time; appends meanwhile are covered by the next job), so a slow
 * disk does not hold the loop past the fetch timeout. */
typedef struct {
    bk_quorum_t *q;
    int fd;
    int64_t end;
    uint64_t gen;
    int err;
} sync_job_t;

static int sync_job(void *arg) {
    sync_job_t *j = arg;
    j->err = fsync(j->fd) == 0 ? 0 : errno;
    return KP_OK;
}

static void sync_done(void *arg, int status);

static bool sync_start(bk_quorum_t *q) {
    if (!q->pool || q->closing || q->sync_want < 0) return false;
    int fd = st_log_dup_sync_fd(q->log);
    if (fd < 0) return false;
    sync_job_t *j = malloc(sizeof *j);
    if (!j) { close(fd); return false; }
    *j = (sync_job_t){ q, fd, q->sync_want, q->sync_gen, 0 };
    if (bk_net_worker_submit(q->pool, sync_job, sync_done, j) != BK_NET_OK) {
        close(fd);
        free(j);
        return false;
    }
    q->sync_busy = true;
    q->sync_want = -1;
    return true;
}

/* Makes the log durable up to `end`: true when done here (the caller steps
 * RAFT_EV_PERSISTED), false when a pool job will report it. */
static bool sync_log(bk_quorum_t *q, int64_t end) {
    q->sync_want = end;
    if (q->sync_busy || sync_start(q)) return false;
    int rc = st_log_flush(q->log);
    if (rc != KP_OK) fatal(q, "flushing the metadata log", rc);
    q->sync_want = -1;
    return true;
}

static void sync_done(void *arg, int status) {
    sync_job_t *j = arg;
    bk_quorum_t *q = j->q;
    close(j->fd);
    q->sync_busy = false;
    assert(!q->busy);
    if (status != KP_OK) { free(j); return; }   /* cancelled: the node is stopping */
    if (j->err != 0) fatal(q, "fsync of the metadata log", ST_ERR_IO);
    bool current = j->gen == q->sync_gen && !q->closing;
    int64_t end = j->end;
    free(j);
    if (current) {
        raft_event_t ev = { .type = RAFT_EV_PERSISTED };
        ev.u.persisted_end = end;
        step(q, &ev);
    } else if (!q->closing && q->sync_want < 0) {
        q->sync_want = st_log_end_offset(q->log);   /* what survived the truncation */
    }
    /* appends made while the job ran (or after a truncation) */
    int64_t want = q->sync_want;
    if (!q->sync_busy && want >= 0 && !q->closing && sync_log(q, want)) {
        raft_event_t ev = { .type = RAFT_EV_PERSISTED };
        ev.u.persisted_end = want;
        step(q, &ev);
    }
}

static int64_t persist(bk_quorum_t *q, const raft_ready_t *rd) {
    int rc;
    if (rd->snapshot_install || rd->truncate) {
        drop_view(q);   /* its entries may change */
        q->sync_gen++;  /* an fsync in flight may not cover what comes next */
    }
    if (rd->hard_state_changed && (rc = bk_quorum_state_write(q->pdir, &rd->hard_state)) != KP_OK)
        fatal(q, "writing quorum-state", rc);
    if (rd->snapshot_install) install_snapshot(q, rd);
    if (rd->truncate && rd->truncate_to < st_log_end_offset(q->log) &&
        (rc = st_log_truncate_to(q->log, rd->truncate_to)) != KP_OK)
        fatal(q, "truncating the metadata log", rc);
    int64_t appended_end = -1;
    if (rd->n_entries > 0) {
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0;
        rc = bk_quorum_rpc_entries_encode(rd->entries, rd->n_entries, &buf, &len, &cap);
        st_append_info_t info;
        if (rc == KP_OK) {
            assert(rd->entries[0].offset == st_log_end_offset(q->log));
            rc = st_log_append_replica(q->log, buf, len, now_ms(), &info);
        }
        free(buf);
        if (rc != KP_OK) fatal(q, "appending to the metadata log", rc);
        appended_end = st_log_end_offset(q->log);
    }
    if (rd->log_start_changed && rd->log_start > st_log_start_offset(q->log) &&
        rd->log_start <= st_log_end_offset(q->log) &&
        (rc = st_log_advance_start(q->log, rd->log_start)) != KP_OK)
        fprintf(stderr, "skiff: node %d: metadata log prefix not deleted: %s\n", q->env.id, st_status_str(rc));
    return appended_end;
}

static void run_done(bk_quorum_t *q) {
    while (q->ndone > 0) {
        proposal_t p = q->done_list[0];
        memmove(q->done_list, q->done_list + 1, (q->ndone - 1) * sizeof p);
        q->ndone--;
        p.done(p.arg, p.status, p.first);
    }
}

static void role_check(bk_quorum_t *q) {
    /* one election per epoch this node stood in (a pre-vote is not one) */
    if (raft_role(q->r) == RAFT_CANDIDATE && raft_epoch(q->r) != q->candidate_epoch) {
        q->candidate_epoch = raft_epoch(q->r);
        q->elections++;
    }
    bool leader = bk_quorum_is_leader(q);
    if (leader == q->was_leader) return;
    q->was_leader = leader;
    drop_view(q);
    bk_quorum_hold_forget(q->hold);   /* held ones are released: the role moved */
    fprintf(stderr, "skiff: node %d: %s the metadata quorum leader (epoch %d)\n", q->env.id,
            leader ? "became" : "is no longer", raft_epoch(q->r));
    /* a lost leadership keeps its proposals: entries of its epoch may still
     * commit; those replaced by another epoch fail in check_proposals */
    q->env.role_changed(q->env.ctx, leader);
}

/* One event through the core and the whole driver contract, then the
 * follow-up PERSISTED event, then deferred callbacks. */
static void step(bk_quorum_t *q, const raft_event_t *ev) {
    assert(!q->busy);
    raft_event_t next = *ev;
    bool more = true;
    while (more) {
        q->busy = true;
        raft_ready_t rd = raft_step(q->r, &next, now_ms());
        int64_t end = persist(q, &rd);
        raft_ready_persisted(&rd);
        send_msgs(q, &rd);
        raft_ready_sent(&rd);
        apply_committed(q, raft_high_watermark(q->r) > rd.high_watermark ? raft_high_watermark(q->r) : rd.high_watermark);
        raft_advance(q->r, &rd);
        q->busy = false;
        q->cur = NULL;   /* the request is answered by the first ready only */
        more = end >= 0 && sync_log(q, end);
        if (more) {
            memset(&next, 0, sizeof next);
            next.type = RAFT_EV_PERSISTED;
            next.u.persisted_end = end;
        }
    }
    role_check(q);
    run_done(q);
    if (!q->busy) maybe_snapshot(q);
    release_held(q);
}

/* Steps a held Fetch again; its answer (whatever it is now) goes out. */
static void restep(bk_quorum_t *q, const bk_quorum_hold_entry_t *e) {
    srv_req_t sr;
    memset(&sr, 0, sizeof sr);
    sr.slot = e->slot;
    sr.hdr.api_key = e->api_key;
    sr.hdr.api_version = e->api_version;
    sr.hdr.correlation_id = e->correlation_id;
    sr.req = e->req;
    q->cur = &sr;
    raft_event_t ev = { .type = RAFT_EV_RECV };
    ev.u.msg = &sr.req;
    step(q, &ev);
    q->cur = NULL;
    if (!sr.answered) close_slot(q, e->slot);
}

/* Answers held Fetches whose wait is over or whose leader state moved (all
 * of them when peer < 0), else only `peer`'s (a newer Fetch of it came). */
static void release(bk_quorum_t *q, int32_t peer) {
    if (q->releasing || q->busy || q->closing || q->hold->n == 0) return;
    q->releasing = true;
    bk_quorum_hold_entry_t e;
    while (peer >= 0 ? bk_quorum_hold_take_peer(q->hold, peer, &e)
                     : bk_quorum_hold_take_due(q->hold, now_ms(), raft_log_end(q->r), raft_high_watermark(q->r),
                                         raft_epoch(q->r), bk_quorum_is_leader(q), &e))
        restep(q, &e);
    q->releasing = false;
}

static void release_held(bk_quorum_t *q) { release(q, -1); }

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    bk_quorum_t *q = arg;
    if (q->busy || q->closing) return;
    raft_event_t ev = { .type = RAFT_EV_TICK };
    step(q, &ev);
}

void bk_quorum_propose(bk_quorum_t *q, const bk_meta_recs_t *recs, bk_quorum_done_fn done, void *arg) {
    assert(!q->busy);
    if (recs->err != KP_OK) { done(arg, recs->err, -1); return; }
    if (!bk_quorum_is_leader(q) || q->closing) { done(arg, BK_QUORUM_NOT_LEADER, -1); return; }
    if (recs->n == 0) { done(arg, KP_OK, raft_log_end(q->r)); return; }
    if (recs->n > UINT32_MAX || q->nprops >= BK_QUORUM_PENDING_MAX) { done(arg, RAFT_ERR_TOO_MANY, -1); return; }
    if (q->nprops == q->capprops) {
        size_t nc = q->capprops ? q->capprops * 2 : 16;
        proposal_t *np = realloc(q->props, nc * sizeof *np);
        if (!np) { done(arg, KP_ERR_NOMEM, -1); return; }
        q->props = np;
        q->capprops = nc;
    }
    const uint8_t **data = malloc(recs->n * sizeof *data);
    uint32_t *lens = malloc(recs->n * sizeof *lens);
    if (!data || !lens) { free(data); free(lens); done(arg, KP_ERR_NOMEM, -1); return; }
    for (size_t i = 0; i < recs->n; i++) {
        data[i] = recs->v[i].data;
        lens[i] = (uint32_t)recs->v[i].len;
    }
    raft_event_t ev = { .type = RAFT_EV_PROPOSE };
    ev.u.propose.data = data;
    ev.u.propose.len = lens;
    ev.u.propose.n = (uint32_t)recs->n;
    /* step by hand: the proposal must be queued before its entries can
     * commit within the same step loop */
    q->busy = true;
    raft_ready_t rd = raft_step(q->r, &ev, now_ms());
    free(data);
    free(lens);
    if (rd.status == RAFT_OK) {
        proposal_t p = { rd.propose_first_offset, rd.propose_last_offset, raft_epoch(q->r), KP_OK, done, arg };
        q->props[q->nprops++] = p;
    }
    int64_t end = persist(q, &rd);
    raft_ready_persisted(&rd);
    send_msgs(q, &rd);
    raft_ready_sent(&rd);
    apply_committed(q, rd.high_watermark);
    raft_advance(q->r, &rd);
    q->busy = false;
    if (rd.status != RAFT_OK) done(arg, rd.status, -1);
    if (end >= 0 && sync_log(q, end)) {
        raft_event_t pe = { .type = RAFT_EV_PERSISTED };
        pe.u.persisted_end = end;
        step(q, &pe);
    } else {
        run_done(q);
        release_held(q);   /* the log end moved: held Fetches get the entries */
    }
}

void bk_quorum_resign(bk_quorum_t *q) {
    if (!bk_quorum_is_leader(q) || q->busy) return;
    raft_event_t ev = { .type = RAFT_EV_RESIGN };
    step(q, &ev);
    /* the process may exit before the loop runs again */
    for (size_t i = 0; i < q->npeers; i++) bk_net_qc_flush(q->peers[i], 100);
    fprintf(stderr, "skiff: node %d: resigned as metadata quorum leader\n", q->env.id);
}

/* ---- the controller listener ----------------------------------------------------- */

static void on_frame(bk_net_conn_t *conn, const uint8_t *frame, size_t len, void *ctx) {
    bk_quorum_t *q = ctx;
    kp_arena_t a;
    kp_arena_init(&a, len * 4 + 65536);
    srv_req_t sr;
    memset(&sr, 0, sizeof sr);
    int rc = bk_quorum_rpc_decode_request_wait(frame, len, q->env.id, &a, &sr.hdr, &sr.req, &sr.max_wait_ms);
    if (rc == KP_ERR_UNSUPPORTED) {
        kp_arena_free(&a);
        q->env.serve(q->env.ctx, conn, frame, len);
        return;
    }
    if (rc != KP_OK || q->busy || q->closing) {
        if (trace_on()) fprintf(stderr, "raft %d: request refused (%s%s%s)\n", q->env.id, kp_status_str(rc),
                                q->busy ? ", busy" : "", q->closing ? ", closing" : "");
        kp_arena_free(&a);
        bk_net_conn_close(conn);
        return;
    }
    sr.conn = conn;
    sr.slot = bk_net_conn_slot(conn);
    sr.may_hold = true;
    trace(q, "recv-req", &sr.req);
    if (sr.req.type == RAFT_MSG_FETCH_REQ) release(q, sr.req.from);   /* superseded: answered first */
    q->cur = &sr;
    raft_event_t ev = { .type = RAFT_EV_RECV };
    ev.u.msg = &sr.req;
    step(q, &ev);
    q->cur = NULL;
    if (!sr.answered) {
        if (trace_on()) fprintf(stderr, "raft %d: no answer to %s from %d: closing\n", q->env.id,
                                raft_msg_type_str(sr.req.type), sr.req.from);
        bk_net_conn_close(conn);
    }
    kp_arena_free(&a);
}

static void on_peer_response(void *ctx, int32_t peer_id, const bk_net_qc_pending_t *p, const uint8_t *frame, size_t len) {
    bk_quorum_t *q = ctx;
    if (p->kind != BK_NET_QC_RAFT) {
        q->env.on_response(q->env.ctx, p->kind, p->corr, frame, len);
        return;
    }
    if (q->closing) return;   /* peers are being freed: no peer_index */
    size_t pi = peer_index(q, peer_id);
    bool fetch = p->req.type == RAFT_MSG_FETCH_REQ;
    if (fetch && pi < q->npeers && q->fetch_out[pi] && q->fetch_out_corr[pi] == p->corr) q->fetch_out[pi] = false;
    if (!frame || q->busy) return;   /* lost: raft re-sends on its timers */
    kp_arena_t a;
    kp_arena_init(&a, len * 4 + 65536);
    raft_msg_t m;
    int32_t corr = 0;
    int rc = bk_quorum_rpc_decode_response(&p->req, frame, len, &a, &corr, &m);
    if (rc == KP_OK && corr == p->corr) {
        trace(q, "recv-resp", &m);
        raft_event_t ev = { .type = RAFT_EV_RECV };
        ev.u.msg = &m;
        step(q, &ev);
        uint64_t seq = (uint64_t)(uintptr_t)p->arg;
        if (fetch && m.error == 0 && seq > q->fetch_answered_seq) q->fetch_answered_seq = seq;
    } else {
        fprintf(stderr, "skiff: node %d: bad raft response from node %d (%s)\n", q->env.id, peer_id,
                rc == KP_OK ? "correlation id" : kp_status_str(rc));
    }
    kp_arena_free(&a);
}

bk_net_t *bk_quorum_net(bk_quorum_t *q) { return q->srv; }

uint64_t bk_quorum_fetch_prompt(bk_quorum_t *q) {
    uint64_t mark = q->fetch_sent_seq + 1;
    if (q->prompt_upto_seq < mark) q->prompt_upto_seq = mark;
    return mark;
}

uint64_t bk_quorum_fetch_answered(const bk_quorum_t *q) { return q->fetch_answered_seq; }
uint64_t bk_quorum_fetches_held(const bk_quorum_t *q) { return q->hold->held_total; }

int32_t bk_quorum_corr(bk_quorum_t *q) {
    int32_t l = bk_quorum_leader(q);
    for (size_t i = 0; i < q->npeers; i++)
        if (bk_net_qc_id(q->lpeers[i]) == l) return bk_net_qc_next_corr(q->lpeers[i]);
    return 0;
}

int bk_quorum_send_to_leader(bk_quorum_t *q, int kind, const uint8_t *frame, size_t len, int32_t corr) {
    int32_t l = bk_quorum_leader(q);
    for (size_t i = 0; i < q->npeers; i++) {
        if (bk_net_qc_id(q->lpeers[i]) != l) continue;
        bk_net_qc_pending_t pend;
        memset(&pend, 0, sizeof pend);
        pend.kind = (bk_net_qc_kind_t)kind;
        pend.corr = corr;
        /* unanswered within a few heartbeat intervals, well inside the
         * session: the connection is cut and the lifecycle re-sends */
        int64_t session_ms = bk_cfg_int(q->env.cfg, BK_CFG_BROKER_SESSION_TIMEOUT_MS);
        pend.timeout_ms = (int32_t)(session_ms / 2 < BK_NET_QC_CONTROL_TIMEOUT_MS ? session_ms / 2 : BK_NET_QC_CONTROL_TIMEOUT_MS);
        if (pend.timeout_ms < 1) pend.timeout_ms = 1;
        return bk_net_qc_send(q->lpeers[i], frame, len, &pend, now_ms());
    }
    return -1;
}

/* ---- open / close ---------------------------------------------------------------------- */

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

typedef struct {
    kp_arena_t *a;
    raft_entry_t *all;
    size_t cnt, cap;
} entries_t;

static int entries_chunk(void *ctx, const uint8_t *chunk, size_t len) {
    entries_t *es = ctx;
    uint8_t *copy = kp_arena_alloc(es->a, len);   /* entries point into it */
    if (!copy) return KP_ERR_NOMEM;
    memcpy(copy, chunk, len);
    raft_entry_t *e = NULL;
    uint32_t k = 0;
    int rc = bk_quorum_rpc_entries_decode(copy, len, es->a, &e, &k);
    if (rc != KP_OK) return rc;
    if (es->cnt + k > es->cap) {
        size_t nc = es->cap ? es->cap * 2 : 1024;
        while (nc < es->cnt + k) nc *= 2;
        raft_entry_t *na = realloc(es->all, nc * sizeof *na);
        if (!na) return KP_ERR_NOMEM;
        es->all = na;
        es->cap = nc;
    }
    memcpy(es->all + es->cnt, e, k * sizeof *e);
    es->cnt += k;
    return KP_OK;
}

/* Reads the durable log (from its start) into entries for raft_new. One
 * entry is at most 1 MiB + batch framing, so a 4 MiB chunk always holds a
 * whole batch (never grown). */
static int read_entries(bk_quorum_t *q, kp_arena_t *a, raft_entry_t **out, size_t *n) {
    entries_t es = { a, NULL, 0, 0 };
    int rc = st_log_scan(q->log, 4u << 20, 4u << 20, entries_chunk, &es);
    if (rc != KP_OK) { free(es.all); return rc; }
    *out = es.all;
    *n = es.cnt;
    return KP_OK;
}

static int build_core(bk_quorum_t *q, char *err, size_t len) {
    char why[512];
    raft_hard_state_t hs;
    if (bk_quorum_state_read(q->pdir, &hs, why, sizeof why) != KP_OK) return fail(err, len, "%s", why);
    raft_snapshot_id_t sid;
    uint8_t *sdata = NULL;
    size_t slen = 0;
    int rc = bk_quorum_snap_load_latest(q->pdir, &sid, &sdata, &slen);
    if (rc != KP_OK) return fail(err, len, "%s: metadata snapshot unreadable: %s", q->pdir, st_status_str(rc));
    if (sid.end_offset > 0) {
        if (bk_meta_image_load(q->env.img, sdata, slen) != KP_OK) {
            free(sdata);
            return fail(err, len, "%s: metadata snapshot at %" PRId64 " does not load", q->pdir, sid.end_offset);
        }
        q->snap = sid;
        q->applied = sid.end_offset;
        /* the log before the snapshot is not needed; entries must start at its end */
        if (st_log_start_offset(q->log) < sid.end_offset && st_log_end_offset(q->log) >= sid.end_offset)
            if (st_log_advance_start(q->log, sid.end_offset) != KP_OK)
                fprintf(stderr, "skiff: node %d: metadata log prefix below the snapshot kept\n", q->env.id);
        if (st_log_end_offset(q->log) < sid.end_offset &&
            st_log_truncate_fully(q->log, sid.end_offset, now_ms()) != KP_OK)
            return fail(err, len, "%s: cannot restart the log at the snapshot", q->pdir);
    }
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 30);
    raft_entry_t *e = NULL;
    size_t n = 0;
    rc = read_entries(q, &a, &e, &n);
    /* entries before the snapshot end (log start inside a segment) are skipped */
    size_t skip = 0;
    while (skip < n && e[skip].offset < sid.end_offset) skip++;
    if (rc == KP_OK) {
        raft_config_t rc_cfg;
        raft_config_default(&rc_cfg);
        rc_cfg.node_id = q->env.id;
        size_t cid_len = strlen(q->env.cluster_id);
        if (cid_len > RAFT_CLUSTER_ID_MAX) {
            free(e);
            kp_arena_free(&a);
            free(sdata);
            return fail(err, len, "cluster id '%s' is longer than %d bytes", q->env.cluster_id, RAFT_CLUSTER_ID_MAX);
        }
        memcpy(rc_cfg.cluster_id, q->env.cluster_id, cid_len + 1);
        size_t nv = 0;
        const bk_cfg_voter_t *v = bk_cfg_voters(q->env.cfg, &nv);
        for (size_t i = 0; i < nv && i < RAFT_VOTERS_MAX; i++) rc_cfg.voters[rc_cfg.n_voters++] = v[i].id;
        rc_cfg.election_timeout_ms = bk_cfg_int(q->env.cfg, BK_CFG_CONTROLLER_QUORUM_ELECTION_TIMEOUT_MS);
        rc_cfg.fetch_timeout_ms = bk_cfg_int(q->env.cfg, BK_CFG_CONTROLLER_QUORUM_FETCH_TIMEOUT_MS);
        rc_cfg.pending_entries_max = 1u << 20;
        /* after an empty answer the follower asks again after this; the
         * leader holds a Fetch while it has nothing new (quorum_hold.h) */
        rc_cfg.fetch_interval_ms = BK_QUORUM_FETCH_INTERVAL_MS;
        uint64_t seed = 0;
        if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed = (uint64_t)now_ms();
        rc_cfg.seed = seed;
        q->r = raft_new(&rc_cfg, &hs, sid.end_offset > 0 ? &sid : NULL, sdata, (uint32_t)slen, e + skip, n - skip,
                        now_ms());
    }
    free(e);
    kp_arena_free(&a);
    free(sdata);
    if (rc != KP_OK) return fail(err, len, "%s: metadata log unreadable: %s", q->pdir, st_status_str(rc));
    if (!q->r && hs.epoch > RAFT_EPOCH_MAX)
        return fail(err, len, "%s: quorum-state epoch %" PRId32 " is beyond %d, after which no election can follow; "
                    "remove quorum-state on every voter to restart elections", q->pdir, hs.epoch, RAFT_EPOCH_MAX);
    if (!q->r) return fail(err, len, "%s: the raft state could not be rebuilt (invalid log or quorum-state)", q->pdir);
    return 0;
}

static int start_network(bk_quorum_t *q, char *err, size_t len) {
    const bk_quorum_env_t *n = &q->env;
    size_t nv = 0;
    const bk_cfg_voter_t *v = bk_cfg_voters(n->cfg, &nv);
    for (size_t i = 0; i < nv && q->npeers < RAFT_VOTERS_MAX; i++) {
        if (v[i].id == n->id) continue;
        q->peers[q->npeers] = bk_net_qc_new(n->base, v[i].id, v[i].host, v[i].port, on_peer_response, q);
        q->lpeers[q->npeers] = bk_net_qc_new(n->base, v[i].id, v[i].host, v[i].port, on_peer_response, q);
        if (!q->peers[q->npeers] || !q->lpeers[q->npeers]) {
            bk_net_qc_free(q->peers[q->npeers]);
            bk_net_qc_free(q->lpeers[q->npeers]);
            return fail(err, len, "out of memory");
        }
        q->npeers++;
    }
    bk_net_config_t nc;
    bk_net_config_default(&nc);
    nc.on_frame = on_frame;
    nc.ctx = q;
    q->srv = bk_net_new(n->base, &nc);
    if (!q->srv) return fail(err, len, "cannot create the controller listener");
    size_t nl = 0;
    const bk_cfg_listener_t *ls = bk_cfg_listeners(n->cfg, &nl);
    for (size_t i = 0; i < nl; i++) {
        if (!ls[i].controller) continue;
        const char *host = ls[i].host[0] ? ls[i].host : "0.0.0.0";
        if (ls[i].security == BK_CFG_SEC_SSL || ls[i].security == BK_CFG_SEC_SASL_SSL)
            return fail(err, len, "controller listener %s: %s is not served yet", ls[i].name,
                        bk_cfg_security_name(ls[i].security));
        bk_net_listener_config_t lc = { .name = ls[i].name, .host = host, .port = ls[i].port,
                                        .security = (bk_net_security_t)ls[i].security, .tls = NULL };
        if (bk_net_listen_on(q->srv, &lc, NULL) != BK_NET_OK)
            return fail(err, len, "controller listener %s:%u: cannot listen: %s", host, ls[i].port, strerror(errno));
    }
    q->timer = event_new(n->base, -1, EV_PERSIST, on_timer, q);
    struct timeval tv = { 0, BK_QUORUM_TICK_MS * 1000 };
    if (!q->timer || event_add(q->timer, &tv) != 0) return fail(err, len, "cannot start the raft timer");
    return 0;
}

bk_quorum_t *bk_quorum_open(const bk_quorum_env_t *env, const st_logdir_t *ld, char *err, size_t err_len) {
    assert(env->base && env->cfg && env->img && env->cluster_id);
    assert(env->after_apply && env->role_changed && env->serve && env->on_response);
    bk_quorum_t *q = calloc(1, sizeof *q);
    if (!q) { fail(err, err_len, "out of memory"); return NULL; }
    q->env = *env;
    const bk_quorum_env_t *n = &q->env;
    q->sync_want = -1;
    q->candidate_epoch = -1;
    q->hold = calloc(1, sizeof *q->hold);
    if (!q->hold) { fail(err, err_len, "out of memory"); free(q); return NULL; }
    int64_t wait = bk_quorum_hold_wait_ms(bk_cfg_int(n->cfg, BK_CFG_CONTROLLER_QUORUM_FETCH_TIMEOUT_MS),
                                    bk_cfg_int(n->cfg, BK_CFG_CONTROLLER_QUORUM_REQUEST_TIMEOUT_MS));
    bk_quorum_hold_init(q->hold, wait);
    q->fetch_wait_ms = (int32_t)wait;
    snprintf(q->pdir, sizeof q->pdir, "%s/%s-0", ld->path, BK_META_TOPIC);
    q->snapshot_every_bytes = bk_cfg_int(n->cfg, BK_CFG_METADATA_LOG_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS);
    st_log_config_t lc;
    st_log_config_default(&lc);
    lc.retention_ms = -1;   /* the raft layer decides what to delete (snapshots) */
    st_log_open_opts_t opts;
    st_logdir_opts_for(ld, BK_META_TOPIC, 0, now_ms(), &opts);
    opts.create = true;
    int rc = st_log_open(ld->path, BK_META_TOPIC, 0, &lc, &opts, &q->log);
    if (rc != KP_OK) {
        fail(err, err_len, "%s: cannot open the metadata log: %s", q->pdir, st_status_str(rc));
        free(q);
        return NULL;
    }
    if (build_core(q, err, err_len) != 0 || start_network(q, err, err_len) != 0) {
        (void)bk_quorum_close(q, NULL);
        return NULL;
    }
    return q;
}

void bk_quorum_set_pool(bk_quorum_t *q, bk_net_worker_pool_t *pool) { q->pool = pool; }

int bk_quorum_close(bk_quorum_t *q, st_log_offsets_t *final) {
    if (!q) return KP_OK;
    q->closing = true;
    if (q->timer) event_free(q->timer);
    for (size_t i = 0; i < q->npeers; i++) {
        bk_net_qc_free(q->peers[i]);
        bk_net_qc_free(q->lpeers[i]);
    }
    if (q->srv) bk_net_free(q->srv);
    while (q->nprops > 0) finish_proposal(q, BK_QUORUM_NOT_LEADER);
    run_done(q);
    int rc = KP_OK;
    if (q->log) {
        if (q->r) st_log_set_high_watermark(q->log, raft_high_watermark(q->r));
        rc = st_log_close(q->log, final);
    }
    drop_view(q);
    if (q->r) raft_free(q->r);
    free(q->hold);
    free(q->props);
    free(q->done_list);
    free(q);
    return rc;
}
