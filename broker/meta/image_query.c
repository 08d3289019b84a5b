/* image_query.c — queries that walk every partition of the image. */
#include "broker/meta/image.h"

static bool matches(const bk_meta_partition_t *p, bk_meta_select_t sel, int32_t broker_id) {
    switch (sel) {
    case BK_META_SEL_LEADS: return p->leader == broker_id;
    case BK_META_SEL_FOLLOWS: return p->leader != broker_id && bk_meta_ids_has(&p->replicas, broker_id);
    case BK_META_SEL_UNDER_REPLICATED: return p->isr.n < p->replicas.n;
    case BK_META_SEL_OFFLINE: return p->leader == -1;
    case BK_META_SEL_REASSIGNING: return p->adding.n > 0 || p->removing.n > 0;
    case BK_META_SEL_REPLICA: return bk_meta_ids_has(&p->replicas, broker_id);
    case BK_META_SEL_IN_ISR: return bk_meta_ids_has(&p->isr, broker_id);
    }
    return false;
}

size_t bk_meta_image_select(const bk_meta_image_t *img, bk_meta_select_t sel, int32_t broker_id,
                       bk_meta_tp_t *out, size_t max) {
    size_t total = 0;
    for (size_t i = 0; i < img->ntopics; i++) {
        const bk_meta_topic_t *t = img->by_name[i];
        for (int32_t j = 0; j < t->nparts; j++) {
            if (!matches(&t->parts[j], sel, broker_id)) continue;
            if (total < max) {
                out[total].topic = t;
                out[total].part = &t->parts[j];
            }
            total++;
        }
    }
    return total;
}
