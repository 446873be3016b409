package dev.hexforge.contracts;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.type.LogicalType;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;

import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * What device runners and the gateway say to each other over REST (/api/v1/runner), versioned with the API. The
 * gateway reads every message with {@link #read}: one JSON value and nothing after it, no field it does not know, no
 * value of another type (no string for a number), then the message's own bounds ({@code check}).
 */
public final class DeviceMessages {
    /** The backends a runner can offer. */
    public static final Set<String> BACKENDS = Set.of("ort-cpu", "ort-qnn", "adb-qnn", "genie");
    /** The largest runner message read. */
    public static final int MAX_BYTES = 1 << 20;

    private static final ObjectMapper STRICT = strict();

    /** No value of another type: no string for a number and, since Jackson would make one, no number or boolean for a string. */
    private static ObjectMapper strict() {
        ObjectMapper m = ContractsJson.MAPPER.copy()
                .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
                .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS);
        m.coercionConfigFor(LogicalType.Textual).setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Float, CoercionAction.Fail).setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        return m;
    }

    private DeviceMessages() {
    }

    /** A message every runner message is: checked against its own bounds after it is read. */
    public interface Checked {
        /** Throws {@link IllegalArgumentException} naming the first field out of bounds. */
        void check();
    }

    /**
     * Reads one message strictly and checks it; anything wrong is an {@link IllegalArgumentException} whose message
     * names the field ({@code chipset: unknown field}, {@code results[0].decodeTokensPerSecond: must be a number}).
     */
    public static <T extends Checked> T read(String json, Class<T> type) {
        T message;
        try {
            message = STRICT.readValue(json, type);
        } catch (UnrecognizedPropertyException e) {
            throw new IllegalArgumentException(path(e, e.getPropertyName()) + ": unknown field (known: "
                    + e.getKnownPropertyIds() + ")");
        } catch (MismatchedInputException e) {
            if (e.getMessage() != null && e.getMessage().contains("Trailing token")) {
                throw new IllegalArgumentException("the body must be one JSON value with nothing after it");
            }
            String field = path(e, null);
            throw new IllegalArgumentException((field.isEmpty() ? "the body" : field) + ": must be "
                    + expected(e.getTargetType()));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("the body is not the expected JSON object: " + e.getOriginalMessage());
        }
        if (message == null) {
            throw new IllegalArgumentException("the body must be a JSON object");
        }
        message.check();
        return message;
    }

    private static String path(JsonMappingException e, String last) {
        StringBuilder b = new StringBuilder();
        for (JsonMappingException.Reference r : e.getPath()) {
            if (r.getFieldName() != null) {
                b.append(b.isEmpty() ? "" : ".").append(r.getFieldName());
            } else if (r.getIndex() >= 0) {
                b.append('[').append(r.getIndex()).append(']');
            }
        }
        String s = b.toString();
        if (last != null && !s.endsWith(last)) {
            s = s.isEmpty() ? last : s + "." + last;
        }
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }

    private static String expected(Class<?> type) {
        if (type == null) {
            return "of another type";
        }
        if (type == String.class) {
            return "a string";
        }
        if (type == int.class || type == Integer.class || type == long.class || type == Long.class) {
            return "a whole number";
        }
        if (type == double.class || type == Double.class) {
            return "a number";
        }
        if (Collection.class.isAssignableFrom(type)) {
            return "a list";
        }
        return "a JSON object";
    }

    private static void text(String field, String v, int max) {
        if (v != null) {
            PlainText.require(field, v, max);
        }
    }

    /**
     * What a runner's device offers.
     *
     * @param backends e.g. ort-cpu, ort-qnn, adb-qnn, genie
     */
    public record DeviceInfo(String soc, String htpArch, List<String> backends, long ramBytes, String os, String onnxRuntime,
                             String qnnSdk) implements Checked {
        @Override
        public void check() {
            if (backends == null || backends.isEmpty()) {
                throw new IllegalArgumentException("backends: name at least one of " + new TreeSet<>(BACKENDS));
            }
            if (backends.size() > BACKENDS.size()) {
                throw new IllegalArgumentException("backends: at most " + BACKENDS.size() + " (each known backend once), got "
                        + backends.size());
            }
            for (int i = 0; i < backends.size(); i++) {
                String b = backends.get(i);
                if (b == null || !BACKENDS.contains(b)) {
                    throw new IllegalArgumentException("backends[" + i + "]: '" + (b == null ? "null" : b.length() > 40 ? b.substring(0, 40) + "..." : b)
                            + "' is not one of " + new TreeSet<>(BACKENDS));
                }
                if (backends.indexOf(b) != i) {
                    throw new IllegalArgumentException("backends[" + i + "]: '" + b + "' is listed twice");
                }
            }
            if (soc != null && !soc.matches("[A-Za-z0-9_-]{1,32}")) {
                throw new IllegalArgumentException("soc: 1-32 letters, digits, '_' or '-'");
            }
            text("htpArch", htpArch, 200);
            text("os", os, 200);
            text("onnxRuntime", onnxRuntime, 200);
            text("qnnSdk", qnnSdk, 200);
            if (ramBytes < 0 || ramBytes > (1L << 50)) {
                throw new IllegalArgumentException("ramBytes: must be between 0 and 2^50");
            }
        }
    }

    /** A benchmark a runner took: which artifact to fetch, verify and run, on which backends, how long a prompt and decode. */
    public record BenchmarkTask(String taskId, String jobId, String artifactId, List<String> backends, int promptLength,
                                int newTokens) {
    }

    /**
     * A runner's heartbeat: the task it is running, or null when idle. Only the task named keeps its lease, so a
     * runner started afresh on the same device token does not keep alive the task its dead predecessor held.
     */
    public record Heartbeat(String taskId) implements Checked {
        @Override
        public void check() {
            if (taskId != null && !taskId.matches("[0-9a-fA-F-]{1,64}")) {
                throw new IllegalArgumentException("taskId: must be a task id (a UUID) or null");
            }
        }
    }

    /** A runner's answer to a task: per-backend results (one per backend asked for), or the error that stopped it. */
    public record BenchmarkOutcome(List<BenchmarkResult> results, StageEvents.StageError error) implements Checked {
        @Override
        public void check() {
            if ((results == null) == (error == null)) {
                throw new IllegalArgumentException("the body has results or an error, exactly one of them");
            }
            if (results != null) {
                if (results.isEmpty() || results.size() > BACKENDS.size()) {
                    throw new IllegalArgumentException("results: one per backend asked for (1 to " + BACKENDS.size() + "), got "
                            + results.size());
                }
                for (int i = 0; i < results.size(); i++) {
                    if (results.get(i) == null) {
                        throw new IllegalArgumentException("results[" + i + "]: must be a JSON object");
                    }
                    results.get(i).check("results[" + i + "].");
                }
            } else {
                if (error.code() == null || !error.code().matches("[A-Z_]{1,64}")) {
                    throw new IllegalArgumentException("error.code: must be an error code (capitals and '_')");
                }
                text("error.message", error.message(), 2000);
                text("error.hint", error.hint(), 2000);
            }
        }
    }
}
