/* The config key table; see config_kafka.h. */
#include "broker/config/config_kafka.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/config/config_keys.h"

static const bk_cfg_kkey_t rows[] = {
#include "broker/config/kafka_keys.inc"
};

#define NROWS (sizeof rows / sizeof rows[0])

size_t bk_cfg_kkey_count(void) { return NROWS; }

const bk_cfg_kkey_t *bk_cfg_kkey_at(size_t i) {
    assert(i < NROWS);
    return &rows[i];
}

/* Compares name[0..len) with a NUL-terminated row name, as strcmp would. */
static int name_cmp(const char *name, size_t len, const char *row) {
    size_t rl = strlen(row);
    int c = memcmp(name, row, len < rl ? len : rl);
    if (c != 0) return c;
    return len < rl ? -1 : len > rl ? 1 : 0;
}

/* Binary search over the generated rows (sorted by the generator, which
 * refuses duplicates): ~9 comparisons for ~400 rows. */
const bk_cfg_kkey_t *bk_cfg_kkey_find(const char *name, size_t len, bk_cfg_scope_t scope) {
    size_t lo = 0, hi = NROWS;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = name_cmp(name, len, rows[mid].name);
        if (c == 0) c = (int)scope - (int)rows[mid].scope;
        if (c == 0) return &rows[mid];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

size_t bk_cfg_kkey_index(const bk_cfg_kkey_t *k) {
    assert(k >= rows && k < rows + NROWS);
    return (size_t)(k - rows);
}

bool bk_cfg_kkey_stored_only(const bk_cfg_kkey_t *k) {
    return k->status == BK_CFG_STATUS_STORED || k->status == BK_CFG_STATUS_OBSOLETE;
}

/* The parser description of a row: Kafka's type over its whole range. */
static bk_cfg_desc_t type_desc(const bk_cfg_kkey_t *k) {
    bk_cfg_desc_t d = { .name = k->name, .def = k->def };
    switch ((bk_cfg_ktype_t)k->type) {
    case BK_CFG_KT_BOOLEAN: d.type = BK_CFG_CT_BOOL; break;
    case BK_CFG_KT_INT: d.type = BK_CFG_CT_INT; d.min = INT32_MIN; d.max = INT32_MAX; break;
    case BK_CFG_KT_SHORT: d.type = BK_CFG_CT_SHORT; d.min = INT16_MIN; d.max = INT16_MAX; break;
    case BK_CFG_KT_LONG: d.type = BK_CFG_CT_LONG; d.min = INT64_MIN; d.max = INT64_MAX; break;
    case BK_CFG_KT_DOUBLE: d.type = BK_CFG_CT_DOUBLE; d.min = INT64_MIN; d.max = INT64_MAX; break;
    case BK_CFG_KT_LIST: d.type = BK_CFG_CT_LIST; break;
    case BK_CFG_KT_STRING:
    case BK_CFG_KT_CLASS:
    case BK_CFG_KT_PASSWORD: d.type = BK_CFG_CT_STRING; break;
    }
    return d;
}

static int bad(char *why, size_t why_len, const char *msg, const char *a) {
    snprintf(why, why_len, msg, a);
    return KP_ERR_BAD_VALUE;
}

/* Is item s[0..n) one of the comma-separated `allowed` (any case)? */
static bool allowed_has(const char *allowed, const char *s, size_t n) {
    const char *p = allowed;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncasecmp(p, s, n) == 0) return true;
        if (!comma) return false;
        p = comma + 1;
    }
}

static int check_allowed(const bk_cfg_kkey_t *k, const char *text, char *why, size_t why_len) {
    if (k->type != BK_CFG_KT_LIST)
        return allowed_has(k->allowed, text, strlen(text)) ? KP_OK
                                                           : bad(why, why_len, "expected one of %s", k->allowed);
    for (const char *p = text; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (!allowed_has(k->allowed, p, n)) return bad(why, why_len, "list items must be from %s", k->allowed);
        if (!comma) break;
        p = comma + 1;
    }
    return KP_OK;
}

static int parse_any_double(const char *s, size_t len, bk_cfg_val_t *out) {
    memset(out, 0, sizeof *out);
    if (len == 0 || len >= sizeof out->text || memchr(s, '\0', len) != NULL) return KP_ERR_BAD_VALUE;
    memcpy(out->text, s, len);
    out->text[len] = '\0';
    char *end = NULL;
    errno = 0;
    out->d = strtod(out->text, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(out->d)) return KP_ERR_BAD_VALUE;
    return KP_OK;
}

int bk_cfg_kkey_check(const bk_cfg_kkey_t *k, const char *value, size_t len, bk_cfg_val_t *out,
                      char *why, size_t why_len) {
    bk_cfg_desc_t d = type_desc(k);
    bk_cfg_val_t tmp;
    bk_cfg_val_t *vp = out ? out : &tmp;
    if (d.type == BK_CFG_CT_DOUBLE) {
        /* any finite double (Kafka's defaults include Double.MAX_VALUE, past
         * the int64 bounds bk_cfg_parse_value uses); the text stays verbatim */
        if (parse_any_double(value, len, vp) != KP_OK) return bad(why, why_len, "expected a number%s", "");
    } else if (bk_cfg_parse_value(&d, value, len, vp, why, why_len) != KP_OK) {
        return KP_ERR_BAD_VALUE;
    }
    const bk_cfg_val_t *v = vp;
    if (k->status == BK_CFG_STATUS_OBSOLETE) return KP_OK;
    bool numeric = d.type == BK_CFG_CT_INT || d.type == BK_CFG_CT_SHORT || d.type == BK_CFG_CT_LONG ||
                   d.type == BK_CFG_CT_DOUBLE;
    double x = d.type == BK_CFG_CT_DOUBLE ? v->d : (double)v->i;
    if (numeric && (k->check & BK_CFG_KC_MIN) && x < k->min) return bad(why, why_len, "expected a value in %s", k->valid);
    if (numeric && (k->check & BK_CFG_KC_MAX) && x > k->max) return bad(why, why_len, "expected a value in %s", k->valid);
    if ((k->check & BK_CFG_KC_NONEMPTY) && v->text[0] == '\0') return bad(why, why_len, "expected a %s", k->valid);
    if (k->allowed && v->text[0] != '\0') return check_allowed(k, v->text, why, why_len);
    return KP_OK;
}

int bk_cfg_kkey_type_code(const bk_cfg_kkey_t *k) {
    switch ((bk_cfg_ktype_t)k->type) {
    case BK_CFG_KT_BOOLEAN: return BK_CFG_TYPE_BOOLEAN;
    case BK_CFG_KT_STRING: return BK_CFG_TYPE_STRING;
    case BK_CFG_KT_INT: return BK_CFG_TYPE_INT;
    case BK_CFG_KT_SHORT: return BK_CFG_TYPE_SHORT;
    case BK_CFG_KT_LONG: return BK_CFG_TYPE_LONG;
    case BK_CFG_KT_DOUBLE: return BK_CFG_TYPE_DOUBLE;
    case BK_CFG_KT_LIST: return BK_CFG_TYPE_LIST;
    case BK_CFG_KT_CLASS: return BK_CFG_TYPE_CLASS;
    case BK_CFG_KT_PASSWORD: return BK_CFG_TYPE_PASSWORD;
    }
    return 0;
}

const char *bk_cfg_kkey_scope_name(const bk_cfg_kkey_t *k) {
    return k->scope == BK_CFG_SCOPE_TOPIC ? "topic" : "broker";
}

const char *bk_cfg_kkey_type_name(const bk_cfg_kkey_t *k) {
    static const char *const names[] = { "boolean", "string", "int", "short", "long",
                                         "double", "list", "class", "password" };
    assert(k->type < sizeof names / sizeof names[0]);
    return names[k->type];
}

const char *bk_cfg_kkey_mode_name(const bk_cfg_kkey_t *k) {
    static const char *const names[] = { "read-only", "per-broker", "cluster-wide", "topic" };
    assert(k->mode < sizeof names / sizeof names[0]);
    return names[k->mode];
}

const char *bk_cfg_kkey_status_name(const bk_cfg_kkey_t *k) {
    static const char *const names[] = { "dynamic", "static", "stored", "obsolete" };
    assert(k->status < sizeof names / sizeof names[0]);
    return names[k->status];
}

static const char *status_text(const bk_cfg_kkey_t *k) {
    switch ((bk_cfg_status_t)k->status) {
    case BK_CFG_STATUS_DYNAMIC: return "acted on by skiff; changes at run time";
    case BK_CFG_STATUS_STATIC: return "acted on by skiff; read at start-up";
    case BK_CFG_STATUS_STORED: return "stored only (no effect in skiff)";
    case BK_CFG_STATUS_OBSOLETE: return "obsolete: accepted and ignored (no effect in skiff)";
    }
    return "";
}

void bk_cfg_kkey_doc(const bk_cfg_kkey_t *k, char *out, size_t out_len) {
    snprintf(out, out_len, "%s%s%s", status_text(k), k->note[0] ? "; " : "", k->note);
}

static void print_full(FILE *f, const bk_cfg_kkey_t *k) {
    char doc[512];
    bk_cfg_kkey_doc(k, doc, sizeof doc);
    fprintf(f, "%s (%s config)\n", k->name, bk_cfg_kkey_scope_name(k));
    fprintf(f, "  type:          %s\n", bk_cfg_kkey_type_name(k));
    fprintf(f, "  default:       %s\n", k->def == NULL ? "(none)" : k->def[0] ? k->def : "(empty)");
    fprintf(f, "  status:        %s\n", bk_cfg_kkey_status_name(k));
    fprintf(f, "  in skiff:      %s\n", doc);
    if (k->scope == BK_CFG_SCOPE_BROKER)
        fprintf(f, "  kafka update:  %s\n", bk_cfg_kkey_mode_name(k));
    if (k->synonym)
        fprintf(f, "  broker key:    %s (the topic's default)\n", k->synonym);
    if (k->valid[0])
        fprintf(f, "  valid values:  %s\n", k->valid);
}

size_t bk_cfg_kkey_print(FILE *f, const char *name) {
    size_t n = 0;
    for (size_t i = 0; i < NROWS; i++) {
        const bk_cfg_kkey_t *k = &rows[i];
        if (name == NULL) {
            fprintf(f, "%-60s %-6s %-8s %-8s %s\n", k->name, bk_cfg_kkey_scope_name(k), bk_cfg_kkey_type_name(k),
                    bk_cfg_kkey_status_name(k), k->def == NULL ? "(none)" : k->def[0] ? k->def : "(empty)");
            n++;
        } else if (strcmp(k->name, name) == 0) {
            if (n > 0) fputc('\n', f);
            print_full(f, k);
            n++;
        }
    }
    return n;
}
