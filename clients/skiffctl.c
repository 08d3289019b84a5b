/* skiffctl — the command-line tool for skiff clusters (see clients/README.md
 * for commands and exit codes). */
#include <stdlib.h>

#include "clients/cl_ctl.h"

int main(int argc, char **argv) {
    cl_ctl_t ctx = {
        .brokers = getenv("SKIFF_BROKERS"),
        .admin = getenv("SKIFF_ADMIN"),
        .timeout_ms = CL_TIMEOUT_MS_DEFAULT,
        .out = stdout,
        .err = stderr,
        .in = stdin,
    };
    if (!ctx.brokers || !*ctx.brokers) ctx.brokers = CL_CTL_BROKERS_DEFAULT;
    if (!ctx.admin || !*ctx.admin) ctx.admin = CL_CTL_ADMIN_DEFAULT;
    int rc = cl_ctl_main(&ctx, argc - 1, argv + 1);
    fflush(stdout);
    return rc;
}
