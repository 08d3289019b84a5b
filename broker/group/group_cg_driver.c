/* broker/group/group_cg_driver.c — the KIP-848 APIs on the driver:
 * ConsumerGroupHeartbeat (core call, records appended and replicated
 * before the answer, like a commit) and ConsumerGroupDescribe (a read),
 * and the image's topics as the cores take them.
 *
 * Memory: the heartbeat's owned partitions are flattened into one array
 * sized by the decoded request (bytes that arrived), freed before the entry
 * returns; the topics view is rebuilt only when the image moved
 * (O(topics)), its names pointing into the image (valid until the next
 * metadata commit, which moves last_offset and so rebuilds it first). */
#include "broker/group/group_driver_int.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/kp_errors.h"

static size_t cnt(int32_t c) { return c > 0 ? (size_t)c : 0; }

bk_grp_cg_topics_t bk_gd_cg_topics(bk_grp_gd_t *gd) {
    const bk_meta_image_t *img = &gd->node->img;
    if (gd->cg_topics_at != img->last_offset || (img->ntopics && !gd->cg_topics)) {
        bk_grp_cg_topic_t *v = calloc(img->ntopics ? img->ntopics : 1, sizeof *v);
        if (v) {
            for (size_t i = 0; i < img->ntopics; i++) {
                const bk_meta_topic_t *t = img->by_name[i];
                v[i].name = kp_slice_cstr(t->name);
                memcpy(v[i].id.b, t->id.b, sizeof v[i].id.b);
                v[i].nparts = t->nparts;
            }
            free(gd->cg_topics);
            gd->cg_topics = v;
            gd->ncg_topics = img->ntopics;
            gd->cg_topics_at = img->last_offset;
        }
    }
    bk_grp_cg_topics_t r = { gd->cg_topics, gd->cg_topics ? gd->ncg_topics : 0, gd->cg_topics_at };
    return r;
}

void bk_gd_cg_topics_free(bk_grp_gd_t *gd) {
    free(gd->cg_topics);
    gd->cg_topics = NULL;
    gd->ncg_topics = 0;
}

void bk_grp_gd_cg_heartbeat(bk_grp_gd_t *gd, const kp_consumer_group_heartbeat_request_t *q, int16_t version,
                            kp_str_t client_id, kp_str_t client_host, bk_grp_gd_done_fn done, void *arg) {
    kp_str_t gid = q->group_id;
    bk_grp_gd_result_t res = { 0 };
    bk_grp_coord_t *c = bk_grp_gd_coord(gd, gid, &res.error);
    if (!c) { done(arg, &res); return; }
    size_t nowned = 0;
    for (size_t i = 0; i < cnt(q->topic_partitions.count); i++) nowned += cnt(q->topic_partitions.items[i].partitions.count);
    /* past the core's bound the list is refused unread (INVALID_REQUEST):
     * not flattened, so a huge request costs no copy of it */
    bool too_many = nowned > BK_GRP_CG_PARTS_MAX;
    bk_grp_cg_tp_t *owned = too_many ? NULL : calloc(nowned ? nowned : 1, sizeof *owned);
    if (!owned && !too_many) { res.unsent = "out of memory"; done(arg, &res); return; }
    size_t k = 0;
    for (size_t i = 0; !too_many && i < cnt(q->topic_partitions.count); i++) {
        const kp_consumer_group_heartbeat_request_topic_partitions_t *t = &q->topic_partitions.items[i];
        for (size_t j = 0; j < cnt(t->partitions.count); j++) {
            owned[k].topic = t->topic_id;
            owned[k++].partition = t->partitions.items[j];
        }
    }
    bk_grp_cg_hb_t h;
    memset(&h, 0, sizeof h);
    h.group_id = gid;
    h.member_id = q->member_id;
    h.member_epoch = q->member_epoch;
    h.instance_id = q->instance_id;
    h.rack_id = q->rack_id;
    h.rebalance_timeout_ms = q->rebalance_timeout_ms;
    h.topics = q->subscribed_topic_names.items;
    h.ntopics = q->subscribed_topic_names.count;
    h.regex = version >= 1 ? q->subscribed_topic_regex : kp_slice_null();
    h.assignor = q->server_assignor;
    h.owned = owned;
    h.nowned = q->topic_partitions.count < 0 ? -1 : too_many ? BK_GRP_CG_PARTS_MAX + 1 : (int32_t)nowned;
    h.client_id = client_id;
    h.client_host = client_host;
    bk_grp_cg_topics_t topics = bk_gd_cg_topics(gd);
    bk_grp_out_t out;
    bk_grp_out_init(&out);
    bk_grp_cg_hb_resp_t hr;
    bk_grp_cg_heartbeat(c, &h, &topics, bk_net_now_ms(), &out, &hr);
    free(owned);
    /* the answer's slices live in out's arena: keep it until delivered or copied */
    bk_grp_rec_t *recs = out.recs;
    size_t nrecs = out.nrecs;
    out.recs = NULL;
    out.nrecs = 0;
    out.recs_cap = 0;
    bk_grp_out_t app;
    bk_grp_out_init(&app);
    app.recs = recs;
    app.nrecs = app.recs_cap = nrecs;
    app.err = out.err;
    if (bk_gd_finish(gd, c, &app) != KP_OK && hr.error == 0) hr.error = KP_ERROR_COORDINATOR_NOT_AVAILABLE;
    bk_grp_out_free(&app);
    res.cg_hb = &hr;
    bk_gd_reply_groups(gd, &gid, 1, &res, done, arg);
    bk_grp_out_free(&out);
}

void bk_grp_gd_cg_describe(bk_grp_gd_t *gd, const kp_consumer_group_describe_request_t *q, bk_grp_gd_done_fn done,
                           void *arg) {
    size_t n = cnt(q->group_ids.count);
    int16_t *errs = calloc(n ? n : 1, sizeof *errs);
    const bk_grp_t **gs = calloc(n ? n : 1, sizeof *gs);
    if (!errs || !gs) {
        free(errs);
        free(gs);
        bk_grp_gd_result_t res = { .unsent = "out of memory" };
        done(arg, &res);
        return;
    }
    bk_grp_gd_sync(gd);   /* then lookups below only add cores */
    for (size_t i = 0; i < n; i++) {
        kp_str_t id = q->group_ids.items[i];
        bk_grp_coord_t *c = bk_grp_gd_coord(gd, id, &errs[i]);
        if (c) errs[i] = bk_grp_describe(c, id, &gs[i]);
        if (!errs[i] && (!gs[i] || !gs[i]->cg)) errs[i] = KP_ERROR_GROUP_ID_NOT_FOUND;
        if (errs[i]) gs[i] = NULL;
    }
    bk_grp_gd_result_t res = { .errors = errs, .nerrors = n, .groups = gs, .ngroups = n };
    done(arg, &res);
    free(errs);
    free(gs);
}
