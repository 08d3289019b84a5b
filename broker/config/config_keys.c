/* The key table and typed value parsing; see config_keys.h. */
#include "broker/config/config_keys.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const bk_cfg_desc_t descs[BK_CFG__COUNT] = {
#define BK_CFG_DESC_(ID, NAME, TYPE, DEF, MIN, MAX, ALLOWED, FLAGS) \
    [BK_CFG_##ID] = { NAME, BK_CFG_CT_##TYPE, DEF, MIN, MAX, ALLOWED, FLAGS },
    BK_CFG_KEYS(BK_CFG_DESC_)
#undef BK_CFG_DESC_
};

const bk_cfg_desc_t *bk_cfg_desc(bk_cfg_key_t key) {
    assert((unsigned)key < BK_CFG__COUNT);
    return &descs[key];
}

/* Linear scan: ~85 keys, only at start-up and on admin requests. */
bk_cfg_key_t bk_cfg_key_by_name(const char *name, size_t len) {
    for (int k = 0; k < BK_CFG__COUNT; k++)
        if (strlen(descs[k].name) == len && memcmp(descs[k].name, name, len) == 0)
            return (bk_cfg_key_t)k;
    return BK_CFG__COUNT;
}

int bk_cfg_type_code(bk_cfg_type_t type, unsigned flags) {
    if (flags & BK_CFG_CF_SENSITIVE)
        return BK_CFG_TYPE_PASSWORD;
    switch (type) {
    case BK_CFG_CT_INT: return BK_CFG_TYPE_INT;
    case BK_CFG_CT_SHORT: return BK_CFG_TYPE_SHORT;
    case BK_CFG_CT_LONG: return BK_CFG_TYPE_LONG;
    case BK_CFG_CT_DOUBLE: return BK_CFG_TYPE_DOUBLE;
    case BK_CFG_CT_BOOL: return BK_CFG_TYPE_BOOLEAN;
    case BK_CFG_CT_LIST: return BK_CFG_TYPE_LIST;
    case BK_CFG_CT_STRING:
    case BK_CFG_CT_ENUM: return BK_CFG_TYPE_STRING;
    }
    return 0;
}

/* Index of item s[0..len) in the comma-separated `allowed`, or -1. */
static int allowed_index(const char *allowed, const char *s, size_t len) {
    int idx = 0;
    const char *p = allowed;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == len && memcmp(p, s, len) == 0)
            return idx;
        if (comma == NULL)
            return -1;
        p = comma + 1;
        idx++;
    }
}

/* The idx-th item of `allowed` copied into out. */
static void allowed_item(const char *allowed, int idx, char *out, size_t out_len) {
    const char *p = allowed;
    for (int i = 0; i < idx; i++) {
        p = strchr(p, ',');
        assert(p != NULL);
        p++;
    }
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    snprintf(out, out_len, "%.*s", (int)n, p);
}

static int bad(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t why_len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return KP_ERR_BAD_VALUE;
}

/* Why skiff caps a key below Kafka's range (config_keys.h), or NULL. */
static const char *cap_reason(const bk_cfg_desc_t *d) {
    static const struct { const char *name; const char *why; } caps[] = {
        { "log.index.size.max.bytes", "each segment index is created and mapped at this size" },
        { "segment.index.bytes", "each segment index is created and mapped at this size" },
        { "message.max.bytes", "a batch is held and validated whole in memory" },
        { "max.message.bytes", "a batch is held and validated whole in memory" },
    };
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
        if (strcmp(d->name, caps[i].name) == 0) return caps[i].why;
    return NULL;
}

static int range_error(const bk_cfg_desc_t *d, char *why, size_t why_len) {
    const char *cap = cap_reason(d);
    if (cap)
        return bad(why, why_len, "expected an integer in [%" PRId64 ", %" PRId64 "] (skiff caps it at %" PRId64
                   " although Kafka allows up to 2147483647: %s)", d->min, d->max, d->max, cap);
    if (d->max == BK_CFG_I64MAX || d->max == BK_CFG_I32MAX || d->max == BK_CFG_I16MAX) {
        if (d->min == 0)
            return bad(why, why_len, "expected a non-negative integer");
        if (d->min == 1)
            return bad(why, why_len, "expected a positive integer");
        return bad(why, why_len, "expected an integer >= %" PRId64 " and <= %" PRId64, d->min, d->max);
    }
    return bad(why, why_len, "expected an integer in [%" PRId64 ", %" PRId64 "]", d->min, d->max);
}

static int parse_int(const bk_cfg_desc_t *d, const char *s, bk_cfg_val_t *out, char *why,
                     size_t why_len) {
    char *end = NULL;
    errno = 0;
    if (s[0] == '\0' || s[0] == '+' || (s[0] != '-' && (s[0] < '0' || s[0] > '9')))
        return range_error(d, why, why_len);
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || errno == ERANGE || v < d->min || v > d->max)
        return range_error(d, why, why_len);
    out->i = v;
    snprintf(out->text, sizeof out->text, "%lld", v);
    return KP_OK;
}

/* A maximum of BK_CFG_I64MAX means "any finite number" for a double (Kafka's
 * log.cleaner.io.max.bytes.per.second defaults to Double.MAX_VALUE). */
static int parse_double(const bk_cfg_desc_t *d, const char *s, bk_cfg_val_t *out, char *why,
                        size_t why_len) {
    char *end = NULL;
    errno = 0;
    double v = s[0] ? strtod(s, &end) : NAN;
    if (s[0] == '\0' || *end != '\0' || errno == ERANGE || !isfinite(v) ||
        v < (double)d->min || (d->max != BK_CFG_I64MAX && v > (double)d->max))
        return bad(why, why_len, "expected a number in [%" PRId64 ", %" PRId64 "]", d->min, d->max);
    out->d = v;
    snprintf(out->text, sizeof out->text, "%g", v);
    return KP_OK;
}

/* Kafka accepts booleans case-insensitively. */
static int parse_bool(const char *s, bk_cfg_val_t *out, char *why, size_t why_len) {
    if (strcasecmp(s, "true") == 0)
        out->i = 1;
    else if (strcasecmp(s, "false") == 0)
        out->i = 0;
    else
        return bad(why, why_len, "expected true or false");
    snprintf(out->text, sizeof out->text, "%s", out->i ? "true" : "false");
    return KP_OK;
}

static int parse_enum(const bk_cfg_desc_t *d, const char *s, bk_cfg_val_t *out, char *why,
                      size_t why_len) {
    int idx = allowed_index(d->allowed, s, strlen(s));
    if (idx < 0)
        return bad(why, why_len, "expected one of %s", d->allowed);
    out->i = idx;
    allowed_item(d->allowed, idx, out->text, sizeof out->text);
    return KP_OK;
}

/* A list: items separated by ',', each trimmed; empty items are refused
 * ("a,,b", "a,"). The empty string is the empty list. With `allowed`, each
 * item must be one of it (no repeats) and `i` gets the bitmask. */
static int parse_list(const bk_cfg_desc_t *d, const char *s, bk_cfg_val_t *out, char *why,
                      size_t why_len) {
    size_t o = 0;
    out->i = 0;
    out->text[0] = '\0';
    if (s[0] == '\0')
        return KP_OK;
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *e = comma ? comma : p + strlen(p);
        while (p < e && (*p == ' ' || *p == '\t')) p++;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
        size_t n = (size_t)(e - p);
        if (n == 0)
            return bad(why, why_len, "empty item in comma-separated list");
        if (d->allowed) {
            int idx = allowed_index(d->allowed, p, n);
            if (idx < 0)
                return bad(why, why_len, "list item '%.*s' is not one of %s", (int)n, p, d->allowed);
            if (out->i & (1LL << idx))
                return bad(why, why_len, "list item '%.*s' repeated", (int)n, p);
            out->i |= 1LL << idx;
        }
        assert(o + n + 1 < sizeof out->text); /* input is shorter than text */
        if (o > 0)
            out->text[o++] = ',';
        memcpy(out->text + o, p, n);
        o += n;
        out->text[o] = '\0';
        if (comma == NULL)
            return KP_OK;
        p = comma + 1;
    }
}

int bk_cfg_parse_value(const bk_cfg_desc_t *d, const char *s, size_t len, bk_cfg_val_t *out,
                       char *why, size_t why_len) {
    char buf[BK_CFG_VALUE_MAX];
    memset(out, 0, sizeof *out);
    if (len >= sizeof buf)
        return bad(why, why_len, "value longer than %d bytes", BK_CFG_VALUE_MAX - 1);
    if (memchr(s, '\0', len) != NULL)
        return bad(why, why_len, "value contains a NUL byte");
    memcpy(buf, s, len);
    buf[len] = '\0';
    switch (d->type) {
    case BK_CFG_CT_INT:
    case BK_CFG_CT_SHORT:
    case BK_CFG_CT_LONG: return parse_int(d, buf, out, why, why_len);
    case BK_CFG_CT_DOUBLE: return parse_double(d, buf, out, why, why_len);
    case BK_CFG_CT_BOOL: return parse_bool(buf, out, why, why_len);
    case BK_CFG_CT_ENUM: return parse_enum(d, buf, out, why, why_len);
    case BK_CFG_CT_LIST: return parse_list(d, buf, out, why, why_len);
    case BK_CFG_CT_STRING:
        memcpy(out->text, buf, len + 1);
        return KP_OK;
    }
    return bad(why, why_len, "unknown type");
}
