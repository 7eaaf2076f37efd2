// Runs Kafka's own command-line tool classes (TopicCommand, ConfigCommand, AclCommand, ClusterTool) one after
// another in one JVM, as kafka-topics.sh and the others would run them, and reports each one's exit code and output.
//
//   java -cp <classes>:<kafka libs>/* ToolsRunner <commands file>
//
// The file holds one command a line: the main class, then its arguments, separated by tabs (or `sleep<TAB>ms`). The tools end with
// Exit.exit(), which is turned into an exception here so that the next command can run; their output goes to
// System.out and System.err, captured per command. Prints one JSON list of {"exit", "out", "err"}.

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import org.apache.kafka.common.utils.Exit;

public final class ToolsRunner {
    private ToolsRunner() {
    }

    private static final class Exited extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int code;

        Exited(int code) {
            super("exit " + code);
            this.code = code;
        }
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }

    /** The first exit a command asked for: TopicCommand catches every Throwable around its own Exit.exit(0) and exits again with 1. */
    private static Integer firstExit;

    private static void exit(int code) {
        if (firstExit == null) {
            firstExit = code;
        }
        throw new Exited(code);
    }

    public static void main(String[] args) throws Exception {
        Exit.setExitProcedure((code, message) -> exit(code));
        Exit.setHaltProcedure((code, message) -> exit(code));
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        List<String> commands = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
        StringBuilder report = new StringBuilder("[");
        for (String line : commands) {
            if (line.isBlank()) {
                continue;
            }
            String[] parts = line.split("\t");
            if (parts[0].equals("sleep")) {
                Thread.sleep(Long.parseLong(parts[1]));
                continue;
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int code = 0;
            firstExit = null;
            try {
                Method main = Class.forName(parts[0]).getMethod("main", String[].class);
                main.invoke(null, (Object) Arrays.copyOfRange(parts, 1, parts.length));
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof Exited) {
                    code = ((Exited) cause).code;
                } else {
                    code = -1;
                    cause.printStackTrace();
                }
            } catch (Exited e) {
                code = e.code;
            } finally {
                if (firstExit != null) {
                    code = firstExit;
                }
                System.out.flush();
                System.err.flush();
                System.setOut(realOut);
                System.setErr(realErr);
            }
            if (report.length() > 1) {
                report.append(',');
            }
            report.append("{\"exit\":").append(code)
                    .append(",\"out\":").append(quote(out.toString(StandardCharsets.UTF_8)))
                    .append(",\"err\":").append(quote(err.toString(StandardCharsets.UTF_8))).append('}');
        }
        realOut.println(report.append(']'));
        realOut.flush();
        // The tools' admin clients may leave threads behind; nothing more is owed to anyone.
        Runtime.getRuntime().halt(0);
    }
}
