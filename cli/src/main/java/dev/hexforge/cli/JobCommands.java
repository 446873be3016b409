package dev.hexforge.cli;

import dev.hexforge.client.GatewayClient;

import com.fasterxml.jackson.databind.JsonNode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/** Jobs on a running fleet: submit, watch, show, cancel, resume. */
final class JobCommands {
    private JobCommands() {
    }

    /** Follows a job until it stops, one line per stage change, and returns its final state. */
    static JsonNode follow(GatewayClient client, String id, boolean quiet) throws InterruptedException {
        Map<String, String> shown = new HashMap<>();
        while (true) {
            JsonNode job = client.ok(client.send("GET", "/api/v1/jobs/" + id, null, null));
            if (!quiet) {
                for (JsonNode s : job.path("stages")) {
                    int pct = (int) s.path("progress").asDouble();
                    String line = String.format("%-9s attempt %d  %-10s [%-20s] %3d%%  %s", s.path("stage").asText(),
                            s.path("attempt").asInt(), s.path("state").asText(), "=".repeat(pct / 5), pct,
                            s.path("message").isTextual() ? s.path("message").asText() : "");
                    if (!line.equals(shown.put(s.path("id").asText(), line))) {
                        System.err.println(line);
                    }
                }
            }
            if (!job.path("state").asText().equals("running")) {
                return job;
            }
            Thread.sleep(300);
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
