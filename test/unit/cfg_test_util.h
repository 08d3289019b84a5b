/* cfg_test_util.h — what the configuration tests share: a temporary
 * directory with the config file path in it, and BASE, a minimal valid node
 * (ports are never bound by these tests). Header-only. */
#ifndef SKIFF_CFG_TEST_UTIL_H
#define SKIFF_CFG_TEST_UTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[64];
static char path[128];

static const char *BASE =
    "node.id=1\n"
    "process.roles=broker,controller\n"
    "listeners=PLAINTEXT://127.0.0.1:29092,CONTROLLER://127.0.0.1:29192\n"
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
    "controller.listener.names=CONTROLLER\n"
    "controller.quorum.voters=1@127.0.0.1:29192\n"; /* 6 lines */

/* Makes dir (/tmp/<prefix>XXXXXX) and sets path to its t.conf. */
static inline void cfg_tmp_setup(const char *prefix) {
    snprintf(dir, sizeof dir, "/tmp/%sXXXXXX", prefix);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.conf", dir);
}

static void teardown(void) {
    unlink(path);
    rmdir(dir);
}

#endif
