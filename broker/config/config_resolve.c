/* Rules between config keys, parsed views (listeners, voters, log dirs),
 * derived values, dynamic broker changes and DescribeConfigs rows. */
#include "broker/config/config_int.h"
#include "broker/config/ip_overrides.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail_at(const bk_cfg_t *cfg, bk_cfg_key_t key, bk_cfg_err_t *err,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail_at(const bk_cfg_t *cfg, bk_cfg_key_t key, bk_cfg_err_t *err,
                   const char *fmt, ...) {
    cfg_where(cfg, key, err->msg, sizeof err->msg);
    size_t n = strlen(err->msg);
    if (n + 3 >= sizeof err->msg)
        return KP_ERR_BAD_VALUE;
    memcpy(err->msg + n, ": ", 3);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + n + 2, sizeof err->msg - n - 2, fmt, ap);
    va_end(ap);
    return KP_ERR_BAD_VALUE;
}

/* Calls fn for each item of a canonical list text ("a,b,c"; no empties). */
typedef int (*item_fn)(bk_cfg_t *cfg, const char *item, size_t n, void *ctx,
                       bk_cfg_err_t *err);
static int for_each_item(bk_cfg_t *cfg, const char *list, item_fn fn, void *ctx,
                         bk_cfg_err_t *err) {
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        int rc = fn(cfg, p, n, ctx, err);
        if (rc != KP_OK)
            return rc;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    return KP_OK;
}

static bool list_has(const char *list, const char *item, size_t n) {
    const char *p = list;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && memcmp(p, item, n) == 0)
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

typedef struct listener_ctx {
    bk_cfg_key_t key;
    bk_cfg_listener_t *out;
    size_t *n;
} listener_ctx_t;

/* NAME://host:port; NAME is upper-case letters, digits and '_'. */
static int parse_listener(bk_cfg_t *cfg, const char *s, size_t n, void *vctx,
                          bk_cfg_err_t *err) {
    listener_ctx_t *c = vctx;
    const char *sep = NULL;
    for (size_t i = 0; i + 3 <= n; i++)
        if (memcmp(s + i, "://", 3) == 0) { sep = s + i; break; }
    if (sep == NULL || sep == s)
        return fail_at(cfg, c->key, err, "%s: '%.*s': expected NAME://host:port",
                       bk_cfg_desc(c->key)->name, (int)n, s);
    size_t name_n = (size_t)(sep - s);
    if (name_n > BK_CFG_LISTENER_NAME_MAX)
        return fail_at(cfg, c->key, err, "%s: listener name too long", bk_cfg_desc(c->key)->name);
    for (size_t i = 0; i < name_n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return fail_at(cfg, c->key, err, "%s: listener name '%.*s' must be upper-case "
                           "letters, digits or '_'", bk_cfg_desc(c->key)->name, (int)name_n, s);
    if (*c->n == BK_CFG_LISTENERS_MAX)
        return fail_at(cfg, c->key, err, "%s: more than %d listeners", bk_cfg_desc(c->key)->name,
                       BK_CFG_LISTENERS_MAX);
    bk_cfg_listener_t *l = &c->out[*c->n];
    memset(l, 0, sizeof *l);
    const char *why = NULL;
    const char *hp = sep + 3;
    if (bk_cfg_hostport_parse(hp, n - name_n - 3, l->host, &l->port, &why) != KP_OK)
        return fail_at(cfg, c->key, err, "%s: '%.*s': %s", bk_cfg_desc(c->key)->name, (int)n, s,
                       why);
    memcpy(l->name, s, name_n);
    l->name[name_n] = '\0';
    for (size_t i = 0; i < *c->n; i++)
        if (strcmp(c->out[i].name, l->name) == 0)
            return fail_at(cfg, c->key, err, "%s: listener name '%s' used twice",
                           bk_cfg_desc(c->key)->name, l->name);
    (*c->n)++;
    return KP_OK;
}

static const char *const sec_names[] = { "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL" };

const char *bk_cfg_security_name(bk_cfg_security_t s) {
    assert((size_t)s < sizeof sec_names / sizeof sec_names[0]);
    return sec_names[s];
}

bool bk_cfg_listener_security(const bk_cfg_t *cfg, const char *listener, bk_cfg_security_t *out) {
    const char *p = cfg->val[BK_CFG_LISTENER_SECURITY_PROTOCOL_MAP].text;
    size_t n = strlen(listener);
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len > n && p[n] == ':' && memcmp(p, listener, n) == 0)
            for (size_t i = 0; i < sizeof sec_names / sizeof sec_names[0]; i++)
                if (strlen(sec_names[i]) == len - n - 1 && memcmp(p + n + 1, sec_names[i], len - n - 1) == 0) {
                    *out = (bk_cfg_security_t)i;
                    return true;
                }
        if (!comma) break;
        p = comma + 1;
    }
    return false;
}

/* The listener's protocol from listener.security.protocol.map. A listener
 * without an entry is refused (Kafka does the same), and so is an unknown
 * protocol: a port the operator believes is encrypted must never serve
 * plain. */
static int check_protocol(bk_cfg_t *cfg, bk_cfg_listener_t *l, bk_cfg_err_t *err) {
    const char *map = cfg->val[BK_CFG_LISTENER_SECURITY_PROTOCOL_MAP].text;
    size_t n = strlen(l->name);
    const char *p = map;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len > n && p[n] == ':' && memcmp(p, l->name, n) == 0) {
            const char *proto = p + n + 1;
            size_t pn = len - n - 1;
            for (size_t i = 0; i < sizeof sec_names / sizeof sec_names[0]; i++)
                if (strlen(sec_names[i]) == pn && memcmp(proto, sec_names[i], pn) == 0) {
                    l->security = (bk_cfg_security_t)i;
                    return KP_OK;
                }
            return fail_at(cfg, BK_CFG_LISTENER_SECURITY_PROTOCOL_MAP, err,
                           "listener %s maps to %.*s; expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
                           l->name, (int)pn, proto);
        }
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    return fail_at(cfg, BK_CFG_LISTENER_SECURITY_PROTOCOL_MAP, err,
                   "listener %s has no entry in listener.security.protocol.map "
                   "(add %s:PLAINTEXT, %s:SSL, %s:SASL_PLAINTEXT or %s:SASL_SSL)", l->name, l->name,
                   l->name, l->name, l->name);
}

static int resolve_listeners(bk_cfg_t *cfg, bk_cfg_err_t *err) {
    listener_ctx_t c = { BK_CFG_LISTENERS, cfg->listeners, &cfg->nlisteners };
    int rc = for_each_item(cfg, cfg->val[BK_CFG_LISTENERS].text, parse_listener, &c, err);
    if (rc != KP_OK)
        return rc;
    if (cfg->nlisteners == 0)
        return fail_at(cfg, BK_CFG_LISTENERS, err, "listeners: at least one listener needed");
    const char *ctl = cfg->val[BK_CFG_CONTROLLER_LISTENER_NAMES].text;
    if (cfg->val[BK_CFG_CONTROLLER_LISTENER_NAMES].is_null || ctl[0] == '\0')
        return fail_at(cfg, BK_CFG_CONTROLLER_LISTENER_NAMES, err,
                       "controller.listener.names must name the listener(s) the quorum uses");
    size_t nbroker = 0;
    for (size_t i = 0; i < cfg->nlisteners; i++) {
        bk_cfg_listener_t *l = &cfg->listeners[i];
        l->controller = list_has(ctl, l->name, strlen(l->name));
        nbroker += l->controller ? 0 : 1;
        if ((rc = check_protocol(cfg, l, err)) != KP_OK)
            return rc;
    }
    if (bk_cfg_is_controller(cfg)) {
        bool found = false;
        for (size_t i = 0; i < cfg->nlisteners; i++)
            found |= cfg->listeners[i].controller;
        if (!found)
            return fail_at(cfg, BK_CFG_CONTROLLER_LISTENER_NAMES, err,
                           "controller.listener.names=%s: no such listener in listeners", ctl);
    }
    if (bk_cfg_is_broker(cfg) && nbroker == 0)
        return fail_at(cfg, BK_CFG_LISTENERS, err,
                       "listeners: a broker needs a listener not named in controller.listener.names");
    const char *ib = cfg->val[BK_CFG_INTER_BROKER_LISTENER_NAME].text;
    if (!cfg->val[BK_CFG_INTER_BROKER_LISTENER_NAME].is_null) {
        bool ok = false;
        for (size_t i = 0; i < cfg->nlisteners; i++)
            ok |= !cfg->listeners[i].controller && strcmp(cfg->listeners[i].name, ib) == 0;
        if (!ok)
            return fail_at(cfg, BK_CFG_INTER_BROKER_LISTENER_NAME, err,
                           "inter.broker.listener.name=%s: no such broker listener", ib);
    }
    return KP_OK;
}

static int resolve_advertised(bk_cfg_t *cfg, bk_cfg_err_t *err) {
    if (cfg->val[BK_CFG_ADVERTISED_LISTENERS].is_null) {
        for (size_t i = 0; i < cfg->nlisteners; i++)
            if (!cfg->listeners[i].controller)
                cfg->advertised[cfg->nadvertised++] = cfg->listeners[i];
        return KP_OK;
    }
    listener_ctx_t c = { BK_CFG_ADVERTISED_LISTENERS, cfg->advertised, &cfg->nadvertised };
    int rc = for_each_item(cfg, cfg->val[BK_CFG_ADVERTISED_LISTENERS].text, parse_listener, &c, err);
    if (rc != KP_OK)
        return rc;
    for (size_t i = 0; i < cfg->nadvertised; i++) {
        bk_cfg_listener_t *a = &cfg->advertised[i];
        const bk_cfg_listener_t *l = NULL;
        for (size_t k = 0; k < cfg->nlisteners; k++)
            if (strcmp(cfg->listeners[k].name, a->name) == 0)
                l = &cfg->listeners[k];
        if (l == NULL)
            return fail_at(cfg, BK_CFG_ADVERTISED_LISTENERS, err,
                           "advertised.listeners: %s is not in listeners", a->name);
        if (l->controller)
            return fail_at(cfg, BK_CFG_ADVERTISED_LISTENERS, err,
                           "advertised.listeners: %s is a controller listener and must not be "
                           "advertised to clients", a->name);
        a->security = l->security;
        a->controller = l->controller;
    }
    return KP_OK;
}

/* id@host:port */
static int parse_voter(bk_cfg_t *cfg, const char *s, size_t n, void *ctx, bk_cfg_err_t *err) {
    (void)ctx;
    const char *at = memchr(s, '@', n);
    int64_t id = 0;
    if (at == NULL || at == s || at - s > 10)
        return fail_at(cfg, BK_CFG_CONTROLLER_QUORUM_VOTERS, err,
                       "controller.quorum.voters: '%.*s': expected id@host:port", (int)n, s);
    for (const char *p = s; p < at; p++) {
        if (*p < '0' || *p > '9')
            return fail_at(cfg, BK_CFG_CONTROLLER_QUORUM_VOTERS, err,
                           "controller.quorum.voters: '%.*s': node id is not a number", (int)n, s);
        id = id * 10 + (*p - '0');
    }
    if (id > INT32_MAX)
        return fail_at(cfg, BK_CFG_CONTROLLER_QUORUM_VOTERS, err,
                       "controller.quorum.voters: '%.*s': node id out of range", (int)n, s);
    if (cfg->nvoters == BK_CFG_VOTERS_MAX)
        return fail_at(cfg, BK_CFG_CONTROLLER_QUORUM_VOTERS, err,
                       "controller.quorum.voters: more than %d voters", BK_CFG_VOTERS_MAX);
    bk_cfg_voter_t *v = &cfg->voters[cfg->nvoters];
    const char *why = NULL;
    if (bk_cfg_hostport_parse(at + 1, n - (size_t)(at + 1 - s), v->host, &v->port, &why) != KP_OK)
        return fail_at(cfg, BK_CFG_CONTROLLER_QUORUM_VOTERS, err,
                       "controller.quorum.voters: '%.*s': %s", (int)n, s, why);
    if (v->host[0] == '\0' || v->port == 0)
        return fail_at(cfg, BK_CFG_CONTROLLER_QUORUM_VOTERS, err,
                       "controller.quorum.voters: '%.*s': voters need a host and a port", (int)n, s);
    v->id = (int32_t)id;
    for (size_t i = 0; i < cfg->nvoters; i++)
        if (cfg->voters[i].id == v->id)
            return fail_at(cfg, BK_CFG_CONTROLLER_QUORUM_VOTERS, err,
                           "controller.quorum.voters: node %d listed twice", v->id);
    cfg->nvoters++;
    return KP_OK;
}

static int resolve_voters(bk_cfg_t *cfg, bk_cfg_err_t *err) {
    int rc = for_each_item(cfg, cfg->val[BK_CFG_CONTROLLER_QUORUM_VOTERS].text, parse_voter, NULL, err);
    if (rc != KP_OK)
        return rc;
    if (cfg->nvoters == 0)
        return fail_at(cfg, BK_CFG_CONTROLLER_QUORUM_VOTERS, err,
                       "controller.quorum.voters is empty; list the quorum as id@host:port,...");
    int32_t me = bk_cfg_node_id(cfg);
    const bk_cfg_voter_t *mine = NULL;
    for (size_t i = 0; i < cfg->nvoters; i++)
        if (cfg->voters[i].id == me)
            mine = &cfg->voters[i];
    if (bk_cfg_is_controller(cfg) && mine == NULL)
        return fail_at(cfg, BK_CFG_CONTROLLER_QUORUM_VOTERS, err,
                       "node %d has process.roles controller but is not in "
                       "controller.quorum.voters", me);
    if (!bk_cfg_is_controller(cfg) && mine != NULL)
        return fail_at(cfg, BK_CFG_PROCESS_ROLES, err,
                       "node %d is in controller.quorum.voters but process.roles lacks controller", me);
    for (size_t i = 0; mine && i < cfg->nlisteners; i++) {
        const bk_cfg_listener_t *l = &cfg->listeners[i];
        if (l->controller && l->port != 0 && l->port != mine->port)
            return fail_at(cfg, BK_CFG_CONTROLLER_QUORUM_VOTERS, err,
                           "controller.quorum.voters puts node %d at %s:%u but its %s listener "
                           "is on port %u", me, mine->host, mine->port, l->name, l->port);
    }
    return KP_OK;
}

static int add_log_dir(bk_cfg_t *cfg, const char *s, size_t n, void *ctx, bk_cfg_err_t *err) {
    bk_cfg_key_t key = *(bk_cfg_key_t *)ctx;
    if (cfg->nlog_dirs == BK_CFG_LOG_DIRS_MAX)
        return fail_at(cfg, key, err, "%s: more than %d directories", bk_cfg_desc(key)->name,
                       BK_CFG_LOG_DIRS_MAX);
    for (size_t i = 0; i < cfg->nlog_dirs; i++)
        if (strlen(cfg->log_dirs[i]) == n && memcmp(cfg->log_dirs[i], s, n) == 0)
            return fail_at(cfg, key, err, "%s: '%.*s' listed twice", bk_cfg_desc(key)->name,
                           (int)n, s);
    assert(n < BK_CFG_VALUE_MAX);
    memcpy(cfg->log_dirs[cfg->nlog_dirs], s, n);
    cfg->log_dirs[cfg->nlog_dirs][n] = '\0';
    cfg->nlog_dirs++;
    return KP_OK;
}

static int resolve_log_dirs(bk_cfg_t *cfg, bk_cfg_err_t *err) {
    bk_cfg_key_t key = cfg->val[BK_CFG_LOG_DIRS].is_null ? BK_CFG_LOG_DIR : BK_CFG_LOG_DIRS;
    const char *text = cfg->val[key].text;
    int rc;
    if (key == BK_CFG_LOG_DIR)
        rc = text[0] ? add_log_dir(cfg, text, strlen(text), &key, err) : KP_OK;
    else
        rc = for_each_item(cfg, text, add_log_dir, &key, err);
    if (rc != KP_OK)
        return rc;
    if (cfg->nlog_dirs == 0)
        return fail_at(cfg, key, err, "%s: at least one directory needed", bk_cfg_desc(key)->name);
    if (!cfg->val[BK_CFG_METADATA_LOG_DIR].is_null && cfg->val[BK_CFG_METADATA_LOG_DIR].text[0] == '\0')
        return fail_at(cfg, BK_CFG_METADATA_LOG_DIR, err, "metadata.log.dir is empty");
    return KP_OK;
}

/* The admin port's POST routes resign the raft leader and move leaders: an
 * unauthenticated port may only listen on loopback, unless the operator
 * says otherwise in so many words (admin.allow.insecure). Authenticated =
 * HTTP Basic, or TLS with a required client certificate. */
static bool loopback_host(const char *host) {
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 || strcmp(host, "localhost") == 0;
}

static int resolve_admin_exposure(const bk_cfg_t *cfg, const char *host, bk_cfg_err_t *err) {
    bool basic = strcmp(cfg->val[BK_CFG_ADMIN_AUTHENTICATION].text, "basic") == 0;
    bool tls = strcmp(cfg->val[BK_CFG_ADMIN_SECURITY_PROTOCOL].text, "SSL") == 0;
    const char *ca = bk_cfg_listener_str(cfg, "ADMIN", "ssl.client.auth");
    bool certs = tls && ca && strcmp(ca, "required") == 0;
    if (basic || certs || loopback_host(host) || cfg->val[BK_CFG_ADMIN_ALLOW_INSECURE].i != 0)
        return KP_OK;
    return fail_at(cfg, BK_CFG_ADMIN_LISTENER, err,
                   "admin.listener=%s binds %s, reachable from other hosts, but the admin port authenticates "
                   "no one and its POST routes change the cluster: set admin.authentication=basic (or "
                   "admin.security.protocol=SSL with listener.name.admin.ssl.client.auth=required), bind "
                   "127.0.0.1, or accept the risk with admin.allow.insecure=true",
                   cfg->val[BK_CFG_ADMIN_LISTENER].text, host[0] ? host : "every address");
}

static int resolve_misc(bk_cfg_t *cfg, bk_cfg_err_t *err) {
    if (cfg->val[BK_CFG_GROUP_MIN_SESSION_TIMEOUT_MS].i > cfg->val[BK_CFG_GROUP_MAX_SESSION_TIMEOUT_MS].i)
        return fail_at(cfg, BK_CFG_GROUP_MIN_SESSION_TIMEOUT_MS, err,
                       "group.min.session.timeout.ms must not exceed group.max.session.timeout.ms");
    if (cfg->val[BK_CFG_BROKER_HEARTBEAT_INTERVAL_MS].i >= cfg->val[BK_CFG_BROKER_SESSION_TIMEOUT_MS].i)
        return fail_at(cfg, BK_CFG_BROKER_HEARTBEAT_INTERVAL_MS, err,
                       "broker.heartbeat.interval.ms must be below broker.session.timeout.ms");
    const char *admin = cfg->val[BK_CFG_ADMIN_LISTENER].text;
    char host[BK_CFG_HOST_MAX + 1];
    uint16_t port;
    const char *why = NULL;
    if (admin[0] && bk_cfg_hostport_parse(admin, strlen(admin), host, &port, &why) != KP_OK)
        return fail_at(cfg, BK_CFG_ADMIN_LISTENER, err, "admin.listener=%s: %s", admin, why);
    if (admin[0] && resolve_admin_exposure(cfg, host, err) != KP_OK)
        return KP_ERR_BAD_VALUE;
    bk_cfg_ip_override_t ov[BK_CFG_IP_OVERRIDES_MAX];
    size_t nov = 0;
    char ovwhy[160];
    if (bk_cfg_ip_overrides_parse(cfg->val[BK_CFG_MAX_CONNECTIONS_PER_IP_OVERRIDES].text, ov, &nov, ovwhy,
                                  sizeof ovwhy) != KP_OK)
        return fail_at(cfg, BK_CFG_MAX_CONNECTIONS_PER_IP_OVERRIDES, err, "max.connections.per.ip.overrides: %s",
                       ovwhy);
    /* Kafka's rule: a frame the budget cannot hold would never be read */
    int64_t queued = cfg->val[BK_CFG_QUEUED_MAX_REQUEST_BYTES].i;
    if (queued != -1 && queued < cfg->val[BK_CFG_SOCKET_REQUEST_MAX_BYTES].i)
        return fail_at(cfg, BK_CFG_QUEUED_MAX_REQUEST_BYTES, err,
                       "queued.max.request.bytes=%lld must be -1 (unbounded) or at least socket.request.max.bytes "
                       "(%lld)", (long long)queued, (long long)cfg->val[BK_CFG_SOCKET_REQUEST_MAX_BYTES].i);
    return KP_OK;
}

int cfg_resolve(bk_cfg_t *cfg, bk_cfg_err_t *err) {
    if (cfg->val[BK_CFG_PROCESS_ROLES].i == 0)
        return fail_at(cfg, BK_CFG_PROCESS_ROLES, err, "process.roles=: at least one role needed");
    int rc = resolve_listeners(cfg, err);
    if (rc == KP_OK) rc = resolve_advertised(cfg, err);
    if (rc == KP_OK) rc = resolve_voters(cfg, err);
    if (rc == KP_OK) rc = resolve_log_dirs(cfg, err);
    if (rc == KP_OK) rc = resolve_misc(cfg, err);
    if (rc == KP_OK) rc = cfg_check_tls(cfg, err);
    return rc;
}

/* --- derived values and views ------------------------------------------ */

int32_t bk_cfg_node_id(const bk_cfg_t *cfg) { return (int32_t)bk_cfg_int(cfg, BK_CFG_NODE_ID); }

/* process.roles is a LIST with allowed "broker,controller": i is a bitmask. */
bool bk_cfg_is_broker(const bk_cfg_t *cfg) { return (bk_cfg_int(cfg, BK_CFG_PROCESS_ROLES) & 1) != 0; }
bool bk_cfg_is_controller(const bk_cfg_t *cfg) { return (bk_cfg_int(cfg, BK_CFG_PROCESS_ROLES) & 2) != 0; }

/* ms, else minutes, else hours; Kafka maps any negative result to -1. */
int64_t bk_cfg_retention_ms(const bk_cfg_t *cfg) {
    int64_t ms;
    if (!bk_cfg_is_null(cfg, BK_CFG_LOG_RETENTION_MS))
        ms = bk_cfg_int(cfg, BK_CFG_LOG_RETENTION_MS);
    else if (!bk_cfg_is_null(cfg, BK_CFG_LOG_RETENTION_MINUTES))
        ms = bk_cfg_int(cfg, BK_CFG_LOG_RETENTION_MINUTES) * 60000;
    else
        ms = bk_cfg_int(cfg, BK_CFG_LOG_RETENTION_HOURS) * 3600000;
    return ms < 0 ? -1 : ms;
}

int64_t bk_cfg_roll_ms(const bk_cfg_t *cfg) {
    if (!bk_cfg_is_null(cfg, BK_CFG_LOG_ROLL_MS))
        return bk_cfg_int(cfg, BK_CFG_LOG_ROLL_MS);
    return bk_cfg_int(cfg, BK_CFG_LOG_ROLL_HOURS) * 3600000;
}

int64_t bk_cfg_roll_jitter_ms(const bk_cfg_t *cfg) {
    if (!bk_cfg_is_null(cfg, BK_CFG_LOG_ROLL_JITTER_MS))
        return bk_cfg_int(cfg, BK_CFG_LOG_ROLL_JITTER_MS);
    return bk_cfg_int(cfg, BK_CFG_LOG_ROLL_JITTER_HOURS) * 3600000;
}

int64_t bk_cfg_flush_ms(const bk_cfg_t *cfg) {
    if (!bk_cfg_is_null(cfg, BK_CFG_LOG_FLUSH_INTERVAL_MS))
        return bk_cfg_int(cfg, BK_CFG_LOG_FLUSH_INTERVAL_MS);
    return INT64_MAX;
}

const bk_cfg_listener_t *bk_cfg_listeners(const bk_cfg_t *cfg, size_t *n) {
    *n = cfg->nlisteners;
    return cfg->listeners;
}

const bk_cfg_listener_t *bk_cfg_advertised(const bk_cfg_t *cfg, size_t *n) {
    *n = cfg->nadvertised;
    return cfg->advertised;
}

const bk_cfg_voter_t *bk_cfg_voters(const bk_cfg_t *cfg, size_t *n) {
    *n = cfg->nvoters;
    return cfg->voters;
}

size_t bk_cfg_log_dir_count(const bk_cfg_t *cfg) { return cfg->nlog_dirs; }

const char *bk_cfg_log_dir(const bk_cfg_t *cfg, size_t i) {
    assert(i < cfg->nlog_dirs);
    return cfg->log_dirs[i];
}

const char *bk_cfg_metadata_log_dir(const bk_cfg_t *cfg) {
    const char *m = bk_cfg_str(cfg, BK_CFG_METADATA_LOG_DIR);
    return m ? m : cfg->log_dirs[0];
}

const char *bk_cfg_admin_listener(const bk_cfg_t *cfg) {
    return bk_cfg_str(cfg, BK_CFG_ADMIN_LISTENER);
}

/* --- dynamic changes and describe ---------------------------------------- */

/* AlterConfigs on a stored-only key: Kafka's update mode decides. */
static int set_stored(bk_cfg_t *cfg, const bk_cfg_kkey_t *k, const char *value, bool cluster_default,
                      bool validate_only, char *why, size_t why_len) {
    if (k->mode == BK_CFG_MODE_READ_ONLY) {
        snprintf(why, why_len, "broker config '%s' is read-only (set it in the config file or with --set; "
                 "it needs a restart)", k->name);
        return BK_CFG_INVALID_CONFIG;
    }
    if (k->mode == BK_CFG_MODE_PER_BROKER && cluster_default && value != NULL) {
        snprintf(why, why_len, "broker config '%s' can only be set for one broker (resource name = "
                 "the broker id), not as the cluster default", k->name);
        return BK_CFG_INVALID_CONFIG;
    }
    bk_cfg_val_t *v = NULL;
    if (value != NULL) {
        char reason[256];
        if ((v = malloc(sizeof *v)) == NULL) {
            snprintf(why, why_len, "out of memory");
            return BK_CFG_INVALID_CONFIG;
        }
        if (bk_cfg_kkey_check(k, value, strlen(value), v, reason, sizeof reason) != KP_OK) {
            snprintf(why, why_len, "%s=%.200s: %s", k->name, value, reason);
            free(v);
            return BK_CFG_INVALID_CONFIG;
        }
    }
    int rc = 0;
    if (!validate_only &&
        cfg_kval_set(cfg, cluster_default ? KV_DYN_DEFAULT : KV_DYN_BROKER, k, v ? v->text : NULL) != KP_OK) {
        snprintf(why, why_len, "out of memory");
        rc = BK_CFG_INVALID_CONFIG;
    }
    free(v);
    return rc;
}

int bk_cfg_set_dynamic(bk_cfg_t *cfg, const char *name, const char *value,
                          bool cluster_default, bool validate_only, char *why, size_t why_len) {
    bk_cfg_key_t key = bk_cfg_key_by_name(name, strlen(name));
    if (key == BK_CFG__COUNT && cfg_lov_is(name, strlen(name)))
        return cfg_lov_dynamic(cfg, name, value, cluster_default, validate_only, why, why_len);
    if (key == BK_CFG__COUNT) {
        const bk_cfg_kkey_t *k = bk_cfg_kkey_find(name, strlen(name), BK_CFG_SCOPE_BROKER);
        if (k != NULL && bk_cfg_kkey_stored_only(k))
            return set_stored(cfg, k, value, cluster_default, validate_only, why, why_len);
        if (k == NULL && bk_cfg_kkey_find(name, strlen(name), BK_CFG_SCOPE_TOPIC) != NULL)
            snprintf(why, why_len, "'%s' is a topic config, not a broker config", name);
        else
            snprintf(why, why_len, "unknown broker config '%s'", name);
        return BK_CFG_INVALID_CONFIG;
    }
    const bk_cfg_desc_t *d = bk_cfg_desc(key);
    if (!(d->flags & BK_CFG_CF_DYNAMIC)) {
        snprintf(why, why_len, "broker config '%s' cannot be changed without a restart", name);
        return BK_CFG_INVALID_CONFIG;
    }
    int level = cluster_default ? DYN_DEFAULT : DYN_BROKER;
    if (value == NULL) {
        if (!validate_only)
            cfg->dyn_set[level][key] = false;
        return 0;
    }
    bk_cfg_val_t v;
    char reason[256];
    if (bk_cfg_parse_value(d, value, strlen(value), &v, reason, sizeof reason) != KP_OK) {
        snprintf(why, why_len, "%s=%.200s: %s", name, value, reason);
        return BK_CFG_INVALID_CONFIG;
    }
    if (!validate_only) {
        cfg->dyn[level][key] = v;
        cfg->dyn_set[level][key] = true;
    }
    return 0;
}

void bk_cfg_for_each_dynamic(void (*fn)(const char *name, void *ctx), void *ctx) {
    for (int k = 0; k < BK_CFG__COUNT; k++)
        if (bk_cfg_desc((bk_cfg_key_t)k)->flags & BK_CFG_CF_DYNAMIC)
            fn(bk_cfg_desc((bk_cfg_key_t)k)->name, ctx);
    for (size_t i = 0; i < bk_cfg_kkey_count(); i++) {
        const bk_cfg_kkey_t *k = bk_cfg_kkey_at(i);
        if (k->scope == BK_CFG_SCOPE_BROKER && bk_cfg_kkey_stored_only(k) && k->mode != BK_CFG_MODE_READ_ONLY)
            fn(k->name, ctx);
    }
}

/* The stored-only rows of DescribeConfigs on a broker. */
static void describe_stored(const bk_cfg_t *cfg, bk_cfg_entry_fn fn, void *ctx) {
    for (size_t i = 0; i < bk_cfg_kkey_count(); i++) {
        const bk_cfg_kkey_t *k = bk_cfg_kkey_at(i);
        if (k->scope != BK_CFG_SCOPE_BROKER || !bk_cfg_kkey_stored_only(k))
            continue;
        bk_cfg_source_t source;
        const char *value = cfg_kval(cfg, k, &source);
        /* Kafka 4 no longer lists obsolete keys; skiff shows them once set */
        if (k->status == BK_CFG_STATUS_OBSOLETE && source == BK_CFG_SRC_DEFAULT)
            continue;
        char doc[512];
        bk_cfg_kkey_doc(k, doc, sizeof doc);
        bool sensitive = k->type == BK_CFG_KT_PASSWORD;
        bk_cfg_entry_t e = {
            .name = k->name,
            .value = sensitive ? NULL : value,
            .source = source,
            .is_default = source == BK_CFG_SRC_DEFAULT,
            .read_only = k->mode == BK_CFG_MODE_READ_ONLY,
            .sensitive = sensitive,
            .config_type = bk_cfg_kkey_type_code(k),
            .documentation = doc,
        };
        fn(&e, ctx);
    }
}

void bk_cfg_describe_broker(const bk_cfg_t *cfg, bk_cfg_entry_fn fn, void *ctx) {
    for (int k = 0; k < BK_CFG__COUNT; k++) {
        const bk_cfg_desc_t *d = bk_cfg_desc((bk_cfg_key_t)k);
        const bk_cfg_kkey_t *kk = bk_cfg_kkey_find(d->name, strlen(d->name), BK_CFG_SCOPE_BROKER);
        char doc[512];
        if (kk != NULL)
            bk_cfg_kkey_doc(kk, doc, sizeof doc);
        bk_cfg_entry_t e = {
            .documentation = kk ? doc : NULL,
            .name = d->name,
            .value = (d->flags & BK_CFG_CF_SENSITIVE) ? NULL : bk_cfg_str(cfg, (bk_cfg_key_t)k),
            .source = bk_cfg_source(cfg, (bk_cfg_key_t)k),
            .read_only = !(d->flags & BK_CFG_CF_DYNAMIC),
            .sensitive = (d->flags & BK_CFG_CF_SENSITIVE) != 0,
            .config_type = bk_cfg_type_code(d->type, d->flags),
        };
        e.is_default = e.source == BK_CFG_SRC_DEFAULT;
        fn(&e, ctx);
    }
    describe_stored(cfg, fn, ctx);
}
