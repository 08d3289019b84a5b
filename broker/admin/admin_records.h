/* broker/admin/admin_records.h — GET /v1/partitions/{topic}/{partition}/records
 * (issue 21, the console's Messages page): up to `count` records of this
 * node's replica of a partition, from an offset or a timestamp, below its
 * high watermark. The loop locates the file ranges (st_log_read, as Fetch
 * does; a timestamp through st_log_offset_for_time, as ListOffsets does)
 * and duplicates their descriptors; a worker reads, decompresses and writes
 * the JSON; the loop replies. Keys, values and header values are base64
 * (null stays null). Keys of the reply: broker/admin/README.md. */
#ifndef SKIFF_BK_ADMIN_RECORDS_H
#define SKIFF_BK_ADMIN_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "broker/core/node.h"
#include "broker/http/admin.h"

#define BK_ADMIN_RECORDS_COUNT_MAX 500                 /* records per reply */
#define BK_ADMIN_RECORDS_READ_MAX_BYTES (4u << 20)     /* log bytes read per reply */
#define BK_ADMIN_RECORDS_BATCH_MAX_BYTES (16u << 20)   /* one batch, decompressed */
#define BK_ADMIN_RECORDS_FIELD_MAX_BYTES (64u << 10)   /* key/value/header shown, then cut */

/* Writes the records of the whole batches in buf[0..len) with offset >=
 * from, at most count_max of them, as the JSON array "records" (the key is
 * written by the caller), skipping control batches. *next is the offset
 * after the last record written (from when none). Pure: buf may hold any
 * bytes; a malformed batch ends the walk with its error in *why (NULL when
 * the walk ended normally). Runs on a worker thread: touches only its
 * arguments. */
void bk_admin_records_json(const uint8_t *buf, size_t len, int64_t from, int32_t count_max,
                           bk_http_json_t *j, int64_t *next, const char **why);

KP_MUST_CHECK int bk_admin_records_add(bk_node_t *n);

#endif
