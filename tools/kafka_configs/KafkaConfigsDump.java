/*
 * Prints, as JSON on stdout, the config definitions of an Apache Kafka release as its own classes report them:
 * the broker (KafkaConfig), topic (LogConfig), group (GroupConfig) and client-metrics definitions, with types,
 * defaults, documentation, validators, the broker synonyms and the dynamic (per-broker or cluster-wide) set, and
 * the order in which Kafka's DescribeConfigs lists each kind.
 *
 * Run by tools/kafka_configs/generate.py against the jars of tests/interop/kafka_node.py's cache; the output is
 * controller/kafka_configs.json. Nothing of Kafka's code is copied: this program only calls its public API and
 * reads the validators' fields by reflection.
 */

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import kafka.server.KafkaConfig;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.LogLevelConfig;
import org.apache.kafka.controller.QuorumFeatures;
import org.apache.kafka.coordinator.group.GroupConfig;
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.ConfigSynonym;
import org.apache.kafka.server.config.DynamicBrokerConfig;
import org.apache.kafka.server.config.DynamicConfig;
import org.apache.kafka.server.config.ServerTopicConfigSynonyms;
import org.apache.kafka.server.metrics.ClientMetricsConfigs;
import org.apache.kafka.storage.internals.log.LogConfig;

public final class KafkaConfigsDump {
    private KafkaConfigsDump() { }

    // ------------------------------------------------------------------ JSON

    static String str(Object value) {
        if (value == null) return "null";
        String s = value.toString();
        StringBuilder out = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
            }
        }
        return out.append('"').toString();
    }

    static String strings(Collection<?> values) {
        List<String> items = new ArrayList<>();
        for (Object v : values) items.add(str(v));
        return "[" + String.join(", ", items) + "]";
    }

    static String object(List<String> fields) {
        return "{" + String.join(", ", fields) + "}";
    }

    static String field(String name, String json) {
        return str(name) + ": " + json;
    }

    // ------------------------------------------------------------------ validators

    static Object read(Object target, String name) {
        Class<?> type = target.getClass();
        while (type != null) {
            try {
                Field f = type.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            } catch (NoSuchFieldException e) {
                type = type.getSuperclass();
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException("no field " + name + " in " + target.getClass());
    }

    static String number(Object n) {
        return n == null ? "null" : str(n.toString());
    }

    static String validator(ConfigDef.Validator v) {
        if (v == null) return "null";
        List<String> fields = new ArrayList<>();
        fields.add(field("class", str(v.getClass().getSimpleName())));
        fields.add(field("text", str(v.toString())));
        if (v instanceof ConfigDef.Range) {
            fields.add(field("min", number(read(v, "min"))));
            fields.add(field("max", number(read(v, "max"))));
        } else if (v instanceof ConfigDef.ValidString || v instanceof ConfigDef.CaseInsensitiveValidString) {
            fields.add(field("values", strings((Collection<?>) read(v, "validStrings"))));
        } else if (v instanceof ConfigDef.ValidList) {
            fields.add(field("values", strings((Collection<?>) read(read(v, "validString"), "validStrings"))));
            fields.add(field("empty_allowed", String.valueOf(read(v, "isEmptyAllowed"))));
            fields.add(field("null_allowed", String.valueOf(read(v, "isNullAllowed"))));
        } else if (v instanceof ConfigDef.ListSize) {
            fields.add(field("max_size", String.valueOf(read(v, "maxSize"))));
        } else if (v instanceof ConfigDef.CompositeValidator) {
            List<String> parts = new ArrayList<>();
            for (Object part : (List<?>) read(v, "validators")) parts.add(validator((ConfigDef.Validator) part));
            fields.add(field("validators", "[" + String.join(", ", parts) + "]"));
        }
        return object(fields);
    }

    // ------------------------------------------------------------------ definitions

    /** The default as Kafka's DescribeConfigs prints a default: null when there is none. */
    static String defaultText(ConfigDef.ConfigKey key) {
        if (!key.hasDefault() || key.defaultValue == null) return "null";
        return str(ConfigDef.convertToString(key.defaultValue, key.type));
    }

    interface Extra {
        void add(String name, List<String> fields);
    }

    static String definitions(ConfigDef def, Extra extra) {
        List<String> out = new ArrayList<>();
        for (ConfigDef.ConfigKey key : def.configKeys().values()) {
            List<String> fields = new ArrayList<>();
            fields.add(field("name", str(key.name)));
            fields.add(field("type", str(key.type.name())));
            fields.add(field("default", defaultText(key)));
            fields.add(field("required", String.valueOf(!key.hasDefault())));
            fields.add(field("internal", String.valueOf(key.internalConfig)));
            fields.add(field("validator", validator(key.validator)));
            extra.add(key.name, fields);
            fields.add(field("documentation", str(key.documentation)));
            out.add("\n   " + object(fields));
        }
        return "[" + String.join(",", out) + "\n  ]";
    }

    static String values(Map<String, ?> values, Map<String, ConfigDef.ConfigKey> keys) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, ?> e : values.entrySet()) {
            ConfigDef.ConfigKey key = keys.get(e.getKey());
            Object value = e.getValue();
            String text = value == null ? null : ConfigDef.convertToString(value, key == null ? null : key.type);
            out.add(field(e.getKey(), str(text)));
        }
        return "{" + String.join(", ", out) + "}";
    }

    static String order(AbstractConfig config) {
        return strings(config.nonInternalValues().keySet());
    }

    /** The feature levels a controller supports, formats and checks (QuorumFeatures, Feature, MetadataVersion). */
    static String features() {
        List<String> versions = new ArrayList<>();
        for (MetadataVersion version : MetadataVersion.VERSIONS) {
            versions.add(object(List.of(
                field("level", String.valueOf(version.featureLevel())),
                field("name", str(version.version())),
                field("changed", String.valueOf(version.didMetadataChange())))));
        }
        MetadataVersion latest = MetadataVersion.latestProduction();
        List<String> supported = new ArrayList<>();
        for (Map.Entry<String, org.apache.kafka.metadata.VersionRange> e : QuorumFeatures.defaultSupportedFeatureMap(false).entrySet()) {
            supported.add(field(e.getKey(), "[" + e.getValue().min() + ", " + e.getValue().max() + "]"));
        }
        List<String> defaults = new ArrayList<>();
        List<String> dependencies = new ArrayList<>();
        for (Feature feature : Feature.PRODUCTION_FEATURES) {
            defaults.add(field(feature.featureName(), String.valueOf(feature.defaultLevel(latest))));
            List<String> levels = new ArrayList<>();
            for (short level = 0; level <= feature.latestTesting(); level++) {
                List<String> needs = new ArrayList<>();
                for (Map.Entry<String, Short> d : feature.fromFeatureLevel(level, true).dependencies().entrySet()) {
                    needs.add(field(d.getKey(), String.valueOf(d.getValue())));
                }
                levels.add(field(String.valueOf(level), "{" + String.join(", ", needs) + "}"));
            }
            dependencies.add(field(feature.featureName(), "{" + String.join(", ", levels) + "}"));
        }
        return "{\n  " + String.join(",\n  ",
            field("minimum_metadata_version", object(List.of(
                field("level", String.valueOf(MetadataVersion.MINIMUM_VERSION.featureLevel())),
                field("name", str(MetadataVersion.MINIMUM_VERSION.toString()))))),
            field("latest_production_metadata_version", String.valueOf(latest.featureLevel())),
            field("metadata_versions", "[" + String.join(", ", versions) + "]"),
            field("supported", "{" + String.join(", ", supported) + "}"),
            field("format_defaults", "{" + String.join(", ", defaults) + "}"),
            field("dependencies", "{" + String.join(", ", dependencies) + "}"),
            // every name Feature.featureFromName knows (test features included): an update naming another fails
            field("names", strings(Arrays.stream(Feature.FEATURES).map(Feature::featureName).toList()))) + "\n }";
    }

    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("process.roles", "controller");
        props.put("node.id", "1");
        props.put("controller.quorum.voters", "1@localhost:9093");
        props.put("controller.listener.names", "CONTROLLER");
        props.put("listeners", "CONTROLLER://localhost:9093");
        KafkaConfig broker = new KafkaConfig(props, false);
        ConfigDef brokerDef = AbstractKafkaConfig.CONFIG_DEF;
        Set<String> dynamic = DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS;

        // Which base names a listener override names as they are (sasl.jaas.config ...), found by asking Kafka.
        Set<String> mechanismConfigs = new TreeSet<>();
        for (String name : brokerDef.names()) {
            List<String> synonyms = DynamicBrokerConfig.brokerConfigSynonyms("listener.name.l.m." + name, true);
            if (synonyms.size() == 2 && synonyms.get(1).equals(name)) mechanismConfigs.add(name);
        }
        // Which dynamic configs Kafka keeps per broker (not at the cluster default), and which listener overrides
        // may still be set cluster-wide: asked of DynamicBrokerConfig.perBrokerConfigs one name at a time.
        Set<String> perBroker = new TreeSet<>();
        Set<String> clusterLevelListenerConfigs = new TreeSet<>();
        Set<String> listenerPrefixOnly = new TreeSet<>();
        for (String name : brokerDef.names()) {
            Properties one = new Properties();
            one.put(name, "x");
            if (!DynamicBrokerConfig.perBrokerConfigs(one).isEmpty()) perBroker.add(name);
            if (!DynamicBrokerConfig.securityConfigsWithoutListenerPrefix(one).isEmpty()) listenerPrefixOnly.add(name);
            Properties prefixed = new Properties();
            prefixed.put("listener.name.l." + name, "x");
            if (DynamicBrokerConfig.perBrokerConfigs(prefixed).isEmpty()) clusterLevelListenerConfigs.add(name);
        }
        Map<String, ConfigDef.ConfigKey> dynamicOnly = DynamicConfig.Broker.configKeys();
        List<String> dynamicOnlyOut = new ArrayList<>();
        for (ConfigDef.ConfigKey key : dynamicOnly.values()) {
            if (brokerDef.configKeys().containsKey(key.name)) continue;
            dynamicOnlyOut.add("\n   " + object(List.of(
                field("name", str(key.name)),
                field("type", str(key.type.name())),
                field("default", defaultText(key)),
                field("dynamic", String.valueOf(dynamic.contains(key.name))),
                field("validator", validator(key.validator)),
                field("documentation", str(key.documentation)))));
        }

        Map<String, Object> logDefaults = broker.extractLogConfigMap();
        LogConfig topic = LogConfig.fromProps(logDefaults, new Properties());
        Map<String, Integer> groupDefaults = broker.groupCoordinatorConfig().extractGroupConfigMap(broker.shareGroupConfig());
        GroupConfig group = GroupConfig.fromProps(groupDefaults, new Properties());
        ClientMetricsConfigs metrics = ClientMetricsConfigs.fromProps(ClientMetricsConfigs.defaultConfigsMap(), new Properties());

        List<String> levels = new ArrayList<>(LogLevelConfig.VALID_LOG_LEVELS);
        levels.sort(String::compareTo);

        StringBuilder out = new StringBuilder("{\n");
        out.append(" ").append(field("kafka_version", str(org.apache.kafka.common.utils.AppInfoParser.getVersion()))).append(",\n");
        out.append(" ").append(field("broker", "{\n  " + String.join(",\n  ",
            field("describe_order", order(broker)),
            field("listener_mechanism_configs", strings(mechanismConfigs)),
            field("cluster_level_listener_configs", strings(clusterLevelListenerConfigs)),
            field("listener_prefix_only", strings(listenerPrefixOnly)),
            field("dynamic_only", "[" + String.join(",", dynamicOnlyOut) + "\n  ]"),
            field("configs", definitions(brokerDef, (name, fields) -> {
                fields.add(field("dynamic", String.valueOf(dynamic.contains(name))));
                fields.add(field("per_broker", String.valueOf(perBroker.contains(name))));
                List<String> synonyms = DynamicBrokerConfig.brokerConfigSynonyms(name, true);
                fields.add(field("synonyms", strings(synonyms)));
            }))) + "\n }")).append(",\n");
        out.append(" ").append(field("topic", "{\n  " + String.join(",\n  ",
            field("describe_order", order(topic)),
            field("defaults", values(topic.nonInternalValues(), LogConfig.configKeys())),
            field("configs", definitions(LogConfig.configDefCopy(), (name, fields) -> {
                fields.add(field("broker_synonym", str(ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS.get(name))));
                // Every broker synonym the controller resolves a new topic's config through, with the factor its
                // converter applies (read by converting "1": milliseconds, minutes or hours).
                List<String> all = new ArrayList<>();
                for (ConfigSynonym synonym : ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS.getOrDefault(name, List.of())) {
                    all.add("[" + str(synonym.name()) + ", " + synonym.converter().apply("1") + "]");
                }
                fields.add(field("broker_synonyms", "[" + String.join(", ", all) + "]"));
                fields.add(field("from_broker", String.valueOf(logDefaults.containsKey(name))));
            }))) + "\n }")).append(",\n");
        out.append(" ").append(field("group", "{\n  " + String.join(",\n  ",
            field("describe_order", order(group)),
            field("defaults", values(group.nonInternalValues(), GroupConfig.CONFIG_DEF.configKeys())),
            field("configs", definitions(GroupConfig.CONFIG_DEF, (name, fields) -> {
                fields.add(field("broker_synonym", str(GroupConfig.brokerSynonym(name).orElse(null))));
                fields.add(field("from_broker", String.valueOf(groupDefaults.containsKey(name))));
            }))) + "\n }")).append(",\n");
        out.append(" ").append(field("client_metrics", "{\n  " + String.join(",\n  ",
            field("describe_order", order(metrics)),
            field("defaults", values(metrics.nonInternalValues(), ClientMetricsConfigs.configDef().configKeys())),
            field("configs", definitions(ClientMetricsConfigs.configDef(), (name, fields) -> { }))) + "\n }")).append(",\n");
        out.append(" ").append(field("log_levels", strings(levels))).append(",\n");
        out.append(" ").append(field("features", features())).append("\n");
        out.append("}\n");
        System.out.print(out);
    }
}
