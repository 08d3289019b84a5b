/* cl_props.c — the --command-config properties parser (see cl_props.h).
 *
 * The file's bytes are read only through `cur_t` (a position and a length
 * checked before every access); a line is copied into a fixed buffer, so
 * nothing is allocated from what the file says. */
#include "clients/cl_props.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void cl_sec_init(cl_sec_t *s) {
    memset(s, 0, sizeof *s);
    s->protocol = CL_SEC_PLAINTEXT;
    s->mechanism = CL_SASL_NONE;
    s->verify_hostname = true;
}

const char *cl_sec_proto_name(cl_sec_proto_t p) {
    switch (p) {
    case CL_SEC_PLAINTEXT: return "PLAINTEXT";
    case CL_SEC_SSL: return "SSL";
    case CL_SEC_SASL_PLAINTEXT: return "SASL_PLAINTEXT";
    case CL_SEC_SASL_SSL: return "SASL_SSL";
    }
    return "?";
}

const char *cl_sasl_mech_name(cl_sasl_mech_t m) {
    switch (m) {
    case CL_SASL_NONE: return "";
    case CL_SASL_PLAIN: return "PLAIN";
    case CL_SASL_SCRAM_SHA_256: return "SCRAM-SHA-256";
    case CL_SASL_SCRAM_SHA_512: return "SCRAM-SHA-512";
    }
    return "?";
}

cl_sasl_mech_t cl_sasl_mech_parse(const char *name) {
    for (int m = CL_SASL_PLAIN; m <= CL_SASL_SCRAM_SHA_512; m++)
        if (strcasecmp(name, cl_sasl_mech_name((cl_sasl_mech_t)m)) == 0) return (cl_sasl_mech_t)m;
    return CL_SASL_NONE;
}

/* ---- the keys ------------------------------------------------------------ */

enum key_id {
    K_PROTOCOL, K_MECHANISM, K_USERNAME, K_PASSWORD, K_CA, K_CERT, K_KEY, K_KEY_PASSWORD, K_ENDPOINT,
    K_ADMIN_USER, K_ADMIN_PASSWORD, K_COUNT
};

static const struct {
    const char *name;
    enum key_id id;
} keys[] = {
    { "security.protocol", K_PROTOCOL },
    { "sasl.mechanism", K_MECHANISM },
    { "sasl.mechanisms", K_MECHANISM }, /* librdkafka's plural spelling */
    { "sasl.username", K_USERNAME },
    { "sasl.password", K_PASSWORD },
    { "ssl.ca.location", K_CA },
    { "ssl.certificate.location", K_CERT },
    { "ssl.key.location", K_KEY },
    { "ssl.key.password", K_KEY_PASSWORD },
    { "ssl.endpoint.identification.algorithm", K_ENDPOINT },
    { "admin.username", K_ADMIN_USER },
    { "admin.password", K_ADMIN_PASSWORD },
};
#define NKEYS (sizeof keys / sizeof keys[0])

/* What the parse saw: the line each key was last set on (0 = not set), for
 * the checks that need the whole file. */
typedef struct seen {
    int line[K_COUNT];
    const char *name[K_COUNT]; /* the spelling used, for messages */
} seen_t;

static char *field_for(cl_sec_t *s, enum key_id id) {
    switch (id) {
    case K_USERNAME: return s->username;
    case K_PASSWORD: return s->password;
    case K_CA: return s->ca_location;
    case K_CERT: return s->cert_location;
    case K_KEY: return s->key_location;
    case K_KEY_PASSWORD: return s->key_password;
    case K_ADMIN_USER: return s->admin_username;
    case K_ADMIN_PASSWORD: return s->admin_password;
    default: return NULL;
    }
}

static int set_key(cl_sec_t *s, enum key_id id, const char *key, const char *val, const char *fname, int line,
                   cl_err_t *e) {
    switch (id) {
    case K_PROTOCOL:
        for (int p = CL_SEC_PLAINTEXT; p <= CL_SEC_SASL_SSL; p++)
            if (strcasecmp(val, cl_sec_proto_name((cl_sec_proto_t)p)) == 0) {
                s->protocol = (cl_sec_proto_t)p;
                return CL_OK;
            }
        return cl_err_set(e, CL_E_USAGE,
                          "%s:%d: %s: '%s' is not one of plaintext, ssl, sasl_plaintext, sasl_ssl", fname, line,
                          key, val);
    case K_MECHANISM:
        s->mechanism = cl_sasl_mech_parse(val);
        if (s->mechanism == CL_SASL_NONE)
            return cl_err_set(e, CL_E_USAGE, "%s:%d: %s: '%s' is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512",
                              fname, line, key, val);
        return CL_OK;
    case K_ENDPOINT:
        /* librdkafka: https | none; Java clients disable the check with an
         * empty value, which means the same here */
        if (strcasecmp(val, "https") == 0) s->verify_hostname = true;
        else if (strcasecmp(val, "none") == 0 || val[0] == '\0') s->verify_hostname = false;
        else
            return cl_err_set(e, CL_E_USAGE, "%s:%d: %s: '%s' is not one of https, none", fname, line, key, val);
        return CL_OK;
    default: break;
    }
    char *dst = field_for(s, id);
    if (!dst) return cl_err_set(e, CL_E_USAGE, "%s:%d: %s: internal error", fname, line, key);
    if (val[0] == '\0') return cl_err_set(e, CL_E_USAGE, "%s:%d: %s: empty value", fname, line, key);
    size_t n = strlen(val);
    if (n >= CL_PROPS_VALUE_BYTES)
        return cl_err_set(e, CL_E_USAGE, "%s:%d: %s: value longer than %d bytes", fname, line, key,
                          CL_PROPS_VALUE_BYTES - 1);
    memcpy(dst, val, n + 1);
    return CL_OK;
}

/* Whole-file checks: what the chosen protocol needs, and keys it would
 * silently ignore (an accepted key must act). */
static int check_whole(const cl_sec_t *s, const seen_t *sn, const char *fname, cl_err_t *e) {
    static const enum key_id sasl_keys[] = { K_MECHANISM, K_USERNAME, K_PASSWORD };
    static const enum key_id tls_keys[] = { K_CERT, K_KEY, K_KEY_PASSWORD, K_ENDPOINT };
    const char *proto = cl_sec_proto_name(s->protocol);
    if (cl_sec_sasl(s)) {
        int at = sn->line[K_PROTOCOL];
        if (!sn->line[K_MECHANISM])
            return cl_err_set(e, CL_E_USAGE, "%s:%d: security.protocol=%s needs sasl.mechanism (PLAIN, "
                              "SCRAM-SHA-256 or SCRAM-SHA-512)", fname, at, proto);
        if (!sn->line[K_USERNAME] || !sn->line[K_PASSWORD])
            return cl_err_set(e, CL_E_USAGE, "%s:%d: security.protocol=%s needs sasl.username and sasl.password",
                              fname, at, proto);
    } else {
        for (size_t i = 0; i < sizeof sasl_keys / sizeof sasl_keys[0]; i++)
            if (sn->line[sasl_keys[i]])
                return cl_err_set(e, CL_E_USAGE, "%s:%d: %s is set but security.protocol is %s (no SASL)", fname,
                                  sn->line[sasl_keys[i]], sn->name[sasl_keys[i]], proto);
    }
    if (!cl_sec_tls(s)) {
        /* ssl.ca.location is left out: the admin port's https uses it too */
        for (size_t i = 0; i < sizeof tls_keys / sizeof tls_keys[0]; i++)
            if (sn->line[tls_keys[i]])
                return cl_err_set(e, CL_E_USAGE, "%s:%d: %s is set but security.protocol is %s (no TLS)", fname,
                                  sn->line[tls_keys[i]], sn->name[tls_keys[i]], proto);
    }
    if (!!sn->line[K_CERT] != !!sn->line[K_KEY]) {
        enum key_id has = sn->line[K_CERT] ? K_CERT : K_KEY;
        return cl_err_set(e, CL_E_USAGE, "%s:%d: %s needs %s too (mutual TLS takes a certificate and its key)",
                          fname, sn->line[has], sn->name[has],
                          has == K_CERT ? "ssl.key.location" : "ssl.certificate.location");
    }
    if (sn->line[K_KEY_PASSWORD] && !sn->line[K_KEY])
        return cl_err_set(e, CL_E_USAGE, "%s:%d: ssl.key.password is set without ssl.key.location", fname,
                          sn->line[K_KEY_PASSWORD]);
    if (!!sn->line[K_ADMIN_USER] != !!sn->line[K_ADMIN_PASSWORD]) {
        enum key_id has = sn->line[K_ADMIN_USER] ? K_ADMIN_USER : K_ADMIN_PASSWORD;
        return cl_err_set(e, CL_E_USAGE, "%s:%d: admin.username and admin.password go together", fname,
                          sn->line[has]);
    }
    return CL_OK;
}

/* ---- the bounded reader ---------------------------------------------------- */

typedef struct cur {
    const char *p;
    size_t len, pos;
} cur_t;

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\r'; }

/* Copies the next line (without its '\n') into line[]; false at the end.
 * *too_long / *has_nul report a line over the bound or holding a NUL. */
static bool next_line(cur_t *c, char *line, size_t line_bytes, bool *too_long, bool *has_nul) {
    if (c->pos >= c->len) return false;
    size_t n = 0;
    *too_long = *has_nul = false;
    while (c->pos < c->len) {
        char ch = c->p[c->pos++];
        if (ch == '\n') break;
        if (ch == '\0') *has_nul = true;
        if (n + 1 < line_bytes) line[n++] = ch;
        else *too_long = true;
    }
    line[n] = '\0';
    return true;
}

static char *trim(char *s) {
    while (is_space(*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && is_space(s[n - 1])) s[--n] = '\0';
    return s;
}

int cl_props_parse(const char *buf, size_t len, const char *fname, cl_sec_t *out, cl_err_t *e) {
    cl_sec_init(out);
    if (len > CL_PROPS_FILE_MAX_BYTES)
        return cl_err_set(e, CL_E_USAGE, "%s: larger than %zu bytes", fname, CL_PROPS_FILE_MAX_BYTES);
    seen_t sn;
    memset(&sn, 0, sizeof sn);
    cur_t c = { .p = buf, .len = len, .pos = 0 };
    char line[CL_PROPS_LINE_MAX_BYTES + 1];
    bool too_long = false, has_nul = false;
    for (int lineno = 1; next_line(&c, line, sizeof line, &too_long, &has_nul); lineno++) {
        if (too_long)
            return cl_err_set(e, CL_E_USAGE, "%s:%d: line longer than %d bytes", fname, lineno,
                              CL_PROPS_LINE_MAX_BYTES);
        if (has_nul) return cl_err_set(e, CL_E_USAGE, "%s:%d: NUL byte in line", fname, lineno);
        char *s = trim(line);
        if (*s == '\0' || *s == '#' || *s == '!') continue;
        char *eq = strchr(s, '=');
        if (!eq) return cl_err_set(e, CL_E_USAGE, "%s:%d: expected key=value", fname, lineno);
        *eq = '\0';
        char *key = trim(s), *val = trim(eq + 1);
        if (*key == '\0') return cl_err_set(e, CL_E_USAGE, "%s:%d: empty key", fname, lineno);
        size_t k = 0;
        while (k < NKEYS && strcmp(keys[k].name, key) != 0) k++;
        if (k == NKEYS) {
            /* Java clients' names for the same settings: say which to use */
            static const struct { const char *java, *ours; } hints[] = {
                { "sasl.jaas.config", "sasl.username and sasl.password" },
                { "ssl.truststore.location", "ssl.ca.location (a PEM file)" },
                { "ssl.keystore.location", "ssl.certificate.location and ssl.key.location (PEM files)" },
                { "ssl.keystore.password", "ssl.key.password" },
            };
            for (size_t h = 0; h < sizeof hints / sizeof hints[0]; h++)
                if (strcmp(key, hints[h].java) == 0)
                    return cl_err_set(e, CL_E_USAGE, "%s:%d: unknown key '%s' (Java's name; use %s)", fname, lineno,
                                      key, hints[h].ours);
            return cl_err_set(e, CL_E_USAGE, "%s:%d: unknown key '%.64s'", fname, lineno, key);
        }
        int rc = set_key(out, keys[k].id, keys[k].name, val, fname, lineno, e);
        if (rc != CL_OK) return rc;
        sn.line[keys[k].id] = lineno;
        sn.name[keys[k].id] = keys[k].name;
    }
    return check_whole(out, &sn, fname, e);
}

int cl_props_load(const char *path, cl_sec_t *out, cl_err_t *e) {
    FILE *f = fopen(path, "rb");
    if (!f) return cl_err_set(e, CL_E_USAGE, "--command-config %s: %s", path, strerror(errno));
    /* one byte past the bound, to tell "too large" from "exactly at it" */
    size_t cap = CL_PROPS_FILE_MAX_BYTES + 1;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return cl_err_set(e, CL_E_NOMEM, "out of memory reading %s", path);
    }
    size_t n = fread(buf, 1, cap, f);
    int rd_err = ferror(f);
    fclose(f);
    int rc;
    if (rd_err) rc = cl_err_set(e, CL_E_USAGE, "--command-config %s: read error", path);
    else rc = cl_props_parse(buf, n, path, out, e);
    free(buf);
    return rc;
}
