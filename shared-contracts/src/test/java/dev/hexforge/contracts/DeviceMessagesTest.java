package dev.hexforge.contracts;

import org.junit.jupiter.api.Test;

import java.util.Collections;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runner messages are read strictly and checked against their bounds, each problem named by its field. */
class DeviceMessagesTest {
    static final BenchmarkResult GOOD = new BenchmarkResult("ort-cpu", "host", "a".repeat(64), 64, 32, 1.5, 40, 1600, 12.5,
            1_000_000L, 2_000_000L, 3e10, "measured (C triad, 2 threads)", 0.8, 1.0, 90.1, 90.0, null, Map.of("MatMul", 3.5),
            null, null, Map.of("opsOffNpu", "ort-cpu runs every op on the CPU", "joulesPerToken", "no power sensor"));

    static String message(Runnable r) {
        return assertThrows(IllegalArgumentException.class, r::run).getMessage();
    }

    @Test
    void aWellFormedOutcomeRoundTrips() {
        DeviceMessages.BenchmarkOutcome o = new DeviceMessages.BenchmarkOutcome(List.of(GOOD), null);
        assertEquals(o, DeviceMessages.read(ContractsJson.write(o), DeviceMessages.BenchmarkOutcome.class));
        DeviceMessages.BenchmarkOutcome failed = new DeviceMessages.BenchmarkOutcome(null,
                new StageEvents.StageError("BENCHMARK_FAILED", "the session did not load", "see the runner's log"));
        assertEquals(failed, DeviceMessages.read(ContractsJson.write(failed), DeviceMessages.BenchmarkOutcome.class));
    }

    @Test
    void figuresAreTypedFiniteAndBounded() {
        String good = ContractsJson.write(new DeviceMessages.BenchmarkOutcome(List.of(GOOD), null));
        assertEquals("results[0].decodeTokensPerSecond: must be a number", message(() -> DeviceMessages.read(
                good.replace("\"decodeTokensPerSecond\":12.5", "\"decodeTokensPerSecond\":\"<img src=x onerror=alert(1)>\""),
                DeviceMessages.BenchmarkOutcome.class)));
        assertEquals("results[0].decodeTokensPerSecond: must be a number", message(() -> DeviceMessages.read(
                good.replace("\"decodeTokensPerSecond\":12.5", "\"decodeTokensPerSecond\":\"12.5\""), DeviceMessages.BenchmarkOutcome.class)));
        assertTrue(message(() -> DeviceMessages.read(good.replace("\"tokenAgreement\":1.0", "\"tokenAgreement\":1.5"),
                DeviceMessages.BenchmarkOutcome.class)).startsWith("results[0].tokenAgreement: must be a finite number between 0 and 1"));
        assertTrue(message(() -> DeviceMessages.read(good.replace("\"loadSeconds\":1.5", "\"loadSeconds\":1.5,\"hype\":1"),
                DeviceMessages.BenchmarkOutcome.class)).startsWith("results[0].hype: unknown field"));
        assertTrue(message(() -> DeviceMessages.read(good.replace("\"device\":\"host\"", "\"device\":\"host\\u202E\""),
                DeviceMessages.BenchmarkOutcome.class)).startsWith("results[0].device: must not contain control"));
        assertTrue(message(() -> DeviceMessages.read(good.replace("\"opsOffNpu\":\"ort-cpu", "\"speed\":\"ort-cpu"),
                DeviceMessages.BenchmarkOutcome.class)).contains("'speed' is not a figure of a result"));
        assertTrue(message(() -> DeviceMessages.read(good.replace("\"backend\":\"ort-cpu\"", "\"backend\":\"gpu\""),
                DeviceMessages.BenchmarkOutcome.class)).startsWith("results[0].backend: must be one of"));
        assertEquals("the body has results or an error, exactly one of them",
                message(() -> DeviceMessages.read("{\"results\": null, \"error\": null}", DeviceMessages.BenchmarkOutcome.class)));
        assertTrue(message(() -> DeviceMessages.read(good + " []", DeviceMessages.BenchmarkOutcome.class)).contains("nothing after it"));
    }

    @Test
    void registrationsAreBounded() {
        String base = ContractsJson.write(new DeviceMessages.DeviceInfo("SM8650", "75", List.of("ort-cpu"), 8L << 30, "Android 15", "1.29.0", null));
        assertEquals(List.of("ort-cpu"), DeviceMessages.read(base, DeviceMessages.DeviceInfo.class).backends());
        assertTrue(message(() -> DeviceMessages.read(base.replace("{", "{\"chipset\":\"x\","), DeviceMessages.DeviceInfo.class))
                .startsWith("chipset: unknown field"));
        String many = ContractsJson.write(new DeviceMessages.DeviceInfo(null, null, Collections.nCopies(20_000, "ort-cpu"), 0, null, null, null));
        assertTrue(message(() -> DeviceMessages.read(many, DeviceMessages.DeviceInfo.class)).startsWith("backends: at most " + DeviceMessages.BACKENDS.size()));
        assertEquals("ramBytes: must be a whole number", message(() -> DeviceMessages.read(base.replace("\"ramBytes\":8589934592",
                "\"ramBytes\":\"8589934592\""), DeviceMessages.DeviceInfo.class)));
        assertEquals("taskId: must be a string", message(() -> DeviceMessages.read("{\"taskId\": []}", DeviceMessages.Heartbeat.class)));
        assertTrue(message(() -> DeviceMessages.read("{\"taskId\": \"../../x\"}", DeviceMessages.Heartbeat.class)).startsWith("taskId:"));
    }
}
