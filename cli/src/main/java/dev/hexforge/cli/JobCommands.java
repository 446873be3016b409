package dev.hexforge.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.client.GatewayClient;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/** Jobs on a running fleet: submit, watch, show, cancel, resume. */
final class JobCommands {
    private JobCommands() {
    }

    /**
     * Follows a job over its event stream (server-sent events) until it stops: a progress line per stage as it
     * advances (loss and other metrics included), then returns the job with its stages. A broken stream is reopened
     * while the job still runs.
     */
    static JsonNode follow(GatewayClient client, String id, boolean quiet) throws InterruptedException {
        StageLines lines = new StageLines();
        while (true) {
            client.events("/api/v1/jobs/" + id + "/events", (name, data) -> {
                if (!quiet) {
                    lines.show(name, data);
                }
            });
            JsonNode job = client.ok(client.send("GET", "/api/v1/jobs/" + id, null, null));
            if (!job.path("state").asText().equals("running")) {
                lines.end();
                return job;
            }
            Thread.sleep(500);
        }
    }

    /** Progress lines on stderr: redrawn in place on a terminal, otherwise printed when a stage moves on by 10%. */
    static final class StageLines {
        private final boolean terminal = System.console() != null;
        private final Map<String, String> last = new HashMap<>();
        private boolean open;

        void show(String name, String data) {
            JsonNode e;
            try {
                e = Json.MAPPER.readTree(data);
            } catch (IOException ex) {
                return;
            }
            String stage = e.path("stage").asText().toLowerCase(Locale.ROOT);
            String line;
            switch (name) {
                case "progress" -> {
                    double pct = e.path("percent").asDouble();
                    StringBuilder m = new StringBuilder();
                    e.path("metrics").fields().forEachRemaining(f -> {
                        if (List.of("loss", "evalLoss", "exactMatch", "tokensPerSecond").contains(f.getKey())) {
                            m.append(String.format(" %s=%.4g", f.getKey(), f.getValue().asDouble()));
                        }
                    });
                    String bar = pct < 0 ? "" : String.format("[%-20s] %3.0f%% ", "=".repeat((int) pct / 5), pct);
                    line = String.format("%-9s %s%s%s", stage, bar, e.path("message").asText(), m);
                    String key = e.path("attemptId").asText();
                    String bucket = pct < 0 ? line : stage + (int) pct / 10 + e.path("message").asText().split(",")[0];
                    if (!terminal && bucket.equals(last.put(key, bucket))) {
                        return;
                    }
                }
                case "completed" -> line = String.format("%-9s completed: %s", stage, e.path("outputs").findValuesAsText("kind"));
                case "failed" -> line = String.format("%-9s FAILED %s: %s", stage, e.path("error").path("code").asText(),
                        e.path("error").path("message").asText());
                case "job" -> {
                    String state = e.path("state").asText();
                    if (state.equals(last.put("job", state))) {
                        return; // the stream repeats the job's state after every stage event
                    }
                    line = "job " + e.path("id").asText() + ": " + state;
                }
                default -> {
                    return;
                }
            }
            if (terminal) {
                System.err.print("\r\033[K" + line + (name.equals("progress") ? "" : "\n"));
                open = name.equals("progress");
            } else {
                System.err.println(line);
            }
        }

        void end() {
            if (open) {
                System.err.println();
            }
        }
    }

    static int exitCode(JsonNode job) {
        return job.path("state").asText().equals("completed") ? 0 : 1;
    }

    static void printOutcome(JsonNode job) {
        System.out.println("job " + job.path("id").asText() + ": " + job.path("state").asText());
        if (job.has("error")) {
            System.out.println("  error " + job.path("error").path("code").asText() + ": " + job.path("error").path("message").asText());
            System.out.println("  hint: " + job.path("error").path("hint").asText());
        }
        for (JsonNode s : job.path("stages")) {
            for (JsonNode o : s.path("outputs")) {
                System.out.println("  " + s.path("stage").asText() + " -> " + o.path("kind").asText() + ": hexforge download "
                        + o.path("id").asText() + " --out DIR");
            }
        }
    }

    @Command(name = "submit", mixinStandardHelpOptions = true, description = "Submit a job spec (JSON or YAML) to the fleet.")
    static final class Submit implements Callable<Integer> {
        @Parameters(index = "0", description = "job spec file")
        Path file;
        @Option(names = "--watch", description = "follow the job to its end (exit 0 only if it completes)")
        boolean watch;
        @Option(names = "--json", description = "print one JSON object (the job)")
        boolean json;

        @Override
        public Integer call() throws IOException, InterruptedException {
            String text = Files.readString(file);
            String type = text.stripLeading().startsWith("{") ? "application/json" : "application/yaml";
            GatewayClient client = GatewayClient.fromEnvironment();
            JsonNode job = client.ok(client.send("POST", "/api/v1/jobs", text, type));
            String id = job.path("id").asText();
            if (!watch) {
                System.out.println(json ? job.toString() : id);
                return 0;
            }
            return followAndReport(client, id, json);
        }
    }

    @Command(name = "watch", mixinStandardHelpOptions = true, description = "Follow a job until it completes, fails or is cancelled.")
    static final class Watch implements Callable<Integer> {
        @Parameters(index = "0")
        String id;
        @Option(names = "--json")
        boolean json;

        @Override
        public Integer call() throws InterruptedException {
            return followAndReport(GatewayClient.fromEnvironment(), id, json);
        }
    }

    /** Follows the job to its end, prints it (JSON or a summary) and returns the exit code for its state. */
    static int followAndReport(GatewayClient client, String id, boolean json) throws InterruptedException {
        JsonNode done = follow(client, id, json);
        if (json) {
            System.out.println(done.toString());
        } else {
            printOutcome(done);
        }
        return exitCode(done);
    }

    @Command(name = "job", mixinStandardHelpOptions = true, description = "Show a job, or with --cancel / --resume act on it.")
    static final class Show implements Callable<Integer> {
        @Parameters(index = "0")
        String id;
        @Option(names = "--cancel")
        boolean cancel;
        @Option(names = "--resume")
        boolean resume;

        @Override
        public Integer call() {
            if (cancel && resume) {
                throw new IllegalArgumentException("--cancel and --resume contradict each other");
            }
            GatewayClient client = GatewayClient.fromEnvironment();
            String path = "/api/v1/jobs/" + id + (cancel ? "/cancel" : resume ? "/resume" : "");
            JsonNode job = client.ok(client.send(cancel || resume ? "POST" : "GET", path, null, null));
            System.out.println(job.toPrettyString());
            return 0;
        }
    }
}
