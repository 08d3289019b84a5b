/* cl_partitioner.h — which partition a record goes to.
 *
 * Keyed records use the Java client's rule, so skiff and Java producers
 * agree on placement: toPositive(murmur2(key)) % partitions, where
 * toPositive clears the sign bit. Records without a key stick to one
 * partition per batch and move on round-robin when a batch is sent.
 */
#ifndef SKIFF_CL_PARTITIONER_H
#define SKIFF_CL_PARTITIONER_H

#include <stddef.h>
#include <stdint.h>

/* Kafka's murmur2 (seed 0x9747b28c) of len bytes. */
int32_t cl_murmur2(const void *data, size_t len);
/* Partition of a keyed record; npartitions > 0. */
int32_t cl_partition_for_key(const void *key, size_t len, int32_t npartitions);

#endif
