/* libFuzzer target: ssl.principal.mapping.rules (kp_principal_rules_parse)
 * and mapping a subject with the rules parsed (kp_principal_map). The input
 * is "rules\0subject": text from a config file, and a certificate subject
 * a peer chose.
 *
 * Properties: a refused rule list gives a reason; an accepted one maps any
 * subject either to KP_OK with a NUL-terminated result that fits, or to an
 * error with an empty result; mapping twice gives the same answer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kp_principal.h"

static void must(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_principal_rules: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *text = malloc(size + 2);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    text[size + 1] = '\0';
    const char *subject = text + strlen(text) + 1; /* after the first NUL, or "" */
    if (subject > text + size) subject = "";
    char why[256] = "";
    kp_principal_rules_t *r = kp_principal_rules_parse(text, why, sizeof why);
    if (!r) {
        must(why[0] != '\0', "refused without a reason");
        free(text);
        return 0;
    }
    char a[300], b[300];
    memset(a, 0x5A, sizeof a);
    int rc1 = kp_principal_map(r, subject, a, sizeof a);
    int rc2 = kp_principal_map(r, subject, b, sizeof b);
    must(rc1 == rc2, "two mappings disagree on the status");
    must(memchr(a, '\0', sizeof a) != NULL, "result not terminated");
    if (rc1 == KP_OK) must(strcmp(a, b) == 0, "two mappings disagree");
    else must(a[0] == '\0', "failed mapping left a result");
    kp_principal_rules_free(r);
    free(text);
    return 0;
}
