package dev.hexforge.contracts;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/** Messages between the gateway and stage services, versioned by {@link #SCHEMA_VERSION}. */
public final class StageEvents {
    public static final int SCHEMA_VERSION = 1;

    private StageEvents() {
    }

    /** A stored, content-addressed artifact. */
    public record ArtifactRef(String id, String kind, String sha256, long size, String key) {
    }

    /** A typed failure a user can act on. */
    public record StageError(String code, String message, String hint) {
    }

    /** Asks a stage service to run one attempt of a stage. */
    public record StageRequest(int schemaVersion, String jobId, String attemptId, Stage stage, JobSpec spec,
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

    public record Completed(int schemaVersion, String jobId, String attemptId, Stage stage, Instant at,
                            List<ArtifactRef> outputs, Map<String, Object> report) implements Event {
    }

    /** @param report what the stage measured before failing (e.g. a quantization report behind a failed gate) */
    public record Failed(int schemaVersion, String jobId, String attemptId, Stage stage, Instant at, StageError error,
                         Map<String, Object> report) implements Event {
    }
}
