import java.lang.reflect.*;
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;

/* Prints the broker and topic config keys of the Kafka jars on the class
 * path as TSV, one key a line:
 *   name scope type default mode valid synonym
 * (default: \N = none, \R = required; mode: read-only | per-broker |
 * cluster-wide for broker keys, "topic" for topic keys; valid: the
 * validator's own description; synonym: the broker key a topic key
 * defaults to). Run once by import_kafka_keys.sh; the build never needs it.
 * It only reads Kafka's public config definitions (facts: names, types,
 * defaults, ranges); Kafka's documentation text is not kept. */
public class KafkaKeys {
    static Object call(String cls, String method) throws Exception {
        Class<?> c = Class.forName(cls);
        try {
            Field f = c.getField("MODULE$");
            Object o = f.get(null);
            return c.getMethod(method).invoke(o);
        } catch (NoSuchFieldException e) {
            return c.getMethod(method).invoke(null);
        }
    }
    static Object field(String cls, String name) throws Exception {
        return Class.forName(cls).getField(name).get(null);
    }
    static String clean(String s) { return s == null ? "" : s.replace('\t', ' ').replace('\n', ' ').trim(); }
    static String def(ConfigDef.ConfigKey k) {
        if (k.defaultValue == ConfigDef.NO_DEFAULT_VALUE) return "\\R";   /* required */
        if (k.defaultValue == null) return "\\N";
        return clean(ConfigDef.convertToString(k.defaultValue, k.type));
    }
    public static void main(String[] a) throws Exception {
        ConfigDef broker = null;
        for (String[] t : new String[][]{{"org.apache.kafka.server.config.AbstractKafkaConfig", "CONFIG_DEF"}}) {
            try { broker = (ConfigDef) field(t[0], t[1]); } catch (Exception e) { System.err.println("no " + t[0] + ": " + e); }
        }
        if (broker == null) broker = (ConfigDef) call("kafka.server.KafkaConfig", "configDef");
        @SuppressWarnings("unchecked")
        Map<String, String> modes = (Map<String, String>) call("kafka.server.DynamicBrokerConfig$", "dynamicConfigUpdateModes");
        @SuppressWarnings("unchecked")
        Map<String, ConfigDef.ConfigKey> topic = (Map<String, ConfigDef.ConfigKey>) call("org.apache.kafka.storage.internals.log.LogConfig", "configKeys");
        Map<String, String> syn = new HashMap<>();
        try {
            @SuppressWarnings("unchecked")
            Map<String, ?> m = (Map<String, ?>) field("org.apache.kafka.server.config.ServerTopicConfigSynonyms", "ALL_TOPIC_CONFIG_SYNONYMS");
            for (Map.Entry<String, ?> e : m.entrySet()) {
                List<?> l = (List<?>) e.getValue();
                if (l.isEmpty()) continue;
                Object s = l.get(0);
                syn.put(e.getKey(), (String) s.getClass().getMethod("name").invoke(s));
            }
        } catch (Exception e) { System.err.println("synonyms: " + e); }
        for (ConfigDef.ConfigKey k : broker.configKeys().values()) {
            if (k.internalConfig) continue;
            String mode = modes.getOrDefault(k.name, "read-only");
            System.out.println(String.join("\t", k.name, "broker", k.type.name().toLowerCase(), def(k), mode,
                clean(k.validator == null ? "" : k.validator.toString()), ""));
        }
        for (ConfigDef.ConfigKey k : topic.values()) {
            if (k.internalConfig) continue;
            System.out.println(String.join("\t", k.name, "topic", k.type.name().toLowerCase(), def(k), "topic",
                clean(k.validator == null ? "" : k.validator.toString()), syn.getOrDefault(k.name, "")));
        }
    }
}
