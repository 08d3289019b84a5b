/* mock_cluster — librdkafka's in-process mock cluster as a stand-alone
 * process, for testing clients/ while no skiff broker can serve.
 *
 *   mock_cluster [--brokers N] [--topic NAME:PARTITIONS:RF]...
 *
 * Prints "BOOTSTRAP host:port,..." on stdout (one line, flushed) once the
 * cluster is up, then stays up until SIGTERM/SIGINT. Exit 1 on setup error.
 * The mock listens on 127.0.0.1 ports the kernel picks (never fixed ports).
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) { (void)sig; stop_requested = 1; }

static int add_topic(rd_kafka_mock_cluster_t *mc, const char *spec) {
    char name[256];
    int parts = 1, rf = 1;
    const char *c = strchr(spec, ':');
    size_t n = c ? (size_t)(c - spec) : strlen(spec);
    if (n == 0 || n >= sizeof name) return -1;
    memcpy(name, spec, n);
    name[n] = '\0';
    if (c && sscanf(c + 1, "%d:%d", &parts, &rf) < 1) return -1;
    return rd_kafka_mock_topic_create(mc, name, parts, rf) == RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : -1;
}

int main(int argc, char **argv) {
    int brokers = 1;
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) {
        fprintf(stderr, "mock_cluster: %s\n", errstr);
        return 1;
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--brokers") && i + 1 < argc) brokers = atoi(argv[++i]);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
    if (!mc) {
        fprintf(stderr, "mock_cluster: cannot create the mock cluster\n");
        rd_kafka_destroy(rk);
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--brokers")) { i++; continue; }
        if (!strcmp(argv[i], "--topic") && i + 1 < argc && add_topic(mc, argv[i + 1]) == 0) { i++; continue; }
        fprintf(stderr, "mock_cluster: bad argument %s\n", argv[i]);
        rd_kafka_mock_cluster_destroy(mc);
        rd_kafka_destroy(rk);
        return 1;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    printf("BOOTSTRAP %s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
    while (!stop_requested) usleep(50 * 1000);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return 0;
}
