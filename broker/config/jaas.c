/* jaas.c — the JAAS config value parser (jaas.h). A cursor over (text,
 * len); every read checks the bound; values are copied only once the
 * whole option has been read. */
#include "broker/config/jaas.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_sasl.h"

typedef struct cur {
    const char *p;
    size_t len, pos;
    char *why;
    size_t why_len;
} cur_t;

static int fail(cur_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(cur_t *c, const char *fmt, ...) {
    if (c->why && c->why_len) {
        int n = snprintf(c->why, c->why_len, "at character %zu: ", c->pos + 1);
        if (n > 0 && (size_t)n < c->why_len) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->why + n, c->why_len - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return KP_ERR_BAD_VALUE;
}

static void skip_ws(cur_t *c) {
    while (c->pos < c->len && (c->p[c->pos] == ' ' || c->p[c->pos] == '\t' || c->p[c->pos] == '\n' ||
                               c->p[c->pos] == '\r'))
        c->pos++;
}

static bool tok_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '-' || ch == '$' || ch == '/' || ch == ':' || ch == '@' ||
           ch == '+';
}

/* A bare token [start, end). */
static int token(cur_t *c, size_t *start, size_t *end) {
    skip_ws(c);
    *start = c->pos;
    while (c->pos < c->len && tok_char(c->p[c->pos])) c->pos++;
    *end = c->pos;
    return *end > *start ? KP_OK : KP_ERR_BAD_VALUE;
}

static char *dup_range(const char *p, size_t n) {
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

/* A value: "quoted" with \" \\ escapes, or a bare token. *out malloc'd. */
static int value(cur_t *c, char **out) {
    skip_ws(c);
    if (c->pos < c->len && c->p[c->pos] == '"') {
        size_t at = c->pos++;
        char *buf = malloc(c->len - c->pos + 1); /* bounded by the bytes left */
        if (!buf) return KP_ERR_NOMEM;
        size_t n = 0;
        while (c->pos < c->len && c->p[c->pos] != '"') {
            char ch = c->p[c->pos++];
            if (ch == '\\') {
                if (c->pos >= c->len) break;
                ch = c->p[c->pos++];
            }
            if (ch == 0) { free(buf); return fail(c, "a NUL byte in a value"); }
            buf[n++] = ch;
        }
        if (c->pos >= c->len) {
            free(buf);
            c->pos = at;
            return fail(c, "a quoted value that does not end");
        }
        c->pos++; /* closing quote */
        buf[n] = 0;
        *out = buf;
        return KP_OK;
    }
    size_t s, e;
    if (token(c, &s, &e) != KP_OK) return fail(c, "expected a value");
    *out = dup_range(c->p + s, e - s);
    return *out ? KP_OK : KP_ERR_NOMEM;
}

void bk_cfg_jaas_free(bk_cfg_jaas_t *j) {
    if (!j) return;
    free(j->module);
    free(j->username);
    if (j->password) { memset(j->password, 0, strlen(j->password)); free(j->password); }
    for (size_t i = 0; i < j->nusers; i++) {
        free(j->users[i].name);
        memset(j->users[i].password, 0, strlen(j->users[i].password));
        free(j->users[i].password);
    }
    free(j->users);
    memset(j, 0, sizeof *j);
}

const char *bk_cfg_jaas_user(const bk_cfg_jaas_t *j, const char *name) {
    for (size_t i = 0; i < j->nusers; i++)
        if (strcmp(j->users[i].name, name) == 0) return j->users[i].password;
    return NULL;
}

static int option(cur_t *c, bk_cfg_jaas_t *j) {
    size_t ns, ne;
    if (token(c, &ns, &ne) != KP_OK) return fail(c, "expected an option NAME=VALUE or ';'");
    size_t nlen = ne - ns;
    const char *name = c->p + ns;
    skip_ws(c);
    if (c->pos >= c->len || c->p[c->pos] != '=') return fail(c, "expected '=' after the option name");
    c->pos++;
    char *v = NULL;
    int st = value(c, &v);
    if (st != KP_OK) return st;
    size_t at = ns;
    if (nlen == 8 && memcmp(name, "username", 8) == 0) {
        free(j->username);
        j->username = v;
    } else if (nlen == 8 && memcmp(name, "password", 8) == 0) {
        free(j->password);
        j->password = v;
    } else if (nlen > 5 && memcmp(name, "user_", 5) == 0) {
        size_t ul = nlen - 5;
        if (ul > KP_SASL_NAME_MAX || strlen(v) > KP_SASL_PASSWORD_MAX) {
            free(v);
            c->pos = at;
            return fail(c, "a user name longer than %d or password longer than %d bytes",
                        KP_SASL_NAME_MAX, KP_SASL_PASSWORD_MAX);
        }
        if (v[0] == 0) { free(v); c->pos = at; return fail(c, "user_%.*s has an empty password", (int)ul, name + 5); }
        char *un = dup_range(name + 5, ul);
        if (!un) { free(v); return KP_ERR_NOMEM; }
        if (bk_cfg_jaas_user(j, un)) {
            c->pos = at;
            st = fail(c, "user '%s' is listed twice", un);
            free(un);
            free(v);
            return st;
        }
        if (j->nusers >= BK_CFG_JAAS_USERS_MAX) {
            free(un); free(v);
            c->pos = at;
            return fail(c, "more than %d users", BK_CFG_JAAS_USERS_MAX);
        }
        bk_cfg_jaas_user_t *nu = realloc(j->users, (j->nusers + 1) * sizeof *nu);
        if (!nu) { free(un); free(v); return KP_ERR_NOMEM; }
        j->users = nu;
        j->users[j->nusers].name = un;
        j->users[j->nusers].password = v;
        j->nusers++;
    } else {
        free(v); /* other options (e.g. Kafka's unsecuredLoginStringClaim_*) are ignored */
    }
    return KP_OK;
}

int bk_cfg_jaas_parse(const char *text, size_t len, bk_cfg_jaas_t *out, char *why, size_t why_len) {
    cur_t c = { text, len, 0, why, why_len };
    if (why && why_len) why[0] = 0;
    if (len > BK_CFG_JAAS_MAX) {
        snprintf(why, why_len, "longer than %d bytes", BK_CFG_JAAS_MAX);
        return KP_ERR_TOO_LARGE;
    }
    bk_cfg_jaas_t j;
    memset(&j, 0, sizeof j);
    size_t s, e;
    int st;
    if (token(&c, &s, &e) != KP_OK) { st = fail(&c, "expected a login module class name"); goto fail; }
    j.module = dup_range(text + s, e - s);
    if (!j.module) { st = KP_ERR_NOMEM; goto fail; }
    if (token(&c, &s, &e) != KP_OK) { st = fail(&c, "expected a control flag (required, requisite, sufficient, optional)"); goto fail; }
    {
        size_t n = e - s;
        const char *f = text + s;
        if (!((n == 8 && !memcmp(f, "required", 8)) || (n == 9 && !memcmp(f, "requisite", 9)) ||
              (n == 10 && !memcmp(f, "sufficient", 10)) || (n == 8 && !memcmp(f, "optional", 8)))) {
            c.pos = s;
            st = fail(&c, "control flag must be required, requisite, sufficient or optional");
            goto fail;
        }
    }
    for (;;) {
        skip_ws(&c);
        if (c.pos < len && text[c.pos] == ';') { c.pos++; break; }
        if (c.pos >= len) { st = fail(&c, "missing ';' at the end of the login module"); goto fail; }
        st = option(&c, &j);
        if (st != KP_OK) goto fail;
    }
    skip_ws(&c);
    if (c.pos < len) { st = fail(&c, "only one login module is allowed"); goto fail; }
    *out = j;
    return KP_OK;
fail:
    bk_cfg_jaas_free(&j);
    return st;
}
