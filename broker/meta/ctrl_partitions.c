/* ctrl_partitions.c — leader elections, AlterPartition (ISR changes) and
 * partition reassignments. */
#include "broker/meta/controller.h"
#include "broker/meta/ctrl_internal.h"

#include <string.h>

#include "protocol/kp_errors.h"

static const bk_meta_ids_t no_ids = { 0 };

/* a minus b, in a's order */
static bk_meta_ids_t ids_minus(const bk_meta_ids_t *a, const bk_meta_ids_t *b) {
    bk_meta_ids_t r = { 0 };
    for (int32_t i = 0; i < a->n; i++)
        if (!bk_meta_ids_has(b, a->v[i])) bk_meta_ids_add(&r, a->v[i]);
    return r;
}

/* a intersected with b, in a's order */
static bk_meta_ids_t ids_and(const bk_meta_ids_t *a, const bk_meta_ids_t *b) {
    bk_meta_ids_t r = { 0 };
    for (int32_t i = 0; i < a->n; i++)
        if (bk_meta_ids_has(b, a->v[i])) bk_meta_ids_add(&r, a->v[i]);
    return r;
}

static const bk_meta_partition_t *find(const bk_meta_image_t *img, const char *topic, int32_t partition,
                                  const bk_meta_topic_t **t) {
    *t = topic ? bk_meta_image_topic_by_name(img, topic) : NULL;
    if (!*t || partition < 0 || partition >= (*t)->nparts) return NULL;
    return &(*t)->parts[partition];
}

/* ---- elections ------------------------------------------------------------- */

static KP_MUST_CHECK int emit_leader(bk_meta_recs_t *out, const bk_meta_topic_t *t, const bk_meta_partition_t *p,
                                     int32_t leader, const bk_meta_ids_t *isr) {
    pchange_t ch = { .has_leader = true, .leader = leader,
                     .isr = bk_meta_ids_equal(isr, &p->isr) ? NULL : isr };
    return ctrl_emit_change(out, &t->id, p->id, &ch);
}

int16_t bk_meta_ctrl_elect(bk_meta_ctrl_t *c, const bk_meta_image_t *img, bk_meta_elect_type_t type,
                      const char *topic, int32_t partition, bk_meta_recs_t *out) {
    const bk_meta_topic_t *t;
    const bk_meta_partition_t *p = find(img, topic, partition, &t);
    if (!p) return KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
    if (type == BK_META_ELECT_PREFERRED) {
        int32_t pref = p->replicas.v[0];
        if (p->leader == pref) return KP_ERROR_ELECTION_NOT_NEEDED;
        if (!bk_meta_ids_has(&p->isr, pref) || !bk_meta_image_broker_usable(img, pref))
            return KP_ERROR_PREFERRED_LEADER_NOT_AVAILABLE;
        return emit_leader(out, t, p, pref, &p->isr) == KP_OK ? KP_ERROR_NONE : KP_ERROR_UNKNOWN_SERVER_ERROR;
    }
    if (type != BK_META_ELECT_UNCLEAN) return KP_ERROR_INVALID_REQUEST;
    if (p->leader != -1) return KP_ERROR_ELECTION_NOT_NEEDED;
    bk_meta_ids_t isr;
    int32_t leader = ctrl_elect_from(img, &p->replicas, &p->isr, NULL, true, &isr);
    if (leader < 0) return KP_ERROR_ELIGIBLE_LEADERS_NOT_AVAILABLE;
    return emit_leader(out, t, p, leader, &isr) == KP_OK ? KP_ERROR_NONE : KP_ERROR_UNKNOWN_SERVER_ERROR;
}

/* Kafka's trigger: a broker whose share of "preferred but not leading"
 * partitions exceeds leader_imbalance_pct gets its leaderships back.
 * O(partitions); counters per registered broker, indexed like img->brokers. */
static bool imbalanced(const bk_meta_ctrl_t *c, const bk_meta_image_t *img, int32_t broker,
                       const int32_t *preferred, const int32_t *not_led) {
    const bk_meta_broker_t *b = bk_meta_image_broker(img, broker);
    if (!b) return false;
    size_t k = (size_t)(b - img->brokers);
    return preferred[k] > 0 &&
           (int64_t)not_led[k] * 100 > (int64_t)c->cfg.leader_imbalance_pct * preferred[k];
}

size_t bk_meta_ctrl_rebalance(bk_meta_ctrl_t *c, const bk_meta_image_t *img, bk_meta_recs_t *out) {
    int32_t preferred[BK_META_BROKERS_MAX] = { 0 }, not_led[BK_META_BROKERS_MAX] = { 0 };
    for (size_t i = 0; i < img->ntopics; i++) {
        const bk_meta_topic_t *t = img->by_name[i];
        for (int32_t j = 0; j < t->nparts; j++) {
            const bk_meta_partition_t *p = &t->parts[j];
            const bk_meta_broker_t *b = bk_meta_image_broker(img, p->replicas.v[0]);
            if (!b) continue;
            preferred[b - img->brokers]++;
            not_led[b - img->brokers] += p->leader != b->id;
        }
    }
    size_t moved = 0;
    for (size_t i = 0; i < img->ntopics; i++) {
        const bk_meta_topic_t *t = img->by_name[i];
        for (int32_t j = 0; j < t->nparts; j++) {
            const bk_meta_partition_t *p = &t->parts[j];
            int32_t pref = p->replicas.v[0];
            if (p->leader == pref || !bk_meta_ids_has(&p->isr, pref) || !bk_meta_image_broker_usable(img, pref))
                continue;
            if (!imbalanced(c, img, pref, preferred, not_led)) continue;
            if (emit_leader(out, t, p, pref, &p->isr) != KP_OK) return moved;   /* refused whole by the commit */
            moved++;
        }
    }
    return moved;
}

/* ---- the state after a replica/ISR change ---------------------------------- */

typedef struct {
    bk_meta_ids_t replicas, adding, removing, isr;
    int32_t leader;
} pstate_t;

/* Completes a reassignment whose target replicas are all in the ISR. */
static void maybe_complete(pstate_t *s) {
    if (s->adding.n == 0 && s->removing.n == 0) return;
    bk_meta_ids_t target = ids_minus(&s->replicas, &s->removing);
    for (int32_t i = 0; i < target.n; i++)
        if (!bk_meta_ids_has(&s->isr, target.v[i])) return;
    s->replicas = target;
    s->isr = ids_and(&s->isr, &target);
    s->adding = no_ids;
    s->removing = no_ids;
}

/* Picks the leader for the new state (keeps the current one when it is still
 * an alive ISR member) and emits the change; fills the result state.
 * KP_OK, or the list's error (the change is not in it). */
static KP_MUST_CHECK int emit_state(const bk_meta_ctrl_t *c, const bk_meta_image_t *img, const bk_meta_topic_t *t,
                       const bk_meta_partition_t *p, pstate_t *s, bk_meta_recs_t *out) {
    s->leader = p->leader;
    if (s->leader == -1 || !bk_meta_ids_has(&s->isr, s->leader) || !ctrl_alive(img, NULL, s->leader)) {
        bk_meta_ids_t isr = s->isr;
        s->leader = ctrl_elect_from(img, &s->replicas, &isr, NULL, ctrl_unclean(c, img, t), &s->isr);
    }
    bool reps = !bk_meta_ids_equal(&s->replicas, &p->replicas) || !bk_meta_ids_equal(&s->adding, &p->adding) ||
                !bk_meta_ids_equal(&s->removing, &p->removing);
    pchange_t ch = { .has_leader = s->leader != p->leader, .leader = s->leader, .isr = &s->isr };
    if (reps) {
        ch.replicas = &s->replicas;
        ch.adding = &s->adding;
        ch.removing = &s->removing;
    }
    return ctrl_emit_change(out, &t->id, p->id, &ch);
}

/* ---- AlterPartition -------------------------------------------------------- */

static int16_t check_new_isr(const bk_meta_image_t *img, const bk_meta_partition_t *p,
                             const bk_meta_ctrl_alter_partition_t *req, bk_meta_ids_t *isr) {
    if (req->nisr == 0 || req->nisr > BK_META_REPLICAS_MAX || !req->new_isr)
        return KP_ERROR_INVALID_REQUEST;
    isr->n = 0;
    for (size_t i = 0; i < req->nisr; i++) {
        int32_t b = req->new_isr[i];
        if (bk_meta_ids_has(isr, b)) return KP_ERROR_INVALID_REQUEST;
        if (!bk_meta_ids_has(&p->replicas, b) || !bk_meta_image_broker_usable(img, b))
            return KP_ERROR_INELIGIBLE_REPLICA;
        bk_meta_ids_add(isr, b);
    }
    return bk_meta_ids_has(isr, p->leader) ? KP_ERROR_NONE : KP_ERROR_INVALID_REQUEST;
}

void bk_meta_ctrl_alter_partition(bk_meta_ctrl_t *c, const bk_meta_image_t *img,
                             const bk_meta_ctrl_alter_partition_t *req, bk_meta_recs_t *out,
                             bk_meta_ctrl_alter_partition_result_t *res) {
    memset(res, 0, sizeof *res);
    res->leader = -1;
    const bk_meta_broker_t *b = bk_meta_image_broker(img, req->broker_id);
    if (!b || b->epoch != req->broker_epoch) { res->error = KP_ERROR_STALE_BROKER_EPOCH; return; }
    const bk_meta_topic_t *t = bk_meta_image_topic_by_id(img, &req->topic_id);
    if (!t) { res->error = KP_ERROR_UNKNOWN_TOPIC_ID; return; }
    if (req->partition < 0 || req->partition >= t->nparts) {
        res->error = KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    const bk_meta_partition_t *p = &t->parts[req->partition];
    /* a stale leader is told about the epoch first: it is no longer leader
     * because of that epoch */
    if (req->leader_epoch != p->leader_epoch) { res->error = KP_ERROR_FENCED_LEADER_EPOCH; return; }
    if (req->broker_id != p->leader) { res->error = KP_ERROR_NOT_LEADER_OR_FOLLOWER; return; }
    if (req->partition_epoch != p->partition_epoch) {
        res->error = KP_ERROR_INVALID_UPDATE_VERSION;
        return;
    }
    pstate_t s = { p->replicas, p->adding, p->removing, { 0 }, p->leader };
    res->error = check_new_isr(img, p, req, &s.isr);
    if (res->error) return;
    maybe_complete(&s);
    if (emit_state(c, img, t, p, &s, out) != KP_OK) {
        res->error = KP_ERROR_UNKNOWN_SERVER_ERROR;
        return;
    }
    res->leader = s.leader;
    res->leader_epoch = p->leader_epoch + (s.leader != p->leader);
    res->partition_epoch = p->partition_epoch + 1;
    res->isr = s.isr;
}

/* ---- reassignments --------------------------------------------------------- */

static int16_t check_target(const bk_meta_image_t *img, const bk_meta_ctrl_reassign_t *req, bk_meta_ids_t *target) {
    if (req->nreplicas == 0 || req->nreplicas > BK_META_REPLICAS_MAX) return KP_ERROR_INVALID_REPLICA_ASSIGNMENT;
    target->n = 0;
    for (size_t i = 0; i < req->nreplicas; i++) {
        int32_t b = req->replicas[i];
        if (bk_meta_ids_has(target, b) || !bk_meta_image_broker(img, b))
            return KP_ERROR_INVALID_REPLICA_ASSIGNMENT;
        bk_meta_ids_add(target, b);
    }
    return KP_ERROR_NONE;
}

int16_t bk_meta_ctrl_reassign(bk_meta_ctrl_t *c, const bk_meta_image_t *img, const bk_meta_ctrl_reassign_t *req,
                         bk_meta_recs_t *out) {
    const bk_meta_topic_t *t;
    const bk_meta_partition_t *p = find(img, req->topic, req->partition, &t);
    if (!p) return KP_ERROR_UNKNOWN_TOPIC_OR_PARTITION;
    bool in_progress = p->adding.n > 0 || p->removing.n > 0;
    bk_meta_ids_t orig = ids_minus(&p->replicas, &p->adding);
    bk_meta_ids_t target;
    if (!req->replicas) {
        if (!in_progress) return KP_ERROR_NO_REASSIGNMENT_IN_PROGRESS;
        target = orig;
    } else {
        int16_t err = check_target(img, req, &target);
        if (err) return err;
    }
    pstate_t s;
    s.adding = ids_minus(&target, &orig);
    s.removing = ids_minus(&orig, &target);
    if (target.n + s.removing.n > BK_META_REPLICAS_MAX) return KP_ERROR_INVALID_REPLICA_ASSIGNMENT;
    s.replicas = target;
    for (int32_t i = 0; i < s.removing.n; i++) bk_meta_ids_add(&s.replicas, s.removing.v[i]);
    s.isr = ids_and(&p->isr, &s.replicas);
    if (s.adding.n == 0 && s.removing.n == 0 && bk_meta_ids_equal(&s.replicas, &p->replicas) &&
        bk_meta_ids_equal(&s.isr, &p->isr) && !in_progress)
        return KP_ERROR_NONE;       /* already the assignment: nothing to write */
    maybe_complete(&s);
    return emit_state(c, img, t, p, &s, out) == KP_OK ? KP_ERROR_NONE : KP_ERROR_UNKNOWN_SERVER_ERROR;
}
