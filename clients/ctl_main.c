/* ctl_main.c — skiffctl's top-level dispatch and help. */
#include <string.h>

#include "clients/cl_ctl.h"

static const char *top_help =
    "usage: skiffctl COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  cluster info | quorum                     cluster id, controller, brokers; metadata quorum\n"
    "  broker list                               brokers and their addresses\n"
    "  topic create|list|describe|delete|alter-config|add-partitions\n"
    "  produce TOPIC                             records from stdin, one per line\n"
    "  consume TOPIC                             records to stdout\n"
    "  group list|describe|delete|reset-offsets  consumer groups\n"
    "  perf produce|consume TOPIC                throughput and latency\n"
    "  txn list|describe                         transactions at their coordinators\n"
    "  producers TOPIC                           producer ids, epochs and open transactions per partition\n"
    "  user add|delete|list                      SCRAM credentials (SCRAM-SHA-256 / SCRAM-SHA-512)\n"
    "  acl add|list|remove                       ACL bindings (--principal, --operation, --producer, --consumer)\n"
    "  feature list|upgrade|downgrade            feature flags: supported and finalized levels\n"
    "  quota set|list                            client quotas (byte rates, request percentage)\n"
    "\n"
    "global options: --brokers HOST:PORT,... (env SKIFF_BROKERS, default " CL_CTL_BROKERS_DEFAULT ")\n"
    "                --admin HOST:PORT (env SKIFF_ADMIN, default " CL_CTL_ADMIN_DEFAULT ")\n"
    "                --command-config FILE (security.protocol, sasl.mechanism, sasl.username, sasl.password,\n"
    "                  ssl.ca.location, ssl.certificate.location, ssl.key.location, ssl.key.password,\n"
    "                  ssl.endpoint.identification.algorithm, admin.username, admin.password)\n"
    "                --json  --timeout-ms MS  --help\n"
    "\n"
    "exit codes: 0 ok, 1 Kafka or operation error, 2 usage error, 3 cannot connect\n";

int cl_ctl_main(cl_ctl_t *ctx, int argc, char **argv) {
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
        fputs(top_help, argc < 1 ? ctx->err : ctx->out);
        return argc < 1 ? CL_EXIT_USAGE : CL_EXIT_OK;
    }
    static const struct { const char *name; int (*fn)(cl_ctl_t *, int, char **); } cmds[] = {
        { "cluster", cl_ctl_cluster }, { "broker", cl_ctl_broker }, { "topic", cl_ctl_topic },
        { "produce", cl_ctl_produce }, { "consume", cl_ctl_consume }, { "group", cl_ctl_group },
        { "perf", cl_ctl_perf }, { "txn", cl_ctl_txn }, { "producers", cl_ctl_producers },
        { "user", cl_ctl_user }, { "acl", cl_ctl_acl },
        { "feature", cl_ctl_feature },
        { "quota", cl_ctl_quota },
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[0], cmds[i].name)) return cmds[i].fn(ctx, argc - 1, argv + 1);
    return cl_ctl_usage(ctx, "unknown command '%s'", argv[0]);
}
