/* bench_scram — the CPU one SASL authentication costs a node, without the
 * network: SCRAM-SHA-256 and SCRAM-SHA-512 server exchanges per second
 * (client-first parse, server-first, proof check, server-final: what runs
 * on the event loop; no PBKDF2 there), PLAIN token checks per second, and
 * for comparison PBKDF2 at 4096 iterations (what the client pays, and what
 * a broker that stored passwords would pay per login). Prints figures;
 * asserts only that every exchange verified. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/kp_sasl.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void scram(kp_sasl_mech_t mech) {
    const uint8_t salt[16] = "0123456789abcdef";
    kp_scram_cred_t cred;
    if (kp_scram_cred_from_password(mech, "bench-pw", salt, sizeof salt, 4096, &cred) != KP_OK) abort();
    /* the client's messages once (its PBKDF2 is not the node's cost) */
    kp_scram_client_t c;
    kp_scram_server_t s;
    uint8_t m1[1024], m2[1024], m3[1024], m4[1024];
    size_t n1, n2, n3, n4;
    if (kp_scram_client_first(&c, mech, "bench-user", "clientnonce0123456789", 21, m1, sizeof m1, &n1) != KP_OK) abort();
    kp_scram_server_init(&s, mech);
    if (kp_scram_server_client_first(&s, m1, n1) != KP_OK ||
        kp_scram_server_first(&s, &cred, "servernonce0123456789abcdef", 27, m2, sizeof m2, &n2) != KP_OK ||
        kp_scram_client_final(&c, "bench-pw", m2, n2, m3, sizeof m3, &n3) != KP_OK)
        abort();
    int rounds = 0;
    double t0 = now_s(), t;
    do {
        for (int k = 0; k < 1000; k++) {
            kp_scram_server_init(&s, mech);
            if (kp_scram_server_client_first(&s, m1, n1) != KP_OK ||
                kp_scram_server_first(&s, &cred, "servernonce0123456789abcdef", 27, m2, sizeof m2, &n2) != KP_OK ||
                kp_scram_server_final(&s, &cred, m3, n3, m4, sizeof m4, &n4) != KP_OK)
                abort();
        }
        rounds += 1000;
        t = now_s() - t0;
    } while (t < 0.5);
    printf("scram %s server exchanges: %.0f/s (%.1f us each, one core)\n", kp_sasl_mech_name(mech), rounds / t,
           t / rounds * 1e6);
    uint8_t salted[64];
    rounds = 0;
    t0 = now_s();
    do {
        if (kp_scram_salted_password(mech, "bench-pw", 8, salt, sizeof salt, 4096, salted) != KP_OK) abort();
        rounds++;
        t = now_s() - t0;
    } while (t < 0.3);
    printf("scram %s PBKDF2 4096 (client side): %.0f/s (%.2f ms each)\n", kp_sasl_mech_name(mech), rounds / t,
           t / rounds * 1e3);
}

int main(void) {
    scram(KP_SASL_MECH_SCRAM_SHA_256);
    scram(KP_SASL_MECH_SCRAM_SHA_512);
    int rounds = 0;
    double t0 = now_s(), t;
    static const char tok[] = "\0alice\0alice-secret";
    do {
        for (int k = 0; k < 10000; k++) {
            kp_sasl_plain_t p;
            if (kp_sasl_plain_parse(tok, sizeof tok - 1, &p) != KP_OK ||
                !kp_sasl_ct_equal(p.password.p, p.password.len, "alice-secret", 12))
                abort();
        }
        rounds += 10000;
        t = now_s() - t0;
    } while (t < 0.3);
    printf("plain token checks: %.0f/s\n", rounds / t);
    return 0;
}
