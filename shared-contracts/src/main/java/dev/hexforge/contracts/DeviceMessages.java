package dev.hexforge.contracts;

import java.util.List;
import java.util.Map;

/** What device runners and the gateway say to each other over REST (/api/v1/runner), versioned with the API. */
public final class DeviceMessages {
    private DeviceMessages() {
    }

    /**
     * What a runner's device offers.
     *
     * @param backends e.g. ort-cpu, ort-qnn, adb-qnn
     */
    public record DeviceInfo(String soc, String htpArch, List<String> backends, long ramBytes, String os, String onnxRuntime,
                             String qnnSdk) {
    }

    /** A benchmark a runner took: which artifact to fetch, verify and run, on which backends, how long a prompt and decode. */
    public record BenchmarkTask(String taskId, String jobId, String artifactId, List<String> backends, int promptLength,
                                int newTokens) {
    }

    /**
     * A runner's heartbeat: the task it is running, or null when idle. Only the task named keeps its lease, so a
     * runner started afresh on the same device token does not keep alive the task its dead predecessor held.
     */
    public record Heartbeat(String taskId) {
    }

    /** A runner's answer to a task: per-backend results, or the error that stopped it. */
    public record BenchmarkOutcome(List<Map<String, Object>> results, StageEvents.StageError error) {
    }
}
