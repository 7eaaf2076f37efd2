// A Java AdminClient configured from a properties file (any security settings, e.g. GSSAPI with a keytab), that
// creates one topic and prints "create OK" or "create <ExceptionClass>: <message>".

import java.io.FileInputStream;
import java.io.InputStream;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;

public final class ConfiguredAdmin {
    private ConfiguredAdmin() {
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        String topic = args[1];
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(60, TimeUnit.SECONDS);
            System.out.println("create OK");
        } catch (ExecutionException e) {
            System.out.println("create " + e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
        }
    }
}
