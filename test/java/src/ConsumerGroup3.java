import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * KafkaConsumer of Kafka 4.x with group.protocol=consumer (KIP-848: the
 * ConsumerGroupHeartbeat protocol, server-side assignment) in a group of
 * three, one thread each: disjoint assignments covering every partition,
 * every record consumed once by the group, commits accepted (the member
 * epoch in OffsetCommit), and Admin describeConsumerGroups
 * (ConsumerGroupDescribe) showing a Stable consumer-type group of three.
 *
 * usage: ConsumerGroup3 BOOT TOPIC PARTITIONS RECORDS GROUP
 */
public final class ConsumerGroup3 {
    public static void main(String[] args) throws Exception {
        String boot = args[0], topic = args[1], group = args[4];
        int parts = Integer.parseInt(args[2]), records = Integer.parseInt(args[3]);
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(ap)) {
            Check.that("createTopics " + topic, () -> {
                admin.createTopics(List.of(new NewTopic(topic, parts, (short) 1))).all().get(30, TimeUnit.SECONDS);
                return null;
            });
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            Check.that("produce " + records + " records over " + parts + " partitions", () -> {
                try (KafkaProducer<String, String> pr = new KafkaProducer<>(pp)) {
                    for (int i = 0; i < records; i++)
                        pr.send(new ProducerRecord<>(topic, i % parts, "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
                }
                return null;
            });

            ConcurrentHashMap<String, Integer> seen = new ConcurrentHashMap<>();
            List<Set<TopicPartition>> assigned = new CopyOnWriteArrayList<>();
            AtomicBoolean stop = new AtomicBoolean(false);
            List<String> errors = new CopyOnWriteArrayList<>();
            ExecutorService pool = Executors.newFixedThreadPool(3);
            List<Future<?>> fs = new ArrayList<>();
            for (int m = 0; m < 3; m++) {
                final int idx = m;
                assigned.add(Collections.emptySet());
                fs.add(pool.submit(() -> {
                    Properties cp = new Properties();
                    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
                    cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                    cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                    cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
                    cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
                    cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                    cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                        c.subscribe(List.of(topic));
                        while (!stop.get()) {
                            ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                            for (ConsumerRecord<String, String> r : rs) seen.merge(r.value(), 1, Integer::sum);
                            if (!rs.isEmpty()) c.commitSync(Duration.ofSeconds(15));
                            assigned.set(idx, new HashSet<>(c.assignment()));
                        }
                    } catch (Exception e) {
                        errors.add("member " + idx + ": " + e);
                    }
                    return null;
                }));
            }
            long deadline = System.currentTimeMillis() + 60000;
            while (System.currentTimeMillis() < deadline) {
                int total = 0;
                Set<TopicPartition> all = new HashSet<>();
                boolean each = true;
                for (Set<TopicPartition> s : assigned) { total += s.size(); all.addAll(s); each &= !s.isEmpty(); }
                if (each && total == parts && all.size() == parts && seen.size() == records) break;
                Thread.sleep(100);
            }
            Check.that("3 members: every one assigned, disjoint, all " + parts + " partitions", () -> {
                int total = 0;
                Set<TopicPartition> all = new HashSet<>();
                for (Set<TopicPartition> s : assigned) {
                    if (s.isEmpty()) return "a member has nothing: " + assigned;
                    total += s.size();
                    all.addAll(s);
                }
                return total == parts && all.size() == parts ? null : "assignments " + assigned;
            });
            Check.that("every record consumed exactly once by the group", () -> {
                if (seen.size() != records) return "distinct " + seen.size() + " of " + records;
                for (Map.Entry<String, Integer> e : seen.entrySet())
                    if (e.getValue() != 1) return e.getKey() + " seen " + e.getValue() + " times";
                return null;
            });
            Check.that("describeConsumerGroups: consumer type, Stable, 3 members, 2 partitions each", () -> {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group))
                    .describedGroups().get(group).get(30, TimeUnit.SECONDS);
                if (d.type() != GroupType.CONSUMER) return "type " + d.type();
                if (d.groupState() != org.apache.kafka.common.GroupState.STABLE) return "state " + d.groupState();
                if (d.members().size() != 3) return "members " + d.members().size();
                for (MemberDescription m : d.members())
                    if (m.assignment().topicPartitions().size() != parts / 3) return "member " + m;
                return null;
            });
            Check.that("committed offsets: the end of every partition", () -> {
                Map<TopicPartition, OffsetAndMetadata> off = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                long sum = 0;
                for (OffsetAndMetadata o : off.values()) sum += o.offset();
                return off.size() == parts && sum == records ? null : "offsets " + off;
            });
            stop.set(true);
            for (Future<?> f : fs) f.get(60, TimeUnit.SECONDS);
            pool.shutdown();
            Check.that("members closed without errors", () -> errors.isEmpty() ? null : errors.toString());
        }
        Check.exit();
    }
}
