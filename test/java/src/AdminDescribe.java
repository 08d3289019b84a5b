import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.TopicPartitionInfo;

/**
 * Admin client of Kafka 4.x against skiff: createTopics, describeCluster,
 * describeTopics (DescribeTopicPartitions when the broker advertises API 75,
 * else Metadata) and describeFeatures (the finalized features of ApiVersions).
 *
 * usage: AdminDescribe BOOT TOPIC PARTITIONS [FEATURE=LEVEL ...]
 * Each FEATURE=LEVEL is checked against the finalized max level.
 */
public final class AdminDescribe {
    public static void main(String[] args) throws Exception {
        String boot = args[0];
        String topic = args[1];
        int parts = Integer.parseInt(args[2]);
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(p)) {
            Check.that("describeCluster answers with >= 1 node", () -> {
                Collection<org.apache.kafka.common.Node> nodes =
                    admin.describeCluster().nodes().get(30, TimeUnit.SECONDS);
                return nodes.isEmpty() ? "no nodes" : null;
            });
            Check.that("createTopics " + topic + " (" + parts + " partitions)", () -> {
                admin.createTopics(List.of(new NewTopic(topic, parts, (short) 1)))
                    .all().get(30, TimeUnit.SECONDS);
                return null;
            });
            Check.that("describeTopics " + topic + ": " + parts + " partitions, each with a leader", () -> {
                TopicDescription d = admin.describeTopics(List.of(topic))
                    .allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
                if (d == null) return "topic missing";
                if (d.partitions().size() != parts) return "partitions " + d.partitions().size();
                for (int i = 0; i < parts; i++) {
                    TopicPartitionInfo pi = d.partitions().get(i);
                    if (pi.partition() != i) return "partition " + i + " is " + pi.partition();
                    if (pi.leader() == null) return "partition " + i + " has no leader";
                }
                return d.topicId() == null ? "no topic id" : null;
            });
            FeatureMetadata fm = admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS);
            System.out.println("finalized " + fm.finalizedFeatures() + " supported " + fm.supportedFeatures()
                + " epoch " + fm.finalizedFeaturesEpoch());
            for (int i = 3; i < args.length; i++) {
                String[] kv = args[i].split("=", 2);
                short want = Short.parseShort(kv[1]);
                Check.that("describeFeatures: " + kv[0] + " finalized at " + want, () -> {
                    FinalizedVersionRange r = fm.finalizedFeatures().get(kv[0]);
                    return r == null ? "not finalized" : Check.eq(want, r.maxVersionLevel());
                });
            }
        }
        Check.exit();
    }
}
