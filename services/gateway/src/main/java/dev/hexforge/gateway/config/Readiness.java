package dev.hexforge.gateway.config;

import dev.hexforge.store.ArtifactStore;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;

import java.sql.Connection;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * Whether the gateway can serve now: its database, its broker and its object store each answered within
 * {@link #TIMEOUT_MS}. The three are asked at once, so a report takes at most about that long; a report is reused
 * for {@link #REUSE_MS}, so probes from many clients cost the dependencies one question a second.
 */
public class Readiness implements AutoCloseable {
    static final int TIMEOUT_MS = 1000;
    static final long REUSE_MS = 1000;

    /** Each dependency "up" or "down" (no addresses or messages: the endpoint needs no token), and the verdict. */
    public record Report(boolean ready, Map<String, String> dependencies) {
    }

    private final Map<String, Callable<?>> probes = new LinkedHashMap<>();
    private final Admin admin;
    private final ExecutorService askers = Executors.newFixedThreadPool(3, r -> {
        Thread t = new Thread(r, "hexforge-readiness");
        t.setDaemon(true);
        return t;
    });
    private Report last;
    private long lastAt;

    /** @param kafka the gateway's Kafka client settings (bootstrap servers and security) */
    Readiness(DataSource database, Map<String, Object> kafka, ArtifactStore store) {
        Map<String, Object> adminSettings = new HashMap<>(kafka);
        adminSettings.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, TIMEOUT_MS);
        adminSettings.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, TIMEOUT_MS);
        adminSettings.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 1000);
        adminSettings.put(AdminClientConfig.CLIENT_ID_CONFIG, "hexforge-gateway-readiness");
        this.admin = Admin.create(adminSettings);
        probes.put("database", () -> {
            try (Connection c = database.getConnection()) {
                if (!c.isValid(TIMEOUT_MS / 1000)) {
                    throw new IllegalStateException("the connection is not valid");
                }
            }
            return null;
        });
        probes.put("broker", () -> admin.describeCluster(new DescribeClusterOptions().timeoutMs(TIMEOUT_MS)).nodes()
                .get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
        probes.put("objectStore", () -> {
            store.ping();
            return null;
        });
    }

    public synchronized Report check() {
        long now = System.nanoTime();
        if (last != null && now - lastAt < REUSE_MS * 1_000_000) {
            return last;
        }
        Map<String, Future<?>> asked = new LinkedHashMap<>();
        probes.forEach((name, probe) -> asked.put(name, askers.submit(probe)));
        long deadline = System.nanoTime() + (TIMEOUT_MS + 500) * 1_000_000L;
        Map<String, String> states = new LinkedHashMap<>();
        boolean ready = true;
        for (var e : asked.entrySet()) {
            boolean up;
            try {
                e.getValue().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                up = true;
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                up = false;
            } catch (Exception failed) {
                e.getValue().cancel(true);
                up = false;
            }
            states.put(e.getKey(), up ? "up" : "down");
            ready &= up;
        }
        last = new Report(ready, Collections.unmodifiableMap(states));
        lastAt = System.nanoTime();
        return last;
    }

    @Override
    public void close() {
        askers.shutdownNow();
        admin.close(Duration.ofSeconds(1));
    }
}
