/* libFuzzer target: the JAAS config value parser (broker/config/jaas.h),
 * text from a config file or --set.
 *
 * Properties: a refusal gives a reason starting "at character N" with N
 * inside the input (+1), or a size refusal; an accepted value has at most
 * BK_CFG_JAAS_USERS_MAX users with distinct, non-empty names, non-empty
 * passwords, and every user is found by bk_cfg_jaas_user. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/config/jaas.h"

static void must(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_jaas: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bk_cfg_jaas_t j;
    char why[256];
    int st = bk_cfg_jaas_parse((const char *)data, size, &j, why, sizeof why);
    if (st != KP_OK) {
        must(st == KP_ERR_BAD_VALUE || st == KP_ERR_TOO_LARGE || st == KP_ERR_NOMEM, "status");
        if (st == KP_ERR_BAD_VALUE) {
            unsigned long at = 0;
            must(sscanf(why, "at character %lu:", &at) == 1, "reason without a position");
            must(at >= 1 && at <= size + 1, "position outside the input");
        }
        return 0;
    }
    must(j.module && j.module[0], "module");
    must(j.nusers <= BK_CFG_JAAS_USERS_MAX, "too many users");
    for (size_t i = 0; i < j.nusers; i++) {
        must(j.users[i].name[0] && j.users[i].password[0], "empty user or password");
        must(bk_cfg_jaas_user(&j, j.users[i].name) == j.users[i].password, "duplicate or lost user");
    }
    bk_cfg_jaas_free(&j);
    return 0;
}
