/* image_acl.c — AccessControlEntry / RemoveAccessControlEntry records ->
 * the image's ACL set (acl.h). A record that does not describe a valid
 * binding is refused (KP_ERR_BAD_VALUE) and changes nothing. */
#include "broker/meta/image_internal.h"

#include "protocol/kp_errors.h"

static bool fits8(int32_t v) { return v >= 0 && v <= 127; }

void img_acl_to_record(const bk_meta_acl_t *a, Skiff__Metadata__AccessControlEntry *m) {
    skiff__metadata__access_control_entry__init(m);
    m->has_resource_type = true; m->resource_type = a->resource_type;
    m->resource_name = (char *)a->resource_name;
    m->has_pattern_type = true; m->pattern_type = a->pattern_type;
    m->principal = (char *)a->principal;
    m->host = (char *)a->host;
    m->has_operation = true; m->operation = a->operation;
    m->has_permission_type = true; m->permission_type = a->permission;
}

int img_acl_apply(bk_meta_image_t *img, const Skiff__Metadata__AccessControlEntry *r, bool add) {
    if (!r || !r->has_resource_type || !r->has_pattern_type || !r->has_operation || !r->has_permission_type ||
        !fits8(r->resource_type) || !fits8(r->pattern_type) || !fits8(r->operation) || !fits8(r->permission_type) ||
        !r->resource_name || !r->principal || !r->host)
        return KP_ERR_BAD_VALUE;
    bk_meta_acl_t a = { (int8_t)r->resource_type, (int8_t)r->pattern_type, r->resource_name, r->principal, r->host,
                        (int8_t)r->operation, (int8_t)r->permission_type };
    if (bk_meta_acl_valid(&a)) return KP_ERR_BAD_VALUE;
    if (!add) return img->acls ? bk_meta_acls_remove(img->acls, &a) : KP_OK;
    if (!img->acls) {
        img->acls = bk_meta_acls_new();
        if (!img->acls) return KP_ERR_NOMEM;
    }
    return bk_meta_acls_add(img->acls, &a);
}
