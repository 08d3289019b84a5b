/* scram_bootstrap.c — the first SCRAM credentials of a new cluster, as
 * Kafka's `kafka-storage format --add-scram` (credentials.h):
 *
 *   skiff format --config FILE [--node N] \
 *       --add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]'
 *
 * writes the derived credential (salt, StoredKey, ServerKey, iterations;
 * never the password) to `<metadata dir>/bootstrap.scram`. Every node is
 * formatted the same way. The node reads the file once at start (before
 * the loop serves: no file I/O on the loop later). Whichever node is the
 * active controller while the image has no ScramBootstrapDone record
 * commits the credentials and that marker in one batch (retried from the
 * 1 s tick until it commits); the marker is in the log and in snapshots,
 * so the file is never applied twice, and a credential changed or deleted
 * later is never brought back. The decision image is asked (committed +
 * appended entries), so a new leader sees a marker its predecessor
 * committed even before applying it.
 *
 * File: one line per credential, "v1 MECH NAME_B64 ITERATIONS SALT_B64
 * STORED_B64 SERVER_B64"; at most BK_NODE_SCRAM_BOOT_MAX lines, 64 KiB.
 * A file that does not parse refuses the start (its line number named). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "broker/core/credentials.h"
#include "broker/core/node.h"
#include "broker/meta/records.h"
#include "protocol/kp_base64.h"
#include "storage/st_status.h"

#define FILE_NAME "bootstrap.scram"
#define FILE_MAX (64 * 1024)

static int mkdirs(const char *path) {
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) return -1;
    memcpy(tmp, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == 0) {
            char c = tmp[i];
            tmp[i] = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
            tmp[i] = c;
        }
    }
    return 0;
}

/* ---- --add-scram 'MECH=[k=v,...]' ------------------------------------------ */

/* Next "k=v" of the bracket list at *p (values may be "quoted"). */
static int next_kv(const char **p, const char *end, char *k, size_t kc, char *v, size_t vc) {
    const char *s = *p;
    while (s < end && (*s == ',' || *s == ' ')) s++;
    if (s >= end) return 0;
    const char *eq = s;
    while (eq < end && *eq != '=') eq++;
    if (eq >= end || eq == s || (size_t)(eq - s) >= kc) return -1;
    memcpy(k, s, (size_t)(eq - s));
    k[eq - s] = 0;
    const char *q = eq + 1;
    size_t vn = 0;
    if (q < end && *q == '"') {
        q++;
        while (q < end && *q != '"') {
            if (vn + 1 >= vc) return -1;
            v[vn++] = *q++;
        }
        if (q >= end) return -1;
        q++;
    } else {
        while (q < end && *q != ',') {
            if (vn + 1 >= vc) return -1;
            v[vn++] = *q++;
        }
    }
    v[vn] = 0;
    *p = q;
    return 1;
}

int bk_node_scram_parse_spec(const char *spec, char *name, size_t name_cap, kp_scram_cred_t *out,
                             char *err, size_t len) {
    const char *eq = strchr(spec, '=');
    size_t sl = strlen(spec);
    if (!eq || eq[1] != '[' || sl < 2 || spec[sl - 1] != ']') {
        snprintf(err, len, "--add-scram '%s': expected MECHANISM=[name=NAME,password=PASSWORD,...]", spec);
        return -1;
    }
    kp_sasl_mech_t mech;
    kp_slice_t ms = { (const uint8_t *)spec, (size_t)(eq - spec) };
    if (kp_sasl_mech_parse(ms, &mech) != KP_OK || !kp_sasl_mech_is_scram(mech)) {
        snprintf(err, len, "--add-scram: unknown mechanism '%.*s' (SCRAM-SHA-256 or SCRAM-SHA-512)", (int)ms.len, spec);
        return -1;
    }
    const char *p = eq + 2, *end = spec + sl - 1;
    char k[32], v[KP_SASL_PASSWORD_MAX + 1], pw[KP_SASL_PASSWORD_MAX + 1] = "";
    uint8_t salt[KP_SCRAM_SALT_MAX], salted[KP_SCRAM_HASH_MAX];
    size_t salt_len = 0, salted_len = 0;
    long iters = KP_SCRAM_ITERATIONS_MIN;
    bool have_pw = false, have_salted = false;
    name[0] = 0;
    int r;
    while ((r = next_kv(&p, end, k, sizeof k, v, sizeof v)) == 1) {
        if (strcmp(k, "name") == 0) {
            if (strlen(v) == 0 || strlen(v) > KP_SASL_NAME_MAX || strlen(v) >= name_cap) {
                snprintf(err, len, "--add-scram: name must be 1 to %d bytes", KP_SASL_NAME_MAX);
                return -1;
            }
            strcpy(name, v);
        } else if (strcmp(k, "password") == 0) {
            strcpy(pw, v);
            have_pw = v[0] != 0;
        } else if (strcmp(k, "iterations") == 0) {
            char *e;
            iters = strtol(v, &e, 10);
            if (*e || iters < KP_SCRAM_ITERATIONS_MIN || iters > KP_SCRAM_ITERATIONS_MAX) {
                snprintf(err, len, "--add-scram: iterations must be %d..%d", KP_SCRAM_ITERATIONS_MIN, KP_SCRAM_ITERATIONS_MAX);
                return -1;
            }
        } else if (strcmp(k, "salt") == 0) {
            if (kp_b64_decode(v, strlen(v), salt, sizeof salt, &salt_len) != KP_OK || salt_len == 0) {
                snprintf(err, len, "--add-scram: salt must be base64 of 1 to %d bytes", KP_SCRAM_SALT_MAX);
                return -1;
            }
        } else if (strcmp(k, "saltedpassword") == 0) {
            if (kp_b64_decode(v, strlen(v), salted, sizeof salted, &salted_len) != KP_OK ||
                salted_len != kp_scram_hash_len(mech)) {
                snprintf(err, len, "--add-scram: saltedpassword must be base64 of %zu bytes", kp_scram_hash_len(mech));
                return -1;
            }
            have_salted = true;
        } else {
            snprintf(err, len, "--add-scram: unknown key '%s' (name, password, iterations, salt, saltedpassword)", k);
            return -1;
        }
    }
    if (r < 0 || !name[0] || have_pw == have_salted || (have_salted && salt_len == 0)) {
        snprintf(err, len, "--add-scram '%.*s...': needs name= and either password= or salt= with saltedpassword=",
                 (int)(eq - spec), spec);
        OPENSSL_cleanse(pw, sizeof pw);
        return -1;
    }
    if (salt_len == 0) {
        salt_len = 32;
        if (RAND_bytes(salt, (int)salt_len) != 1) { snprintf(err, len, "RAND_bytes failed"); return -1; }
    }
    int st = have_pw ? kp_scram_cred_from_password(mech, pw, salt, salt_len, (int32_t)iters, out)
                     : kp_scram_cred_from_salted(mech, salted, salted_len, salt, salt_len, (int32_t)iters, out);
    OPENSSL_cleanse(pw, sizeof pw);
    OPENSSL_cleanse(salted, sizeof salted);
    if (st != KP_OK) { snprintf(err, len, "--add-scram: cannot derive the credential"); return -1; }
    return 0;
}

/* ---- the file ------------------------------------------------------------ */

static void path_of(const bk_cfg_t *cfg, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", bk_cfg_metadata_log_dir(cfg), FILE_NAME);
}

int bk_node_scram_format(const bk_cfg_t *cfg, const char *const *specs, size_t n, char *err, size_t len) {
    if (n == 0 || n > BK_NODE_SCRAM_BOOT_MAX) {
        snprintf(err, len, "format: give 1 to %d --add-scram arguments", BK_NODE_SCRAM_BOOT_MAX);
        return -1;
    }
    char *text = malloc(FILE_MAX);
    if (!text) { snprintf(err, len, "out of memory"); return -1; }
    size_t tl = 0;
    for (size_t i = 0; i < n; i++) {
        char name[KP_SASL_NAME_MAX + 1], nb[KP_SASL_NAME_MAX * 2], sb[KP_SCRAM_SALT_MAX * 2], kb1[KP_SCRAM_HASH_MAX * 2],
            kb2[KP_SCRAM_HASH_MAX * 2];
        kp_scram_cred_t c;
        size_t x;
        if (bk_node_scram_parse_spec(specs[i], name, sizeof name, &c, err, len) != 0) { free(text); return -1; }
        size_t kl = kp_scram_hash_len(c.mech);
        if (kp_b64_encode((const uint8_t *)name, strlen(name), nb, sizeof nb, &x) != KP_OK ||
            kp_b64_encode(c.salt, c.salt_len, sb, sizeof sb, &x) != KP_OK ||
            kp_b64_encode(c.stored_key, kl, kb1, sizeof kb1, &x) != KP_OK ||
            kp_b64_encode(c.server_key, kl, kb2, sizeof kb2, &x) != KP_OK) {
            free(text);
            snprintf(err, len, "format: encoding failed");
            return -1;
        }
        int w = snprintf(text + tl, FILE_MAX - tl, "v1 %s %s %d %s %s %s\n", kp_sasl_mech_name(c.mech), nb,
                         (int)c.iterations, sb, kb1, kb2);
        if (w < 0 || (size_t)w >= FILE_MAX - tl) { free(text); snprintf(err, len, "format: too many credentials"); return -1; }
        tl += (size_t)w;
    }
    const char *dir = bk_cfg_metadata_log_dir(cfg);
    char path[4096], tmp[4200];
    path_of(cfg, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = -1;
    bool ok = mkdirs(dir) == 0 && (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0 &&
              write(fd, text, tl) == (ssize_t)tl && fsync(fd) == 0;
    if (fd >= 0 && close(fd) != 0) ok = false;
    ok = ok && rename(tmp, path) == 0;
    if (ok) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY);
        if (dfd < 0 || fsync(dfd) != 0) ok = false;
        if (dfd >= 0) close(dfd);
    }
    OPENSSL_cleanse(text, tl);
    free(text);
    if (!ok) { snprintf(err, len, "format: cannot write %s: %s", path, strerror(errno)); return -1; }
    return 0;
}

/* Reads `<metadata dir>/bootstrap.scram` into *out (absent: 0 entries). */
int bk_node_scram_boot_read(const bk_cfg_t *cfg, bk_node_scram_boot_t *out, size_t *n, char *err, size_t len) {
    *n = 0;
    char path[4096];
    path_of(cfg, path, sizeof path);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) return 0;
        snprintf(err, len, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int lineno = 0, rc = 0;
    size_t total = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        total += strlen(line);
        if (total > FILE_MAX || strchr(line, '\n') == NULL) { rc = -1; break; }
        if (line[0] == '\n' || line[0] == '#') continue;
        char mech[32], nb[512], sb[512], k1[512], k2[512];
        int iters;
        if (*n >= BK_NODE_SCRAM_BOOT_MAX ||
            sscanf(line, "v1 %31s %511s %d %511s %511s %511s", mech, nb, &iters, sb, k1, k2) != 6) { rc = -1; break; }
        bk_node_scram_boot_t *b = &out[*n];
        kp_sasl_mech_t m;
        size_t x, kl;
        if (kp_sasl_mech_parse(kp_slice_cstr(mech), &m) != KP_OK || !kp_sasl_mech_is_scram(m)) { rc = -1; break; }
        kl = kp_scram_hash_len(m);
        memset(b, 0, sizeof *b);
        b->cred.mech = m;
        b->cred.iterations = iters;
        size_t nl = 0, k1l = 0, k2l = 0;
        if (kp_b64_decode(nb, strlen(nb), (uint8_t *)b->name, sizeof b->name - 1, &nl) != KP_OK || nl == 0 ||
            memchr(b->name, 0, nl) || kp_b64_decode(sb, strlen(sb), b->cred.salt, sizeof b->cred.salt, &x) != KP_OK ||
            x == 0 || kp_b64_decode(k1, strlen(k1), b->cred.stored_key, kl, &k1l) != KP_OK || k1l != kl ||
            kp_b64_decode(k2, strlen(k2), b->cred.server_key, kl, &k2l) != KP_OK || k2l != kl ||
            iters < KP_SCRAM_ITERATIONS_MIN || iters > KP_SCRAM_ITERATIONS_MAX) { rc = -1; break; }
        b->name[nl] = 0;
        b->cred.salt_len = x;
        (*n)++;
    }
    fclose(f);
    if (rc != 0) snprintf(err, len, "%s:%d: not a credential line written by skiff format", path, lineno);
    return rc;
}

/* ---- the controller's side ------------------------------------------------- */

static void boot_done(void *arg, int status) {
    bk_node_t *n = arg;
    bk_node_scram_boot_state_t *s = bk_node_scram_boot_state(n);
    if (!s) return;
    s->inflight = false;
    if (status == KP_OK) {
        s->done = true;
        st_logf(ST_LOG_INFO, "node %d: appended %zu bootstrap SCRAM credential(s) from %s", n->id, s->n, FILE_NAME);
    } else {
        st_logf(ST_LOG_WARN, "node %d: bootstrap SCRAM credentials not committed yet (status %d); retrying", n->id, status);
    }
}

void bk_node_scram_bootstrap_tick(bk_node_t *n) {
    bk_node_scram_boot_state_t *s = bk_node_scram_boot_state(n);
    if (!s || s->n == 0 || s->done || s->inflight || n->stopping) return;
    if (bk_node_controller_id(n) != n->id) return;
    const bk_meta_image_t *img = bk_node_decision_image(n);
    if (img->scram_bootstrapped) { s->done = true; return; }
    bk_meta_recs_t recs;
    bk_meta_recs_init(&recs);
    int rc = KP_OK;
    for (size_t i = 0; i < s->n && rc == KP_OK; i++) rc = bk_meta_recs_add_scram(&recs, s->v[i].name, &s->v[i].cred);
    Skiff__Metadata__ScramBootstrapDone d = SKIFF__METADATA__SCRAM_BOOTSTRAP_DONE__INIT;
    Skiff__Metadata__MetadataRecord rec = SKIFF__METADATA__METADATA_RECORD__INIT;
    rec.record_case = SKIFF__METADATA__METADATA_RECORD__RECORD_SCRAM_BOOTSTRAP_DONE;
    rec.scram_bootstrap_done = &d;
    if (rc == KP_OK) rc = bk_meta_recs_add(&recs, &rec);
    if (rc != KP_OK) {                  /* not built: the next tick tries again */
        st_logf(ST_LOG_WARN, "node %d: bootstrap SCRAM credentials not built (%s); retrying", n->id, st_status_str(rc));
        bk_meta_recs_free(&recs);
        return;
    }
    s->inflight = true;
    bk_node_commit(n, &recs, boot_done, n);
    bk_meta_recs_free(&recs);
}
