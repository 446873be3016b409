package dev.hexforge.standalone;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.finetuneservice.FinetuneServiceApplication;
import dev.hexforge.gateway.GatewayApplication;
import dev.hexforge.gateway.auth.TokenService;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.testing.fleet.FleetInfra;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A stage service is its own process here, and is killed with SIGKILL in the middle of a fine-tune: when it comes
 * back, the request is delivered to it again (its offset was never committed) and the training resumes from the
 * checkpoint in storage; the job completes with one completed attempt of the stage.
 */
@org.junit.jupiter.api.Tag("fleet")
@org.junit.jupiter.api.extension.ExtendWith(FleetInfra.class)
class StageServiceCrashTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newHttpClient();
    @TempDir
    static Path home;
    static FleetInfra.Endpoints infra;
    static ConfigurableApplicationContext gateway;
    static String base;
    static String token;

    @BeforeAll
    static void start(FleetInfra.Endpoints endpoints) throws Exception {
        infra = endpoints;
        gateway = new SpringApplicationBuilder(GatewayApplication.class).run(
                "--spring.kafka.bootstrap-servers=" + infra.kafka(), "--server.port=0",
                "--hexforge.stages=finetune", "--hexforge.stage-stall-timeout=15s",
                "--hexforge.s3.endpoint=" + infra.s3Endpoint(), "--hexforge.s3.access-key=" + infra.s3AccessKey(),
                "--hexforge.s3.secret-key=" + infra.s3SecretKey(), "--spring.datasource.url=" + infra.jdbcUrl(),
                "--spring.datasource.username=" + infra.dbUser(), "--spring.datasource.password=" + infra.dbPassword(),
                "--hexforge.input-roots=" + home + "," + Fixtures.root(), "--spring.main.banner-mode=off");
        base = "http://127.0.0.1:" + gateway.getEnvironment().getProperty("local.server.port") + "/api/v1/jobs";
        token = gateway.getBean(TokenService.class).create("acme", "test");
    }

    @AfterAll
    static void stop() {
        if (gateway != null) {
            gateway.close();
        }
    }

    /** The finetune service in a JVM of its own, as a deployment runs it. */
    static Process finetuneService(String name) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "-Xmx1g", "-cp", System.getProperty("java.class.path"),
                FinetuneServiceApplication.class.getName(),
                "--spring.kafka.bootstrap-servers=" + infra.kafka(),
                "--spring.kafka.consumer.properties.session.timeout.ms=6000",
                "--hexforge.s3.endpoint=" + infra.s3Endpoint(), "--hexforge.s3.access-key=" + infra.s3AccessKey(),
                "--hexforge.s3.secret-key=" + infra.s3SecretKey(),
                "--hexforge.work-dir=" + home.resolve("work-" + name), "--hexforge.worker.heartbeat=1s",
                "--hexforge.input-roots=" + home + "," + Fixtures.root(), "--spring.main.banner-mode=off"));
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(home.resolve(name + ".log").toFile()).start();
    }

    static JsonNode get(String id) throws Exception {
        return JSON.readTree(HTTP.send(HttpRequest.newBuilder(URI.create(base + "/" + id)).header("Authorization", "Bearer " + token)
                .build(), HttpResponse.BodyHandlers.ofString()).body());
    }

    static String trainingSpec(int epochs) throws Exception {
        ObjectMapper om = new ObjectMapper();
        Path data = Fixtures.loraTaskLines(96, home.resolve("train.jsonl"));
        JsonNode evalAll = om.readTree(Fixtures.root().resolve("lora-task/eval.json").toFile());
        Path eval = Files.writeString(home.resolve("eval.jsonl"), om.writeValueAsString(evalAll.get(0)) + "\n"
                + om.writeValueAsString(evalAll.get(1)) + "\n");
        String spec = "{\"model\": {\"path\": " + JSON.writeValueAsString(Fixtures.qwen2Tiny().toString()) + "}, \"stages\": [\"finetune\"],"
                + " \"finetune\": {\"data\": " + JSON.writeValueAsString(data.toString()) + ", \"evalData\": "
                + JSON.writeValueAsString(eval.toString()) + ", \"batch\": 16, \"accumulation\": 1, \"epochs\": " + epochs + ","
                + " \"learningRate\": 0.005}}";
        return spec;
    }

    static String submit(String spec) throws Exception {
        HttpResponse<String> created = HTTP.send(HttpRequest.newBuilder(URI.create(base)).header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(spec)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(201, created.statusCode(), created.body());
        return JSON.readTree(created.body()).path("id").asText();
    }

    /** Waits until the job's latest attempt has evaluated the given epoch. */
    static void awaitEpoch(String id, int epoch) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (System.nanoTime() < deadline) {
            JsonNode stages = get(id).path("stages");
            if (stages.path(stages.size() - 1).path("metrics").path("epoch").asDouble() >= epoch) {
                return;
            }
            Thread.sleep(100);
        }
    }

    static JsonNode awaitEnd(String id, int seconds) throws Exception {
        JsonNode job = null;
        long deadline = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
        while (System.nanoTime() < deadline) {
            job = get(id);
            if (!job.path("state").asText().equals("running")) {
                break;
            }
            Thread.sleep(200);
        }
        return job;
    }

    @Test
    void aStageServiceKilledMidStageComesBackAndTheJobCompletesOnce() throws Exception {
        Process first = finetuneService("first");
        String id;
        try {
            id = submit(trainingSpec(40));
            awaitEpoch(id, 4); // a few epochs in, with a checkpoint in storage
            assertEquals("running", get(id).path("state").asText(), Files.readString(home.resolve("first.log")));
            assertTrue(get(id).path("stages").path(0).path("metrics").path("epoch").asDouble() >= 4,
                    "training should be under way: " + get(id) + Files.readString(home.resolve("first.log")));
        } finally {
            first.destroyForcibly().waitFor(); // SIGKILL: no shutdown hook, no offset commit, no goodbye to the group
        }

        Process second = finetuneService("second");
        try {
            JsonNode job = awaitEnd(id, 180);
            assertEquals("completed", job.path("state").asText(), job + Files.readString(home.resolve("second.log")));
            long completed = 0;
            for (JsonNode s : job.path("stages")) {
                if (s.path("state").asText().equals("completed")) {
                    completed++;
                    assertEquals(1, s.path("outputs").size());
                    assertTrue(s.path("report").path("resumedFromStep").asInt() >= 12,
                            "the second service continued from the stored checkpoint: " + s.path("report"));
                    assertEquals(240, s.path("report").path("steps").asInt());
                }
            }
            assertEquals(1, completed, "exactly one completed attempt of the stage: " + job.path("stages"));
        } finally {
            second.destroyForcibly().waitFor();
        }
    }

    @Test
    void anAttemptWhoseServiceWentSilentIsReDispatchedAndTheStaleRequestIsDropped() throws Exception {
        Process gone = finetuneService("gone");
        String id;
        try {
            id = submit(trainingSpec(12));
            awaitEpoch(id, 1);
        } finally {
            gone.destroyForcibly().waitFor();
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        JsonNode stages = get(id).path("stages");
        while (stages.size() < 2 && System.nanoTime() < deadline) { // no service at all: the silence passes the 15 s timeout
            Thread.sleep(200);
            stages = get(id).path("stages");
        }
        assertEquals(2, stages.size(), "a second attempt after the stall: " + stages);
        assertEquals("STAGE_STALLED", stages.get(0).path("error").path("code").asText(), stages.toString());
        assertTrue(stages.get(0).path("error").path("message").asText().contains("no progress from the finetune service"));

        Process back = finetuneService("back");
        try {
            JsonNode job = awaitEnd(id, 180);
            assertEquals("completed", job.path("state").asText(), job + Files.readString(home.resolve("back.log")));
            assertEquals(2, job.path("stages").size(), job.path("stages").toString());
            assertEquals("completed", job.path("stages").get(1).path("state").asText());
            assertTrue(Files.readString(home.resolve("back.log")).contains("was cancelled before it started; dropped"),
                    "the redelivered request of the stalled attempt is dropped, not run again");
        } finally {
            back.destroyForcibly().waitFor();
        }
    }
}
