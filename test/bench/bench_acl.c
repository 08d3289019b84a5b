/* bench_acl — the cost of one StandardAuthorizer decision
 * (bk_meta_acls_decide) with 0, 10,000 and 100,000 bindings in the index
 * (literal WRITE for other users/topics, one in ten PREFIXED, one in ten
 * DENY), for a literal hit, a prefixed hit and a resource no ACL names.
 * Reported, not judged (the goal is O(1) per partition: the figures
 * should not grow with the binding count). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/meta/acl.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void fill(bk_meta_acls_t *s, int n) {
    char name[64], pr[64];
    for (int i = 0; i < n; i++) {
        bool pre = i % 10 == 8, deny = i % 10 == 9;
        snprintf(name, sizeof name, pre ? "pre-%d-" : "bench-%d", i);
        snprintf(pr, sizeof pr, "User:u%d", i);
        bk_meta_acl_t a = { BK_META_RES_TOPIC, pre ? BK_META_PAT_PREFIXED : BK_META_PAT_LITERAL, name, pr, "*",
                            BK_META_OP_WRITE, deny ? BK_META_PERM_DENY : BK_META_PERM_ALLOW };
        if (bk_meta_acls_add(s, &a) != 0) { fprintf(stderr, "add failed\n"); exit(1); }
    }
    bk_meta_acl_t mine = { BK_META_RES_TOPIC, BK_META_PAT_LITERAL, "orders", "User:app", "*", BK_META_OP_WRITE,
                           BK_META_PERM_ALLOW };
    bk_meta_acl_t pre = { BK_META_RES_TOPIC, BK_META_PAT_PREFIXED, "pay", "User:app", "*", BK_META_OP_WRITE,
                          BK_META_PERM_ALLOW };
    if (bk_meta_acls_add(s, &mine) != 0 || bk_meta_acls_add(s, &pre) != 0) exit(1);
}

int main(void) {
    const int sizes[] = { 0, 10000, 100000 };
    const char *const names[] = { "orders", "payments-eu-west", "unnamed-topic-xyz" };
    const int iters = 2000000;
    printf("%-10s %-20s %12s\n", "bindings", "resource", "ns/decision");
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        bk_meta_acls_t *s = bk_meta_acls_new();
        if (!s) return 1;
        fill(s, sizes[z]);
        for (size_t k = 0; k < 3; k++) {
            volatile int sink = 0;
            double t0 = now_s();
            for (int i = 0; i < iters; i++)
                sink += (int)bk_meta_acls_decide(s, "User:app", "127.0.0.1", BK_META_OP_WRITE, BK_META_RES_TOPIC,
                                                 names[k]);
            double dt = now_s() - t0;
            (void)sink;
            printf("%-10zu %-20s %12.1f\n", bk_meta_acls_count(s), names[k], dt * 1e9 / iters);
        }
        bk_meta_acls_free(s);
    }
    return 0;
}
