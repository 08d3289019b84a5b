import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

/**
 * A transactional KafkaProducer of Kafka 4.x against skiff: transactions
 * committed and aborted across every partition of a topic, then a
 * read_committed consumer sees exactly the committed records and a
 * read_uncommitted one all of them. With transaction.version finalized
 * below 2 the client uses transactions v1 (AddPartitionsToTxn from the
 * client); the script says which level it saw.
 *
 * Each transaction also sends consumer offsets (sendOffsetsToTransaction,
 * group GROUP: offset t + 1 of partition 0 in transaction t), so the
 * group's committed offset must be the last committed transaction's.
 *
 * usage: TxnProducer BOOT TOPIC PARTITIONS TRANSACTIONS TRANSACTIONAL_ID GROUP [PAUSE_MS]
 * PAUSE_MS: a pause after each transaction (a test kills nodes meanwhile);
 * a file named by the system property txn.progress gets the number of
 * transactions done after each one; txn.rf (default 1) is the topic's
 * replication factor. Reads count duplicates: a record read twice fails
 * the "exactly" checks.
 */
public final class TxnProducer {
    public static void main(String[] args) throws Exception {
        String boot = args[0], topic = args[1], tid = args[4], group = args[5];
        int parts = Integer.parseInt(args[2]), txns = Integer.parseInt(args[3]);
        long pauseMs = args.length > 6 ? Long.parseLong(args[6]) : 0;
        String progress = System.getProperty("txn.progress");
        short rf = (short) Integer.getInteger("txn.rf", 1).intValue();
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        try (Admin admin = Admin.create(ap)) {
            Check.that("createTopics " + topic, () -> {
                admin.createTopics(List.of(new NewTopic(topic, parts, rf))).all().get(30, TimeUnit.SECONDS);
                return null;
            });
            FeatureMetadata fm = admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS);
            FinalizedVersionRange tv = fm.finalizedFeatures().get("transaction.version");
            System.out.println("transaction.version finalized: " + (tv == null ? 0 : tv.maxVersionLevel()));
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
        pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        int committed = 0, aborted = 0;
        long lastCommittedOffset = -1;
        Set<String> want = new HashSet<>();
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            p.initTransactions();
            for (int t = 0; t < txns; t++) {
                boolean commit = t % 3 != 2;        // every third transaction aborted
                p.beginTransaction();
                for (int k = 0; k < parts * 2; k++) {
                    String v = "t" + t + "-" + k;
                    p.send(new ProducerRecord<>(topic, k % parts, "k" + k, v));
                    if (commit) want.add(v);
                }
                p.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(t + 1)),
                                           new ConsumerGroupMetadata(group));
                if (commit) { p.commitTransaction(); committed++; lastCommittedOffset = t + 1; }
                else { p.flush(); p.abortTransaction(); aborted++; }   // flushed: the aborted records are in the log
                if (progress != null)
                    java.nio.file.Files.writeString(java.nio.file.Path.of(progress), Integer.toString(t + 1));
                if (pauseMs > 0) Thread.sleep(pauseMs);
            }
        }
        final int nc = committed, na = aborted;
        final long wantOffset = lastCommittedOffset;
        Check.that("group " + group + " has the last committed transaction's offset " + wantOffset, () -> {
            try (Admin admin = Admin.create(ap)) {
                OffsetAndMetadata om = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                    .get(30, TimeUnit.SECONDS).get(new TopicPartition(topic, 0));
                return om == null ? "no offset" : Check.eq(wantOffset, om.offset());
            }
        });
        Check.that(nc + " transactions committed and " + na + " aborted", () -> null);
        Check.that("read_committed sees exactly the committed records, each once (" + want.size() + ")", () -> {
            List<String> got = readAll(boot, topic, parts, "read_committed");
            String e = Check.eq(want, new HashSet<>(got));
            return e != null ? e : got.size() == want.size() ? null : got.size() + " read: duplicates";
        });
        Check.that("read_uncommitted sees every record once (" + txns * parts * 2 + ")", () -> {
            List<String> got = readAll(boot, topic, parts, "read_uncommitted");
            int n = got.size(), distinct = new HashSet<>(got).size();
            return n == txns * parts * 2 && distinct == n ? null : "got " + n + " (" + distinct + " distinct)";
        });
        Check.exit();
    }

    static List<String> readAll(String boot, String topic, int parts, String iso) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, iso);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < parts; i++) tps.add(new TopicPartition(topic, i));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 30000;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) got.add(r.value());
                boolean done = true;
                for (TopicPartition tp : tps) if (c.position(tp) < end.get(tp)) done = false;
                if (done) break;
            }
        }
        return got;
    }
}
