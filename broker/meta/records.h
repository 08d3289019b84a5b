/* records.h — a list of packed metadata records produced by the controller,
 * ready to be appended to the metadata log.
 *
 * Errors are sticky (like kp_wr_t): once an add fails, every later add is a
 * no-op and `err` stays set; the caller checks `err` once before appending
 * and drops the whole list on error, so a half-built decision is never
 * written. */
#ifndef SKIFF_BK_RECORDS_H
#define SKIFF_BK_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "broker/meta/image.h"
#include "broker/meta/metadata.pb-c.h"
#include "protocol/kp_sasl.h"

#define BK_META_RECS_MAX ((size_t)1 << 22)   /* records one controller decision may emit */

typedef struct {
    uint8_t *data;                  /* owned */
    size_t len;
} bk_meta_rec_t;

typedef struct {
    bk_meta_rec_t *v;
    size_t n, cap;
    int err;                        /* KP_OK, KP_ERR_NOMEM or KP_ERR_TOO_LARGE */
} bk_meta_recs_t;

void bk_meta_recs_init(bk_meta_recs_t *r);
/* Frees every record; the list is then empty and reusable. */
void bk_meta_recs_free(bk_meta_recs_t *r);
/* Packs `rec` and appends the bytes (the message itself is not retained).
 * Returns r->err afterwards: KP_OK when the record was added, else why not
 * (this add's failure or an earlier one's: the list is then refused whole
 * by the commit). A caller stops building on an error and never takes
 * the record as written (e.g. an empty list as "nothing to do"). */
KP_MUST_CHECK int bk_meta_recs_add(bk_meta_recs_t *r, const Skiff__Metadata__MetadataRecord *rec);
/* Appends a UserScramCredential record for `name` and credential `k` (its
 * mechanism, iterations, salt, StoredKey and ServerKey; never a password):
 * the one builder of AlterUserScramCredentials and `skiff format
 * --add-scram`'s bootstrap. */
KP_MUST_CHECK int bk_meta_recs_add_scram(bk_meta_recs_t *r, const char *name, const kp_scram_cred_t *k);
/* Applies record i at offset first_offset + i to `img`, stopping at the
 * first failure (whose status is returned). */
KP_MUST_CHECK int bk_meta_recs_apply(const bk_meta_recs_t *r, bk_meta_image_t *img, int64_t first_offset);

#endif
