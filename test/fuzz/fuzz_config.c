/* libFuzzer target: the broker config loader (bk_cfg_load and the
 * command-line front end bk_cfg_load_args).
 *
 * Input: byte 0 = options, then NUL-separated chunks: chunk 0 is the file
 * text (written to a temp file), chunks 1.. are --set values (or, in args
 * mode, raw command-line arguments after "--config FILE"); the last chunk is
 * also tried as a dynamic change "name=value" on a loaded config.
 * Options: bits 0-2 node id (7 = not given), bit 3 args mode, bit 4 dynamic
 * change at cluster-default level, bit 5 validate only, bit 6 delete (NULL
 * value) instead of set.
 * Loading must never crash; a loaded config must answer every accessor
 * within its stated bounds, and be freed without leaks (LeakSanitizer). */
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/config/config.h"

#define CHUNKS_MAX 16 /* bound on --set values / arguments per input */

static char g_dir[64];
static char g_path[96];

static void cleanup(void) {
    unlink(g_path);
    rmdir(g_dir);
}

static void put_file(const uint8_t *p, size_t n) {
    FILE *f = fopen(g_path, "wb");
    if (!f) abort();
    if (n && fwrite(p, 1, n, f) != n) abort();
    if (fclose(f) != 0) abort();
}

static void on_entry(const bk_cfg_entry_t *e, void *ctx) {
    size_t *n = ctx;
    if (!e->name || !e->name[0]) abort();
    if (e->is_default != (e->source == BK_CFG_SRC_DEFAULT)) abort();
    if (e->value && strlen(e->value) >= BK_CFG_VALUE_MAX) abort();
    (*n)++;
}

static void check_key(const bk_cfg_t *cfg, bk_cfg_key_t k) {
    const bk_cfg_desc_t *d = bk_cfg_desc(k);
    const bk_cfg_val_t *v = bk_cfg_config_val(cfg, k);
    (void)bk_cfg_source(cfg, k);
    if (bk_cfg_is_null(cfg, k) != v->is_null) abort();
    if ((d->flags & BK_CFG_CF_REQUIRED) && v->is_null) abort();
    if (v->is_null) {
        if (bk_cfg_str(cfg, k) != NULL) abort();
        return;
    }
    if (memchr(v->text, '\0', sizeof v->text) == NULL) abort();
    switch (d->type) {
    case BK_CFG_CT_INT: case BK_CFG_CT_SHORT: case BK_CFG_CT_LONG: {
        int64_t i = bk_cfg_int(cfg, k);
        if (i < d->min || i > d->max) abort();
        break;
    }
    case BK_CFG_CT_BOOL: (void)bk_cfg_bool(cfg, k); break;
    case BK_CFG_CT_DOUBLE: {
        double x = bk_cfg_double(cfg, k);
        /* a maximum of BK_CFG_I64MAX means any finite number (config_keys.c) */
        if (!(x >= (double)d->min && (d->max == BK_CFG_I64MAX ? isfinite(x) : x <= (double)d->max))) abort();
        break;
    }
    case BK_CFG_CT_ENUM: case BK_CFG_CT_LIST:
        if (d->allowed) (void)bk_cfg_int(cfg, k);
        break;
    case BK_CFG_CT_STRING: break;
    }
}

static void check_loaded(const bk_cfg_t *cfg) {
    for (int k = 0; k < BK_CFG__COUNT; k++) check_key(cfg, (bk_cfg_key_t)k);
    if (bk_cfg_node_id(cfg) < 0) abort();
    if (!bk_cfg_is_broker(cfg) && !bk_cfg_is_controller(cfg)) abort();
    (void)bk_cfg_retention_ms(cfg);
    (void)bk_cfg_roll_ms(cfg);
    (void)bk_cfg_roll_jitter_ms(cfg);
    (void)bk_cfg_flush_ms(cfg);
    size_t n;
    const bk_cfg_listener_t *l = bk_cfg_listeners(cfg, &n);
    if (n > BK_CFG_LISTENERS_MAX || (n && !l)) abort();
    for (size_t i = 0; i < n; i++)
        if (!memchr(l[i].name, '\0', sizeof l[i].name) || !memchr(l[i].host, '\0', sizeof l[i].host)) abort();
    l = bk_cfg_advertised(cfg, &n);
    if (n > BK_CFG_LISTENERS_MAX || (n && !l)) abort();
    const bk_cfg_voter_t *v = bk_cfg_voters(cfg, &n);
    if (n > BK_CFG_VOTERS_MAX || (n && !v)) abort();
    for (size_t i = 0; i < n; i++)
        if (v[i].id < 0 || !memchr(v[i].host, '\0', sizeof v[i].host)) abort();
    n = bk_cfg_log_dir_count(cfg);
    if (n < 1 || n > BK_CFG_LOG_DIRS_MAX) abort();
    for (size_t i = 0; i < n; i++)
        if (!bk_cfg_log_dir(cfg, i)) abort();
    if (!bk_cfg_metadata_log_dir(cfg) || !bk_cfg_admin_listener(cfg) || !bk_cfg_path(cfg)) abort();
    size_t rows = 0;
    bk_cfg_describe_broker(cfg, on_entry, &rows);
    /* every acted-on key, then the stored-only keys of the key table (issue 22) */
    if (rows < BK_CFG__COUNT) abort();
}

/* "name=value" as a dynamic change; the config must stay consistent. */
static void try_dynamic(bk_cfg_t *cfg, const char *chunk, uint8_t opt) {
    const char *eq = strchr(chunk, '=');
    if (!eq) return;
    char name[256];
    size_t kn = (size_t)(eq - chunk);
    if (kn >= sizeof name) return;
    memcpy(name, chunk, kn);
    name[kn] = '\0';
    bool cluster_default = opt & 0x10, validate_only = opt & 0x20, del = opt & 0x40;
    char why[512];
    why[0] = '\0';
    int rc = bk_cfg_set_dynamic(cfg, name, del ? NULL : eq + 1, cluster_default, validate_only, why, sizeof why);
    if (rc != 0 && rc != BK_CFG_INVALID_CONFIG) abort();
    if (rc != 0 && !why[0]) abort();
    if (rc == 0 && !validate_only && !del) {
        bk_cfg_key_t k = bk_cfg_key_by_name(name, kn);
        if (k == BK_CFG__COUNT) abort();
        bk_cfg_source_t s = bk_cfg_source(cfg, k);
        if (s != BK_CFG_SRC_DYNAMIC_BROKER && s != BK_CFG_SRC_DYNAMIC_DEFAULT_BROKER) abort();
    }
    check_loaded(cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_dir[0]) {
        strcpy(g_dir, "/tmp/fuzz_cfg_XXXXXX");
        if (!mkdtemp(g_dir)) abort();
        snprintf(g_path, sizeof g_path, "%s/skiff.conf", g_dir);
        atexit(cleanup);
    }
    if (size < 1) return 0;
    uint8_t opt = data[0];
    /* split a NUL-terminated copy of the rest into chunks */
    char *text = malloc(size);
    if (!text) abort();
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    char *chunks[CHUNKS_MAX];
    size_t nchunks = 0, len0 = strlen(text);
    for (char *p = text + len0 + 1; p < text + size - 1 && nchunks < CHUNKS_MAX; p += strlen(p) + 1)
        chunks[nchunks++] = p;
    put_file((const uint8_t *)text, len0);

    int32_t node = (opt & 7) == 7 ? -1 : (int32_t)(opt & 7);
    bk_cfg_err_t err;
    bk_cfg_t *cfg;
    if (opt & 8) {
        char *argv[3 + CHUNKS_MAX];
        argv[0] = "skiff";
        argv[1] = "--config";
        argv[2] = g_path;
        for (size_t i = 0; i < nchunks; i++) argv[3 + i] = chunks[i];
        cfg = bk_cfg_load_args((int)(3 + nchunks), argv, &err);
    } else {
        cfg = bk_cfg_load(g_path, node, (const char *const *)chunks, nchunks, &err);
    }
    if (!cfg) {
        if (!memchr(err.msg, '\0', sizeof err.msg) || !err.msg[0]) abort(); /* every failure says why */
    } else {
        check_loaded(cfg);
        if (nchunks) try_dynamic(cfg, chunks[nchunks - 1], opt);
        bk_cfg_free(cfg);
    }
    free(text);
    return 0;
}
