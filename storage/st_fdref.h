/* st_fdref.h — a segment's open .log descriptor with a reference count.
 *
 * A Fetch answer carries file ranges that the network sends (sendfile)
 * after the state loop has moved on: retention, truncation, compaction or
 * a close may drop the segment meanwhile. Each range used to dup() the
 * descriptor (plus its close: two syscalls per range, issue 19); now the
 * segment's descriptor lives in this holder, the segment owns one
 * reference, and a sender takes one more for as long as its bytes are
 * queued. The last release closes the descriptor (and, for an unlinked
 * file, frees its blocks) on whichever thread releases it: the owner's, a
 * worker (retention's drop job), or a network loop (a send finished after
 * the segment left the log). The count is atomic for that reason; the
 * descriptor number itself never changes while a reference exists.
 */
#ifndef SKIFF_ST_FDREF_H
#define SKIFF_ST_FDREF_H

typedef struct st_fdref st_fdref_t;

/* A holder of fd with one reference (the caller's), or NULL when out of
 * memory (fd is then left to the caller). */
st_fdref_t *st_fdref_new(int fd);
/* One more reference (any thread). */
void st_fdref_hold(st_fdref_t *r);
/* Drops one reference (any thread); the last closes the descriptor and
 * frees the holder. */
void st_fdref_release(st_fdref_t *r);
/* The descriptor (valid while the caller holds a reference). */
int st_fdref_fd(const st_fdref_t *r);

#endif
