package dev.hexforge.devicerunner;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.client.ArtifactDownloader;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.contracts.DeviceMessages;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.eval.DeviceReference;
import dev.hexforge.io.Folders;
import dev.hexforge.signing.VerificationException;

import java.nio.file.Path;
import java.security.PublicKey;
import java.util.ArrayList;
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
    private final DeviceProfile device;
    private final ScheduledExecutorService beats = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "hexforge-runner-heartbeat");
        t.setDaemon(true);
        return t;
    });
    private volatile boolean stopped;
    /** The task being run, named in each heartbeat (only the task named keeps its lease); null when idle. */
    private volatile String running;
    private final List<PublicKey> trusted;

    /** @param trusted the fleet's public keys this runner accepts signatures from (pinned, never taken from the gateway) */
    public RunnerLoop(GatewayClient gateway, Path work, DeviceProfile device, List<PublicKey> trusted) {
        if (trusted.isEmpty()) {
            throw new IllegalArgumentException("a runner needs the fleet's public key to trust (--trust KEY.pub.pem)");
        }
        this.trusted = List.copyOf(trusted);
        this.gateway = gateway;
        this.work = work;
        this.device = device;
    }

    Path work() {
        return work;
    }

    @Override
    public void run() {
        while (!stopped) { // the gateway may still be starting, or away for a moment
            try {
                gateway.ok(gateway.send("POST", "/api/v1/runner/register", write(device.info()), "application/json"));
                break;
            } catch (RuntimeException e) {
                System.err.println("hexforge-device-runner: registering with " + gateway.base() + ": " + e.getMessage() + " (retrying)");
                sleep(2000);
            }
        }
        beats.scheduleWithFixedDelay(() -> {
            try {
                gateway.send("POST", "/api/v1/runner/heartbeat", write(new DeviceMessages.Heartbeat(running)), "application/json");
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
            JsonNode task;
            try {
                task = gateway.ok(r);
            } catch (RuntimeException e) { // the gateway unavailable (503) or failing: ask again in a moment, never give up
                sleep(2000);
                continue;
            }
            running = task.path("taskId").asText();
            Map<String, Object> outcome;
            try {
                outcome = execute(task);
            } finally {
                running = null;
            }
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
            DeviceReference reference = DeviceReference.read(dir);
            List<Object> results = new ArrayList<>();
            for (JsonNode b : task.path("backends")) {
                Backend backend = device.backend(b.asText());
                if (backend == null) {
                    return error(ErrorCode.BACKEND_UNAVAILABLE, "this device has no " + b.asText() + " backend");
                }
                results.add(backend.run(bundle, task.path("promptLength").asInt(), task.path("newTokens").asInt(), reference));
            }
            return Map.of("results", results);
        } catch (BundleRefusedException | VerificationException e) {
            return error(ErrorCode.BUNDLE_REFUSED, "refusing the bundle: " + e.getMessage());
        } catch (ArtifactDownloader.DownloadException e) {
            return error(ErrorCode.ARTIFACT_UNAVAILABLE, e.getMessage());
        } catch (RuntimeException e) {
            return error(ErrorCode.BENCHMARK_FAILED, e.getMessage() == null ? e.toString() : e.getMessage());
        } finally {
            Folders.deleteQuietly(dir);
            Folders.deleteQuietly(ArtifactDownloader.staging(dir));
        }
    }

    /**
     * The artifact of the stage before may still be being catalogued: a not-found is retried for half a minute. The
     * gateway or the storage away is waited out by the downloader itself.
     */
    private ArtifactDownloader.Result download(String artifact, Path dir) {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            try {
                return new ArtifactDownloader(gateway).downloadPinned(artifact, dir, trusted, (p, d, n) -> { });
            } catch (GatewayClient.GatewayException e) {
                if (e.status() != 404 || System.nanoTime() > deadline) {
                    throw new ArtifactDownloader.DownloadException("fetching artifact " + artifact + ": " + e.getMessage(), e);
                }
                sleep(500);
            }
        }
    }

    private static Map<String, Object> error(ErrorCode code, String message) {
        return Map.of("error", Map.of("code", code.name(), "message", message, "hint", code.hint()));
    }

    private static String write(Object o) {
        try {
            return JSON.writeValueAsString(o);
        } catch (JsonProcessingException e) {
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
