package dev.hexforge.devicerunner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.client.ArtifactDownloader;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.io.Folders;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A device runner's life: register what this device offers, heartbeat every 10 s, long-poll the gateway for
 * benchmark tasks, and for each: fetch the artifact (digests and signature verified), verify it again right before
 * loading, benchmark it on each backend asked for, report, clean up. A refused bundle fails the task with the reason.
 */
public final class RunnerLoop implements Runnable, AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final GatewayClient gateway;
    private final Path work;
    private final int threads;
    private final ScheduledExecutorService beats = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "hexforge-runner-heartbeat");
        t.setDaemon(true);
        return t;
    });
    private volatile boolean stopped;

    public RunnerLoop(GatewayClient gateway, Path work, int threads) {
        this.gateway = gateway;
        this.work = work;
        this.threads = threads;
    }

    /** What this device offers: the CPU backend everywhere (the QNN backends are detected where they exist). */
    static Map<String, Object> deviceInfo() {
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("soc", null);
        info.put("htpArch", null);
        info.put("backends", List.of(OrtCpuBackend.NAME));
        long ram = ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getTotalMemorySize() : 0;
        info.put("ramBytes", ram);
        info.put("os", System.getProperty("os.name") + " " + System.getProperty("os.arch"));
        info.put("onnxRuntime", dev.hexforge.onnx.runtime.OrtSessions.runtimeVersion());
        info.put("qnnSdk", null);
        return info;
    }

    @Override
    public void run() {
        while (!stopped) { // the gateway may still be starting, or away for a moment
            try {
                gateway.ok(gateway.send("POST", "/api/v1/runner/register", write(deviceInfo()), "application/json"));
                break;
            } catch (RuntimeException e) {
                System.err.println("hexforge-device-runner: registering with " + gateway.base() + ": " + e.getMessage() + " (retrying)");
                sleep(2000);
            }
        }
        beats.scheduleWithFixedDelay(() -> {
            try {
                gateway.send("POST", "/api/v1/runner/heartbeat", "{}", "application/json");
            } catch (RuntimeException ignored) {
                // the gateway is away; the next beat tries again
            }
        }, 10, 10, TimeUnit.SECONDS);
        while (!stopped) {
            GatewayClient.Reply r;
            try {
                r = gateway.send("GET", "/api/v1/runner/tasks/next?wait=25", null, null);
            } catch (RuntimeException e) {
                sleep(2000);
                continue;
            }
            if (r.status() == 204 || stopped) {
                continue;
            }
            JsonNode task = gateway.ok(r);
            Map<String, Object> outcome = execute(task);
            try {
                gateway.send("POST", "/api/v1/runner/tasks/" + task.path("taskId").asText() + "/result", write(outcome), "application/json");
            } catch (RuntimeException e) {
                // the lease runs out and the task is queued again
            }
        }
    }

    /** Runs one task and returns the outcome to report: results per backend, or the error. */
    public Map<String, Object> execute(JsonNode task) {
        Path dir = work.resolve(task.path("taskId").asText());
        try {
            Folders.deleteQuietly(dir);
            Folders.deleteQuietly(ArtifactDownloader.staging(dir));
            ArtifactDownloader.Result got = download(task.path("artifactId").asText(), dir);
            SignedBundle bundle = SignedBundle.verify(dir, got.key()); // again, right before loading
            OrtCpuBackend.Reference reference = reference(dir);
            List<Object> results = new ArrayList<>();
            for (JsonNode b : task.path("backends")) {
                if (!b.asText().equals(OrtCpuBackend.NAME)) {
                    return error("BACKEND_UNAVAILABLE", "this device has no " + b.asText() + " backend", "run the job on a device that has it");
                }
                results.add(new OrtCpuBackend(threads).run(bundle, task.path("promptLength").asInt(), task.path("newTokens").asInt(),
                        reference, null));
            }
            return Map.of("results", results);
        } catch (BundleRefusedException | dev.hexforge.signing.VerificationException e) {
            return error("BUNDLE_REFUSED", "refusing the bundle: " + e.getMessage(),
                    "the artifact was changed after signing, or signed by another key: rebuild it");
        } catch (ArtifactDownloader.DownloadException e) {
            return error("ARTIFACT_UNAVAILABLE", e.getMessage(), "resume the job");
        } catch (RuntimeException e) {
            return error("BENCHMARK_FAILED", e.getMessage() == null ? e.toString() : e.getMessage(), "see the message; resume the job");
        } finally {
            Folders.deleteQuietly(dir);
            Folders.deleteQuietly(ArtifactDownloader.staging(dir));
        }
    }

    /** The artifact of the stage before may still be being catalogued: a not-found is retried for half a minute. */
    private ArtifactDownloader.Result download(String artifact, Path dir) {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            try {
                return new ArtifactDownloader(gateway).download(artifact, dir, null, (p, d, n) -> { });
            } catch (IllegalArgumentException e) {
                if (!e.getMessage().contains("404") || System.nanoTime() > deadline) {
                    throw new ArtifactDownloader.DownloadException("fetching artifact " + artifact + ": " + e.getMessage(), e);
                }
                sleep(500);
            }
        }
    }

    /** The host's reference continuation the export stage left in the bundle, if any. */
    static OrtCpuBackend.Reference reference(Path dir) {
        Path file = dir.resolve("reference.json");
        if (!Files.isRegularFile(file)) {
            return null;
        }
        try {
            JsonNode r = JSON.readTree(file.toFile());
            return new OrtCpuBackend.Reference(ints(r.path("prompt")), ints(r.path("continuation")));
        } catch (java.io.IOException e) {
            return null;
        }
    }

    private static int[] ints(JsonNode a) {
        int[] out = new int[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asInt();
        }
        return out;
    }

    private static Map<String, Object> error(String code, String message, String hint) {
        return Map.of("error", Map.of("code", code, "message", message, "hint", hint));
    }

    private static String write(Object o) {
        try {
            return JSON.writeValueAsString(o);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        stopped = true;
        beats.shutdownNow();
    }
}
