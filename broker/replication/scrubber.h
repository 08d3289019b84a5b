/* broker/replication/scrubber.h — background re-read of rolled segments
 * (issue 16, finding 9; skiff's own, Kafka has no equivalent).
 *
 * One job at a time for the whole node, on the worker pool: it re-reads up
 * to a token bucket's worth of one rolled segment (skiff.scrubber.bytes.per
 * .second, refilled every BK_REPL_SCRUB_TICK_MS, at most one second's worth
 * banked) through st_log_scrub_* and checks every batch's header, offsets
 * and CRC. Partitions are visited in slot order, each partition's rolled
 * segments in offset order; after a whole pass the scrubber waits
 * skiff.scrubber.pass.interval.ms. The active segment is never read (its
 * appends were CRC-checked; a crash re-checks it from the recovery point).
 * A corrupt batch is counted (skiff_scrub_corruptions_total), logged by
 * storage with file, byte and offset, and handed to
 * bk_repl_replica_on_corrupt (replica.h): a follower truncates and fetches
 * again from the leader; a leader's log goes offline.
 *
 * Threading: loop thread only (the job runs on the pool and touches only
 * its own st_log_scrub_t). */
#ifndef SKIFF_BK_SCRUBBER_H
#define SKIFF_BK_SCRUBBER_H

#include <stdint.h>

#include "broker/core/node.h"

#define BK_REPL_SCRUB_TICK_MS 100

/* Starts the scrubber when skiff.scrubber.enable is true (n->pool, n->parts
 * and n->base must exist). KP_OK also when disabled; ST/KP error when the
 * timer cannot be made. */
int bk_repl_scrub_start(bk_node_t *n);
/* Stops the timer; a job in flight finishes and frees itself. Idempotent. */
void bk_repl_scrub_stop(bk_node_t *n);

#endif
