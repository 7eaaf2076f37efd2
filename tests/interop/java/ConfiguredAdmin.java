// A Java AdminClient configured from a properties file (any security settings, e.g. GSSAPI with a keytab), that
// creates each topic named after it, one at a time, and prints "<topic> OK" or "<topic> <ExceptionClass>" for each.

import java.io.FileInputStream;
import java.io.InputStream;
import java.util.Arrays;
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
        try (Admin admin = Admin.create(props)) {
            for (String topic : Arrays.asList(args).subList(1, args.length)) {
                try {
                    admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(60, TimeUnit.SECONDS);
                    System.out.println(topic + " OK");
                } catch (ExecutionException e) {
                    System.out.println(topic + " " + e.getCause().getClass().getSimpleName());
                }
            }
        }
    }
}
