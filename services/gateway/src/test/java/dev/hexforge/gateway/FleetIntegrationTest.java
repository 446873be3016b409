package dev.hexforge.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.artifactservice.ArtifactServiceApplication;
import dev.hexforge.exportservice.ExportServiceApplication;
import dev.hexforge.gateway.auth.TokenService;
import dev.hexforge.gateway.job.Conflicts;
import dev.hexforge.gateway.job.ErrorInfo;
import dev.hexforge.gateway.job.JobEntity;
import dev.hexforge.gateway.job.JobRepository;
import dev.hexforge.gateway.outbox.OutboxEntity;
import dev.hexforge.gateway.outbox.OutboxRelay;
import dev.hexforge.gateway.outbox.OutboxRepository;
import dev.hexforge.progress.Progress;
import dev.hexforge.quantizeservice.QuantizeServiceApplication;
import dev.hexforge.safetensors.DType;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.ModelSignature;
import dev.hexforge.signing.Provenance;
import dev.hexforge.store.ArtifactStore;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
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
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fleet for real: Kafka, PostgreSQL and S3 (containers where Docker is, embedded otherwise), the gateway, the
 * artifact, export and quantize services, talking over REST and Kafka.
 */
@org.junit.jupiter.api.Tag("fleet")
@org.junit.jupiter.api.extension.ExtendWith(FleetInfra.class)
class FleetIntegrationTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newHttpClient();
    @TempDir
    static Path home;
    static FleetInfra.Endpoints infra;
    static ConfigurableApplicationContext exportService;
    static ConfigurableApplicationContext quantizeService;
    static ConfigurableApplicationContext artifactService;
    static ConfigurableApplicationContext gateway;
    static String base;
    static final java.util.Map<String, String> TOKENS = new java.util.HashMap<>();

    @BeforeAll
    static void start(FleetInfra.Endpoints endpoints) throws Exception {
        infra = endpoints;
        String kafka = "--spring.kafka.bootstrap-servers=" + infra.kafka();
        String s3 = "--hexforge.s3.endpoint=" + infra.s3Endpoint();
        String s3Access = "--hexforge.s3.access-key=" + infra.s3AccessKey();
        String s3Secret = "--hexforge.s3.secret-key=" + infra.s3SecretKey();
        String inputs = "--hexforge.input-roots=" + Fixtures.root() + "," + home.resolve("models");
        Files.createDirectories(home.resolve("models"));
        exportService = ExportServiceApplication.start(kafka, s3, s3Access, s3Secret, inputs, "--hexforge.work-dir=" + home.resolve("work"));
        quantizeService = QuantizeServiceApplication.start(kafka, s3, s3Access, s3Secret, inputs, "--hexforge.work-dir=" + home.resolve("work-q"));
        String db = "--spring.datasource.url=" + infra.jdbcUrl();
        String dbUser = "--spring.datasource.username=" + infra.dbUser();
        String dbPassword = "--spring.datasource.password=" + infra.dbPassword();
        artifactService = ArtifactServiceApplication.start(kafka, inputs, "--server.port=0", db, dbUser, dbPassword, s3, s3Access, s3Secret,
                "--hexforge.work-dir=" + home.resolve("work-a"), "--hexforge.signing.key=" + home.resolve("signing-key.pem"),
                "--hexforge.signing.generate=true", "--hexforge.internal-token=internal-secret", "--hexforge.download-url-ttl=3s");
        gateway = new SpringApplicationBuilder(GatewayApplication.class).run(kafka, "--server.port=0", "--hexforge.stages=quantize,export,sign,benchmark",
                "--hexforge.device-lease=3s", "--hexforge.device-lease-check-ms=300", inputs,
                "--hexforge.event-retry-backoff=100ms", "--hexforge.dispatch-timeout=10s",
                db, dbUser, dbPassword, s3, s3Access, s3Secret, "--hexforge.uploads.max-size=8MB", "--hexforge.uploads.tenant-quota=24MB", "--hexforge.internal-token=internal-secret", "--hexforge.artifact-service.url=http://127.0.0.1:"
                        + artifactService.getEnvironment().getProperty("local.server.port"));
        base = "http://127.0.0.1:" + gateway.getEnvironment().getProperty("local.server.port") + "/api/v1/jobs";
        TokenService tokens = gateway.getBean(TokenService.class);
        TOKENS.put("acme", tokens.create("acme", "test"));
        TOKENS.put("someone-else", tokens.create("someone-else", "test"));
        TOKENS.put("bench", tokens.create("bench", "test"));
        TOKENS.put("hoarder", tokens.create("hoarder", "test"));
        TOKENS.put("planner", tokens.create("planner", "test"));
    }

    @AfterAll
    static void stop() {
        if (gateway != null) {
            gateway.close();
        }
        if (exportService != null) {
            exportService.close();
        }
        if (artifactService != null) {
            artifactService.close();
        }
        if (quantizeService != null) {
            quantizeService.close();
        }
    }

    record Reply(int status, JsonNode body) {
    }

    static Reply call(String method, String url, String body, String contentType, String tenant) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30));
        if (tenant != null) {
            b.header("Authorization", "Bearer " + TOKENS.getOrDefault(tenant, tenant));
        }
        if (body != null) {
            b.header("Content-Type", contentType).method(method, HttpRequest.BodyPublishers.ofString(body));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r.body().isEmpty() ? null : JSON.readTree(r.body()));
    }

    static JsonNode awaitState(String id, String tenant, String... states) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(300).toNanos(); // generous: CI's machine may be busy
        while (System.nanoTime() < deadline) {
            JsonNode job = call("GET", base + "/" + id, null, null, tenant).body();
            if (List.of(states).contains(job.path("state").asText())) {
                return job;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("job " + id + " did not reach " + List.of(states) + " in 300 s");
    }

    /** A device token for a new runner of the tenant, registered with the given SoC and backends. */
    static String runner(String name, String tenant, String soc, List<String> backends) throws Exception {
        Reply added = call("POST", base.replace("/jobs", "/devices"), "{\"name\": \"" + name + "\"}", "application/json", tenant);
        assertEquals(201, added.status(), String.valueOf(added.body()));
        String token = added.body().path("token").asText();
        String info = JSON.writeValueAsString(new dev.hexforge.contracts.DeviceMessages.DeviceInfo(soc, "75", backends,
                8L << 30, "Android 15", "1.29.0", null));
        assertEquals(200, call("POST", base.replace("/jobs", "/runner/register"), info, "application/json", token).status());
        return token;
    }

    /** The tiny model exported (static) and benchmarked on a device or SoC, for the tenant; returns the job's id. */
    static String benchmarkJob(String tenant, String device) throws Exception {
        String spec = "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [export, benchmark]\nexport:\n  variant: static\n"
                + "  seq: 32\n  ctx: 128\nbenchmark:\n  device: " + device + "\n  promptLength: 16\n  newTokens: 4\n";
        Reply created = call("POST", base, spec, "application/yaml", tenant);
        assertEquals(201, created.status(), String.valueOf(created.body()));
        return created.body().path("id").asText();
    }

    /**
     * Long-polls for a task until one comes or {@code seconds} have passed: each poll asks the server to wait at most
     * 25 s and the client waits a minute longer than that, so a loaded machine's slow answer is not a client time-out.
     */
    static Reply nextTask(String deviceToken, int seconds) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
        while (true) {
            int wait = (int) Math.max(1, Math.min(25, Duration.ofNanos(deadline - System.nanoTime()).toSeconds()));
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(base.replace("/jobs", "/runner/tasks/next?wait=" + wait)))
                    .timeout(Duration.ofSeconds(wait + 60)).header("Authorization", "Bearer " + deviceToken).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 204 || System.nanoTime() >= deadline) {
                return new Reply(r.statusCode(), r.body().isEmpty() ? null : JSON.readTree(r.body()));
            }
        }
    }

    /** A runner's outcome: one well-formed result of {@code backend} decoding at {@code decode} tokens/s. */
    static String outcome(String backend, double decode) {
        return dev.hexforge.contracts.ContractsJson.write(new dev.hexforge.contracts.DeviceMessages.BenchmarkOutcome(List.of(
                new dev.hexforge.contracts.BenchmarkResult(backend, "host", null, 16, 4, 0.5, 20, 800, decode, null, 1_000_000L,
                        null, null, null, null, null, null, null, null, null, null,
                        java.util.Map.of("peakRssBytes", "not measured by this test"))), null));
    }

    /**
     * The relay sends a batch without waiting between rows: 250 rows of one key (more than two batches) still arrive in
     * the order they were written, once each, and every row is marked sent.
     */
    @Test
    void theOutboxRelayKeepsOrderAcrossPipelinedBatchesAndMarksEveryRowSent() throws Exception {
        OutboxRepository outbox = gateway.getBean(OutboxRepository.class);
        String topic = "hexforge.test.outbox-order." + java.util.UUID.randomUUID();
        String key = java.util.UUID.randomUUID().toString();
        List<Long> ids = gateway.getBean(org.springframework.transaction.support.TransactionTemplate.class).execute(s -> {
            List<Long> written = new java.util.ArrayList<>();
            for (int i = 0; i < 250; i++) {
                OutboxEntity m = new OutboxEntity();
                m.topic = topic;
                m.messageKey = key;
                m.payload = "row-" + i;
                m.createdAt = java.time.Instant.now();
                written.add(outbox.save(m).id);
            }
            return written;
        });
        gateway.getBean(OutboxRelay.class).wake();

        List<String> got = dev.hexforge.testing.fleet.TopicValues.read(infra.kafka(), topic, 250, Duration.ofSeconds(180),
                Duration.ofMillis(500)); // a duplicate would show in the last half second
        assertEquals(java.util.stream.IntStream.range(0, 250).mapToObj(i -> "row-" + i).toList(), got);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (outbox.findAllById(ids).stream().anyMatch(m -> m.sentAt == null)) {
            assertTrue(System.nanoTime() < deadline, "every relayed row is marked sent");
            Thread.sleep(100);
        }
    }

    @Test
    void benchmarkTasksGoOnlyToMatchingRunnersAndADeadRunnersTaskIsQueuedAgain() throws Exception {
        String cpuOnly = runner("bench-cpu", "bench", "SM8550", List.of("ort-cpu"));
        String npu = runner("bench-npu", "bench", "SM8650", List.of("ort-cpu", "ort-qnn"));
        String npu2 = runner("bench-npu-2", "bench", "SM8650", List.of("ort-cpu", "ort-qnn"));
        String spec = "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [export, benchmark]\nexport:\n  variant: static\n"
                + "  seq: 32\n  ctx: 128\nbenchmark:\n  device: SM8650\n  backends: [ort-qnn]\n  promptLength: 16\n  newTokens: 4\n";
        Reply created = call("POST", base, spec, "application/yaml", "bench");
        assertEquals(201, created.status(), String.valueOf(created.body()));
        String id = created.body().path("id").asText();
        long deadline = System.nanoTime() + Duration.ofSeconds(300).toNanos();
        while (!"benchmark".equals(call("GET", base + "/" + id, null, null, "bench").body().path("currentStage").asText())) {
            assertTrue(System.nanoTime() < deadline, "the job reaches its benchmark stage");
            Thread.sleep(200);
        }

        assertEquals(204, nextTask(cpuOnly, 2).status(), "a runner of another SoC without the backend is not given the task");
        Reply leased = nextTask(npu, 120);
        assertEquals(200, leased.status(), "the matching runner gets it");
        String taskId = leased.body().path("taskId").asText();
        assertEquals(List.of("ort-qnn"), JSON.convertValue(leased.body().path("backends"), List.class));

        // the runner dies: no heartbeat, no result; its lease (3 s here) runs out and another matching runner gets the task
        Reply again = nextTask(npu2, 120);
        assertEquals(200, again.status(), "the task is queued again after the lease expires");
        assertEquals(taskId, again.body().path("taskId").asText());
        String outcome = outcome("ort-qnn", 12.5);
        Reply late = call("POST", base.replace("/jobs", "/runner/tasks/" + taskId + "/result"), outcome, "application/json", npu);
        assertEquals(409, late.status(), "the dead runner's late result is refused: " + late.body());
        Reply done = call("POST", base.replace("/jobs", "/runner/tasks/" + taskId + "/result"), outcome, "application/json", npu2);
        assertEquals(200, done.status(), String.valueOf(done.body()));

        JsonNode job = awaitState(id, "bench", "completed", "failed");
        assertEquals("completed", job.path("state").asText(), job.toString());
        JsonNode bench = job.path("stages").get(job.path("stages").size() - 1);
        assertEquals("bench-npu-2", bench.path("report").path("device").asText());
        assertEquals(12.5, bench.path("report").path("results").get(0).path("decodeTokensPerSecond").asDouble());
    }

    @Test
    void aBenchmarkTaskWhoseRunnersKeepDyingFailsItsStageInsteadOfBeingOfferedForever() throws Exception {
        // a bundle that crashes the runner (found by FaultHarnessTest: a runner that died in ONNX Runtime took the task
        // again after each restart, and the job never ended)
        String crashing = runner("bench-crashing", "bench", "SM8750", List.of("ort-cpu"));
        String id = benchmarkJob("bench", "SM8750");
        for (int lease = 1; lease <= 3; lease++) {
            Reply leased = nextTask(crashing, 120);
            assertEquals(200, leased.status(), "lease " + lease + " of the task");
            // the runner dies with it: no heartbeat, no result, and its lease (3 s here) runs out
        }
        JsonNode job = awaitState(id, "bench", "completed", "failed");
        assertEquals("failed", job.path("state").asText(), job.toString());
        assertEquals("BENCHMARK_FAILED", job.path("error").path("code").asText(), job.toString());
        assertTrue(job.path("error").path("message").asText().contains("3 times"), job.toString());
        assertEquals(204, nextTask(crashing, 1).status(), "the task is not offered again");
    }

    @Test
    void aRunnerStartedAfreshGetsTheTaskItsPredecessorHeldAtOnceAndHeartbeatsKeepOnlyTheTaskNamed() throws Exception {
        // found by FaultHarnessTest: a runner killed mid-task and started again on the same token heartbeated, and the
        // heartbeat extended the lease of the task its predecessor held, so the task was never offered again
        String token = runner("bench-restarting", "planner", "SM8635", List.of("ort-cpu"));
        String id = benchmarkJob("planner", "SM8635");
        Reply first = nextTask(token, 180);
        assertEquals(200, first.status(), "the benchmark task is leased");
        String task = first.body().path("taskId").asText();
        String heartbeat = base.replace("/jobs", "/runner/heartbeat");
        for (int i = 0; i < 8; i++) { // 4 s, past the 3 s lease: heartbeats naming the task keep it
            assertEquals(200, call("POST", heartbeat, "{\"taskId\": \"" + task + "\"}", "application/json", token).status());
            Thread.sleep(500);
        }
        assertEquals(204, nextTask(token, 1).status(), "a task whose runner heartbeats for it is not offered again");
        // the process dies and a new one starts on the same token: it registers, then heartbeats as idle
        String info = JSON.writeValueAsString(new dev.hexforge.contracts.DeviceMessages.DeviceInfo("SM8635", "75", List.of("ort-cpu"),
                8L << 30, "Android 15", "1.29.0", null));
        assertEquals(200, call("POST", base.replace("/jobs", "/runner/register"), info, "application/json", token).status());
        assertEquals(200, call("POST", heartbeat, "{\"taskId\": null}", "application/json", token).status());
        long t0 = System.nanoTime();
        Reply again = nextTask(token, 2);
        assertEquals(200, again.status(), "the task is offered again at once, not after its lease");
        assertEquals(task, again.body().path("taskId").asText());
        assertTrue((System.nanoTime() - t0) / 1_000_000 < 1_500, "at once");
        String outcome = outcome("ort-cpu", 10.0);
        Reply done = call("POST", base.replace("/jobs", "/runner/tasks/" + task + "/result"), outcome, "application/json", token);
        assertEquals(200, done.status(), String.valueOf(done.body()));
        JsonNode job = awaitState(id, "planner", "completed", "failed");
        assertEquals("completed", job.path("state").asText(), job.toString());
    }

    @Test
    void anExportJobRunsThroughKafkaAndStoresItsArtifact() throws Exception {
        String spec = "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [export]\nexport:\n  variant: static\n  seq: 32\n  ctx: 128\n";
        Reply created = call("POST", base, spec, "application/yaml", "acme");
        assertEquals(201, created.status(), String.valueOf(created.body()));
        String id = created.body().path("id").asText();
        JsonNode job = awaitState(id, "acme", "completed", "failed");
        assertEquals("completed", job.path("state").asText(), job.toString());
        JsonNode stage = job.path("stages").get(0);
        assertEquals("export", stage.path("stage").asText());
        assertEquals("completed", stage.path("state").asText());
        assertTrue(stage.path("durationMs").asLong() >= 0);
        JsonNode artifact = stage.path("outputs").get(0);
        assertEquals("onnx-static", artifact.path("kind").asText());

        ArtifactStore store = new ArtifactStore(infra.s3Endpoint(), infra.s3AccessKey(), infra.s3SecretKey());
        Path fetched = home.resolve("fetched");
        store.getFolder(artifact.path("sha256").asText(), fetched);
        assertTrue(Files.isRegularFile(fetched.resolve("onnx/prompt.onnx")));
        assertTrue(Files.isRegularFile(fetched.resolve("export.json")));

        assertEquals(404, call("GET", base + "/" + id, null, null, "someone-else").status(), "another tenant's job does not exist");
        JsonNode list = call("GET", base + "?state=completed", null, null, "acme").body();
        assertTrue(list.path("total").asInt() >= 1, list.toString());
        assertEquals(0, call("GET", base, null, null, "someone-else").body().path("total").asInt(), "tenants see only their jobs");
        assertEquals(400, call("GET", base + "?state=sideways", null, null, "acme").status());
    }

    @Test
    void jobEventsStreamAsServerSentEventsUntilTheJobEnds() throws Exception {
        String spec = "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [quantize, export]\n"
                + "quantize:\n  method: rtn\n  bits: 8\n  group: 0\nexport:\n  variant: dynamic\n";
        Reply created = call("POST", base, spec, "application/yaml", "acme");
        assertEquals(201, created.status(), String.valueOf(created.body()));
        String id = created.body().path("id").asText();
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + "/" + id + "/events")).timeout(Duration.ofSeconds(120))
                .header("Authorization", "Bearer " + TOKENS.get("acme")).header("Accept", "text/event-stream").build();
        HttpResponse<java.util.stream.Stream<String>> r = HTTP.send(req, HttpResponse.BodyHandlers.ofLines());
        assertEquals(200, r.statusCode());
        List<String> lines = r.body().filter(l -> l.startsWith("event:") || l.startsWith("data:")).toList(); // ends with the job
        List<String> names = lines.stream().filter(l -> l.startsWith("event:")).map(l -> l.substring(6).strip()).toList();
        assertEquals("job", names.get(0), "a snapshot first: " + names);
        assertTrue(names.contains("progress") && names.contains("completed"), "live stage events: " + names);
        assertEquals("job", names.get(names.size() - 1), names.toString());
        JsonNode last = JSON.readTree(lines.get(lines.size() - 1).substring(5).strip());
        assertEquals("completed", last.path("state").asText(), last.toString());
        assertEquals(2, lines.stream().filter(l -> l.contains("\"type\":\"completed\"")).count(),
                "one completed event per stage: " + lines);

        HttpResponse<String> other = HTTP.send(HttpRequest.newBuilder(URI.create(base + "/" + id + "/events"))
                .header("Authorization", "Bearer " + TOKENS.get("someone-else")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(404, other.statusCode(), "another tenant's job has no stream");
        HttpResponse<java.util.stream.Stream<String>> ended = HTTP.send(req, HttpResponse.BodyHandlers.ofLines());
        List<String> after = ended.body().filter(l -> l.startsWith("event:")).toList();
        assertEquals(List.of("event:job"), after, "a finished job's stream is its snapshot, then it ends");
    }

    @Test
    void everySpecProblemComesBackAs400WithItsPath() throws Exception {
        Reply r = call("POST", base, "{\"model\": {}, \"quantize\": {\"bits\": 99}, \"extra\": 1}", "application/json", "acme");
        assertEquals(400, r.status());
        String problems = r.body().path("problems").toString();
        assertTrue(problems.contains("quantize.bits") && problems.contains("extra") && problems.contains("unknown field"), problems);
        Reply malformed = call("POST", base, "{\"model\": ", "application/json", "acme");
        assertEquals(400, malformed.status());
        assertTrue(malformed.body().path("problems").toString().contains("malformed"));
        Reply notDeployed = call("POST", base, "{\"model\": {\"path\": \"/m\"}, \"stages\": [\"export\", \"compile\"]}", "application/json", "acme");
        assertEquals(400, notDeployed.status());
        assertTrue(notDeployed.body().toString().contains("stage 'compile' cannot run here"), notDeployed.body().toString());
    }

    @Test
    void aFailedStageCarriesItsErrorAndCanBeResumed() throws Exception {
        Path broken = Files.createDirectories(home.resolve("models/no-config")); // a folder the fleet may read, but no model
        Reply created = call("POST", base, "{\"model\": {\"path\": \"" + broken + "\"}, \"stages\": [\"export\"]}",
                "application/json", "acme");
        String id = created.body().path("id").asText();
        JsonNode job = awaitState(id, "acme", "failed", "completed");
        assertEquals("failed", job.path("state").asText());
        assertEquals("MODEL_INVALID", job.path("error").path("code").asText(), job.toString());
        assertTrue(job.path("error").path("message").asText().contains("config.json"));
        Reply resumed = call("POST", base + "/" + id + "/resume", null, null, "acme");
        assertEquals(200, resumed.status(), String.valueOf(resumed.body()));
        job = awaitState(id, "acme", "failed");
        assertEquals(2, job.path("stages").size(), "a second attempt of the failed stage");
        assertEquals(409, call("POST", base + "/" + id + "/cancel", null, null, "acme").status());
    }

    /** A Llama 3 checkpoint (llama3 RoPE scaling) and a Qwen3 one (per-head q/k norms) through quantize and export. */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(value = Preset.class, names = {"TINY_LLAMA3", "TINY_QWEN3"})
    void llama3AndQwen3CheckpointsAreAcceptedAndConverted(Preset preset) throws Exception {
        Path model = home.resolve("models").resolve(preset.id());
        SyntheticCheckpoint.write(SyntheticCheckpoint.Options.of(preset, DType.BF16, 3), model, Progress.NONE);
        String spec = "model:\n  path: " + model + "\nstages: [quantize, export]\n"
                + "quantize:\n  method: rtn\n  bits: 8\nexport:\n  variant: static\n  seq: 16\n  ctx: 64\n";
        Reply created = call("POST", base, spec, "application/yaml", "acme");
        assertEquals(201, created.status(), String.valueOf(created.body()));
        JsonNode job = awaitState(created.body().path("id").asText(), "acme", "completed", "failed");
        assertEquals("completed", job.path("state").asText(), job.toString());
        assertTrue(job.path("stages").get(0).path("report").path("gatePassed").asBoolean(), job.toString());
        assertEquals("onnx-static-qdq", job.path("stages").get(1).path("outputs").get(0).path("kind").asText(), job.toString());
    }

    @Test
    void aQuantizeThenExportJobHandsTheQuantizedModelOnAndTheGateCanFailIt() throws Exception {
        String spec = "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [quantize, export]\n"
                + "quantize:\n  method: rtn\n  bits: 4\n  format: matmulnbits\nexport:\n  variant: dynamic\n";
        String id = call("POST", base, spec, "application/yaml", "acme").body().path("id").asText();
        JsonNode job = awaitState(id, "acme", "completed", "failed");
        assertEquals("completed", job.path("state").asText(), job.toString());
        JsonNode quantize = job.path("stages").get(0);
        assertEquals("quantized-checkpoint", quantize.path("outputs").get(0).path("kind").asText());
        assertTrue(quantize.path("report").path("gatePassed").asBoolean(), quantize.toString());
        assertEquals("onnx-dynamic-matmulnbits", job.path("stages").get(1).path("outputs").get(0).path("kind").asText());

        String tight = spec.replace("format: matmulnbits", "format: matmulnbits\n  maxDeltaPpl: 0.0001");
        String failing = call("POST", base, tight, "application/yaml", "acme").body().path("id").asText();
        JsonNode failed = awaitState(failing, "acme", "failed", "completed");
        assertEquals("failed", failed.path("state").asText());
        assertEquals("ACCURACY_GATE", failed.path("error").path("code").asText());
        assertTrue(failed.path("stages").get(0).path("report").path("layers").size() > 0, "the report is attached");
        assertEquals(1, failed.path("stages").size(), "export never ran");
    }

    @Test
    void aModelTheQuantizeServicesCannotHoldIsRefusedWithTheMemoryTheyReport() throws Exception {
        // no hexforge.worker-memory here: the limit is what the quantize service (this JVM's heap) reports
        Path big = Files.createDirectories(home.resolve("models").resolve("qwen2.5-7b-config-only"));
        com.fasterxml.jackson.databind.node.ObjectNode config = (com.fasterxml.jackson.databind.node.ObjectNode)
                JSON.readTree(Fixtures.qwen2Tiny().resolve("config.json").toFile());
        config.put("hidden_size", 3584).put("intermediate_size", 18944).put("num_hidden_layers", 28).put("num_attention_heads", 28)
                .put("num_key_value_heads", 4).put("vocab_size", 152064).put("max_position_embeddings", 32768);
        JSON.writeValue(big.resolve("config.json").toFile(), config);
        String spec = "{\"name\": \"too-big\", \"model\": {\"path\": " + JSON.writeValueAsString(big.toString())
                + "}, \"stages\": [\"quantize\", \"export\"], \"quantize\": {\"method\": \"rtn\", \"bits\": 8}}";
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        Reply r = call("POST", base, spec, "application/json", "planner");
        while (r.status() != 400 && System.nanoTime() < deadline) { // the services report once they are up
            Thread.sleep(500);
            r = call("POST", base, spec, "application/json", "planner");
        }
        assertEquals(400, r.status(), String.valueOf(r.body()));
        JsonNode problem = r.body().path("problems").get(0);
        assertEquals("quantize", problem.path("path").asText(), r.body().toString());
        String heap = dev.hexforge.memory.MemoryPlan.gb(Runtime.getRuntime().maxMemory());
        assertTrue(problem.path("message").asText().endsWith("this fleet's quantize services can have " + heap + " (as they report it)"),
                r.body().toString());
        assertEquals(1, r.body().path("problems").size(), "export streams: it fits");
    }

    @Test
    void everyApiCallButHealthAndReadinessNeedsALiveToken() throws Exception {
        assertEquals(401, call("GET", base, null, null, null).status());
        Reply bad = call("GET", base, null, null, "hxf_not-a-real-token");
        assertEquals(401, bad.status());
        assertTrue(bad.body().path("error").asText().contains("invalid"), bad.body().toString());
        assertEquals(401, call("POST", base, "{}", "application/json", null).status());
        assertEquals(200, call("GET", base.replace("/jobs", "/health"), null, null, null).status());
        Reply ready = call("GET", base.replace("/jobs", "/ready"), null, null, null);
        assertEquals(200, ready.status());
        assertEquals("{\"status\":\"ready\",\"database\":\"up\",\"broker\":\"up\",\"objectStore\":\"up\"}", ready.body().toString());
    }

    @Test
    void theOpenApiDocumentDescribesTheApi() throws Exception {
        JsonNode doc = call("GET", base.replace("/api/v1/jobs", "/v3/api-docs"), null, null, null).body();
        for (String path : List.of("/api/v1/jobs", "/api/v1/jobs/{id}/cancel", "/api/v1/jobs/{id}/events", "/api/v1/uploads",
                "/api/v1/artifacts/{id}/download", "/api/v1/keys", "/api/v1/tokens")) {
            assertTrue(doc.path("paths").has(path), "documents " + path + ": " + doc.path("paths").properties().stream()
                    .map(java.util.Map.Entry::getKey).toList());
        }
        assertEquals("bearer", doc.path("components").path("securitySchemes").path("token").path("scheme").asText());
    }

    @Test
    void everyOutputIsCataloguedSignedAndDownloadableAndTheSignStageAddsProvenance() throws Exception {
        String spec = "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [export, sign]\nexport:\n  variant: static\n  seq: 32\n  ctx: 64\n";
        String id = call("POST", base, spec, "application/yaml", "acme").body().path("id").asText();
        JsonNode job = awaitState(id, "acme", "completed", "failed");
        assertEquals("completed", job.path("state").asText(), job.toString());
        String api = base.replace("/jobs", "");
        JsonNode list = awaitArtifacts(api + "/artifacts?job=" + id, 2);
        JsonNode signed = job.path("stages").get(1).path("outputs").get(0);
        JsonNode detail = call("GET", api + "/artifacts/" + signed.path("id").asText(), null, null, "acme").body();
        assertEquals("sign", detail.path("stage").asText(), detail.toString());
        assertTrue(detail.path("signature").path("provenance").asBoolean(), detail.toString());
        assertEquals(job.path("stages").get(1).path("report").path("rootDigest").asText(), detail.path("signature").path("rootDigest").asText());

        Path out = home.resolve("downloaded-" + id);
        List<String> paths = new java.util.ArrayList<>();
        detail.path("files").forEach(f -> paths.add(f.path("path").asText()));
        paths.add("model.sig");
        for (String p : paths) {
            HttpResponse<String> redirect = HTTP.send(HttpRequest.newBuilder(URI.create(api + "/artifacts/" + detail.path("id").asText()
                    + "/download?path=" + java.net.URLEncoder.encode(p, java.nio.charset.StandardCharsets.UTF_8)))
                    .header("Authorization", "Bearer " + TOKENS.get("acme")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(302, redirect.statusCode(), redirect.body());
            Path target = out.resolve(p);
            Files.createDirectories(target.getParent());
            HttpResponse<Path> got = HTTP.send(HttpRequest.newBuilder(URI.create(redirect.headers().firstValue("Location").orElseThrow())).build(),
                    HttpResponse.BodyHandlers.ofFile(target));
            assertEquals(200, got.statusCode(), p);
        }
        JsonNode keys = call("GET", api + "/keys", null, null, "acme").body().path("keys");
        Path pub = home.resolve("fleet-key.pub.pem");
        Files.writeString(pub, keys.get(0).path("pem").asText());
        assertEquals(detail.path("signature").path("keyHint").asText(), keys.get(0).path("hint").asText());
        ModelSignature.Verified v = ModelSignature.verify(out, Keys.readPublic(pub), out.resolve("model.sig"), List.of());
        assertEquals(detail.path("signature").path("rootDigest").asText(), v.rootDigest());
        JsonNode provenance = Provenance.verify(out, Keys.readPublic(pub));
        assertTrue(provenance.toString().contains("export/onnx-static"), "the provenance names the export: " + provenance);
        JsonNode deps = provenance.at("/predicate/buildDefinition/resolvedDependencies");
        String baseDigest = dev.hexforge.signing.Provenance.digestOf(Fixtures.qwen2Tiny());
        assertTrue(deps.toString().contains("base-model:") && deps.toString().contains(baseDigest), "the base model's root digest: " + deps);
        assertTrue(provenance.at("/predicate/runDetails/builder/version").has("onnxOpset"), "the exporter's versions: " + provenance);
        Files.writeString(out.resolve("export.json"), "{}");
        assertThrows(dev.hexforge.signing.VerificationException.class,
                () -> ModelSignature.verify(out, Keys.readPublic(pub), out.resolve("model.sig"), List.of()));

        String artifact = api + "/artifacts/" + detail.path("id").asText();
        assertEquals(404, call("GET", artifact, null, null, "someone-else").status(), "another tenant's artifact does not exist");
        assertEquals(404, call("GET", artifact + "/download?path=model.sig", null, null, "someone-else").status());
        assertEquals(0, call("GET", api + "/artifacts", null, null, "someone-else").body().path("total").asInt());
        Reply noPath = call("GET", artifact + "/download", null, null, "acme");
        assertEquals(400, noPath.status());
        assertTrue(noPath.body().path("error").asText().contains("?path="), noPath.body().toString());
        Reply noFile = call("GET", artifact + "/download?path=nope.bin", null, null, "acme");
        assertEquals(404, noFile.status());
        assertTrue(noFile.body().path("error").asText().contains("nope.bin"), noFile.body().toString());
        assertEquals(2, list.path("total").asInt(), list.toString());
    }

    @Test
    void aPresignedUrlStopsWorkingWhenItExpires() throws Exception {
        String spec = "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [sign]\nsign:\n  provenance: false\n";
        String id = call("POST", base, spec, "application/yaml", "acme").body().path("id").asText();
        JsonNode job = awaitState(id, "acme", "completed", "failed");
        assertEquals("completed", job.path("state").asText(), job.toString());
        String artifact = base.replace("/jobs", "/artifacts/") + job.path("stages").get(0).path("outputs").get(0).path("id").asText();
        HttpResponse<String> redirect = HTTP.send(HttpRequest.newBuilder(URI.create(artifact + "/download?path=config.json"))
                .header("Authorization", "Bearer " + TOKENS.get("acme")).build(), HttpResponse.BodyHandlers.ofString());
        URI url = URI.create(redirect.headers().firstValue("Location").orElseThrow());
        assertEquals(200, HTTP.send(HttpRequest.newBuilder(url).build(), HttpResponse.BodyHandlers.discarding()).statusCode());
        Thread.sleep(4500); // the test fleet's URLs live 3 s
        int expired = HTTP.send(HttpRequest.newBuilder(url).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        assertEquals(403, expired, "an expired URL is refused by the storage");
    }

    static JsonNode awaitArtifacts(String url, int n) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        JsonNode list = null;
        while (System.nanoTime() < deadline) {
            list = call("GET", url, null, null, "acme").body();
            if (list.path("total").asInt() >= n) {
                return list;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("expected " + n + " artifacts at " + url + ": " + list);
    }

    @Test
    void aDownloadResumesRenewsAnExpiredUrlChecksEveryDigestAndTheSignatureThenMovesIntoPlace() throws Exception {
        String spec = "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [export, sign]\nexport:\n  variant: dynamic\n";
        String id = call("POST", base, spec, "application/yaml", "acme").body().path("id").asText();
        JsonNode job = awaitState(id, "acme", "completed", "failed");
        assertEquals("completed", job.path("state").asText(), job.toString());
        String artifact = job.path("stages").get(1).path("outputs").get(0).path("id").asText();
        awaitArtifacts(base.replace("/jobs", "/artifacts?job=") + id, 2);
        dev.hexforge.client.GatewayClient client = new dev.hexforge.client.GatewayClient(base.replace("/api/v1/jobs", ""), TOKENS.get("acme"));
        dev.hexforge.client.ArtifactDownloader downloader = new dev.hexforge.client.ArtifactDownloader(client);

        Path first = home.resolve("dl-first-" + id);
        dev.hexforge.client.ArtifactDownloader.Result whole = downloader.download(artifact, first, null, (p, d, n) -> { });
        assertTrue(whole.provenance());
        assertEquals(0, whole.resumedBytes());

        // an earlier run that was cut off: half of the weights arrived, and a damaged half of the tokenizer
        Path second = home.resolve("dl-second-" + id);
        Path partial = dev.hexforge.client.ArtifactDownloader.staging(second);
        byte[] weights = Files.readAllBytes(first.resolve("onnx/model.onnx_data"));
        Files.createDirectories(partial.resolve("onnx"));
        Files.write(partial.resolve("onnx/model.onnx_data"), java.util.Arrays.copyOf(weights, weights.length / 2));
        Files.write(partial.resolve("tokenizer.json"), new byte[1000]);
        boolean[] slept = new boolean[1];
        dev.hexforge.client.ArtifactDownloader.Result resumed = downloader.download(artifact, second, null, (p, d, n) -> {
            if (!slept[0]) {
                slept[0] = true;
                try {
                    Thread.sleep(4500); // longer than the test fleet's 3 s URLs: the first URL expires unused
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        assertEquals(whole.rootDigest(), resumed.rootDigest());
        assertTrue(resumed.resumedBytes() >= weights.length / 2, "resumed " + resumed.resumedBytes());
        assertTrue(resumed.urlRenewals() >= 1, "an expired URL is renewed");
        assertTrue(Files.notExists(partial), "the staging folder became the download");
        assertEquals(java.util.Arrays.hashCode(weights), java.util.Arrays.hashCode(Files.readAllBytes(second.resolve("onnx/model.onnx_data"))));

        Path third = home.resolve("dl-third-" + id);
        java.security.PublicKey stranger = Keys.generate().getPublic();
        assertThrows(dev.hexforge.signing.VerificationException.class, () -> downloader.download(artifact, third, stranger, (p, d, n) -> { }));
        assertTrue(Files.notExists(third), "nothing is put in place unverified");
        assertThrows(dev.hexforge.client.ArtifactDownloader.DownloadException.class,
                () -> downloader.download(artifact, first, null, (p, d, n) -> { }), "an existing folder is not overwritten");
        dev.hexforge.client.GatewayClient other = new dev.hexforge.client.GatewayClient(base.replace("/api/v1/jobs", ""), TOKENS.get("someone-else"));
        IllegalArgumentException notYours = assertThrows(IllegalArgumentException.class,
                () -> new dev.hexforge.client.ArtifactDownloader(other).download(artifact, home.resolve("dl-other"), null, (p, d, n) -> { }));
        assertTrue(notYours.getMessage().contains("404"), notYours.getMessage());
    }

    static byte[] tarGz(Path folder, String top, String extraEntry) throws Exception {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try (var gz = new java.util.zip.GZIPOutputStream(bytes);
             var tar = new org.apache.commons.compress.archivers.tar.TarArchiveOutputStream(gz)) {
            try (var files = Files.list(folder)) {
                for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
                    var e = new org.apache.commons.compress.archivers.tar.TarArchiveEntry(top + "/" + f.getFileName());
                    e.setSize(Files.size(f));
                    tar.putArchiveEntry(e);
                    Files.copy(f, tar);
                    tar.closeArchiveEntry();
                }
            }
            if (extraEntry != null) {
                var e = new org.apache.commons.compress.archivers.tar.TarArchiveEntry(extraEntry, true);
                e.setSize(4);
                tar.putArchiveEntry(e);
                tar.write("boom".getBytes(java.nio.charset.StandardCharsets.UTF_8));
                tar.closeArchiveEntry();
            }
        }
        return bytes.toByteArray();
    }

    static Reply upload(String name, byte[] body, String tenant) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(base.replace("/jobs", "/uploads?name=") + name))
                .header("Authorization", "Bearer " + TOKENS.get(tenant)).header("Content-Type", "application/octet-stream")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), JSON.readTree(r.body()));
    }

    /** Objects under uploads/ in storage, to prove a refused upload left nothing behind. */
    static long storedUploads() throws Exception {
        io.minio.MinioClient s3 = io.minio.MinioClient.builder().endpoint(infra.s3Endpoint())
                .credentials(infra.s3AccessKey(), infra.s3SecretKey()).build();
        long n = 0;
        for (var ignored : s3.listObjects(io.minio.ListObjectsArgs.builder().bucket(ArtifactStore.BUCKET).prefix("uploads/")
                .recursive(true).build())) {
            n++;
        }
        return n;
    }

    /** Sends a request by hand (headers, then part of a body) and returns the status line of the answer. */
    static String raw(String head, byte[] body, int send) throws Exception {
        URI u = URI.create(base);
        try (java.net.Socket s = new java.net.Socket(u.getHost(), u.getPort())) {
            s.setSoTimeout(30_000);
            var out = s.getOutputStream();
            out.write(head.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            try {
                out.write(body, 0, send);
                out.flush();
                s.shutdownOutput(); // the client goes away mid-body
            } catch (java.io.IOException serverClosedFirst) {
                // the gateway answered and closed before the body was sent: read what it said
            }
            return new java.io.BufferedReader(new java.io.InputStreamReader(s.getInputStream(), java.nio.charset.StandardCharsets.US_ASCII))
                    .readLine();
        }
    }

    @Test
    void anUploadedModelArchiveRunsThroughAJob() throws Exception {
        Reply up = upload("qwen2-tiny.tar.gz", tarGz(Fixtures.qwen2Tiny(), "qwen2-tiny", null), "acme");
        assertEquals(201, up.status(), up.body().toString());
        assertEquals("tar.gz", up.body().path("format").asText());
        String uploadId = up.body().path("id").asText();
        assertEquals(200, call("GET", base.replace("/jobs", "/uploads/") + uploadId, null, null, "acme").status());
        assertEquals(404, call("GET", base.replace("/jobs", "/uploads/") + uploadId, null, null, "someone-else").status());

        String spec = "model:\n  upload: " + uploadId + "\nstages: [export]\nexport:\n  variant: dynamic\n";
        Reply created = call("POST", base, spec, "application/yaml", "acme");
        assertEquals(201, created.status(), created.body().toString());
        assertEquals("qwen2-tiny.tar.gz", created.body().path("name").asText());
        JsonNode job = awaitState(created.body().path("id").asText(), "acme", "completed", "failed");
        assertEquals("completed", job.path("state").asText(), job.toString());
        assertEquals("onnx-dynamic", job.path("stages").get(0).path("outputs").get(0).path("kind").asText());

        Reply foreign = call("POST", base, spec, "application/yaml", "someone-else");
        assertEquals(400, foreign.status(), "another tenant's upload cannot be used");
        assertTrue(foreign.body().path("problems").toString().contains("model.upload"), foreign.body().toString());
    }

    @Test
    void badUploadsGetAClear4xxAndLeaveNothingStored() throws Exception {
        long before = storedUploads();
        String auth = "Authorization: Bearer " + TOKENS.get("acme") + "\r\n";
        String huge = raw("POST /api/v1/uploads?name=huge.tar.gz HTTP/1.1\r\nHost: x\r\n" + auth
                + "Content-Type: application/octet-stream\r\nContent-Length: 10737418240\r\n\r\n", new byte[1 << 16], 1 << 16);
        assertTrue(huge.contains(" 413"), "a 10 GB upload over the 8 MB limit: " + huge);

        byte[] nine = new byte[9 << 20];
        HttpResponse<String> streamed = HTTP.send(HttpRequest.newBuilder(URI.create(base.replace("/jobs", "/uploads?name=x.tar")))
                .header("Authorization", "Bearer " + TOKENS.get("acme")).header("Content-Type", "application/octet-stream")
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(nine))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(413, streamed.statusCode(), "no length given, more than the limit sent: " + streamed.body());

        byte[] archive = tarGz(Fixtures.qwen2Tiny(), "m", null);
        String cut = raw("POST /api/v1/uploads?name=cut.tar.gz HTTP/1.1\r\nHost: x\r\n" + auth
                + "Content-Type: application/octet-stream\r\nContent-Length: " + archive.length + "\r\n\r\n", archive, archive.length / 2);
        assertTrue(cut.contains(" 400"), "an upload cut off halfway: " + cut);

        Reply hostile = upload("evil.tar.gz", tarGz(Fixtures.qwen2Tiny(), "m", "../../etc/cron.d/evil"), "acme");
        assertEquals(400, hostile.status());
        assertTrue(hostile.body().path("error").asText().contains("climbs out"), hostile.body().toString());
        Reply notArchive = upload("model.safetensors", "not an archive".getBytes(java.nio.charset.StandardCharsets.UTF_8), "acme");
        assertEquals(400, notArchive.status());
        assertTrue(notArchive.body().path("error").asText().contains("not a zip, tar or tar.gz"), notArchive.body().toString());
        assertEquals(400, upload("a%2Fb", new byte[10], "acme").status(), "a name with a slash");

        assertEquals(before, storedUploads(), "nothing half-written in storage");
        Reply unknown = call("POST", base, "model:\n  upload: 7d444840-9dc0-11d1-b245-5ffdce74fad2\nstages: [export]\n", "application/yaml", "acme");
        assertEquals(400, unknown.status());
        assertTrue(unknown.body().path("problems").toString().contains("upload the model first"), unknown.body().toString());
    }

    @Test
    void aTenantsUploadsStayWithinItsQuota() throws Exception {
        byte[] data = "{\"instruction\": \"x\", \"output\": \"y\"}\n".repeat(7 << 20 >> 5).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        for (int i = 0; i < 3; i++) {
            assertEquals(201, upload("d" + i + ".jsonl", data, "hoarder").status());
        }
        long before = storedUploads();
        Reply over = upload("d3.jsonl", data, "hoarder");
        assertEquals(413, over.status(), over.body().toString());
        assertTrue(over.body().path("error").asText().contains("(hexforge.uploads.tenant-quota); nothing was stored"), over.body().toString());
        assertEquals(before, storedUploads(), "the refused upload left nothing in storage");
        assertEquals(201, upload("small.jsonl", data, "acme").status(), "another tenant's quota is its own");
    }

    @Test
    void anEventTheGatewayCannotApplyIsKeptAndNamedInTheJob() throws Exception {
        // the export service holds off, so the job's export attempt is still current when the event arrives
        var exports = exportService.getBean(org.springframework.kafka.config.KafkaListenerEndpointRegistry.class).getListenerContainer("export-requests");
        exports.pause();
        String id;
        String bad;
        JsonNode job;
        @SuppressWarnings("unchecked")
        org.springframework.kafka.core.KafkaTemplate<String, String> kafka = gateway.getBean(org.springframework.kafka.core.KafkaTemplate.class);
        try {
            id = call("POST", base, "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [export, sign]\nexport:\n  variant: static\n",
                    "application/yaml", "acme").body().path("id").asText();
            String attempt = call("GET", base + "/" + id, null, null, "acme").body().path("stages").path(0).path("id").asText();
            // a completed event the state machine must not take: an export that stored nothing
            bad = "{\"type\": \"completed\", \"schemaVersion\": 1, \"jobId\": \"" + id + "\", \"attemptId\": \"" + attempt
                    + "\", \"tenant\": \"acme\", \"stage\": \"EXPORT\", \"at\": \"" + java.time.Instant.now() + "\", \"outputs\": null, \"report\": {}}";
            kafka.send(dev.hexforge.contracts.Topics.STAGE_EVENTS, id, bad).get();
            job = awaitState(id, "acme", "failed", "completed");
            kafka.send(dev.hexforge.contracts.Topics.STAGE_EVENTS, "garbage", "{not an event").get(); // unreadable: kept too
        } finally {
            exports.resume();
        }
        assertEquals("failed", job.path("state").asText(), job.toString());
        assertEquals("EVENT_UNPROCESSABLE", job.path("error").path("code").asText(), job.toString());
        assertTrue(job.path("error").path("message").asText().contains("is kept on " + dev.hexforge.contracts.Topics.STAGE_EVENTS_DEAD), job.toString());
        assertEquals("EVENT_UNPROCESSABLE", job.path("stages").path(0).path("error").path("code").asText(), job.toString());
        assertTrue(job.path("error").path("message").asText().contains("a completed export event without outputs"), job.toString());
        // the event itself is on the dead-letter topic, as it arrived
        java.util.Properties props = new java.util.Properties();
        props.put("bootstrap.servers", infra.kafka());
        props.put("group.id", "dead-letter-check-" + java.util.UUID.randomUUID());
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", org.apache.kafka.common.serialization.StringDeserializer.class.getName());
        props.put("value.deserializer", org.apache.kafka.common.serialization.StringDeserializer.class.getName());
        java.util.Set<String> dead = new java.util.HashSet<>();
        try (var consumer = new org.apache.kafka.clients.consumer.KafkaConsumer<String, String>(props)) {
            consumer.subscribe(List.of(dev.hexforge.contracts.Topics.STAGE_EVENTS_DEAD));
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!(dead.contains(bad) && dead.contains("{not an event")) && System.nanoTime() < deadline) {
                for (var r : consumer.poll(Duration.ofMillis(500))) {
                    dead.add(r.value());
                }
            }
        }
        assertTrue(dead.contains(bad), "the unprocessable event is on " + dev.hexforge.contracts.Topics.STAGE_EVENTS_DEAD);
        assertTrue(dead.contains("{not an event"), "so is an unreadable one, not dropped");
        // and the job resumes from it: the export runs again and the job completes
        assertEquals(200, call("POST", base + "/" + id + "/resume", null, null, "acme").status());
        assertEquals("completed", awaitState(id, "acme", "completed", "failed").path("state").asText());
    }

    @Test
    void onlyTheAttemptTheGatewayAcceptedIsCatalogued() throws Exception {
        String id = call("POST", base, "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [export]\nexport:\n  variant: dynamic\n",
                "application/yaml", "acme").body().path("id").asText();
        JsonNode job = awaitState(id, "acme", "completed", "failed");
        String list = base.replace("/jobs", "/artifacts?job=") + id;
        awaitArtifacts(list, 1); // the accepted export's output
        JsonNode out = job.path("stages").get(0).path("outputs").get(0);
        // a late completion of an attempt the gateway never accepted (superseded, or redelivered), with real stored output
        String late = java.util.UUID.randomUUID().toString();
        String sha = out.path("sha256").asText();
        String event = "{\"type\": \"completed\", \"schemaVersion\": 1, \"jobId\": \"" + id + "\", \"attemptId\": \"" + late
                + "\", \"tenant\": \"acme\", \"stage\": \"EXPORT\", \"at\": \"" + java.time.Instant.now() + "\", \"outputs\": [{\"id\": \""
                + dev.hexforge.contracts.StageEvents.artifactId(late, sha) + "\", \"kind\": \"onnx-dynamic\", \"sha256\": \"" + sha
                + "\", \"size\": " + out.path("size").asLong() + ", \"key\": \"" + ArtifactStore.key(sha) + "\"}], \"report\": {}}";
        @SuppressWarnings("unchecked")
        org.springframework.kafka.core.KafkaTemplate<String, String> kafka = gateway.getBean(org.springframework.kafka.core.KafkaTemplate.class);
        kafka.send(dev.hexforge.contracts.Topics.STAGE_EVENTS, id, event).get();
        Thread.sleep(3000);
        JsonNode after = call("GET", list, null, null, "acme").body();
        assertEquals(1, after.path("total").asInt(), "the late attempt's output is not catalogued: " + after);
        assertEquals("completed", call("GET", base + "/" + id, null, null, "acme").body().path("state").asText());
    }

    @Test
    void aTransitionMadeOnAStaleCopyOfAJobFailsInsteadOfOverwriting() throws Exception {
        String id = call("POST", base, "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [sign]\nsign:\n  provenance: false\n",
                "application/yaml", "acme").body().path("id").asText();
        awaitState(id, "acme", "completed", "failed");
        JobRepository repo = gateway.getBean(JobRepository.class);
        JobEntity stale = repo.findById(java.util.UUID.fromString(id)).orElseThrow();
        JobEntity fresh = repo.findById(java.util.UUID.fromString(id)).orElseThrow();
        fresh.error = new ErrorInfo(null, null, "first");
        repo.save(fresh);
        stale.error = new ErrorInfo(null, null, "second");
        assertThrows(org.springframework.dao.OptimisticLockingFailureException.class, () -> repo.save(stale));
        assertEquals("first", repo.findById(java.util.UUID.fromString(id)).orElseThrow().error.hint);
        // a step that loses such a race is run again on fresh state
        int[] tries = {0};
        assertEquals("done", Conflicts.retry(() -> {
            if (++tries[0] < 3) {
                throw new org.springframework.orm.ObjectOptimisticLockingFailureException(JobEntity.class, id);
            }
            return "done";
        }));
        assertEquals(3, tries[0]);
    }

    @Test
    void anAttemptNoServiceStartsIsDispatchedAgainAndFencedOff() throws Exception {
        var listeners = quantizeService.getBean(org.springframework.kafka.config.KafkaListenerEndpointRegistry.class);
        var container = listeners.getListenerContainer("quantize-requests");
        container.pause(); // as if the request were lost, or every quantize service down
        String id;
        JsonNode job;
        try {
            id = call("POST", base, "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [quantize]\nquantize:\n  method: rtn\n",
                    "application/yaml", "acme").body().path("id").asText();
            job = awaitState(id, "acme", "failed", "completed");
        } finally {
            container.resume();
        }
        assertEquals("STAGE_STALLED", job.path("error").path("code").asText(), job.toString());
        assertTrue(job.path("error").path("message").asText().contains("no quantize service started the attempt within 10 s"), job.toString());
        assertEquals(3, job.path("stages").size(), "three attempts, each dispatched anew: " + job);
        // the service, back, finds the three requests fenced off and runs none of them
        Thread.sleep(5000);
        JsonNode after = call("GET", base + "/" + id, null, null, "acme").body();
        assertEquals("failed", after.path("state").asText());
        ArtifactStore store = quantizeService.getBean(ArtifactStore.class);
        for (JsonNode a : after.path("stages")) {
            assertEquals("failed", a.path("state").asText(), after.toString());
            String attempt = a.path("id").asText();
            assertTrue(store.keysUnder(ArtifactStore.attemptPrefix(attempt)).contains(ArtifactStore.cancelledKey(attempt)), "fenced: " + attempt);
            assertFalse(store.keysUnder(ArtifactStore.attemptPrefix(attempt)).contains(ArtifactStore.resultKey(attempt)),
                    "no result stored for fenced attempt " + attempt);
        }
    }
}
