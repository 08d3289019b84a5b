/* image_internal.h — helpers shared by the image_*.c files; not a public API. */
#ifndef SKIFF_BK_IMAGE_INTERNAL_H
#define SKIFF_BK_IMAGE_INTERNAL_H

#include "broker/meta/acl.h"
#include "broker/meta/image.h"

void img_topic_free(bk_meta_topic_t *t);
void img_config_free(bk_meta_img_config_t *c);
size_t img_broker_pos(const bk_meta_image_t *img, int32_t id, bool *found);
size_t img_name_pos(const bk_meta_image_t *img, const char *name, bool *found);
size_t img_id_pos(const bk_meta_image_t *img, const bk_meta_uuid_t *id, bool *found);
/* name NULL: position of the first config of the resource. */
size_t img_config_pos(const bk_meta_image_t *img, int32_t type, const char *rname, const char *name,
                      bool *found);
/* bk_meta_image_apply without the offset-order check (snapshot replay). */
int img_apply(bk_meta_image_t *img, const Skiff__Metadata__MetadataRecord *rec, int64_t offset);
/* Notes the local role of partition `p` of `t` before a change (no-op when
 * change notification is off or p was already noted). */
int img_touch(bk_meta_image_t *img, const bk_meta_topic_t *t, bk_meta_partition_t *p);

/* SCRAM records (image_scram.c); a failure changes nothing. */
int img_scram_apply(bk_meta_image_t *img, const Skiff__Metadata__UserScramCredential *r);
int img_scram_remove(bk_meta_image_t *img, const Skiff__Metadata__RemoveUserScramCredential *r);
void img_scram_free(bk_meta_image_t *img);
/* ACL records (image_acl.c); a failure changes nothing. */
/* Fills m (strings pointing into a) from a binding. */
void img_acl_to_record(const bk_meta_acl_t *a, Skiff__Metadata__AccessControlEntry *m);
int img_acl_apply(bk_meta_image_t *img, const Skiff__Metadata__AccessControlEntry *r, bool add);

/* ClientQuota records (image_quota.c); a failure changes nothing. */
int img_quota_apply(bk_meta_image_t *img, const Skiff__Metadata__ClientQuota *r);
void img_quota_free(bk_meta_image_t *img);

#endif
