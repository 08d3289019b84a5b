/* group_topics.c — committed offsets of deleted topics (Kafka's
 * onPartitionsDeleted). The driver remembers the topics (name, id) of the
 * image it last saw; a name that is gone, or that now names another topic
 * id (deleted and re-created between two looks, possibly with fewer
 * partitions), is a deleted topic: its offsets are dropped from every
 * group of every loaded core, with tombstones. Without this a consumer of
 * the re-created topic would resume from the old topic's offsets (past the
 * end of the new partitions: it waits forever, or skips records).
 *
 * Cost: nothing while the image's last offset is unchanged (the 100 ms
 * tick); else O(topics log topics) per metadata commit plus O(offsets) per
 * deleted topic. Decision: offsets of topics that a core finds missing at
 * load are kept (only deletions seen while watching are applied): a node
 * whose image lags could otherwise drop the offsets of a topic created
 * just before it became coordinator. */
#include "broker/group/group_driver_int.h"
#include "broker/meta/image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The deleted names, sorted, for bk_grp_drop_offsets' predicate. */
typedef struct {
    const char **names;
    size_t n;
} gone_set_t;

static int cmp_cstr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool topic_gone(void *ctx, kp_str_t topic, int32_t partition) {
    (void)partition;
    const gone_set_t *s = ctx;
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        size_t len = strlen(s->names[mid]);
        size_t m = len < topic.len ? len : topic.len;
        int c = memcmp(s->names[mid], topic.p, m);
        if (c == 0) c = len < topic.len ? -1 : len > topic.len ? 1 : 0;
        if (c == 0) return true;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return false;
}

static void free_topics(bk_grp_gd_t *gd) {
    for (size_t i = 0; i < gd->ntopics; i++) free(gd->topics[i].name);
    free(gd->topics);
    gd->topics = NULL;
    gd->ntopics = 0;
}

/* The image's topics as the new remembered set; false when out of memory
 * (the old set is kept: the next commit tries again). */
static bool remember(bk_grp_gd_t *gd, const bk_meta_image_t *img) {
    gd_topic_t *nv = calloc(img->ntopics ? img->ntopics : 1, sizeof *nv);
    if (!nv) return false;
    for (size_t i = 0; i < img->ntopics; i++) {
        nv[i].name = strdup(img->by_name[i]->name);
        nv[i].id = img->by_name[i]->id;
        if (nv[i].name) continue;
        while (i-- > 0) free(nv[i].name);
        free(nv);
        return false;
    }
    free_topics(gd);
    gd->topics = nv;
    gd->ntopics = img->ntopics;
    return true;
}

void bk_gd_topics_sync(bk_grp_gd_t *gd) {
    const bk_meta_image_t *img = &gd->node->img;
    if (gd->topics_known && img->last_offset == gd->topics_at) return;
    gone_set_t s = { NULL, 0 };
    if (gd->topics_known && gd->ntopics > 0) {
        s.names = malloc(gd->ntopics * sizeof *s.names);
        if (!s.names) return;   /* retried at the next look */
        for (size_t i = 0; i < gd->ntopics; i++) {
            const bk_meta_topic_t *t = bk_meta_image_topic_by_name(img, gd->topics[i].name);
            if (!t || memcmp(t->id.b, gd->topics[i].id.b, sizeof t->id.b) != 0) s.names[s.n++] = gd->topics[i].name;
        }
        qsort(s.names, s.n, sizeof *s.names, cmp_cstr);
    }
    if (s.n > 0) {
        bk_grp_out_t out;
        bk_grp_out_init(&out);
        for (int32_t i = 0; i < gd->ncoords; i++) {
            bk_grp_coord_t *c = gd->coords[i];
            if (!c) continue;
            size_t n = bk_grp_drop_offsets(c, topic_gone, &s, &out);
            if (n > 0)
                fprintf(stderr, "skiff: node %d: %s-%d: dropped %zu committed offsets of deleted topics\n",
                        gd->node->id, BK_GRP_GD_TOPIC, i, n);
            (void)bk_gd_finish(gd, c, &out);   /* logged there when the append fails */
        }
        bk_grp_out_free(&out);
    }
    free(s.names);   /* before remember(): the names point into the old set */
    if (!remember(gd, img)) return;
    gd->topics_known = true;
    gd->topics_at = img->last_offset;
}

void bk_gd_topics_free(bk_grp_gd_t *gd) { free_topics(gd); }
