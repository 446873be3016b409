package dev.hexforge.gateway.job;

import dev.hexforge.contracts.Stage;
import dev.hexforge.gateway.config.GatewayProperties;
import dev.hexforge.store.ArtifactStore;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Finds running attempts whose service went silent for {@code hexforge.stage-stall-timeout} (services repeat their
 * progress every 10 s while they work), and attempts no service started within {@code hexforge.dispatch-timeout}
 * (30 min: a request lost on its way, or no service of the stage for that long), and has them re-dispatched as new
 * attempts, up to {@code hexforge.max-attempts} per stage; the old attempt is fenced off (cancelled in storage and on
 * the control topic) so a service that reaches it late drops it.
 */
@Component
class StallWatch {
    private final AttemptRepository attempts;
    private final JobService jobs;
    private final ArtifactStore store;
    private final Duration timeout;
    private final int maxAttempts;
    private final Duration dispatchTimeout;

    StallWatch(AttemptRepository attempts, JobService jobs, ArtifactStore store, GatewayProperties settings) {
        this.dispatchTimeout = settings.dispatchTimeout();
        this.attempts = attempts;
        this.store = store;
        this.jobs = jobs;
        this.timeout = settings.stageStallTimeout();
        this.maxAttempts = settings.maxAttempts();
    }

    @Scheduled(fixedDelayString = "${hexforge.stall-check-ms:1000}")
    void check() {
        List<AttemptEntity> silent = new ArrayList<>(attempts.findByStateAndUpdatedAtBefore(AttemptEntity.State.RUNNING,
                Instant.now().minus(timeout)));
        // never started: the request was lost, or no service of the stage came for it; benchmarks wait for a device instead
        attempts.findByStateAndUpdatedAtBefore(AttemptEntity.State.DISPATCHED, Instant.now().minus(dispatchTimeout)).stream()
                .filter(a -> !a.stage.equals(Stage.BENCHMARK.id())).forEach(silent::add);
        for (AttemptEntity a : silent) {
            Duration waited = a.state == AttemptEntity.State.RUNNING ? timeout : dispatchTimeout;
            if (Conflicts.retry(() -> jobs.redispatchStalled(a.id, waited, maxAttempts))) {
                // fencing: a service that takes the stalled attempt's request (late, or again after a restart) drops it
                store.putBytes(ArtifactStore.cancelledKey(a.id.toString()), new byte[0], "application/octet-stream");
            }
        }
    }
}
