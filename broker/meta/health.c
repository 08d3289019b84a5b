/* broker/meta/health.c — see health.h. */
#include "broker/meta/health.h"

#include <string.h>

/* Adds id to the ascending list unless present; counts it once. */
static void add_down(bk_meta_health_t *h, int32_t id) {
    size_t i = 0;
    while (i < h->ndown_listed && h->down[i] < id) i++;
    if (i < h->ndown_listed && h->down[i] == id) return;
    h->ndown++;
    if (h->ndown_listed == BK_META_HEALTH_DOWN_LIST_MAX) {
        if (i == BK_META_HEALTH_DOWN_LIST_MAX) return;     /* beyond the listed ones */
        h->ndown_listed--;                            /* the largest drops off */
    }
    memmove(&h->down[i + 1], &h->down[i], (h->ndown_listed - i) * sizeof h->down[0]);
    h->down[i] = id;
    h->ndown_listed++;
}

static void count_parts(const bk_meta_image_t *img, bk_meta_health_t *h) {
    for (size_t i = 0; i < img->ntopics; i++) {
        const bk_meta_topic_t *t = img->by_name[i];
        for (int32_t k = 0; k < t->nparts; k++) {
            const bk_meta_partition_t *p = &t->parts[k];
            if (p->leader < 0) h->leaderless++;
            else if (p->isr.n < p->replicas.n) h->under++;
        }
    }
}

void bk_meta_health_judge(const bk_meta_image_t *img, int32_t controller_id, const int32_t *expected,
                     size_t nexpected, bk_meta_health_t *out) {
    memset(out, 0, sizeof *out);
    out->no_controller = controller_id < 0;
    for (size_t i = 0; i < img->nbrokers; i++)
        if (img->brokers[i].fenced) add_down(out, img->brokers[i].id);
    /* an unregistered id is never a fenced one; repeats in expected[] are
     * skipped here, as add_down sees only the listed ids */
    for (size_t i = 0; i < nexpected; i++) {
        bool repeat = false;
        for (size_t j = 0; j < i && !repeat; j++) repeat = expected[j] == expected[i];
        if (!repeat && !bk_meta_image_broker(img, expected[i])) add_down(out, expected[i]);
    }
    count_parts(img, out);
    out->healthy = !out->no_controller && out->ndown == 0 && out->leaderless == 0 && out->under == 0;
}
