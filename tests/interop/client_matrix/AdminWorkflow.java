// The client matrix's workflow in Kafka's Java AdminClient, compiled at test time against the Kafka jars.
//
//   java -cp <classes>:<kafka libs>/* AdminWorkflow <bootstrap> <admin> <password> <outsider> <password> <topic> <step,step,...>
//
// prints one line of JSON: step -> outcome, errors as Kafka's error names (Errors.forException).
// Reads right after a change are polled for a bounded time, as the broker learns changes a moment later.

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

public final class AdminWorkflow {
    private static final long TIMEOUT_SECONDS = 60;
    private static final long SETTLE_MILLIS = 20_000;
    private static final String[] SHOWN = {"retention.ms", "cleanup.policy", "min.insync.replicas", "max.message.bytes", "segment.bytes"};

    private AdminWorkflow() {
    }

    private interface Read {
        Object get() throws Exception;
    }

    private static Admin admin(String bootstrap, String user, String password) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put("security.protocol", "SASL_PLAINTEXT");
        props.put("sasl.mechanism", "PLAIN");
        props.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                + user + "\" password=\"" + password + "\";");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        return Admin.create(props);
    }

    private static String errorName(Throwable failure) {
        Throwable cause = failure instanceof ExecutionException && failure.getCause() != null ? failure.getCause() : failure;
        Errors error = Errors.forException(cause);
        return error == Errors.UNKNOWN_SERVER_ERROR ? "UNKNOWN_SERVER_ERROR(" + cause.getClass().getSimpleName() + ")" : error.name();
    }

    private static Object outcome(KafkaFuture<?> future) throws InterruptedException {
        try {
            future.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            return "ok";
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
            return errorName(e);
        }
    }

    private static Object read(Read read) throws InterruptedException {
        try {
            return read.get();
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            return errorName(e);
        }
    }

    private static Object settled(Read read, Predicate<Object> done) throws InterruptedException {
        long deadline = System.currentTimeMillis() + SETTLE_MILLIS;
        Object seen = read(read);
        while (!done.test(seen) && System.currentTimeMillis() < deadline) {
            Thread.sleep(250);
            seen = read(read);
        }
        return seen;
    }

    private static Map<String, Object> topicState(Admin admin, String topic) throws Exception {
        Map<String, Object> state = new TreeMap<>();
        TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames().get(TIMEOUT_SECONDS, TimeUnit.SECONDS).get(topic);
        state.put("partitions", description.partitions().size());
        state.put("internal", description.isInternal());
        return state;
    }

    private static Map<String, Object> entry(ConfigEntry entry) {
        Map<String, Object> shown = new TreeMap<>();
        shown.put("value", entry.value());
        shown.put("source", entry.source().name());
        shown.put("read_only", entry.isReadOnly());
        shown.put("sensitive", entry.isSensitive());
        shown.put("default", entry.isDefault());
        shown.put("type", entry.type().name());
        shown.put("documentation", entry.documentation() != null && !entry.documentation().isEmpty());
        List<Object> synonyms = new ArrayList<>();
        for (ConfigEntry.ConfigSynonym synonym : entry.synonyms()) {
            synonyms.add(synonym.source().name() + ":" + synonym.name() + "=" + synonym.value());
        }
        shown.put("synonyms", synonyms);
        return shown;
    }

    private static Map<String, Object> configs(Admin admin, String topic) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        DescribeConfigsOptions options = new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true);
        Config config = admin.describeConfigs(List.of(resource), options).all().get(TIMEOUT_SECONDS, TimeUnit.SECONDS).get(resource);
        Map<String, Object> shown = new TreeMap<>();
        shown.put("count", config.entries().size());
        for (String name : SHOWN) {
            ConfigEntry found = config.get(name);
            shown.put(name, found == null ? null : entry(found));
        }
        return shown;
    }

    private static Object acls(Admin admin, AclBindingFilter filter) throws Exception {
        Collection<AclBinding> found = admin.describeAcls(filter).values().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        List<String> shown = new ArrayList<>();
        for (AclBinding binding : found) {
            shown.add(binding.toString());
        }
        shown.sort(null);
        return shown;
    }

    /** One DescribeCluster answer: its broker ids, their addresses, and the controller id (-1 for none). */
    private static Map<String, Object> clusterView(Admin admin) throws Exception {
        DescribeClusterResult cluster = admin.describeCluster();
        Set<Integer> ids = new TreeSet<>();
        Set<String> addresses = new TreeSet<>();
        for (Node node : cluster.nodes().get(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            ids.add(node.id());
            addresses.add(node.host() + ":" + node.port());
        }
        Node controller = cluster.controller().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        Map<String, Object> view = new TreeMap<>();
        view.put("brokers", new ArrayList<>(ids));
        view.put("addresses", new ArrayList<>(addresses));
        view.put("controller", controller == null ? -1 : controller.id());
        return view;
    }

    /** The broker ids the topic's partitions name (leaders, replicas, ISR), from a topic describe (Metadata). */
    private static Set<Integer> partitionBrokers(Admin admin, String topic) throws Exception {
        Set<Integer> ids = new TreeSet<>();
        TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames().get(TIMEOUT_SECONDS, TimeUnit.SECONDS).get(topic);
        for (TopicPartitionInfo partition : description.partitions()) {
            if (partition.leader() != null) {
                ids.add(partition.leader().id());
            }
            for (Node node : partition.replicas()) {
                ids.add(node.id());
            }
            for (Node node : partition.isr()) {
                ids.add(node.id());
            }
        }
        return ids;
    }

    private static Object brokerConfig(Admin admin, int id) throws InterruptedException {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(id));
        Map<String, Object> shown = new TreeMap<>();
        try {
            Config config = admin.describeConfigs(List.of(resource)).all().get(TIMEOUT_SECONDS, TimeUnit.SECONDS).get(resource);
            ConfigEntry mir = config.get("min.insync.replicas");
            shown.put("error", null);
            shown.put("has_configs", !config.entries().isEmpty());
            shown.put("min.insync.replicas", mir == null ? null : mir.value());
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
            shown.put("error", errorName(e));
        }
        return shown;
    }

    private static String number(Double value) {
        return new BigDecimal(value).stripTrailingZeros().toPlainString();
    }

    private static Object quotas(Admin admin, String user) throws Exception {
        ClientQuotaFilter filter = ClientQuotaFilter.containsOnly(List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, user)));
        List<String> shown = new ArrayList<>();
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> entry
                : admin.describeClientQuotas(filter).entities().get(TIMEOUT_SECONDS, TimeUnit.SECONDS).entrySet()) {
            List<String> values = new ArrayList<>();
            for (Map.Entry<String, Double> value : new TreeMap<>(entry.getValue()).entrySet()) {
                values.add(value.getKey() + "=" + number(value.getValue()));
            }
            List<String> parts = new ArrayList<>();
            for (Map.Entry<String, String> part : new TreeMap<>(entry.getKey().entries()).entrySet()) {
                parts.add(part.getKey() + "=" + part.getValue());
            }
            shown.add("{" + String.join(", ", parts) + "} " + String.join(",", values));
        }
        shown.sort(null);
        return shown;
    }

    private static Object scrams(Admin admin, String user) throws Exception {
        UserScramCredentialsDescription description = admin.describeUserScramCredentials(List.of(user)).description(user)
                .get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        List<String> shown = new ArrayList<>();
        for (ScramCredentialInfo info : description.credentialInfos()) {
            shown.add(info.mechanism().mechanismName() + "/" + info.iterations());
        }
        shown.sort(null);
        return shown;
    }

    @SuppressWarnings("unchecked")
    private static Object field(Object seen, String name) {
        return seen instanceof Map ? ((Map<String, Object>) seen).get(name) : null;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[5];
        String[] steps = args[6].split(",");
        Map<String, Object> results = new TreeMap<>();
        AclBinding acl = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                new AccessControlEntry("User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW));
        // LITERAL, not MATCH: other suites share the Kafka node, and MATCH would also list (and delete) their '*' ACLs.
        AclBindingFilter filter = new AclBindingFilter(new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL),
                AccessControlEntryFilter.ANY);
        try (Admin admin = admin(bootstrap, args[1], args[2])) {
            for (String step : steps) {
                switch (step) {
                    case "create_topic":
                        NewTopic created = new NewTopic(topic, 1, (short) 1).configs(Map.of("retention.ms", "3600000"));
                        results.put(step, outcome(admin.createTopics(List.of(created)).all()));
                        break;
                    case "describe_topic":
                        results.put(step, settled(() -> topicState(admin, topic), seen -> seen instanceof Map));
                        break;
                    case "describe_configs":
                        results.put(step, read(() -> configs(admin, topic)));
                        break;
                    case "alter_config":
                        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
                        AlterConfigOp set = new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET);
                        results.put(step, outcome(admin.incrementalAlterConfigs(Map.of(resource, List.of(set))).all()));
                        break;
                    case "read_back":
                        Object back = settled(() -> configs(admin, topic),
                                seen -> "7200000".equals(field(field(seen, "retention.ms"), "value")));
                        results.put(step, field(back, "retention.ms") != null ? field(back, "retention.ms") : back);
                        break;
                    case "add_partitions":
                        results.put(step, outcome(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all()));
                        break;
                    case "describe_partitions":
                        results.put(step, settled(() -> topicState(admin, topic), seen -> Integer.valueOf(3).equals(field(seen, "partitions"))));
                        break;
                    case "create_acl":
                        results.put(step, outcome(admin.createAcls(List.of(acl)).all()));
                        break;
                    case "describe_acls":
                        results.put(step, settled(() -> acls(admin, filter), seen -> seen instanceof List && !((List<?>) seen).isEmpty()));
                        break;
                    case "delete_acls":
                        results.put(step, read(() -> {
                            List<String> deleted = new ArrayList<>();
                            for (AclBinding binding : admin.deleteAcls(List.of(filter)).all().get(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                                deleted.add(binding.toString());
                            }
                            deleted.sort(null);
                            return deleted;
                        }));
                        break;
                    case "acls_after_delete":
                        results.put(step, settled(() -> acls(admin, filter), seen -> seen instanceof List && ((List<?>) seen).isEmpty()));
                        break;
                    case "describe_cluster":
                        results.put(step, read(() -> {
                            DescribeClusterResult cluster = admin.describeCluster();
                            String id = cluster.clusterId().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
                            Node controller = cluster.controller().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
                            Collection<Node> nodes = cluster.nodes().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
                            Map<String, Object> shown = new TreeMap<>();
                            shown.put("cluster_id", id);
                            shown.put("controller_is_a_node", controller != null && nodes.contains(controller));
                            return shown;
                        }));
                        break;
                    case "refused":
                        try (Admin outsider = admin(bootstrap, args[3], args[4])) {
                            results.put(step, outcome(outsider.createTopics(List.of(new NewTopic(topic + "-refused", 1, (short) 1))).all()));
                        }
                        break;
                    case "delete_topic":
                        results.put(step, outcome(admin.deleteTopics(List.of(topic)).all()));
                        break;
                    case "after_delete":
                        results.put(step, settled(() -> topicState(admin, topic), seen -> seen instanceof String));
                        break;
                    case "broker_list": {
                        // DescribeCluster before and after a topic describe (Metadata with the topic, as the proxy
                        // serves no DescribeTopicPartitions), and the ids that describe's partitions name.
                        Map<String, Object> views = new TreeMap<>();
                        views.put("describe_cluster_before", read(() -> clusterView(admin)));
                        views.put("topic_describe", read(() -> {
                            partitionBrokers(admin, topic);
                            return "ok";
                        }));
                        views.put("describe_cluster_after", read(() -> clusterView(admin)));
                        results.put(step, Map.of("views", views));
                        break;
                    }
                    case "broker_configs":
                        results.put(step, read(() -> {
                            Set<Integer> ids = new TreeSet<>(partitionBrokers(admin, topic));
                            for (Object id : (List<?>) clusterView(admin).get("brokers")) {
                                ids.add((Integer) id);
                            }
                            Map<String, Object> byId = new TreeMap<>();
                            for (int id : ids) {
                                byId.put(Integer.toString(id), brokerConfig(admin, id));
                            }
                            return Map.of("by_id", byId);
                        }));
                        break;
                    case "elect_leaders":
                        results.put(step, read(() -> {
                            Map<String, Object> shown = new TreeMap<>();
                            Map<TopicPartition, Optional<Throwable>> elected = admin.electLeaders(ElectionType.PREFERRED,
                                    Set.of(new TopicPartition(topic, 0))).partitions().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
                            for (Map.Entry<TopicPartition, Optional<Throwable>> entry : elected.entrySet()) {
                                shown.put(entry.getKey().toString(), entry.getValue().map(AdminWorkflow::errorName).orElse("ok"));
                            }
                            return shown;
                        }));
                        break;
                    case "list_reassignments":
                        results.put(step, read(() -> {
                            List<String> shown = new ArrayList<>();
                            Map<TopicPartition, PartitionReassignment> listed = admin.listPartitionReassignments(
                                    Set.of(new TopicPartition(topic, 0))).reassignments().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
                            for (Map.Entry<TopicPartition, PartitionReassignment> entry : listed.entrySet()) {
                                shown.add(entry.getKey() + " adding " + entry.getValue().addingReplicas() + " removing "
                                        + entry.getValue().removingReplicas());
                            }
                            shown.sort(null);
                            return shown;
                        }));
                        break;
                    case "client_quotas": {
                        String user = topic + "-quota";
                        ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, user));
                        Map<String, Object> shown = new TreeMap<>();
                        shown.put("alter", outcome(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                                new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0),
                                new ClientQuotaAlteration.Op("consumer_byte_rate", 2097152.0))))).all()));
                        shown.put("described", settled(() -> quotas(admin, user), seen -> seen instanceof List && !((List<?>) seen).isEmpty()));
                        shown.put("remove", outcome(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                                new ClientQuotaAlteration.Op("producer_byte_rate", null),
                                new ClientQuotaAlteration.Op("consumer_byte_rate", null))))).all()));
                        shown.put("after_remove", settled(() -> quotas(admin, user), seen -> seen instanceof List && ((List<?>) seen).isEmpty()));
                        results.put(step, shown);
                        break;
                    }
                    case "scram_credentials": {
                        String user = topic + "-scram";
                        Map<String, Object> shown = new TreeMap<>();
                        shown.put("upsert", outcome(admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "matrix-secret"))).all()));
                        shown.put("described", settled(() -> scrams(admin, user), seen -> seen instanceof List));
                        shown.put("delete", outcome(admin.alterUserScramCredentials(List.of(
                                new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256))).all()));
                        shown.put("after_delete", settled(() -> scrams(admin, user), seen -> !(seen instanceof List)));
                        results.put(step, shown);
                        break;
                    }
                    default:
                        throw new IllegalArgumentException("unknown step " + step);
                }
            }
        }
        System.out.println(Json.write(results));
    }

    /** Just enough JSON for maps, lists, strings, numbers, booleans and null. */
    static final class Json {
        private Json() {
        }

        static String write(Object value) {
            StringBuilder out = new StringBuilder();
            append(out, value);
            return out.toString();
        }

        private static void append(StringBuilder out, Object value) {
            if (value == null) {
                out.append("null");
            } else if (value instanceof Map) {
                out.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> item : ((Map<?, ?>) value).entrySet()) {
                    if (!first) {
                        out.append(',');
                    }
                    first = false;
                    append(out, String.valueOf(item.getKey()));
                    out.append(':');
                    append(out, item.getValue());
                }
                out.append('}');
            } else if (value instanceof Collection) {
                out.append('[');
                boolean first = true;
                for (Object item : (Collection<?>) value) {
                    if (!first) {
                        out.append(',');
                    }
                    first = false;
                    append(out, item);
                }
                out.append(']');
            } else if (value instanceof Number || value instanceof Boolean) {
                out.append(value);
            } else {
                out.append('"');
                for (char c : value.toString().toCharArray()) {
                    if (c == '"' || c == '\\') {
                        out.append('\\').append(c);
                    } else if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
                out.append('"');
            }
        }
    }
}
