// A small Java AdminClient program the interop suite compiles and runs against the proxy.
// Each step prints "<step> OK" or "<step> <ExceptionClass>", so the test can compare outcomes.

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

public final class AdminProbe {
    private AdminProbe() {
    }

    private static void step(String name, KafkaFuture<?> future) throws InterruptedException {
        try {
            future.get(60, TimeUnit.SECONDS);
            System.out.println(name + " OK");
        } catch (ExecutionException e) {
            System.out.println(name + " " + e.getCause().getClass().getSimpleName());
        } catch (java.util.concurrent.TimeoutException e) {
            System.out.println(name + " TIMEOUT");
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String user = args[1];
        String password = args[2];
        String topic = args[3];
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put("security.protocol", "SASL_PLAINTEXT");
        props.put("sasl.mechanism", "PLAIN");
        props.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                + user + "\" password=\"" + password + "\";");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        try (Admin admin = Admin.create(props)) {
            step("create", admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
            step("partitions", admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all());
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            AlterConfigOp set = new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET);
            step("alter", admin.incrementalAlterConfigs(Map.of(resource, List.of(set))).all());
            AclBinding acl = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                    new AccessControlEntry("User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW));
            step("acl", admin.createAcls(List.of(acl)).all());
            step("unacl", admin.deleteAcls(List.of(acl.toFilter())).all());
            step("delete", admin.deleteTopics(List.of(topic)).all());
        }
    }
}
