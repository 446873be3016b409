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
}
