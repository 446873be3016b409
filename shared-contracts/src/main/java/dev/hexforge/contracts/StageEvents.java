package dev.hexforge.contracts;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** Messages between the gateway and stage services, versioned by {@link #SCHEMA_VERSION}. */
public final class StageEvents {
    public static final int SCHEMA_VERSION = 1;
    /** Kind of an input that is an uploaded model archive (zip, tar, tar.gz) rather than a stored folder. */
    public static final String MODEL_ARCHIVE = "model-archive";
    /** Kind of an input that is a stored model folder the job names as its base model ({@code model: {artifact: ID}}). */
    public static final String BASE_MODEL = "base-model";
    private static final String INPUT_PREFIX = "input:";

    /**
     * Kind of an input that is an uploaded file the job names in a field, with the file's extension (its format), e.g.
     * {@code input:finetune.data.jsonl}; the stage stores it under that name, so readers that go by extension work.
     */
    public static String inputKind(String field, String extension) {
        return INPUT_PREFIX + field + "." + extension;
    }

    /** Whether an input is the uploaded file of the field. */
    public static boolean isInputFor(String kind, String field) {
        return kind.startsWith(INPUT_PREFIX + field + ".") && kind.indexOf('.', INPUT_PREFIX.length() + field.length() + 1) < 0;
    }

    /** The file name an uploaded input is stored under in a stage's folder: the field and the extension. */
    public static String inputFileName(String kind) {
        return kind.substring(INPUT_PREFIX.length());
    }

    /** Whether an input is one the job named (its base model or a data file) rather than an earlier stage's output. */
    public static boolean isJobInput(String kind) {
        return kind.equals(MODEL_ARCHIVE) || kind.equals(BASE_MODEL) || kind.startsWith(INPUT_PREFIX);
    }

    private StageEvents() {
    }

    /**
     * A stored, content-addressed artifact: {@code sha256} names the stored folder's manifest; {@code id} is the
     * catalogue id of this output of this attempt ({@link #artifactId}).
     */
    public record ArtifactRef(String id, String kind, String sha256, long size, String key) {
    }

    /** The catalogue id of an attempt's output: the same on every replica and every redelivery. */
    public static String artifactId(String attemptId, String sha256) {
        return UUID.nameUUIDFromBytes((attemptId + "/" + sha256).getBytes(StandardCharsets.UTF_8)).toString();
    }

    /** Tells every stage service to stop an attempt (the job was cancelled), on {@link Topics#CONTROL}. */
    /**
     * A stage service instance says what it can hold: the heap its JVM may grow to (Runtime.maxMemory), at
     * {@code at}; a report older than a few intervals means the instance is gone.
     */
    public record ServiceReport(int schemaVersion, Stage stage, String instance, long heapBytes, Instant at) {
    }

    public record Cancel(int schemaVersion, String jobId, String attemptId, Instant at) {
    }

    /** A typed failure a user can act on. */
    public record StageError(String code, String message, String hint) {
    }

    /**
     * Asks a stage service to run one attempt of a stage.
     *
     * @param tenant who owns the job; its outputs are catalogued for that tenant only
     */
    public record StageRequest(int schemaVersion, String jobId, String attemptId, String tenant, Stage stage, JobSpec spec,
                               List<ArtifactRef> inputs, Instant requestedAt) {
    }

    /** Everything a stage service reports about an attempt, on {@link Topics#STAGE_EVENTS}. */
    @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type")
    @JsonSubTypes({
            @JsonSubTypes.Type(value = Progress.class, name = "progress"),
            @JsonSubTypes.Type(value = Completed.class, name = "completed"),
            @JsonSubTypes.Type(value = Failed.class, name = "failed")})
    public sealed interface Event permits Progress, Completed, Failed {
        int schemaVersion();

        String jobId();

        String attemptId();

        Stage stage();

        Instant at();
    }

    /** @param percent 0-100, or negative for a metrics-only update; @param metrics e.g. loss, learning rate, tokens/s */
    public record Progress(int schemaVersion, String jobId, String attemptId, Stage stage, Instant at, double percent,
                           String message, Map<String, Double> metrics) implements Event {
    }

    /** @param tenant the job's owner, from the request, so the artifact catalogue can scope the outputs */
    public record Completed(int schemaVersion, String jobId, String attemptId, String tenant, Stage stage, Instant at,
                            List<ArtifactRef> outputs, Map<String, Object> report) implements Event {
    }

    /** @param report what the stage measured before failing (e.g. a quantization report behind a failed gate) */
    public record Failed(int schemaVersion, String jobId, String attemptId, Stage stage, Instant at, StageError error,
                         Map<String, Object> report) implements Event {
    }
}
