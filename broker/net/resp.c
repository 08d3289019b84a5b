/* broker/net/resp.c — helpers for building response bodies. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "broker/net/net.h"

int bk_net_resp_add_file(struct evbuffer *body, int fd, int64_t offset, int64_t len) {
    assert(body);
    if (fd < 0 || offset < 0 || len < 0 || len > INT32_MAX) return BK_NET_ERR_INVALID;
    if (len == 0) return BK_NET_OK;
    /* Our own descriptor: the segment may be sent long after the caller's fd
     * is closed (segment deleted by retention); the open file stays alive
     * until the bytes are on the socket. */
    /* libevent only makes a sendfile chain (instead of mmap'ing the range)
     * in a buffer marked as draining to an fd; the chain keeps that form
     * when the body is moved into the socket's output at flush time. */
    if (evbuffer_set_flags(body, EVBUFFER_FLAG_DRAINS_TO_FD) != 0) return BK_NET_ERR_SYS;
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) return BK_NET_ERR_SYS;
    struct evbuffer_file_segment *seg =
        evbuffer_file_segment_new(own, offset, len, EVBUF_FS_CLOSE_ON_FREE | EVBUF_FS_DISABLE_LOCKING);
    if (!seg) {
        close(own);
        return BK_NET_ERR_SYS;
    }
    int rc = evbuffer_add_file_segment(body, seg, 0, len);
    evbuffer_file_segment_free(seg); /* the body keeps its own reference */
    return rc == 0 ? BK_NET_OK : BK_NET_ERR_SYS;
}

int bk_net_resp_add_file_held(struct evbuffer *body, int fd, int64_t offset, int64_t len,
                              bk_net_file_release_fn release, void *ctx) {
    assert(body && release);
    if (fd < 0 || offset < 0 || len < 0 || len > INT32_MAX) {
        release(NULL, 0, ctx);
        return BK_NET_ERR_INVALID;
    }
    if (len == 0) {
        release(NULL, 0, ctx);
        return BK_NET_OK;
    }
    /* as above: a sendfile chain only in a buffer marked as draining to an fd */
    if (evbuffer_set_flags(body, EVBUFFER_FLAG_DRAINS_TO_FD) != 0) {
        release(NULL, 0, ctx);
        return BK_NET_ERR_SYS;
    }
    /* no EVBUF_FS_CLOSE_ON_FREE: the descriptor is the caller's, kept open
     * by its reference until the cleanup callback gives it up */
    struct evbuffer_file_segment *seg = evbuffer_file_segment_new(fd, offset, len, EVBUF_FS_DISABLE_LOCKING);
    if (!seg) {
        release(NULL, 0, ctx);
        return BK_NET_ERR_SYS;
    }
    evbuffer_file_segment_add_cleanup_cb(seg, release, ctx);
    int rc = evbuffer_add_file_segment(body, seg, 0, len);
    evbuffer_file_segment_free(seg); /* the body keeps its own reference; on failure this was the last */
    return rc == 0 ? BK_NET_OK : BK_NET_ERR_SYS;
}
