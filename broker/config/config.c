/* Config loading: file parsing, node sections, --set, precedence and typed
 * access. Rules between keys live in config_resolve.c. See config.h. */
#include "broker/config/config_int.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/stat.h>

/* One key=value line of the file, kept until the node's values are chosen. */
typedef struct entry {
    int32_t section;     /* node id, or -1 for top level */
    bk_cfg_key_t key;    /* BK_CFG__COUNT for a stored-only key (kk) */
    const bk_cfg_kkey_t *kk; /* stored-only key, or NULL */
    char *lov;           /* listener.name.* key (heap), or NULL; value in val->text */
    int32_t line;
    bk_cfg_val_t *val;   /* parsed, heap */
} entry_t;

typedef struct section {
    int32_t node;
    int32_t line;
} section_t;

typedef struct parse {
    const char *path;
    entry_t *entries;    /* grows by doubling up to BK_CFG_ENTRIES_MAX */
    size_t nentries, cap;
    section_t sections[BK_CFG_SECTIONS_MAX];
    size_t nsections;
    int32_t cur;         /* current section, -1 top level */
} parse_t;

static int fail(bk_cfg_err_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(bk_cfg_err_t *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return KP_ERR_BAD_VALUE;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

static void trim(const char **s, size_t *n) {
    while (*n > 0 && is_space((*s)[0])) { (*s)++; (*n)--; }
    while (*n > 0 && is_space((*s)[*n - 1])) (*n)--;
}

/* Reads the whole file (at most BK_CFG_FILE_MAX_BYTES) into a
 * NUL-terminated heap buffer sized from fstat; reading one byte more than
 * the size catches a file that grew meanwhile. */
static int read_file(const char *path, char **out, size_t *len, bk_cfg_err_t *err) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return fail(err, "%s: not a regular file", path);
    }
    if (st.st_size > BK_CFG_FILE_MAX_BYTES) {
        fclose(f);
        return fail(err, "%s: file larger than %d bytes", path, BK_CFG_FILE_MAX_BYTES);
    }
    size_t cap = (size_t)st.st_size + 1;
    char *buf = malloc(cap + 1);
    if (buf == NULL) {
        fclose(f);
        return fail(err, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, cap, f);
    int rc = KP_OK;
    if (ferror(f))
        rc = fail(err, "%s: read error: %s", path, strerror(errno));
    else if (n == cap)
        rc = fail(err, "%s: file changed while being read", path);
    else if (memchr(buf, '\0', n) != NULL)
        rc = fail(err, "%s: file contains a NUL byte (not a text file?)", path);
    fclose(f);
    if (rc != KP_OK) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return KP_OK;
}

/* Parses a decimal node id 0..INT32_MAX from s[0..n). */
static bool parse_node_id(const char *s, size_t n, int32_t *out) {
    int64_t v = 0;
    if (n == 0 || n > 10)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

static int section_header(parse_t *p, const char *s, size_t n, int32_t line,
                          bk_cfg_err_t *err) {
    int32_t node;
    if (n < 8 || s[n - 1] != ']' || memcmp(s, "[node.", 6) != 0 ||
        !parse_node_id(s + 6, n - 7, &node))
        return fail(err, "%s:%d: malformed section header '%.*s' (expected [node.N])", p->path,
                    line, (int)n, s);
    for (size_t i = 0; i < p->nsections; i++)
        if (p->sections[i].node == node)
            return fail(err, "%s:%d: duplicate section [node.%d] (first at line %d)", p->path,
                        line, node, p->sections[i].line);
    if (p->nsections == BK_CFG_SECTIONS_MAX)
        return fail(err, "%s:%d: more than %d sections", p->path, line, BK_CFG_SECTIONS_MAX);
    p->sections[p->nsections++] = (section_t){ node, line };
    p->cur = node;
    return KP_OK;
}

/* A broker key skiff only stores (config_kafka.h), or NULL with the reason:
 * a topic config (named with its broker default) or no Kafka config. */
static const bk_cfg_kkey_t *stored_key(const char *k, size_t kn, char *why, size_t why_len) {
    const bk_cfg_kkey_t *kk = bk_cfg_kkey_find(k, kn, BK_CFG_SCOPE_BROKER);
    if (kk != NULL && bk_cfg_kkey_stored_only(kk))
        return kk;
    const bk_cfg_kkey_t *tk = bk_cfg_kkey_find(k, kn, BK_CFG_SCOPE_TOPIC);
    if (kk == NULL && tk != NULL)
        snprintf(why, why_len, "'%.*s' is a topic config, not a broker config%s%s%s", (int)kn, k,
                 tk->synonym ? " (its broker default is '" : "", tk->synonym ? tk->synonym : "",
                 tk->synonym ? "')" : "");
    else
        snprintf(why, why_len, "unknown key '%.*s'", (int)kn, k);
    return NULL;
}

static int key_value(parse_t *p, const char *s, size_t n, int32_t line, bk_cfg_err_t *err) {
    const char *eq = memchr(s, '=', n);
    if (eq == NULL)
        return fail(err, "%s:%d: expected key=value, got '%.*s'", p->path, line, (int)n, s);
    const char *k = s, *v = eq + 1;
    size_t kn = (size_t)(eq - s), vn = n - kn - 1;
    trim(&k, &kn);
    trim(&v, &vn);
    if (kn == 0)
        return fail(err, "%s:%d: empty key before '='", p->path, line);
    bk_cfg_key_t key = bk_cfg_key_by_name(k, kn);
    const bk_cfg_kkey_t *kk = NULL;
    bool lov = key == BK_CFG__COUNT && cfg_lov_is(k, kn);
    if (key == BK_CFG__COUNT && !lov) {
        char why[256];
        kk = stored_key(k, kn, why, sizeof why);
        if (kk == NULL)
            return fail(err, "%s:%d: %s", p->path, line, why);
    }
    for (size_t i = 0; i < p->nentries; i++)
        if (p->entries[i].section == p->cur && p->entries[i].key == key && p->entries[i].kk == kk &&
            (!lov || (p->entries[i].lov && strlen(p->entries[i].lov) == kn &&
                      strncasecmp(p->entries[i].lov, k, kn) == 0)))
            return fail(err, "%s:%d: duplicate key '%.*s' (first set at line %d)", p->path, line,
                        (int)kn, k, p->entries[i].line);
    if (p->nentries == BK_CFG_ENTRIES_MAX)
        return fail(err, "%s:%d: more than %d settings", p->path, line, BK_CFG_ENTRIES_MAX);
    if (p->nentries == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        entry_t *grown = realloc(p->entries, cap * sizeof *grown);
        if (grown == NULL)
            return fail(err, "%s:%d: out of memory", p->path, line);
        p->entries = grown;
        p->cap = cap;
    }
    bk_cfg_val_t *val = malloc(sizeof *val);
    if (val == NULL)
        return fail(err, "%s:%d: out of memory", p->path, line);
    char why[256];
    int prc;
    if (lov) {
        prc = cfg_lov_check(k, kn, v, vn, why, sizeof why);
        if (prc == KP_OK) {
            /* cfg_lov_check bounded vn below BK_CFG_VALUE_MAX */
            memcpy(val->text, v, vn);
            val->text[vn] = '\0';
        }
    } else {
        prc = kk ? bk_cfg_kkey_check(kk, v, vn, val, why, sizeof why)
                 : bk_cfg_parse_value(bk_cfg_desc(key), v, vn, val, why, sizeof why);
    }
    if (prc != KP_OK) {
        free(val);
        return fail(err, "%s:%d: %.*s=%.*s: %s", p->path, line, (int)kn, k,
                    (int)(vn > 200 ? 200 : vn), v, why);
    }
    if (key == BK_CFG_NODE_ID && p->cur >= 0 && val->i != p->cur) {
        int64_t got = val->i;
        free(val);
        return fail(err, "%s:%d: node.id=%lld inside [node.%d] (the section implies node.id)",
                    p->path, line, (long long)got, p->cur);
    }
    char *lov_key = NULL;
    if (lov && (lov_key = strndup(k, kn)) == NULL) {
        free(val);
        return fail(err, "%s:%d: out of memory", p->path, line);
    }
    p->entries[p->nentries++] = (entry_t){ p->cur, key, kk, lov_key, line, val };
    return KP_OK;
}

/* Splits the text into lines and parses each one. */
static int parse_text(parse_t *p, const char *text, size_t len, bk_cfg_err_t *err) {
    int32_t line = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + (nl ? 1 : 0);
        line++;
        if (n > BK_CFG_LINE_MAX)
            return fail(err, "%s:%d: line longer than %d bytes", p->path, line, BK_CFG_LINE_MAX);
        trim(&s, &n);
        if (n == 0 || s[0] == '#' || s[0] == '!')
            continue;
        int rc = s[0] == '[' ? section_header(p, s, n, line, err) : key_value(p, s, n, line, err);
        if (rc != KP_OK)
            return rc;
    }
    return KP_OK;
}

static void set_defaults(bk_cfg_t *cfg) {
    for (int k = 0; k < BK_CFG__COUNT; k++) {
        const bk_cfg_desc_t *d = bk_cfg_desc((bk_cfg_key_t)k);
        char why[128];
        cfg->source[k] = BK_CFG_SRC_DEFAULT;
        cfg->line[k] = -1;
        if (d->def == NULL) {
            memset(&cfg->val[k], 0, sizeof cfg->val[k]);
            cfg->val[k].is_null = true;
            continue;
        }
        int rc = bk_cfg_parse_value(d, d->def, strlen(d->def), &cfg->val[k], why, sizeof why);
        assert(rc == KP_OK && "built-in default must parse");
        (void)rc;
    }
}

static void apply(bk_cfg_t *cfg, bk_cfg_key_t key, const bk_cfg_val_t *v, int32_t line) {
    assert(key < BK_CFG__COUNT);
    cfg->val[key] = *v;
    cfg->source[key] = BK_CFG_SRC_STATIC_BROKER;
    cfg->line[key] = line;
}

/* One line of the file: a key skiff acts on, or a stored-only one. */
static int apply_entry(bk_cfg_t *cfg, const parse_t *p, const entry_t *e, bk_cfg_err_t *err) {
    if (e->lov != NULL) {
        if (cfg_lov_set(cfg, e->lov, strlen(e->lov), e->val->text, strlen(e->val->text), e->line) != KP_OK)
            return fail(err, "%s:%d: out of memory", p->path, e->line);
        return KP_OK;
    }
    if (e->kk == NULL) {
        apply(cfg, e->key, e->val, e->line);
        return KP_OK;
    }
    if (cfg_kval_set(cfg, KV_STATIC, e->kk, e->val->text) != KP_OK)
        return fail(err, "%s:%d: out of memory", p->path, e->line);
    return KP_OK;
}

/* Chooses the node's section and applies top-level then section values. */
static int apply_file(bk_cfg_t *cfg, parse_t *p, int32_t node_id, bk_cfg_err_t *err) {
    int32_t sel = -1;
    if (p->nsections > 0) {
        if (node_id < 0 && p->nsections > 1)
            return fail(err, "%s: the file describes %zu nodes ([node.N] sections); choose one "
                        "with --node N", p->path, p->nsections);
        sel = node_id < 0 ? p->sections[0].node : node_id;
        size_t i = 0;
        while (i < p->nsections && p->sections[i].node != sel)
            i++;
        if (i == p->nsections)
            return fail(err, "%s: no section [node.%d] for --node %d", p->path, sel, sel);
    }
    for (size_t i = 0; i < p->nentries; i++)
        if (p->entries[i].section == -1 && apply_entry(cfg, p, &p->entries[i], err) != KP_OK)
            return KP_ERR_BAD_VALUE;
    if (sel >= 0) {
        /* the section implies node.id, over any top-level node.id */
        size_t i = 0;
        while (p->sections[i].node != sel)
            i++;
        bk_cfg_val_t id = { .i = sel };
        snprintf(id.text, sizeof id.text, "%d", sel);
        apply(cfg, BK_CFG_NODE_ID, &id, p->sections[i].line);
    }
    for (size_t i = 0; i < p->nentries; i++)
        if (sel >= 0 && p->entries[i].section == sel && apply_entry(cfg, p, &p->entries[i], err) != KP_OK)
            return KP_ERR_BAD_VALUE;
    if (node_id >= 0 && p->nsections == 0) {
        if (!cfg->val[BK_CFG_NODE_ID].is_null && cfg->val[BK_CFG_NODE_ID].i != node_id)
            return fail(err, "%s:%d: node.id=%lld but --node %d", p->path,
                        cfg->line[BK_CFG_NODE_ID], (long long)cfg->val[BK_CFG_NODE_ID].i, node_id);
        if (cfg->val[BK_CFG_NODE_ID].is_null) {
            bk_cfg_val_t id = { .i = node_id };
            snprintf(id.text, sizeof id.text, "%d", node_id);
            apply(cfg, BK_CFG_NODE_ID, &id, 0);
        }
    }
    return KP_OK;
}

static int apply_set(bk_cfg_t *cfg, const char *set, int32_t node_id, bk_cfg_err_t *err) {
    const char *eq = strchr(set, '=');
    if (eq == NULL)
        return fail(err, "--set %s: expected key=value", set);
    const char *k = set, *v = eq + 1;
    size_t kn = (size_t)(eq - set), vn = strlen(v);
    trim(&k, &kn);
    trim(&v, &vn);
    bk_cfg_key_t key = bk_cfg_key_by_name(k, kn);
    const bk_cfg_kkey_t *kk = NULL;
    char why[256];
    if (key == BK_CFG__COUNT && cfg_lov_is(k, kn)) {
        if (cfg_lov_check(k, kn, v, vn, why, sizeof why) != KP_OK)
            return fail(err, "--set %.300s: %s", set, why);
        if (cfg_lov_set(cfg, k, kn, v, vn, 0) != KP_OK)
            return fail(err, "--set %.300s: out of memory", set);
        return KP_OK;
    }
    if (key == BK_CFG__COUNT && (kk = stored_key(k, kn, why, sizeof why)) == NULL)
        return fail(err, "--set %.300s: %s", set, why);
    bk_cfg_val_t *val = malloc(sizeof *val);
    if (val == NULL)
        return fail(err, "--set %s: out of memory", set);
    int rc = KP_OK;
    if (kk != NULL) {
        if (bk_cfg_kkey_check(kk, v, vn, val, why, sizeof why) != KP_OK)
            rc = fail(err, "--set %.300s: %s", set, why);
        else if (cfg_kval_set(cfg, KV_STATIC, kk, val->text) != KP_OK)
            rc = fail(err, "--set %.300s: out of memory", set);
    } else if (bk_cfg_parse_value(bk_cfg_desc(key), v, vn, val, why, sizeof why) != KP_OK)
        rc = fail(err, "--set %.300s: %s", set, why);
    else if (key == BK_CFG_NODE_ID && node_id >= 0 && val->i != node_id)
        rc = fail(err, "--set %.300s: conflicts with --node %d", set, node_id);
    else
        apply(cfg, key, val, 0);
    free(val);
    return rc;
}

static int check_required(const bk_cfg_t *cfg, bk_cfg_err_t *err) {
    for (int k = 0; k < BK_CFG__COUNT; k++) {
        const bk_cfg_desc_t *d = bk_cfg_desc((bk_cfg_key_t)k);
        if ((d->flags & BK_CFG_CF_REQUIRED) && cfg->val[k].is_null)
            return fail(err, "%s: missing required key '%s'", cfg->path, d->name);
    }
    return KP_OK;
}

bk_cfg_t *bk_cfg_load(const char *path, int32_t node_id, const char *const *sets,
                            size_t nsets, bk_cfg_err_t *err) {
    assert(path != NULL && err != NULL);
    err->msg[0] = '\0';
    if (nsets > BK_CFG_SETS_MAX) {
        fail(err, "more than %d --set flags", BK_CFG_SETS_MAX);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    parse_t p = { .path = path, .cur = -1 };
    bk_cfg_t *cfg = calloc(1, sizeof *cfg);
    int rc = KP_OK;
    if (cfg == NULL) {
        rc = fail(err, "%s: out of memory", path);
        goto done;
    }
    snprintf(cfg->path, sizeof cfg->path, "%s", path);
    for (int l = 0; l < KV__LAYERS; l++)
        if ((cfg->kval[l] = calloc(bk_cfg_kkey_count(), sizeof *cfg->kval[l])) == NULL) {
            rc = fail(err, "%s: out of memory", path);
            goto done;
        }
    set_defaults(cfg);
    rc = read_file(path, &text, &len, err);
    if (rc == KP_OK)
        rc = parse_text(&p, text, len, err);
    if (rc == KP_OK)
        rc = apply_file(cfg, &p, node_id, err);
    for (size_t i = 0; rc == KP_OK && i < nsets; i++)
        rc = apply_set(cfg, sets[i], node_id, err);
    if (rc == KP_OK)
        rc = check_required(cfg, err);
    if (rc == KP_OK)
        rc = cfg_resolve(cfg, err);
done:
    for (size_t i = 0; i < p.nentries; i++) {
        free(p.entries[i].val);
        free(p.entries[i].lov);
    }
    free(p.entries);
    free(text);
    if (rc != KP_OK) {
        bk_cfg_free(cfg);
        return NULL;
    }
    return cfg;
}

/* Matches "--name VALUE" or "--name=VALUE"; advances *i past what it used. */
static int flag_value(int argc, char *const *argv, int *i, const char *name, const char **out,
                      bk_cfg_err_t *err) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 1; /* not this flag */
    if (a[n] == '=') {
        *out = a + n + 1;
        return KP_OK;
    }
    if (a[n] != '\0')
        return 1;
    if (*i + 1 >= argc)
        return fail(err, "%s: missing value", name);
    *out = argv[++*i];
    return KP_OK;
}

bk_cfg_t *bk_cfg_load_args(int argc, char *const *argv, bk_cfg_err_t *err) {
    const char *path = NULL;
    int32_t node_id = -1;
    const char *sets[BK_CFG_SETS_MAX];
    size_t nsets = 0;
    err->msg[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int rc;
        if ((rc = flag_value(argc, argv, &i, "--config", &v, err)) <= 0) {
            if (rc < 0)
                return NULL;
            path = v;
        } else if ((rc = flag_value(argc, argv, &i, "--node", &v, err)) <= 0) {
            if (rc < 0)
                return NULL;
            if (!parse_node_id(v, strlen(v), &node_id)) {
                fail(err, "--node %s: expected a node id (0..2147483647)", v);
                return NULL;
            }
        } else if ((rc = flag_value(argc, argv, &i, "--set", &v, err)) <= 0) {
            if (rc < 0)
                return NULL;
            if (nsets == BK_CFG_SETS_MAX) {
                fail(err, "more than %d --set flags", BK_CFG_SETS_MAX);
                return NULL;
            }
            sets[nsets++] = v;
        } else {
            fail(err, "unknown argument '%s' (usage: skiff --config FILE [--node N] "
                 "[--set key=value ...])", argv[i]);
            return NULL;
        }
    }
    if (path == NULL) {
        fail(err, "missing --config FILE (usage: skiff --config FILE [--node N] "
             "[--set key=value ...])");
        return NULL;
    }
    return bk_cfg_load(path, node_id, sets, nsets, err);
}

void bk_cfg_free(bk_cfg_t *cfg) {
    if (cfg == NULL)
        return;
    for (int l = 0; l < KV__LAYERS; l++) {
        for (size_t i = 0; cfg->kval[l] && i < bk_cfg_kkey_count(); i++)
            free(cfg->kval[l][i]);
        free(cfg->kval[l]);
    }
    cfg_lov_free(cfg);
    free(cfg);
}

int cfg_kval_set(bk_cfg_t *cfg, int layer, const bk_cfg_kkey_t *k, const char *text) {
    assert(layer >= 0 && layer < KV__LAYERS);
    assert(k->scope == BK_CFG_SCOPE_BROKER && bk_cfg_kkey_stored_only(k));
    size_t i = bk_cfg_kkey_index(k);
    char *copy = NULL;
    if (text != NULL && (copy = strdup(text)) == NULL)
        return KP_ERR_NOMEM;
    free(cfg->kval[layer][i]);
    cfg->kval[layer][i] = copy;
    return KP_OK;
}

const char *cfg_kval(const bk_cfg_t *cfg, const bk_cfg_kkey_t *k, bk_cfg_source_t *source) {
    size_t i = bk_cfg_kkey_index(k);
    static const struct { int layer; bk_cfg_source_t source; } order[] = {
        { KV_DYN_BROKER, BK_CFG_SRC_DYNAMIC_BROKER },
        { KV_DYN_DEFAULT, BK_CFG_SRC_DYNAMIC_DEFAULT_BROKER },
        { KV_STATIC, BK_CFG_SRC_STATIC_BROKER },
    };
    for (size_t l = 0; l < sizeof order / sizeof order[0]; l++)
        if (cfg->kval[order[l].layer][i] != NULL) {
            *source = order[l].source;
            return cfg->kval[order[l].layer][i];
        }
    *source = BK_CFG_SRC_DEFAULT;
    return k->def;
}

const char *bk_cfg_path(const bk_cfg_t *cfg) { return cfg->path; }

size_t bk_cfg_stored_set(const bk_cfg_t *cfg, bk_cfg_stored_fn fn, void *ctx) {
    size_t n = 0;
    for (size_t i = 0; i < bk_cfg_kkey_count(); i++) {
        const char *v = cfg->kval[KV_STATIC][i];
        if (v == NULL)
            continue;
        const bk_cfg_kkey_t *k = bk_cfg_kkey_at(i);
        char doc[512];
        bk_cfg_kkey_doc(k, doc, sizeof doc);
        fn(ctx, k->name, v, doc);
        n++;
    }
    return n;
}

void cfg_where(const bk_cfg_t *cfg, bk_cfg_key_t key, char *out, size_t out_len) {
    if (cfg->line[key] > 0)
        snprintf(out, out_len, "%s:%d", cfg->path, cfg->line[key]);
    else if (cfg->line[key] == 0)
        snprintf(out, out_len, "--set %s", bk_cfg_desc(key)->name);
    else
        snprintf(out, out_len, "%s (default of %s)", cfg->path, bk_cfg_desc(key)->name);
}

const bk_cfg_val_t *bk_cfg_config_val(const bk_cfg_t *cfg, bk_cfg_key_t key) {
    assert((unsigned)key < BK_CFG__COUNT);
    if (cfg->dyn_set[DYN_BROKER][key])
        return &cfg->dyn[DYN_BROKER][key];
    if (cfg->dyn_set[DYN_DEFAULT][key])
        return &cfg->dyn[DYN_DEFAULT][key];
    return &cfg->val[key];
}

bk_cfg_source_t bk_cfg_source(const bk_cfg_t *cfg, bk_cfg_key_t key) {
    assert((unsigned)key < BK_CFG__COUNT);
    if (cfg->dyn_set[DYN_BROKER][key])
        return BK_CFG_SRC_DYNAMIC_BROKER;
    if (cfg->dyn_set[DYN_DEFAULT][key])
        return BK_CFG_SRC_DYNAMIC_DEFAULT_BROKER;
    return (bk_cfg_source_t)cfg->source[key];
}

bool bk_cfg_is_null(const bk_cfg_t *cfg, bk_cfg_key_t key) {
    return bk_cfg_config_val(cfg, key)->is_null;
}

int64_t bk_cfg_int(const bk_cfg_t *cfg, bk_cfg_key_t key) {
    const bk_cfg_desc_t *d = bk_cfg_desc(key);
    const bk_cfg_val_t *v = bk_cfg_config_val(cfg, key);
    assert(d->type == BK_CFG_CT_INT || d->type == BK_CFG_CT_SHORT || d->type == BK_CFG_CT_LONG ||
           d->type == BK_CFG_CT_BOOL || d->type == BK_CFG_CT_ENUM ||
           (d->type == BK_CFG_CT_LIST && d->allowed != NULL));
    assert(!v->is_null && "key has no value; check bk_cfg_is_null first");
    return v->i;
}

bool bk_cfg_bool(const bk_cfg_t *cfg, bk_cfg_key_t key) {
    assert(bk_cfg_desc(key)->type == BK_CFG_CT_BOOL);
    return bk_cfg_int(cfg, key) != 0;
}

double bk_cfg_double(const bk_cfg_t *cfg, bk_cfg_key_t key) {
    const bk_cfg_val_t *v = bk_cfg_config_val(cfg, key);
    assert(bk_cfg_desc(key)->type == BK_CFG_CT_DOUBLE);
    assert(!v->is_null);
    return v->d;
}

const char *bk_cfg_str(const bk_cfg_t *cfg, bk_cfg_key_t key) {
    const bk_cfg_val_t *v = bk_cfg_config_val(cfg, key);
    return v->is_null ? NULL : v->text;
}
