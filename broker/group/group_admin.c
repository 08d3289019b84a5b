/* group_admin.c — ListGroups, DescribeGroups, DeleteGroups. */
#include "broker/group/group_int.h"
#include "broker/group/group_cg.h"

#include <stdlib.h>

int16_t bk_grp_list(const bk_grp_coord_t *c, const bk_grp_state_t *states, size_t nstates,
                    bk_grp_list_fn fn, void *ctx) {
    if (c->loading) return KP_ERROR_COORDINATOR_LOAD_IN_PROGRESS;
    for (size_t k = 0; k < c->ngroups; k++) {
        const bk_grp_t *g = c->groups[k];
        bool match = nstates == 0;
        for (size_t s = 0; !match && s < nstates; s++) match = states[s] == g->state;
        if (match) fn(ctx, g);
    }
    return KP_ERROR_NONE;
}

int16_t bk_grp_describe(const bk_grp_coord_t *c, kp_str_t group_id, const bk_grp_t **g) {
    int16_t err = bk_grp_owner_error(c, group_id);
    *g = err ? NULL : bk_grp_find(c, group_id);
    return err;
}

kp_bytes_t bk_grp_member_metadata(const bk_grp_t *g, const bk_grp_member_t *m) {
    if (g->protocol.p)
        for (size_t k = 0; k < m->nprotocols; k++)
            if (gs_eq(&m->protocols[k].name, gs_slice(&g->protocol)))
                return gs_slice(&m->protocols[k].metadata);
    return kp_slice_cstr("");
}

int16_t bk_grp_delete(bk_grp_coord_t *c, kp_str_t group_id, int64_t now_ms, bk_grp_out_t *out) {
    (void)now_ms;
    int16_t err = bk_grp_owner_error(c, group_id);
    if (err) return err;
    bk_grp_t *g = grp_get(c, group_id);
    if (!g || g->state == BK_GRP_DEAD) return KP_ERROR_GROUP_ID_NOT_FOUND;
    if (g->state != BK_GRP_EMPTY) return KP_ERROR_NON_EMPTY_GROUP;
    if (g->cg && g->cg->nmembers > 0) return KP_ERROR_NON_EMPTY_GROUP;
    cg_drop(g, out);
    for (size_t i = 0; i < g->noffsets; i++)
        rec_offset_tombstone(out, group_id, gs_slice(&g->offsets[i].topic), g->offsets[i].partition);
    rec_group_tombstone(out, group_id);
    grp_destroy(c, g);
    return KP_ERROR_NONE;
}
