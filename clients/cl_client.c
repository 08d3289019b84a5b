/* cl_client.c — bootstrap, metadata cache and per-node connections. */
#include "clients/cl_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_errors.h"

#define MD_ARENA_CAP_BYTES ((size_t)256 << 20)

kp_str_t cl_str(const char *s) {
    kp_str_t r = { (const uint8_t *)s, strlen(s) };
    return r;
}

char *cl_strz(kp_str_t s, char *buf, size_t buf_bytes) {
    size_t n = s.len < buf_bytes - 1 ? s.len : buf_bytes - 1;
    if (n) memcpy(buf, s.p, n);
    buf[n] = '\0';
    return buf;
}

bool cl_str_eq(kp_str_t s, const char *z) {
    size_t n = strlen(z);
    return s.p && s.len == n && memcmp(s.p, z, n) == 0;
}

static int parse_bootstrap(cl_client_t *c, const char *brokers, cl_err_t *e) {
    char list[4096];
    if (!brokers || !*brokers) return cl_err_set(e, CL_E_USAGE, "empty broker list");
    if (strlen(brokers) >= sizeof list) return cl_err_set(e, CL_E_USAGE, "broker list too long");
    strcpy(list, brokers);
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        if (!*tok) continue;
        if (c->nbootstrap == CL_BOOTSTRAP_MAX)
            return cl_err_set(e, CL_E_USAGE, "more than %d bootstrap addresses", CL_BOOTSTRAP_MAX);
        int rc = cl_parse_hostport(tok, c->bootstrap[c->nbootstrap], CL_HOST_BYTES,
                                   &c->bootstrap_port[c->nbootstrap], e);
        if (rc != CL_OK) return rc;
        c->nbootstrap++;
    }
    if (c->nbootstrap == 0) return cl_err_set(e, CL_E_USAGE, "empty broker list");
    return CL_OK;
}

int cl_client_open(cl_client_t *c, const char *brokers, const char *client_id, int timeout_ms, cl_err_t *e) {
    return cl_client_open_sec(c, brokers, client_id, timeout_ms, NULL, e);
}

/* Every connection of the client is opened here. */
static int conn_open(cl_client_t *c, cl_conn_t *conn, const char *host, int port, cl_err_t *e) {
    return cl_conn_open_sec(conn, host, port, c->timeout_ms, c->client_id, c->sec, c->tls, e);
}

int cl_client_open_sec(cl_client_t *c, const char *brokers, const char *client_id, int timeout_ms,
                       const cl_sec_t *sec, cl_err_t *e) {
    memset(c, 0, sizeof *c);
    c->boot.fd = -1;
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : CL_TIMEOUT_MS_DEFAULT;
    c->retry = cl_retry_default();
    snprintf(c->client_id, sizeof c->client_id, "%s", client_id ? client_id : "skiffctl");
    kp_arena_init(&c->md_arena, MD_ARENA_CAP_BYTES);
    c->nodes = calloc(CL_NODES_MAX, sizeof *c->nodes);
    if (!c->nodes) return cl_err_set(e, CL_E_NOMEM, "out of memory");
    int rc = parse_bootstrap(c, brokers, e);
    if (rc != CL_OK) return rc;
    c->sec = sec;
    if (cl_sec_tls(sec) && (rc = cl_tls_new(sec, &c->tls, e)) != CL_OK) return rc;
    char tried[1024] = "";
    for (int i = 0; i < c->nbootstrap; i++) {
        cl_err_t one;
        rc = conn_open(c, &c->boot, c->bootstrap[i], c->bootstrap_port[i], &one);
        if (rc == CL_OK) return CL_OK;
        size_t used = strlen(tried);
        snprintf(tried + used, sizeof tried - used, "%s%s", used ? "; " : "", one.msg);
        if (one.status != CL_E_CONNECT && one.status != CL_E_TIMEOUT && one.status != CL_E_NETWORK) {
            if (e) *e = one;
            return one.status;
        }
    }
    return cl_err_set(e, CL_E_CONNECT, "%s", tried);
}

void cl_client_close(cl_client_t *c) {
    cl_conn_close(&c->boot);
    if (c->nodes)
        for (int i = 0; i < c->nnodes; i++) cl_conn_close(&c->nodes[i].conn);
    free(c->nodes);
    c->nodes = NULL;
    cl_tls_free(c->tls);
    c->tls = NULL;
    c->nnodes = 0;
    c->md = NULL;
    kp_arena_free(&c->md_arena);
}

static cl_node_t *node_find(cl_client_t *c, int32_t id) {
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].id == id) return &c->nodes[i];
    return NULL;
}

const cl_node_t *cl_client_node_info(const cl_client_t *c, int32_t node_id) {
    return node_find((cl_client_t *)c, node_id);
}

/* Adds or updates a node; an address change drops the old connection. */
static void node_upsert(cl_client_t *c, int32_t id, kp_str_t host, int port) {
    char h[CL_HOST_BYTES];
    cl_strz(host, h, sizeof h);
    cl_node_t *n = node_find(c, id);
    if (!n) {
        if (c->nnodes == CL_NODES_MAX) return; /* bounded: extra nodes are unreachable */
        n = &c->nodes[c->nnodes++];
        memset(n, 0, sizeof *n);
        n->id = id;
        n->conn.fd = -1;
    } else if (n->port == port && strcmp(n->host, h) == 0) {
        return;
    } else {
        cl_conn_close(&n->conn);
    }
    snprintf(n->host, sizeof n->host, "%s", h);
    n->port = port;
}

int cl_client_metadata(cl_client_t *c, const char *const *topics, int n, cl_err_t *e) {
    kp_arena_t a;
    kp_arena_init(&a, MD_ARENA_CAP_BYTES);
    kp_metadata_request_t req;
    kp_metadata_request_init(&req);
    req.allow_auto_topic_creation = false;
    if (topics && n > 0) {
        req.topics.items = kp_arena_alloc(&a, sizeof *req.topics.items * (size_t)n);
        if (!req.topics.items) { kp_arena_free(&a); return cl_err_set(e, CL_E_NOMEM, "out of memory"); }
        req.topics.count = n;
        for (int i = 0; i < n; i++) {
            kp_metadata_request_metadata_request_topic_init(&req.topics.items[i]);
            req.topics.items[i].name = cl_str(topics[i]);
        }
    } else {
        req.topics.count = -1; /* null = all topics (v1+) */
    }
    void *resp = NULL;
    int16_t ver = 0;
    int rc = CL_OK;
    for (int attempt = 1;; attempt++) {
        kp_arena_reset(&c->md_arena);
        c->md = NULL;
        /* AllowAutoTopicCreation exists from v4; older versions always allow
         * it, and a field the version lacks must stay at its default */
        req.allow_auto_topic_creation = cl_client_version(c, -1, KP_API_METADATA, CL_VER_METADATA) < 4;
        rc = cl_client_call(c, -1, KP_API_METADATA, CL_VER_METADATA, &req, &resp, &ver, &c->md_arena, e);
        if (rc == CL_OK || !cl_retry_again(&c->retry, attempt, rc, e ? e->kafka_code : 0)) break;
        cl_sleep_ms(cl_retry_backoff_ms(&c->retry, attempt + 1));
    }
    kp_arena_free(&a);
    if (rc != CL_OK) return rc;
    c->md = resp;
    c->md_version = ver;
    for (int32_t i = 0; i < c->md->brokers.count; i++) {
        const kp_metadata_response_metadata_response_broker_t *b = &c->md->brokers.items[i];
        node_upsert(c, b->node_id, b->host, b->port);
    }
    return CL_OK;
}

const cl_md_topic_t *cl_md_topic(const cl_client_t *c, const char *name) {
    if (!c->md) return NULL;
    for (int32_t i = 0; i < c->md->topics.count; i++)
        if (cl_str_eq(c->md->topics.items[i].name, name)) return &c->md->topics.items[i];
    return NULL;
}

const cl_md_partition_t *cl_md_partition(const cl_md_topic_t *t, int32_t partition) {
    for (int32_t i = 0; t && i < t->partitions.count; i++)
        if (t->partitions.items[i].partition_index == partition) return &t->partitions.items[i];
    return NULL;
}

/* The connection for node_id, opened now if needed (NULL + error if not). */
static cl_conn_t *conn_for(cl_client_t *c, int32_t node_id, cl_err_t *e) {
    if (node_id < 0) {
        if (!cl_conn_is_open(&c->boot)) {
            /* the bootstrap connection dropped: try the list again */
            for (int i = 0; i < c->nbootstrap; i++)
                if (conn_open(c, &c->boot, c->bootstrap[i], c->bootstrap_port[i], e) == CL_OK)
                    return &c->boot;
            return NULL;
        }
        return &c->boot;
    }
    cl_node_t *n = node_find(c, node_id);
    if (!n) {
        cl_err_kafka(e, KP_ERROR_LEADER_NOT_AVAILABLE, "node %d is not in the metadata", node_id);
        return NULL;
    }
    if (!cl_conn_is_open(&n->conn)) {
        if (conn_open(c, &n->conn, n->host, n->port, e) != CL_OK) return NULL;
        n->conn.node_id = node_id;
    }
    return &n->conn;
}

int16_t cl_client_version(cl_client_t *c, int32_t node_id, int16_t api_key, int16_t our_max) {
    cl_err_t e;
    cl_conn_t *conn = conn_for(c, node_id, &e);
    return conn ? cl_conn_version(conn, api_key, our_max) : -1;
}

int cl_client_call(cl_client_t *c, int32_t node_id, int16_t api_key, int16_t our_max, const void *req,
                   void **resp, int16_t *version_out, kp_arena_t *a, cl_err_t *e) {
    cl_conn_t *conn = conn_for(c, node_id, e);
    if (!conn) return e ? e->status : CL_E_CONNECT;
    if (conn->timeout_ms != c->timeout_ms) cl_conn_set_timeout(conn, c->timeout_ms);
    return cl_conn_call(conn, api_key, our_max, req, false, resp, version_out, a, e);
}

int cl_client_send(cl_client_t *c, int32_t node_id, int16_t api_key, int16_t our_max, const void *req,
                   cl_err_t *e) {
    cl_conn_t *conn = conn_for(c, node_id, e);
    if (!conn) return e ? e->status : CL_E_CONNECT;
    return cl_conn_call(conn, api_key, our_max, req, true, NULL, NULL, NULL, e);
}

int cl_client_coordinator(cl_client_t *c, const char *key, int8_t key_type, int32_t *node_id, cl_err_t *e) {
    kp_find_coordinator_request_t req;
    kp_find_coordinator_request_init(&req);
    req.key = cl_str(key);
    req.key_type = key_type;
    kp_arena_t a;
    kp_arena_init(&a, (size_t)1 << 20);
    int rc = CL_OK;
    for (int attempt = 1;; attempt++) {
        kp_arena_reset(&a);
        void *resp = NULL;
        rc = cl_client_call(c, -1, KP_API_FIND_COORDINATOR, CL_VER_FIND_COORDINATOR, &req, &resp, NULL, &a, e);
        if (rc == CL_OK) {
            const kp_find_coordinator_response_t *r = resp;
            if (r->error_code != 0) {
                rc = cl_err_kafka(e, r->error_code, "find coordinator for '%s'", key);
            } else {
                node_upsert(c, r->node_id, r->host, r->port);
                *node_id = r->node_id;
                break;
            }
        }
        if (!cl_retry_again(&c->retry, attempt, rc, e ? e->kafka_code : 0)) break;
        cl_sleep_ms(cl_retry_backoff_ms(&c->retry, attempt + 1));
    }
    kp_arena_free(&a);
    return rc;
}
