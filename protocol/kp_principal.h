/* protocol/kp_principal.h — Kafka's ssl.principal.mapping.rules: how the
 * subject of a client certificate (RFC 2253 text, "CN=client,O=skiff")
 * becomes the name of the principal ("User:<name>").
 *
 * Syntax (Kafka's): rules separated by ',' or newlines, each either
 *   DEFAULT                         the subject text unchanged
 *   RULE:pattern/replacement/[LU]   when `pattern` matches the WHOLE subject,
 *                                   the replacement, with $0..$9 for the
 *                                   groups; L lower-cases, U upper-cases
 * tried in order; the first that matches wins. In pattern and replacement a
 * '\' escapes the next character ("\/" is a '/', "\," stays for the regex).
 *
 * Regex dialect: POSIX extended (regcomp REG_EXTENDED), not Java's: no
 * lazy quantifiers (*?), no (?:...) or look-around, no \d \w \s classes
 * (use [0-9], [[:alnum:]_], [[:space:]]); groups are numbered as in Java.
 * Bounds: at most KP_PRINCIPAL_RULES_MAX rules, KP_PRINCIPAL_TEXT_MAX bytes
 * of rules text and of a result. */
#ifndef SKIFF_KP_PRINCIPAL_H
#define SKIFF_KP_PRINCIPAL_H

#include <stddef.h>

#include "protocol/kp_wire.h"

#define KP_PRINCIPAL_RULES_MAX 32
#define KP_PRINCIPAL_TEXT_MAX 1024

typedef struct kp_principal_rules kp_principal_rules_t;

/* Parses `text` (NUL-terminated). Returns the rules, or NULL with the
 * reason in why (naming the rule). Free with kp_principal_rules_free. */
kp_principal_rules_t *kp_principal_rules_parse(const char *text, char *why, size_t why_len);
void kp_principal_rules_free(kp_principal_rules_t *r);

/* Maps `subject` with the rules into out[0..out_len). Returns KP_OK, or
 * KP_ERR_BAD_VALUE when no rule matches (Kafka then
 * refuses the connection) or the result does not fit. */
KP_MUST_CHECK int kp_principal_map(const kp_principal_rules_t *r, const char *subject, char *out, size_t out_len);

#endif
