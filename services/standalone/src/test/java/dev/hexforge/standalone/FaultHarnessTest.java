package dev.hexforge.standalone;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.client.ArtifactDownloader;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.infra.EmbeddedKafka;
import dev.hexforge.infra.EmbeddedPostgres;
import dev.hexforge.infra.EmbeddedS3;
import dev.hexforge.io.ModelArchive;
import dev.hexforge.signing.Keys;
import dev.hexforge.standalone.ProcessFleet.Container;
import dev.hexforge.store.ArtifactStore;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.yaml.snakeyaml.Yaml;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The fault harness of issue 20: docker-compose.yml's fleet, one process per service (as {@link DeployedAsProcessesTest}
 * runs it), on a Kafka broker, a PostgreSQL server and an S3 server of its own that can each be stopped and started
 * again on the same ports and data. Each test injects one fault into a running job — a stage service killed with
 * SIGKILL mid-stage and started again (as its orchestrator restarts the container), the broker or the database
 * restarted, the object store away for 30 s during an upload, a stage's output and a download, the gateway killed
 * between a transaction's commit and the outbox relay — and then checks the same invariants: the job completes with
 * one completed attempt a stage; every output the gateway accepted is stored whole and verifies, and is catalogued,
 * and nothing else of the job is; the job's event stream (reconnected as a client does) ends with the job's end.
 */
@Tag("fleet")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FaultHarnessTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final List<String> STAGES = List.of("finetune", "merge", "quantize", "export", "compile", "sign", "benchmark");
    static final Map<String, String> SERVICE_OF = Map.of("finetune", "finetune-service", "merge", "finetune-service",
            "quantize", "quantize-service", "export", "export-service", "compile", "compile-service", "sign", "artifact-service",
            "benchmark", "device-runner");
    static final Duration JOB_TIMEOUT = Duration.ofSeconds(240);

    final String secret = "faults-" + Long.toHexString(System.nanoTime());
    final KeyPair signingKey = Keys.generate();
    Path dir;
    Infra infra;
    ProcessFleet fleet;
    GatewayClient gateway;
    ArtifactStore store;
    String modelUpload;
    String dataUpload;
    /** The soak lets services exit and come back (one started while the object store is away refuses to start). */
    boolean soaking;
    /** The signed bundle of a completed job, for the download under an outage. */
    String lastSignedArtifact;

    /** Kafka, PostgreSQL and S3, each stopped and started again on its own ports with its data kept, as a restarted container is. */
    final class Infra implements AutoCloseable {
        final int kafkaPort = EmbeddedInfra.Ports.restartable();
        final int controllerPort = EmbeddedInfra.Ports.restartable();
        final int pgPort = EmbeddedInfra.Ports.restartable();
        final int s3Port = EmbeddedInfra.Ports.restartable();
        EmbeddedKafka kafka;
        EmbeddedPostgres pg;
        EmbeddedS3 s3;

        void startKafka() {
            kafka = EmbeddedKafka.start(dir.resolve("kafka"), kafkaPort, controllerPort);
        }

        void stopKafka() {
            kafka.close();
            kafka = null;
        }

        void startPostgres() {
            pg = EmbeddedPostgres.start(dir.resolve("postgres"), pgPort);
        }

        void stopPostgres() {
            pg.close();
            pg = null;
        }

        void startS3() {
            s3 = EmbeddedS3.start(dir.resolve("minio"), s3Port, "hexforge", secret);
        }

        void stopS3() {
            s3.close();
            s3 = null;
        }

        void startWhatIsStopped() {
            if (pg == null) {
                startPostgres();
            }
            if (s3 == null) {
                startS3();
            }
            if (kafka == null) {
                startKafka();
            }
        }

        String jdbcUrl() {
            return "jdbc:postgresql://127.0.0.1:" + pgPort + "/hexforge_faults";
        }

        @Override
        public void close() {
            if (kafka != null) {
                stopKafka();
            }
            if (s3 != null) {
                stopS3();
            }
            if (pg != null) {
                stopPostgres();
            }
        }
    }

    @BeforeAll
    @SuppressWarnings("unchecked")
    void startTheFleet() throws Exception {
        dir = Files.createTempDirectory("hexforge-faults");
        infra = new Infra();
        infra.startPostgres();
        infra.startS3();
        infra.startKafka();
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + infra.pgPort + "/postgres", "postgres", "postgres");
             Statement s = c.createStatement()) {
            s.execute("CREATE ROLE hexforge LOGIN PASSWORD '" + secret + "'");
            s.execute("CREATE DATABASE hexforge_faults OWNER hexforge");
        }
        Map<String, Object> compose = new Yaml().load(Files.readString(DeployFilesTest.ROOT.resolve("docker-compose.yml")));
        Map<String, Map<String, Object>> services = (Map<String, Map<String, Object>>) compose.get("services");
        Map<String, String> shell = Map.of("HEXFORGE_SECRET", secret, "HEXFORGE_S3_PUBLIC_ENDPOINT", "http://127.0.0.1:" + infra.s3Port);
        Path key = ProcessFleet.folder(dir, "secrets").resolve(DeployedAsProcessesTest.SIGNING_KEY_FILE);
        Files.writeString(key, Keys.privatePem(signingKey.getPrivate()));
        List<Container> containers = DeployedAsProcessesTest.composeContainers(dir, services, shell,
                Map.of(DeployedAsProcessesTest.SIGNING_KEY_FILE, key));
        // what the file leaves at defaults, shortened so a restarted consumer gets its partitions back in seconds
        // (a killed member's session must end first: 45 s by default) and a silent attempt is noticed sooner
        // and a device runner that died mid-task and was not started again loses its lease in 25 s (60 s by default; the
        // runner heartbeats every 10 s)
        Map<String, String> tuning = Map.of("SPRING_APPLICATION_JSON", JSON.writeValueAsString(Map.of(
                "spring.kafka.consumer.properties.session.timeout.ms", "6000",
                "spring.kafka.consumer.properties.heartbeat.interval.ms", "1000",
                "hexforge.worker.heartbeat", "1s",
                "hexforge.device-lease", "25s")));
        fleet = new ProcessFleet(dir, containers, Map.of(
                "kafka:9092", "127.0.0.1:" + infra.kafkaPort,
                "http://minio:9000", "http://127.0.0.1:" + infra.s3Port,
                "jdbc:postgresql://postgres:5432/hexforge", infra.jdbcUrl()), tuning);
        gateway = fleet.awaitGateway(Duration.ofSeconds(180));
        // the benchmark stage's device: this host, as `hexforge device add` and `hexforge-device-runner serve` set it up
        String deviceToken = gateway.ok(gateway.send("POST", "/api/v1/devices", "{\"name\": \"harness-host\"}", "application/json"))
                .path("token").asText();
        Path trust = ProcessFleet.folder(dir, "secrets").resolve("fleet-key.pub.pem");
        Files.writeString(trust, Keys.publicPem(signingKey.getPublic()));
        fleet.add("device-runner", new ProcessFleet.Launch(dev.hexforge.devicerunner.Main.class,
                List.of("serve", "--trust", trust.toString(), "--work", ProcessFleet.folder(dir, "device-runner-work").toString()),
                Map.of("HEXFORGE_URL", "http://127.0.0.1:" + fleet.gatewayPort, "HEXFORGE_DEVICE_TOKEN", deviceToken)));
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!gateway.ok(gateway.send("GET", "/api/v1/devices", null, null)).path("devices").path(0).path("info").path("backends")
                .toString().contains("ort-cpu")) { // a job with a benchmark stage is refused until a runner offers the backend
            assertTrue(System.nanoTime() < deadline, "the device runner registered within 120 s\n" + fleet.logs());
            Thread.sleep(250);
        }
        store = new ArtifactStore("http://127.0.0.1:" + infra.s3Port, "hexforge", secret);

        Path archive = dir.resolve("qwen2-tiny.tar");
        try (var out = Files.newOutputStream(archive)) {
            ModelArchive.pack(Fixtures.qwen2Tiny(), out);
        }
        modelUpload = upload(archive).path("id").asText();
        dataUpload = upload(Fixtures.loraTaskLines(16, dir.resolve("task.jsonl"))).path("id").asText();
    }

    @AfterAll
    void stopTheFleet() throws Exception {
        try {
            if (fleet != null) {
                fleet.close();
            }
        } finally {
            if (infra != null) {
                infra.close();
            }
            dev.hexforge.io.Folders.deleteQuietly(dir);
        }
    }

    /**
     * Every test leaves the fleet whole (a failed one too, so the next starts from a running fleet); in these tests no
     * service exits but the one killed, so none was started again by the restart policy.
     */
    @AfterEach
    void restoreTheFleet() throws Exception {
        infra.startWhatIsStopped();
        List<String> restarted = fleet.restartedByPolicy();
        if (!soaking) {
            assertTrue(restarted.isEmpty(), "services exited on their own: " + restarted + "\n" + fleet.logs());
        }
    }

    @Order(1)
    @ParameterizedTest(name = "the {0} stage's service killed mid-stage")
    @ValueSource(strings = {"finetune", "merge", "quantize", "export", "compile", "sign", "benchmark"})
    void aStageServiceKilledMidStageIsStartedAgainAndTheJobCompletes(String stage) throws Exception {
        String service = SERVICE_OF.get(stage);
        // warm stages take 0.2-1 s here: the kill follows the stage's first progress event on the job's stream at once,
        // and a job whose stage still finished first (its completion stamped before the kill) is followed by another
        List<String> missed = new ArrayList<>();
        for (int tries = 1; tries <= 3; tries++) {
            String id = submit();
            JobStream stream = JobStream.open(gateway, id);
            JsonNode before = attempt(job(id), stage); // a first stage can report progress before the stream is open
            if (before == null || !before.path("state").asText().equals("running")) {
                stream.awaitProgressOf(stage, JOB_TIMEOUT);
            }
            Instant killed = Instant.now();
            fleet.kill(service);
            fleet.start(service);
            JsonNode job = awaitEnd(id);
            assertInvariants(job, stream);
            String finished = attempt(job, stage).path("workerFinishedAt").asText();
            if (Instant.parse(finished).isAfter(killed)) {
                return; // the restarted service ran the stage again (or went on with it) and the job completed
            }
            missed.add(id + " (finished " + finished + ", killed " + killed + ")");
        }
        fail("the " + stage + " stage finished before its service was killed in three jobs: " + missed);
    }

    @Order(2)
    @Test
    void theBrokerRestartedMidJob() throws Exception {
        Running run = jobAt("export");
        String id = run.id();
        infra.stopKafka();
        JsonNode ready = readiness();
        assertEquals("down", ready.path("broker").asText(), "readiness names the broker: " + ready);
        assertEquals("running", job(id).path("state").asText(), "the API needs no broker to show a job");
        Thread.sleep(10_000);
        infra.startKafka();
        assertInvariants(awaitEnd(id), run.stream());
    }

    /**
     * The broker away for fifteen of the relay's polls while rows wait in the outbox: when it is back each row reaches
     * its topic once, in order (the relay waits for the producer's verdict on the rows it handed over instead of
     * handing them over again at every poll), and every row is marked sent.
     */
    @Order(3)
    @Test
    void rowsWrittenWhileTheBrokerIsAwayArriveOnceWhenItIsBack() throws Exception {
        String topic = "hexforge.test.outbox-outage." + java.util.UUID.randomUUID();
        insertOutboxRow(topic, "before");
        awaitOutboxSent(topic, 1, Duration.ofSeconds(30)); // the producer knows the topic from here on
        infra.stopKafka();
        for (int i = 0; i < 3; i++) {
            insertOutboxRow(topic, "row-" + i);
        }
        Thread.sleep(15_000);
        infra.startKafka();
        List<String> got = dev.hexforge.testing.fleet.TopicValues.read("127.0.0.1:" + infra.kafkaPort, topic, 4,
                Duration.ofSeconds(90), Duration.ofSeconds(3)); // a copy sent twice would show in the last 3 s
        assertEquals(List.of("before", "row-0", "row-1", "row-2"), got);
        awaitOutboxSent(topic, 4, Duration.ofSeconds(30));
    }

    @Order(4)
    @Test
    void theDatabaseRestartedMidJob() throws Exception {
        Running run = jobAt("compile");
        String id = run.id();
        infra.stopPostgres();
        long t0 = System.nanoTime();
        GatewayClient.Reply r = gateway.send("GET", "/api/v1/jobs/" + id, null, null);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(503, r.status(), "with the database away the API answers 503: " + r.body());
        assertTrue(ms < 2_500, "the 503 comes within about a second, not after the pool's 30 s: " + ms + " ms");
        assertEquals("down", readiness().path("database").asText());
        Thread.sleep(15_000); // longer than the gateway's retries of an event it cannot apply (5, 1 s apart)
        infra.startPostgres();
        assertInvariants(awaitEnd(id), run.stream());
    }

    /**
     * S3 away for 30 s while a job's quantize stage runs (its inputs read or its output stored meanwhile), an upload
     * is made and a signed bundle is downloaded: the upload is refused with 503 and leaves nothing, a download whose
     * patience runs out moves nothing to its folder, and one with the default patience waits; once the store is back
     * the same upload succeeds, the waiting download finishes and verifies, and the job completes.
     */
    @Order(5)
    @Test
    void theObjectStoreAwayFor30sDuringAStageAnUploadAndADownload() throws Exception {
        assertTrue(lastSignedArtifact != null, "an earlier test completed a job whose bundle is downloaded here");
        Path file = Fixtures.loraTaskLines(8, dir.resolve("during-outage.jsonl"));
        Set<String> uploadsBefore = uploadRows();
        Running run = jobAt("quantize");
        String id = run.id();
        infra.stopS3();
        long stopped = System.nanoTime();

        long t0 = System.nanoTime();
        GatewayClient.Reply refused = gateway.upload(file.getFileName().toString(), () -> {
            try {
                return Files.newInputStream(file);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        assertEquals(503, refused.status(), "an upload while the store is away: " + refused.body());
        assertTrue((System.nanoTime() - t0) / 1_000_000 < 5_000, "refused at once");
        assertEquals(uploadsBefore, uploadRows(), "a refused upload leaves no row");

        Path out = dir.resolve("download-during-outage");
        RuntimeException failed = null;
        try {
            new ArtifactDownloader(gateway, java.time.Duration.ofSeconds(3)).download(lastSignedArtifact, out, signingKey.getPublic(),
                    (path, done, size) -> { });
        } catch (RuntimeException e) {
            failed = e;
        }
        assertTrue(failed instanceof ArtifactDownloader.DownloadException d && d.worthRetrying(),
                "a download whose patience ends while the store is away fails, saying a later try may succeed: " + failed);
        assertFalse(Files.exists(out), "a failed download moves nothing to its folder: " + failed.getMessage());
        assertEquals("down", readiness().path("objectStore").asText());
        // a download with the default patience (two minutes), started while the store is away, waits for it
        java.util.concurrent.CompletableFuture<ArtifactDownloader.Result> patient = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> new ArtifactDownloader(gateway).download(lastSignedArtifact, out, signingKey.getPublic(), (path, done, size) -> { }));

        Thread.sleep(Math.max(0, 30_000 - (System.nanoTime() - stopped) / 1_000_000));
        assertFalse(patient.isDone(), "the patient download waits while the store is away");
        infra.startS3();
        assertTrue(upload(file).has("id"), "the same upload is accepted once the store is back");
        ArtifactDownloader.Result got = patient.get(2, java.util.concurrent.TimeUnit.MINUTES);
        assertTrue(got.files() > 1 && got.provenance(), "the download once the store is back verifies: " + got);
        assertInvariants(awaitEnd(id), run.stream());

        // every upload row names an object that is there, and every uploaded object has its row: nothing half-visible
        Set<String> rows = uploadRows();
        Set<String> objects = new HashSet<>();
        for (String key : store.keysUnder("uploads/")) {
            objects.add(key.substring("uploads/".length()));
        }
        assertEquals(rows, objects, "upload rows and uploaded objects");
    }

    /**
     * The gateway killed with SIGKILL after it committed a job's submission and before its outbox relay sent the
     * stage request (the broker is away, so the relay cannot have sent it): the gateway started again relays the row
     * and the job runs to its end, once; the job's stream, broken by the kill, is reconnected and ends with the job.
     */
    @Order(6)
    @Test
    void theGatewayKilledBetweenCommitAndRelay() throws Exception {
        infra.stopKafka();
        String id = submit();
        JobStream stream = JobStream.open(gateway, id);
        assertTrue(unsentOutboxRows(id) > 0, "the submission is committed with its stage request in the outbox, not yet sent");
        fleet.kill("gateway");
        infra.startKafka();
        fleet.start("gateway");
        gateway = fleet.awaitGateway(Duration.ofSeconds(180));
        assertInvariants(awaitEnd(id), stream);
        assertEquals(0, unsentOutboxRows(id), "every outbox row of the job was sent");
    }

    /**
     * Jobs from many clients at once while faults are injected at random (seeded): a stage service killed and started
     * again, the broker, the database or the object store away for a few seconds, the gateway killed and started
     * again. Clients act as a client should (503 or no answer: wait and try again). Afterwards the counts add up
     * exactly: every job completed, one completed attempt a stage, and the catalogue holds exactly the outputs the
     * gateway accepted. CI runs a few jobs; the full soak is a benchmark:
     * {@code -Dhexforge.soak.jobs=1000 -Dhexforge.soak.clients=20} (docs/reliability.md).
     */
    @Order(7)
    @Test
    void aSoakOfJobsFromManyClientsWithSeededFaults() throws Exception {
        soaking = true;
        fleet.restartedByPolicy();
        int jobs = Integer.getInteger("hexforge.soak.jobs", 16);
        int clients = Integer.getInteger("hexforge.soak.clients", 4);
        long seed = Long.getLong("hexforge.soak.seed", 20L);
        java.util.Random random = new java.util.Random(seed);
        List<String> ids = new CopyOnWriteArrayList<>();
        java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger ended = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicLong lastCompletion = new java.util.concurrent.atomic.AtomicLong(System.nanoTime());
        List<Throwable> clientErrors = new CopyOnWriteArrayList<>();
        long started = System.nanoTime();
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            Thread t = new Thread(() -> {
                try {
                    while (next.getAndIncrement() < jobs) {
                        String id = submit();
                        ids.add(id);
                        while (job(id).path("state").asText().equals("running")) {
                            Thread.sleep(250);
                        }
                        lastCompletion.set(System.nanoTime());
                        if (ended.incrementAndGet() % 50 == 0) {
                            System.out.printf("SOAK progress: %d of %d jobs ended after %d s%n", ended.get(), jobs,
                                    (System.nanoTime() - started) / 1_000_000_000);
                        }
                    }
                } catch (Throwable e) {
                    clientErrors.add(e);
                }
            }, "soak-client-" + c);
            threads.add(t);
            t.start();
        }
        Map<String, Integer> injected = new java.util.TreeMap<>();
        List<Long> recoveries = new ArrayList<>();
        while (threads.stream().anyMatch(Thread::isAlive)) {
            Thread.sleep(2_000 + random.nextInt(6_000));
            if (threads.stream().noneMatch(Thread::isAlive)) {
                break;
            }
            String fault = injectAFault(random);
            injected.merge(fault, 1, Integer::sum);
            long back = System.nanoTime();
            long before = lastCompletion.get();
            while (lastCompletion.get() == before && threads.stream().anyMatch(Thread::isAlive)
                    && System.nanoTime() - back < JOB_TIMEOUT.toNanos()) {
                Thread.sleep(100);
            }
            recoveries.add((lastCompletion.get() - back) / 1_000_000);
        }
        for (Thread t : threads) {
            t.join();
        }
        long wallS = (System.nanoTime() - started) / 1_000_000_000;
        assertTrue(clientErrors.isEmpty(), "clients failed: " + clientErrors);
        assertEquals(jobs, ids.size());

        Set<String> accepted = new HashSet<>();
        int attempts = 0;
        List<String> wrong = new ArrayList<>(); // jobs that did not end as they must, each with why
        Map<String, Integer> failedBy = new java.util.TreeMap<>(); // "failed CODE in STAGE" -> jobs
        for (String id : ids) {
            JsonNode job = job(id);
            List<String> completed = new ArrayList<>();
            for (JsonNode a : job.path("stages")) {
                attempts++;
                if (a.path("state").asText().equals("completed")) {
                    completed.add(a.path("stage").asText());
                    a.path("outputs").forEach(o -> accepted.add(o.path("id").asText()));
                }
            }
            if (!job.path("state").asText().equals("completed")) {
                wrong.add(id + " ended " + job.path("state").asText() + ": " + job.path("error"));
                failedBy.merge(job.path("state").asText() + " " + job.path("error").path("code").asText() + " in "
                        + job.path("stages").get(job.path("stages").size() - 1).path("stage").asText(), 1, Integer::sum);
            } else if (!completed.equals(STAGES)) {
                wrong.add(id + " completed with the completed attempts " + completed);
            } else if (attempt(job, "benchmark").path("report").path("results").size() != 1) {
                wrong.add(id + " has benchmark results " + attempt(job, "benchmark").path("report").path("results"));
            }
        }
        Set<String> catalogued = new HashSet<>();
        for (String id : ids) {
            catalogued.addAll(catalogued(id));
        }
        List<Long> sorted = recoveries.stream().sorted().toList();
        // printed whatever the outcome, so a failed soak still says how far it got
        System.out.printf("SOAK jobs=%d clients=%d seed=%d wall=%ds completed-as-required=%d not-ended-as-required=%s attempts=%d "
                        + "outputs=%d catalogued=%d faults=%s restarted-by-policy=%s recovery-ms median=%d max=%d%n",
                jobs, clients, seed, wallS, jobs - wrong.size(), failedBy, attempts, accepted.size(), catalogued.size(), injected,
                fleet.restartedByPolicy(), sorted.isEmpty() ? 0 : sorted.get(sorted.size() / 2), sorted.isEmpty() ? 0 : sorted.get(sorted.size() - 1));
        assertTrue(wrong.isEmpty(), wrong.size() + " of " + jobs + " jobs did not complete with one completed attempt a stage and one "
                + "benchmark result: " + wrong.subList(0, Math.min(5, wrong.size())));
        assertEquals(accepted, catalogued, "the catalogue holds exactly the accepted outputs");
    }

    /** One fault picked at random, made and undone; returns its name. */
    String injectAFault(java.util.Random random) throws Exception {
        int pick = random.nextInt(5);
        switch (pick) {
            case 0 -> {
                String service = List.of("finetune-service", "quantize-service", "export-service", "compile-service", "artifact-service",
                        "device-runner").get(random.nextInt(6));
                fleet.kill(service);
                fleet.start(service);
                return "kill " + service;
            }
            case 1 -> {
                infra.stopKafka();
                Thread.sleep(3_000 + random.nextInt(5_000));
                infra.startKafka();
                return "broker restart";
            }
            case 2 -> {
                infra.stopPostgres();
                Thread.sleep(3_000 + random.nextInt(5_000));
                infra.startPostgres();
                return "database restart";
            }
            case 3 -> {
                infra.stopS3();
                Thread.sleep(3_000 + random.nextInt(5_000));
                infra.startS3();
                return "object store away";
            }
            default -> {
                fleet.kill("gateway");
                fleet.start("gateway");
                return "kill gateway";
            }
        }
    }

    /** A call as a patient client makes it: a 503 or no answer is tried again a second later, for up to four minutes. */
    static <T> T patiently(java.util.concurrent.Callable<T> call) throws Exception {
        long deadline = System.nanoTime() + JOB_TIMEOUT.toNanos();
        while (true) {
            try {
                return call.call();
            } catch (GatewayClient.GatewayException e) { // not reachable, or an answer other than 2xx
                if (!e.worthRetrying() || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(1_000);
            }
        }
    }

    JsonNode readiness() {
        GatewayClient.Reply r = gateway.send("GET", "/api/v1/ready", null, null);
        assertEquals(503, r.status(), "readiness while a dependency is away: " + r.body());
        return r.body();
    }

    Set<String> uploadRows() throws Exception {
        Set<String> ids = new HashSet<>();
        try (Connection c = DriverManager.getConnection(infra.jdbcUrl(), "postgres", "postgres");
             Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT id FROM uploads")) {
            while (rs.next()) {
                ids.add(rs.getString(1));
            }
        }
        return ids;
    }

    void insertOutboxRow(String topic, String payload) throws Exception {
        try (Connection c = DriverManager.getConnection(infra.jdbcUrl(), "postgres", "postgres");
             var s = c.prepareStatement("INSERT INTO outbox (topic, message_key, payload, created_at) VALUES (?, 'outage-test', ?, now())")) {
            s.setString(1, topic);
            s.setString(2, payload);
            s.executeUpdate();
        }
    }

    void awaitOutboxSent(String topic, int rows, Duration within) throws Exception {
        long deadline = System.nanoTime() + within.toNanos();
        while (outboxRows("sent_at IS NOT NULL AND topic = ?", topic) != rows) {
            assertTrue(System.nanoTime() < deadline, "the relay marks " + rows + " row(s) of " + topic + " sent within " + within);
            Thread.sleep(200);
        }
    }

    int unsentOutboxRows(String jobId) throws Exception {
        return outboxRows("sent_at IS NULL AND message_key = ?", jobId);
    }

    /** Outbox rows matching {@code where}, a condition with one parameter, {@code value}. */
    int outboxRows(String where, String value) throws Exception {
        try (Connection c = DriverManager.getConnection(infra.jdbcUrl(), "postgres", "postgres");
             var s = c.prepareStatement("SELECT count(*) FROM outbox WHERE " + where)) {
            s.setString(1, value);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** A submitted job and its event stream. */
    record Running(String id, JobStream stream) {
    }

    /** A job submitted now, returned as soon as its {@code stage} stage reports progress on its stream. */
    Running jobAt(String stage) throws Exception {
        String id = submit();
        JobStream stream = JobStream.open(gateway, id);
        stream.awaitProgressOf(stage, JOB_TIMEOUT);
        return new Running(id, stream);
    }

    /** Submits a job as a client does (a 503 while something is away, or no answer, is tried again). */
    String submit() throws Exception {
        String spec = "{\"name\": \"faults\", \"model\": {\"upload\": \"" + modelUpload + "\"},"
                + " \"stages\": [\"finetune\", \"merge\", \"quantize\", \"export\", \"compile\", \"sign\", \"benchmark\"],"
                + " \"finetune\": {\"data\": {\"upload\": \"" + dataUpload + "\"}, \"batch\": 4, \"accumulation\": 1, \"epochs\": 1},"
                + " \"quantize\": {\"method\": \"rtn\", \"bits\": 8}, \"compile\": {\"target\": \"ort-qnn\"},"
                + " \"benchmark\": {\"promptLength\": 16, \"newTokens\": 8}}";
        return patiently(() -> gateway.ok(gateway.send("POST", "/api/v1/jobs", spec, "application/json"))).path("id").asText();
    }

    JsonNode upload(Path file) {
        return gateway.ok(gateway.upload(file.getFileName().toString(), () -> {
            try {
                return Files.newInputStream(file);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }));
    }

    /** The job as a client reads it (a 503 while something is away, or no answer, is tried again). */
    JsonNode job(String id) throws Exception {
        return patiently(() -> gateway.ok(gateway.send("GET", "/api/v1/jobs/" + id, null, null)));
    }

    /** The job's latest attempt of {@code stage}, or null. */
    static JsonNode attempt(JsonNode job, String stage) {
        JsonNode found = null;
        for (JsonNode a : job.path("stages")) {
            if (a.path("stage").asText().equals(stage)) {
                found = a;
            }
        }
        return found;
    }

    JsonNode awaitEnd(String id) throws Exception {
        long deadline = System.nanoTime() + JOB_TIMEOUT.toNanos();
        JsonNode job = job(id);
        while (job.path("state").asText().equals("running")) {
            if (System.nanoTime() > deadline) {
                fail("the job still runs after " + JOB_TIMEOUT + ": " + job + "\n" + fleet.logs());
            }
            Thread.sleep(200);
            job = job(id);
        }
        printTimings(job);
        return job;
    }

    void printTimings(JsonNode job) {
        StringBuilder sb = new StringBuilder("timings of " + job.path("id").asText() + ":");
        for (JsonNode a : job.path("stages")) {
            sb.append(' ').append(a.path("stage").asText()).append('#').append(a.path("attempt").asInt()).append('=')
                    .append(a.path("durationMs").asLong()).append("ms");
        }
        System.out.println(sb);
    }

    /**
     * What must hold after any fault: the job completed, one completed attempt a stage in order; each accepted output
     * is stored whole (its manifest and every file verify) and catalogued, and the catalogue holds nothing else of the
     * job; the job's event stream ended with the job's end.
     */
    void assertInvariants(JsonNode job, JobStream stream) throws Exception {
        String id = job.path("id").asText();
        assertEquals("completed", job.path("state").asText(), job + "\n" + fleet.logs());
        List<String> ran = new ArrayList<>();
        Set<String> accepted = new HashSet<>();
        for (JsonNode a : job.path("stages")) {
            assertEquals("completed", a.path("state").asText(), a.toString());
            ran.add(a.path("stage").asText());
            for (JsonNode o : a.path("outputs")) {
                accepted.add(o.path("id").asText());
                Path into = Files.createTempDirectory(ProcessFleet.folder(dir, "verified"), "output");
                List<ArtifactStore.Entry> files = store.getFolder(o.path("sha256").asText(), into); // digests checked as read
                assertFalse(files.isEmpty(), "output " + o + " has no files");
            }
        }
        assertEquals(STAGES, ran, "one attempt a stage");
        assertEquals(1, attempt(job, "benchmark").path("report").path("results").size(), "one benchmark result (one backend asked)");
        assertEquals(accepted, catalogued(id), "the catalogue holds exactly the outputs the gateway accepted");
        assertEquals("completed", stream.awaitLastState(Duration.ofSeconds(30)), "the job's event stream ends with the job: " + stream.events);
        lastSignedArtifact = attempt(job, "sign").path("outputs").get(0).path("id").asText();
    }

    Set<String> catalogued(String jobId) throws Exception {
        Set<String> ids = new HashSet<>();
        try (Connection c = DriverManager.getConnection(infra.jdbcUrl(), "postgres", "postgres");
             var s = c.prepareStatement("SELECT id FROM artifacts.artifacts WHERE job_id = ?")) {
            s.setObject(1, java.util.UUID.fromString(jobId));
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getString(1));
                }
            }
        }
        return ids;
    }

    /**
     * A job's event stream read as a client reads it: on a background thread, reconnecting while the job runs (a
     * stream breaks when the gateway goes away); remembers every event and the state of the last {@code job} event.
     */
    static final class JobStream {
        final List<String> events = new CopyOnWriteArrayList<>();
        private final Set<String> progressed = new HashSet<>();
        volatile String lastState;
        volatile boolean ended;

        static JobStream open(GatewayClient gateway, String id) throws InterruptedException {
            JobStream s = new JobStream();
            Thread t = new Thread(() -> {
                while (!s.ended) {
                    try {
                        gateway.events("/api/v1/jobs/" + id + "/events", s::accept);
                    } catch (RuntimeException e) {
                        s.events.add("(" + e.getMessage() + ")");
                    }
                    if (s.lastState != null && !s.lastState.equals("running")) {
                        s.ended = true;
                        synchronized (s) {
                            s.notifyAll();
                        }
                    } else {
                        try {
                            Thread.sleep(500); // a client waits a moment before it connects again
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }
            }, "job-stream-" + id);
            t.setDaemon(true);
            t.start();
            synchronized (s) {
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (s.events.isEmpty() && System.nanoTime() < deadline) {
                    s.wait(100); // connected once the job's first view arrives
                }
            }
            return s;
        }

        private void accept(String name, String data) {
            events.add(name);
            try {
                JsonNode d = JSON.readTree(data);
                if (name.equals("job")) {
                    lastState = d.path("state").asText();
                } else if (name.equals("progress")) {
                    synchronized (this) {
                        progressed.add(d.path("stage").asText().toLowerCase(java.util.Locale.ROOT));
                        notifyAll();
                    }
                }
            } catch (java.io.IOException e) {
                events.add("(unreadable " + name + ": " + data + ")");
            }
        }

        /** Returns as soon as the stream has carried a progress event of {@code stage}. */
        synchronized void awaitProgressOf(String stage, Duration within) throws InterruptedException {
            long deadline = System.nanoTime() + within.toNanos();
            while (!progressed.contains(stage)) {
                long left = deadline - System.nanoTime();
                if (ended || left <= 0) {
                    fail("no progress of the " + stage + " stage on the job's stream: " + events);
                }
                wait(Math.max(1, left / 1_000_000));
            }
        }

        String awaitLastState(Duration within) throws InterruptedException {
            long deadline = System.nanoTime() + within.toNanos();
            while (!ended && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            return lastState;
        }
    }
}
