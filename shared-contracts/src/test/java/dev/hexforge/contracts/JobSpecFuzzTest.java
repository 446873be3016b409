package dev.hexforge.contracts;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.hexforge.testing.Fuzzing;

import java.nio.charset.StandardCharsets;

/**
 * A job spec of any text, as JSON and as YAML: read, or refused with every problem named. What a tenant sends the
 * gateway and what {@code hexforge submit} reads.
 */
class JobSpecFuzzTest {
    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void json(byte[] bytes) {
        Fuzzing.refusedClearly(() -> JobSpecReader.read(new String(bytes, StandardCharsets.UTF_8), JobSpecReader.Format.JSON),
                InvalidJobSpecException.class);
    }

    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void yaml(byte[] bytes) {
        Fuzzing.refusedClearly(() -> JobSpecReader.read(new String(bytes, StandardCharsets.UTF_8), JobSpecReader.Format.YAML),
                InvalidJobSpecException.class);
    }

    /** A device runner's messages: the first byte picks which, the rest is the body. */
    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void deviceMessage(byte[] bytes) {
        if (bytes.length == 0) {
            return;
        }
        Class<? extends DeviceMessages.Checked> type = switch (Math.floorMod(bytes[0], 3)) {
            case 0 -> DeviceMessages.DeviceInfo.class;
            case 1 -> DeviceMessages.Heartbeat.class;
            default -> DeviceMessages.BenchmarkOutcome.class;
        };
        String body = new String(bytes, 1, bytes.length - 1, StandardCharsets.UTF_8);
        Fuzzing.refusedClearly(() -> DeviceMessages.read(body, type), IllegalArgumentException.class);
    }
}
