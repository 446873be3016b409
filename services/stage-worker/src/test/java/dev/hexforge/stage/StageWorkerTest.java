package dev.hexforge.stage;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpecReader;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.infra.EmbeddedS3;
import dev.hexforge.store.ArtifactStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.SendResult;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class StageWorkerTest {
    @TempDir
    Path dir;

    /** Keeps what the worker would send to Kafka (no broker here): its stage events, in order. */
    static final class SentEvents extends KafkaTemplate<String, String> {
        final List<String> sent = new CopyOnWriteArrayList<>();

        SentEvents() {
            super(new DefaultKafkaProducerFactory<>(Map.of()));
        }

        @Override
        public CompletableFuture<SendResult<String, String>> send(String topic, String key, String data) {
            sent.add(data);
            return CompletableFuture.completedFuture(null);
        }
    }

    /** A broker that refuses the first {@code failures} events (or all, with -1), then takes them. */
    static final class FlakyEvents extends KafkaTemplate<String, String> {
        final List<String> sent = new CopyOnWriteArrayList<>();
        final java.util.concurrent.atomic.AtomicInteger failures;

        FlakyEvents(int failures) {
            super(new DefaultKafkaProducerFactory<>(Map.of()));
            this.failures = new java.util.concurrent.atomic.AtomicInteger(failures);
        }

        @Override
        public CompletableFuture<SendResult<String, String>> send(String topic, String key, String data) {
            if (failures.get() < 0 || failures.getAndDecrement() > 0) {
                return CompletableFuture.failedFuture(new org.apache.kafka.common.errors.TimeoutException("broker away"));
            }
            sent.add(data);
            return CompletableFuture.completedFuture(null);
        }
    }

    /** A pass that runs out of memory on its first attempt and stores an output on the next. */
    static final class OutOfMemoryOnce extends StageWorker {
        int runs;

        OutOfMemoryOnce(KafkaTemplate<String, String> kafka, ArtifactStore store, Path work) {
            super(Stage.EXPORT, kafka, store, work, Duration.ofMillis(1));
        }

        @Override
        protected StageEvents.Completed run(Attempt a) throws Exception {
            if (++runs == 1) {
                throw new OutOfMemoryError("Java heap space"); // as the JVM throws it from a pass's allocation
            }
            Path out = Files.createDirectories(a.dir().resolve("out"));
            Files.writeString(out.resolve("model.onnx"), "weights");
            return a.completed(List.of(a.storeOutput(out, "onnx-dynamic")), Map.of());
        }
    }

    /** A pass whose output folder is resumable (as the quantize stage's): it records what it finds there. */
    static final class Resumable extends StageWorker {
        final List<String> found = new java.util.ArrayList<>();
        final boolean resumes;

        Resumable(KafkaTemplate<String, String> kafka, ArtifactStore store, Path work, boolean resumes) {
            super(Stage.QUANTIZE, kafka, store, work, Duration.ofMillis(1));
            this.resumes = resumes;
        }

        @Override
        protected String resumableOutput() {
            return resumes ? "out" : null;
        }

        @Override
        protected StageEvents.Completed run(Attempt a) throws Exception {
            try (java.util.stream.Stream<Path> s = Files.walk(a.dir())) {
                s.filter(Files::isRegularFile).forEach(p -> found.add(a.dir().relativize(p).toString()));
            }
            Path out = Files.createDirectories(a.dir().resolve("out"));
            Files.writeString(out.resolve("checkpoint"), "weights");
            return a.completed(List.of(a.storeOutput(out, "quantized-checkpoint")), Map.of());
        }
    }

    @Test
    void anAttemptDeliveredAgainAfterItsServiceWasKilledFindsItsResumableOutputAndNothingElse() throws Exception {
        try (EmbeddedS3 s3 = EmbeddedS3.start(dir.resolve("s3"), EmbeddedInfra.Ports.free(), "hexforge", "secret-key-123")) {
            ArtifactStore store = new ArtifactStore(s3.endpoint(), "hexforge", "secret-key-123");
            for (boolean resumes : List.of(true, false)) {
                Path work = dir.resolve("work-" + resumes);
                String attempt = UUID.randomUUID().toString();
                // what a SIGKILL mid-run leaves: the pass's work in progress and a half-fetched input
                Path left = Files.createDirectories(work.resolve(attempt));
                Files.createDirectories(left.resolve("out/.work"));
                Files.writeString(left.resolve("out/.work/run.json"), "{}");
                Files.createDirectories(left.resolve("in"));
                Files.writeString(left.resolve("in/half-unpacked"), "x");
                Resumable worker = new Resumable(new SentEvents(), store, work, resumes);
                worker.handle(request(attempt));
                assertEquals(resumes ? List.of("out/.work/run.json") : List.of(), worker.found, "resumes: " + resumes);
                assertFalse(Files.exists(left), "the attempt's folder is cleaned up when it ends");
            }
        }
    }

    /** A service whose own database counts as a dependency to wait for (the artifact service's sign stage). */
    static final class WithADatabase extends StageWorker {
        WithADatabase(Path work) {
            super(Stage.SIGN, null, null, work, Duration.ofMillis(1));
        }

        @Override
        protected StageEvents.Completed run(Attempt a) {
            throw new UnsupportedOperationException();
        }

        @Override
        protected boolean away(Throwable e) {
            return e.getCause() instanceof java.sql.SQLTransientConnectionException;
        }
    }

    @Test
    void whatAServiceCountsAsAwayIsWaitedForWithinTheWindowAndNothingElseIs(@org.junit.jupiter.api.io.TempDir Path work) {
        // found by the 1000-job soak: the sign stage failed INTERNAL when its database restarted mid-attempt
        WithADatabase worker = new WithADatabase(work);
        java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger waits = new java.util.concurrent.atomic.AtomicInteger();
        RuntimeException dbAway = new RuntimeException("could not open a connection", new java.sql.SQLTransientConnectionException("pool timeout"));
        String got = worker.retryWhileAway(() -> {
            if (calls.incrementAndGet() <= 2) {
                throw dbAway;
            }
            return "catalogued";
        }, waits::incrementAndGet);
        assertEquals("catalogued", got);
        assertEquals(3, calls.get());
        assertEquals(2, waits.get(), "the attempt said it waits, each time");

        calls.set(0);
        IllegalStateException bug = new IllegalStateException("a bug");
        assertSame(bug, assertThrows(IllegalStateException.class, () -> worker.retryWhileAway(() -> {
            calls.incrementAndGet();
            throw bug;
        }, () -> { })));
        assertEquals(1, calls.get(), "another failure is not tried again");

        worker.storeRetry = Duration.ofMillis(800);
        assertSame(dbAway, assertThrows(RuntimeException.class, () -> worker.retryWhileAway(() -> {
            throw dbAway;
        }, () -> { })), "away for longer than the window: its failure is thrown");
    }

    static String request(String attempt) {
        return ContractsJson.write(new StageEvents.StageRequest(StageEvents.SCHEMA_VERSION, UUID.randomUUID().toString(), attempt, "acme",
                Stage.EXPORT, JobSpecReader.read("{\"model\": \"/m\"}"), List.of(), Instant.now()));
    }

    @Test
    void anAttemptThatRunsOutOfMemoryFailsWithACodeAndTheWorkerTakesTheNextOne() throws Exception {
        try (EmbeddedS3 s3 = EmbeddedS3.start(dir.resolve("s3"), EmbeddedInfra.Ports.free(), "hexforge", "secret-key-123")) {
            SentEvents kafka = new SentEvents();
            OutOfMemoryOnce worker = new OutOfMemoryOnce(kafka, new ArtifactStore(s3.endpoint(), "hexforge", "secret-key-123"), dir.resolve("work"));
            String first = UUID.randomUUID().toString();
            worker.handle(request(first));
            JsonNode failed = ContractsJson.MAPPER.readTree(kafka.sent.get(kafka.sent.size() - 1));
            assertEquals("failed", failed.path("type").asText(), kafka.sent.toString());
            assertEquals(first, failed.path("attemptId").asText());
            assertEquals("OUT_OF_MEMORY", failed.path("error").path("code").asText(), failed.toString());
            assertTrue(failed.path("error").path("message").asText().contains("needed more memory than this service has"), failed.toString());
            assertTrue(failed.path("error").path("hint").asText().contains("give the service more memory"), failed.toString());
            assertFalse(Files.exists(dir.resolve("work").resolve(first)), "the attempt's folder is cleaned up");

            String second = UUID.randomUUID().toString();
            worker.handle(request(second)); // the same worker, on the same thread
            JsonNode completed = ContractsJson.MAPPER.readTree(kafka.sent.get(kafka.sent.size() - 1));
            assertEquals("completed", completed.path("type").asText(), kafka.sent.toString());
            assertEquals(second, completed.path("attemptId").asText());
            assertEquals(2, worker.runs);
        }
    }

    @Test
    void aLibrarysFailureCarriesItsCodeAndHintAndAnythingElseIsInternal() {
        StageWorker worker = new OutOfMemoryOnce(new SentEvents(), null, dir);
        StageEvents.StageError model = worker.triage(new dev.hexforge.checkpoint.CheckpointException("config.json: no hidden_size"));
        assertEquals("MODEL_INVALID", model.code());
        assertEquals(dev.hexforge.contracts.ErrorCode.MODEL_INVALID.hint(), model.hint());
        assertEquals("config.json: no hidden_size", model.message());
        StageEvents.StageError refused = worker.triage(new dev.hexforge.contracts.InputPolicy.RefusedPathException("model.path", "refused"));
        assertEquals("INPUT_REFUSED", refused.code());
        StageEvents.StageError own = worker.triage(new dev.hexforge.contracts.HexforgeException(
                dev.hexforge.contracts.ErrorCode.QNN_DYNAMIC_SHAPE, "input 'ids' is dynamic", "give --input_dim ids 1,128", null));
        assertEquals("QNN_DYNAMIC_SHAPE", own.code());
        assertEquals("give --input_dim ids 1,128", own.hint(), "a thrower's own hint wins over the code's");
        assertEquals("BAD_REQUEST", worker.triage(new IllegalArgumentException("finetune.maxLength: too long")).code());
        assertEquals("INTERNAL", worker.triage(new IllegalStateException("a bug")).code());
    }

    @Test
    void aCompletedEventIsSentAgainUntilTheBrokerTakesItAndOnlyThenIsTheRequestSettled() throws Exception {
        try (EmbeddedS3 s3 = EmbeddedS3.start(dir.resolve("s3"), EmbeddedInfra.Ports.free(), "hexforge", "secret-key-123")) {
            ArtifactStore store = new ArtifactStore(s3.endpoint(), "hexforge", "secret-key-123");
            FlakyEvents kafka = new FlakyEvents(3); // the start progress (lost, harmlessly) and two tries of the completed event
            OutOfMemoryOnce worker = new OutOfMemoryOnce(kafka, store, dir.resolve("work"));
            worker.runs = 1; // straight to a stored output
            assertTrue(worker.handle(request(UUID.randomUUID().toString())), "settled once the broker took the event");
            JsonNode completed = ContractsJson.MAPPER.readTree(kafka.sent.get(kafka.sent.size() - 1));
            assertEquals("completed", completed.path("type").asText(), kafka.sent.toString());

            FlakyEvents down = new FlakyEvents(-1); // the broker never comes back before the service stops
            OutOfMemoryOnce stopping = new OutOfMemoryOnce(down, store, dir.resolve("work2"));
            stopping.runs = 1;
            java.util.concurrent.atomic.AtomicBoolean settled = new java.util.concurrent.atomic.AtomicBoolean(true);
            Thread t = new Thread(() -> settled.set(stopping.handle(request(UUID.randomUUID().toString()))));
            t.start();
            Thread.sleep(1500);
            assertTrue(t.isAlive(), "still trying while the broker is away");
            t.interrupt(); // the service shuts down
            t.join(10_000);
            assertFalse(settled.get(), "not settled: the offset stays uncommitted and the request comes again");
            assertTrue(down.sent.isEmpty());
        }
    }

    /** A pass that makes its output, then runs {@code beforeStoring} (the test takes the object store away there). */
    static final class StoreGoesAway extends StageWorker {
        volatile Runnable beforeStoring = () -> { };

        StoreGoesAway(KafkaTemplate<String, String> kafka, ArtifactStore store, Path work) {
            super(Stage.EXPORT, kafka, store, work, Duration.ofMillis(1));
        }

        @Override
        protected StageEvents.Completed run(Attempt a) throws Exception {
            Path out = Files.createDirectories(a.dir().resolve("out"));
            Files.writeString(out.resolve("model.onnx"), "weights " + a.request().attemptId());
            beforeStoring.run();
            return a.completed(List.of(a.storeOutput(out, "onnx-dynamic")), Map.of());
        }
    }

    @Test
    void anOutputIsStoredOnceTheObjectStoreIsBackAndAStoreAwayTooLongFailsTheAttemptNamingIt() throws Exception {
        int port = EmbeddedInfra.Ports.restartable(); // stopped and started again on it
        java.util.concurrent.atomic.AtomicReference<EmbeddedS3> s3 = new java.util.concurrent.atomic.AtomicReference<>(
                EmbeddedS3.start(dir.resolve("s3"), port, "hexforge", "secret-key-123"));
        try {
            ArtifactStore store = new ArtifactStore(s3.get().endpoint(), "hexforge", "secret-key-123");
            SentEvents kafka = new SentEvents();
            StoreGoesAway worker = new StoreGoesAway(kafka, store, dir.resolve("work"));
            worker.handle(request(UUID.randomUUID().toString())); // the bucket exists from here on

            Thread[] back = new Thread[1];
            worker.beforeStoring = () -> { // away for about two seconds as the output is stored
                s3.get().close();
                back[0] = new Thread(() -> {
                    try {
                        Thread.sleep(2_000);
                    } catch (InterruptedException e) {
                        return;
                    }
                    s3.set(EmbeddedS3.start(dir.resolve("s3"), port, "hexforge", "secret-key-123"));
                });
                back[0].start();
            };
            worker.handle(request(UUID.randomUUID().toString()));
            back[0].join();
            JsonNode completed = ContractsJson.MAPPER.readTree(kafka.sent.get(kafka.sent.size() - 1));
            assertEquals("completed", completed.path("type").asText(), kafka.sent.toString());
            assertTrue(kafka.sent.stream().anyMatch(e -> e.contains("the object store does not answer; trying again")),
                    "the progress says why the attempt waits");
            String sha = completed.path("outputs").get(0).path("sha256").asText();
            assertEquals(List.of("model.onnx"), store.manifest(sha).stream().map(ArtifactStore.Entry::path).toList(), "stored whole");

            worker.beforeStoring = () -> s3.get().close(); // and now away for longer than the attempt waits
            worker.storeRetry = Duration.ofSeconds(2);
            long t0 = System.nanoTime();
            worker.handle(request(UUID.randomUUID().toString()));
            JsonNode failed = ContractsJson.MAPPER.readTree(kafka.sent.get(kafka.sent.size() - 1));
            assertEquals("failed", failed.path("type").asText(), kafka.sent.toString());
            assertEquals("STORAGE_UNAVAILABLE", failed.path("error").path("code").asText(), failed.toString());
            assertTrue(failed.path("error").path("hint").asText().contains("resume the job once it is back"), failed.toString());
            assertTrue(System.nanoTime() - t0 < 15_000_000_000L, "it gave up after its retry window");
        } finally {
            s3.get().close();
        }
    }
}
