package envelopeproxy.probe;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;

import org.apache.kafka.metadata.authorizer.StandardAuthorizer;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;

/**
 * Kafka's StandardAuthorizer (ACLs from the cluster metadata), and one JSON line per decision in the file that
 * `recording.authorizer.log` names: what the RequestContext of the request showed the plug-in (principal, client
 * address, listener, security protocol, API key, client id), the action and the result. The interop tests read
 * it to see what a controller hands a plug-in for a request that came in an Envelope.
 */
public class RecordingAuthorizer extends StandardAuthorizer {
    public static final String LOG_CONFIG = "recording.authorizer.log";

    private Path log;

    @Override
    public void configure(Map<String, ?> configs) {
        super.configure(configs);
        Object path = configs.get(LOG_CONFIG);
        log = path == null ? null : Paths.get(path.toString());
    }

    @Override
    public List<AuthorizationResult> authorize(AuthorizableRequestContext context, List<Action> actions) {
        List<AuthorizationResult> results = super.authorize(context, actions);
        if (log != null) {
            record(context, actions, results);
        }
        return results;
    }

    private synchronized void record(AuthorizableRequestContext context, List<Action> actions, List<AuthorizationResult> results) {
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < actions.size(); i++) {
            Action action = actions.get(i);
            lines.append('{')
                .append(field("principal", String.valueOf(context.principal()))).append(',')
                .append(field("clientAddress", context.clientAddress().getHostAddress())).append(',')
                .append(field("listenerName", context.listenerName())).append(',')
                .append(field("securityProtocol", String.valueOf(context.securityProtocol()))).append(',')
                .append("\"apiKey\":").append(context.requestType()).append(',')
                .append(field("clientId", context.clientId())).append(',')
                .append(field("operation", String.valueOf(action.operation()))).append(',')
                .append(field("resourceType", String.valueOf(action.resourcePattern().resourceType()))).append(',')
                .append(field("resourceName", action.resourcePattern().name())).append(',')
                .append(field("result", String.valueOf(results.get(i))))
                .append("}\n");
        }
        try {
            Files.write(log, lines.toString().getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String field(String name, String value) {
        return "\"" + name + "\":" + (value == null ? "null" : "\"" + escape(value) + "\"");
    }

    /** JSON string escaping: quotes, backslashes and control characters. */
    private static String escape(String text) {
        StringBuilder out = new StringBuilder();
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
