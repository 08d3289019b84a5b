/* protocol/principal.c — ssl.principal.mapping.rules (kp_principal.h). */
#include "protocol/kp_principal.h"

#include <ctype.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROUPS_MAX 10 /* $0..$9 */

typedef struct rule {
    bool is_default;
    regex_t re;          /* "^(" pattern ")$": group k of the pattern is k + 1 */
    char *repl;          /* unescaped replacement, $n kept */
    char mode;           /* 0, 'L' or 'U' */
} rule_t;

struct kp_principal_rules {
    rule_t rule[KP_PRINCIPAL_RULES_MAX];
    size_t n;
};

void kp_principal_rules_free(kp_principal_rules_t *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n; i++)
        if (!r->rule[i].is_default) {
            regfree(&r->rule[i].re);
            free(r->rule[i].repl);
        }
    free(r);
}

/* Reads up to an unescaped '/' from *p into out (NUL-terminated). In a
 * pattern ("\/" -> "/", other escapes kept for the regex); in a
 * replacement every "\x" -> "x" except "\$", kept so that "$" stays literal. */
static bool read_part(const char **p, char *out, size_t cap, bool pattern) {
    size_t n = 0;
    const char *s = *p;
    while (*s && *s != '/') {
        char c[2];
        size_t k = 0;
        if (*s == '\\') {
            if (!s[1]) return false;
            if (s[1] == '/' || (!pattern && s[1] != '$')) c[k++] = s[1];
            else { c[k++] = '\\'; c[k++] = s[1]; }
            s += 2;
        } else {
            c[k++] = *s++;
        }
        if (n + k >= cap) return false;
        memcpy(out + n, c, k);
        n += k;
    }
    if (*s != '/') return false;
    out[n] = '\0';
    *p = s + 1;
    return true;
}

static kp_principal_rules_t *bad(kp_principal_rules_t *r, char *why, size_t why_len, size_t idx, const char *what) {
    snprintf(why, why_len, "ssl.principal.mapping.rules: rule %zu: %s", idx + 1, what);
    kp_principal_rules_free(r);
    return NULL;
}

kp_principal_rules_t *kp_principal_rules_parse(const char *text, char *why, size_t why_len) {
    if (strlen(text) > KP_PRINCIPAL_TEXT_MAX) {
        snprintf(why, why_len, "ssl.principal.mapping.rules: longer than %d bytes", KP_PRINCIPAL_TEXT_MAX);
        return NULL;
    }
    kp_principal_rules_t *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    const char *p = text;
    for (;;) {
        while (*p == ',' || *p == '\n' || isspace((unsigned char)*p)) p++;
        if (!*p) break;
        if (r->n == KP_PRINCIPAL_RULES_MAX) return bad(r, why, why_len, r->n, "too many rules");
        rule_t *ru = &r->rule[r->n];
        if (strncmp(p, "DEFAULT", 7) == 0) {
            ru->is_default = true;
            p += 7;
        } else if (strncmp(p, "RULE:", 5) == 0) {
            p += 5;
            char pat[KP_PRINCIPAL_TEXT_MAX + 1], rep[KP_PRINCIPAL_TEXT_MAX + 1];
            if (!read_part(&p, pat, sizeof pat, true)) return bad(r, why, why_len, r->n, "expected RULE:pattern/replacement/[LU]");
            if (!read_part(&p, rep, sizeof rep, false)) return bad(r, why, why_len, r->n, "expected RULE:pattern/replacement/[LU]");
            for (const char *q = rep; *q; q++)
                if (*q == '$' && !(q > rep && q[-1] == '\\') && !isdigit((unsigned char)q[1]))
                    return bad(r, why, why_len, r->n, "'$' in the replacement must be followed by a group number 0-9");
            if (*p == 'L' || *p == 'U') ru->mode = *p++;
            char anchored[KP_PRINCIPAL_TEXT_MAX + 8];
            snprintf(anchored, sizeof anchored, "^(%s)$", pat);
            int rc = regcomp(&ru->re, anchored, REG_EXTENDED);
            if (rc != 0) {
                char msg[128], what[320];
                regerror(rc, &ru->re, msg, sizeof msg);
                snprintf(what, sizeof what, "pattern '%.60s': %s (POSIX extended regex)", pat, msg);
                return bad(r, why, why_len, r->n, what);
            }
            ru->repl = strdup(rep);
            if (!ru->repl) {
                regfree(&ru->re);
                return bad(r, why, why_len, r->n, "out of memory");
            }
        } else {
            return bad(r, why, why_len, r->n, "expected DEFAULT or RULE:pattern/replacement/[LU]");
        }
        r->n++;
        /* what Kafka tolerates after a rule: spaces up to the separator */
        while (*p == ' ' || *p == '\t') p++;
        if (*p && *p != ',' && *p != '\n')
            return bad(r, why, why_len, r->n - 1, "unexpected text after the rule (rules are separated by ',')");
    }
    if (r->n == 0) return bad(r, why, why_len, 0, "no rule (use DEFAULT)");
    return r;
}

static bool put(char *out, size_t out_len, size_t *n, const char *s, size_t len) {
    if (*n + len >= out_len) return false;
    memcpy(out + *n, s, len);
    *n += len;
    out[*n] = '\0';
    return true;
}

static int map_rules(const kp_principal_rules_t *r, const char *subject, char *out, size_t out_len);

int kp_principal_map(const kp_principal_rules_t *r, const char *subject, char *out, size_t out_len) {
    if (out_len == 0) return KP_ERR_BAD_VALUE;
    int rc = map_rules(r, subject, out, out_len);
    if (rc != KP_OK) out[0] = '\0'; /* never half a name */
    return rc;
}

static int map_rules(const kp_principal_rules_t *r, const char *subject, char *out, size_t out_len) {
    out[0] = '\0';
    for (size_t i = 0; i < r->n; i++) {
        const rule_t *ru = &r->rule[i];
        size_t n = 0;
        if (ru->is_default) return put(out, out_len, &n, subject, strlen(subject)) ? KP_OK : KP_ERR_BAD_VALUE;
        regmatch_t m[GROUPS_MAX + 1];
        if (regexec(&ru->re, subject, GROUPS_MAX + 1, m, 0) != 0) continue;
        for (const char *q = ru->repl; *q; q++) {
            if (*q == '\\' && q[1] == '$') {
                if (!put(out, out_len, &n, "$", 1)) return KP_ERR_BAD_VALUE;
                q++;
            } else if (*q == '$' && isdigit((unsigned char)q[1])) {
                int g = q[1] - '0' + 1; /* group 0 of the pattern is our group 1 */
                q++;
                if (m[g].rm_so < 0) continue;
                if (!put(out, out_len, &n, subject + m[g].rm_so, (size_t)(m[g].rm_eo - m[g].rm_so)))
                    return KP_ERR_BAD_VALUE;
            } else if (!put(out, out_len, &n, q, 1)) {
                return KP_ERR_BAD_VALUE;
            }
        }
        for (size_t k = 0; k < n; k++)
            out[k] = ru->mode == 'L' ? (char)tolower((unsigned char)out[k])
                   : ru->mode == 'U' ? (char)toupper((unsigned char)out[k]) : out[k];
        return KP_OK;
    }
    return KP_ERR_BAD_VALUE;
}
