/* broker/main.c — bin/skiff: one node.
 *
 *   bin/skiff --config FILE [--node N] [--set key=value ...]
 *   bin/skiff --describe-config [KEY]   the config key table: one key in
 *                                       full, or every key on one line each
 *
 * Exit status: 0 after a graceful stop (SIGTERM/SIGINT), 2 for a config
 * error (the message names file:line:key), 1 when start-up fails or the
 * node stops because it must not run (its node id is held by another live
 * process: DUPLICATE_BROKER_REGISTRATION, after a graceful stop). A second
 * stop signal exits at once (1) without the clean-shutdown marker. */
#include <event2/event.h>
#include <event2/thread.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/config/config.h"
#include "broker/config/config_kafka.h"
#include "broker/core/credentials.h"
#include "broker/node.h"
#include "broker/node_tls.h"
#include "broker/net/mem.h"
#include "broker/net/signals.h"

typedef struct {
    struct event_base *base;
    bk_node_t node;
    bool stopped;
} app_t;

static void stopped(bk_node_t *n, void *arg) {
    (void)n;
    app_t *a = arg;
    a->stopped = true;
    event_base_loopexit(a->base, NULL);
}

static void on_stop(int signo, unsigned count, void *arg) {
    app_t *a = arg;
    if (count > 1) {
        fprintf(stderr, "skiff: second signal %d: exiting now\n", signo);
        exit(1);
    }
    bk_broker_shutdown(&a->node, stopped, a);
}

/* SIGHUP: new certificates for new connections (node_tls.h). */
static void on_hup(void *arg) {
    app_t *a = arg;
    (void)bk_broker_tls_reload(&a->node);
}

/* --describe-config [KEY] / --describe-config=KEY: 0, or 2 for an unknown key. */
static int describe_config(int argc, char **argv) {
    const char *key = NULL;
    if (strncmp(argv[1], "--describe-config=", 18) == 0) key = argv[1] + 18;
    else if (argc > 2) key = argv[2];
    if (argc > 3 || (key && argc > 2 && argv[1][17] == '=')) {
        fprintf(stderr, "usage: skiff --describe-config [KEY]\n");
        return 2;
    }
    if (bk_cfg_kkey_print(stdout, key) == 0) {
        fprintf(stderr, "skiff: unknown config key '%s' (skiff --describe-config lists them all; "
                "see broker/config/CONFIGURATION.md)\n", key);
        return 2;
    }
    return 0;
}

/* bk_cfg_stored_fn: one start-up line per accepted key that does nothing. */
static void log_stored(void *ctx, const char *name, const char *value, const char *doc) {
    (void)ctx;
    fprintf(stderr, "skiff: config key %s=%s is accepted but has no effect: %s\n", name, value, doc);
}

/* skiff format --config FILE [--node N] [--set k=v ...] --add-scram SPEC ...:
 * the first SCRAM credentials of a new cluster (core/scram_bootstrap.c).
 * 0 written, 2 usage or config error, 1 the file could not be written. */
static int format_cmd(int argc, char **argv) {
    const char *specs[BK_NODE_SCRAM_BOOT_MAX];
    size_t ns = 0;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return 1;
    int nr = 0;
    rest[nr++] = argv[0];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--add-scram") == 0 && i + 1 < argc) {
            if (ns >= BK_NODE_SCRAM_BOOT_MAX) { fprintf(stderr, "skiff format: too many --add-scram\n"); free(rest); return 2; }
            specs[ns++] = argv[++i];
        } else if (strncmp(argv[i], "--add-scram=", 12) == 0) {
            if (ns >= BK_NODE_SCRAM_BOOT_MAX) { fprintf(stderr, "skiff format: too many --add-scram\n"); free(rest); return 2; }
            specs[ns++] = argv[i] + 12;
        } else {
            rest[nr++] = argv[i];
        }
    }
    bk_cfg_err_t cerr;
    bk_cfg_t *cfg = bk_cfg_load_args(nr, rest, &cerr);
    free(rest);
    if (!cfg) {
        fprintf(stderr, "skiff format: %s\n", cerr.msg);
        return 2;
    }
    if (ns == 0) {
        fprintf(stderr, "usage: skiff format --config FILE [--node N] "
                        "--add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]' ...\n");
        bk_cfg_free(cfg);
        return 2;
    }
    char err[512];
    int rc = bk_node_scram_format(cfg, specs, ns, err, sizeof err);
    if (rc != 0) fprintf(stderr, "skiff %s\n", err);
    else fprintf(stderr, "skiff format: %zu SCRAM credential(s) written to %s/bootstrap.scram\n", ns,
                 bk_cfg_metadata_log_dir(cfg));
    bk_cfg_free(cfg);
    return rc == 0 ? 0 : strncmp(err, "format: cannot write", 20) == 0 ? 1 : 2;
}

int main(int argc, char **argv) {
    /* before any libevent call: its buffer chains and file segments, made
     * and freed per response, come from the block pool (issue 19) */
    bk_net_mem_for_libevent();
    if (argc > 1 && strncmp(argv[1], "--describe-config", 17) == 0 &&
        (argv[1][17] == '\0' || argv[1][17] == '='))
        return describe_config(argc, argv);
    if (argc > 1 && strcmp(argv[1], "format") == 0) return format_cmd(argc, argv);
    /* Blocks from 128 KiB up are mmap'd and so returned at free(). A fixed
     * threshold also turns off glibc's dynamic one, which after the first
     * large free (a 100 MiB request copied by the dispatcher) would put
     * blocks of up to 32 MiB in the heap, where freed memory often stays in
     * the process (issue 16: RSS not returned after large requests). */
    if (mallopt(M_MMAP_THRESHOLD, 128 * 1024) != 1) fprintf(stderr, "skiff: mallopt(M_MMAP_THRESHOLD) refused\n");
    bk_cfg_err_t cerr;
    bk_cfg_t *cfg = bk_cfg_load_args(argc, argv, &cerr);
    if (!cfg) {
        fprintf(stderr, "skiff: %s\n", cerr.msg);
        fprintf(stderr, "usage: skiff --config FILE [--node N] [--set key=value ...]\n"
                        "       skiff --describe-config [KEY]\n"
                        "       skiff format --config FILE [--node N] --add-scram 'SCRAM-SHA-256=[name=N,password=P]'\n");
        return 2;
    }
    (void)bk_cfg_stored_set(cfg, log_stored, NULL);
    {
        /* SASL settings are config: a listener without a served mechanism,
         * PLAIN without users, a jaas value or super.users that does not
         * parse is a config error (exit 2), checked before anything opens */
        static bk_node_t probe;
        char serr[BK_NODE_ERR_MAX] = "";
        probe.cfg = cfg;
        probe.id = bk_cfg_node_id(cfg);
        int src = bk_node_sasl_init(&probe, false, serr, sizeof serr);
        bk_node_sasl_free(&probe);
        if (src != 0) {
            fprintf(stderr, "skiff: %s: %s\n", bk_cfg_path(cfg), serr);
            bk_cfg_free(cfg);
            return 2;
        }
    }
    if (evthread_use_pthreads() != 0) {
        fprintf(stderr, "skiff: libevent threads unavailable\n");
        bk_cfg_free(cfg);
        return 1;
    }
    static app_t app;
    app.base = event_base_new();
    if (!app.base) {
        fprintf(stderr, "skiff: cannot create the event loop\n");
        bk_cfg_free(cfg);
        return 1;
    }
    bk_net_signals_t *sig = bk_net_signals_new(app.base, on_stop, &app);
    char err[BK_NODE_ERR_MAX] = "";
    int rc = 0;
    if (!sig) {
        fprintf(stderr, "skiff: cannot install signal handlers\n");
        rc = 1;
    } else if (bk_broker_start(&app.node, app.base, cfg, err, sizeof err) != 0) {
        fprintf(stderr, "skiff: start-up failed: %s\n", err);
        rc = 1;
    } else if (bk_net_signals_on_hup(sig, on_hup, &app) != 0) {
        fprintf(stderr, "skiff: cannot install the SIGHUP handler\n");
        rc = 1;
    } else {
        event_base_dispatch(app.base);
        rc = app.stopped ? app.node.exit_status : 1;
        if (rc == 0) fprintf(stderr, "skiff: node %d stopped cleanly\n", app.node.id);
        else if (app.stopped) fprintf(stderr, "skiff: node %d stopped, exit status %d\n", app.node.id, rc);
    }
    bk_broker_free(&app.node);
    bk_net_signals_free(sig);
    event_base_free(app.base);
    bk_cfg_free(cfg);
    /* libevent's global locks, which it keeps for the process's life, are
     * pool blocks (pointers into them, past the header: valgrind would call
     * them "possibly lost"); then the pool's own blocks */
    libevent_global_shutdown();
    bk_net_mem_trim();
    return rc;
}
