/* rk_groups — librdkafka's group admin calls against a broker.
 *
 *   rk_groups BOOTSTRAP GROUP TOPIC OFFSET
 *
 * 1. commits OFFSET for TOPIC partition 0 in GROUP (a consumer with
 *    group.id = GROUP, explicit offsets, no join: OffsetCommit as a simple
 *    consumer sends it);
 * 2. rd_kafka_ListConsumerGroups: prints "group ID STATE" per listed group;
 * 3. rd_kafka_ListConsumerGroupOffsets(GROUP, all partitions): prints
 *    "offset TOPIC PARTITION OFFSET" per partition.
 * Exit 0 when every call succeeded, 1 otherwise (the error on stderr).
 *
 * Why a C tool: the admin calls exist since librdkafka 2.0.0, but the Python
 * binding installed here (confluent-kafka 1.7) does not expose them. Version
 * 2.0.2 sends ListGroups v4 and OffsetFetch v7 (null topics) with bytes after
 * the body (issue 22); the broker must read requests by their schema.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#define RK_TIMEOUT_MS 20000

static rd_kafka_t *client(rd_kafka_type_t type, const char *boot, const char *group) {
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", boot, err, sizeof err) != RD_KAFKA_CONF_OK ||
        (group && rd_kafka_conf_set(conf, "group.id", group, err, sizeof err) != RD_KAFKA_CONF_OK) ||
        (group && rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err) != RD_KAFKA_CONF_OK)) {
        fprintf(stderr, "rk_groups: config: %s\n", err);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);   /* owns conf on success */
    if (!rk) {
        fprintf(stderr, "rk_groups: rd_kafka_new: %s\n", err);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

static int commit(const char *boot, const char *group, const char *topic, long offset) {
    rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, boot, group);
    if (!rk) return 1;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, 0)->offset = offset;
    rd_kafka_resp_err_t e = rd_kafka_commit(rk, l, 0);
    if (!e && l->elems[0].err) e = l->elems[0].err;
    if (e) fprintf(stderr, "rk_groups: commit: %s\n", rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return e ? 1 : 0;
}

/* Waits for the admin result on q; NULL (message printed) on a timeout or a
 * request-level error. */
static rd_kafka_event_t *wait_result(rd_kafka_queue_t *q, const char *what) {
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, RK_TIMEOUT_MS + 5000);
    if (!ev) {
        fprintf(stderr, "rk_groups: %s: no result\n", what);
        return NULL;
    }
    if (rd_kafka_event_error(ev)) {
        fprintf(stderr, "rk_groups: %s: %s\n", what, rd_kafka_event_error_string(ev));
        rd_kafka_event_destroy(ev);
        return NULL;
    }
    return ev;
}

static int list_groups(rd_kafka_t *rk, rd_kafka_queue_t *q) {
    char err[512];
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS);
    if (rd_kafka_AdminOptions_set_request_timeout(o, RK_TIMEOUT_MS, err, sizeof err)) {
        fprintf(stderr, "rk_groups: options: %s\n", err);
        rd_kafka_AdminOptions_destroy(o);
        return 1;
    }
    rd_kafka_ListConsumerGroups(rk, o, q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_event_t *ev = wait_result(q, "ListConsumerGroups");
    if (!ev) return 1;
    const rd_kafka_ListConsumerGroups_result_t *res = rd_kafka_event_ListConsumerGroups_result(ev);
    size_t nerr = 0, n = 0;
    const rd_kafka_error_t **errs = rd_kafka_ListConsumerGroups_result_errors(res, &nerr);
    for (size_t i = 0; i < nerr; i++)
        fprintf(stderr, "rk_groups: ListConsumerGroups: %s\n", rd_kafka_error_string(errs[i]));
    const rd_kafka_ConsumerGroupListing_t **gl = rd_kafka_ListConsumerGroups_result_valid(res, &n);
    for (size_t i = 0; i < n; i++)
        printf("group %s %s\n", rd_kafka_ConsumerGroupListing_group_id(gl[i]),
               rd_kafka_consumer_group_state_name(rd_kafka_ConsumerGroupListing_state(gl[i])));
    rd_kafka_event_destroy(ev);
    return nerr ? 1 : 0;
}

static int list_offsets(rd_kafka_t *rk, rd_kafka_queue_t *q, const char *group) {
    char err[512];
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
    if (rd_kafka_AdminOptions_set_request_timeout(o, RK_TIMEOUT_MS, err, sizeof err)) {
        fprintf(stderr, "rk_groups: options: %s\n", err);
        rd_kafka_AdminOptions_destroy(o);
        return 1;
    }
    /* NULL partitions = all of the group's: OffsetFetch with null topics */
    rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(group, NULL);
    rd_kafka_ListConsumerGroupOffsets(rk, &req, 1, o, q);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_event_t *ev = wait_result(q, "ListConsumerGroupOffsets");
    if (!ev) return 1;
    const rd_kafka_ListConsumerGroupOffsets_result_t *res = rd_kafka_event_ListConsumerGroupOffsets_result(ev);
    size_t n = 0;
    const rd_kafka_group_result_t **gr = rd_kafka_ListConsumerGroupOffsets_result_groups(res, &n);
    int rc = n == 1 ? 0 : 1;
    for (size_t i = 0; i < n; i++) {
        const rd_kafka_error_t *e = rd_kafka_group_result_error(gr[i]);
        if (e) {
            fprintf(stderr, "rk_groups: ListConsumerGroupOffsets: %s\n", rd_kafka_error_string(e));
            rc = 1;
            continue;
        }
        const rd_kafka_topic_partition_list_t *l = rd_kafka_group_result_partitions(gr[i]);
        for (int j = 0; l && j < l->cnt; j++)
            printf("offset %s %d %lld\n", l->elems[j].topic, (int)l->elems[j].partition,
                   (long long)l->elems[j].offset);
    }
    rd_kafka_event_destroy(ev);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: rk_groups BOOTSTRAP GROUP TOPIC OFFSET\n");
        return 1;
    }
    const char *boot = argv[1], *group = argv[2], *topic = argv[3];
    long offset = strtol(argv[4], NULL, 10);
    if (commit(boot, group, topic, offset)) return 1;
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, boot, NULL);
    if (!rk) return 1;
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    int rc = list_groups(rk, q);
    if (list_offsets(rk, q, group)) rc = 1;
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
    printf("librdkafka %s\n", rd_kafka_version_str());
    return rc;
}
