package dev.hexforge.gateway;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.time.Instant;

/**
 * Finds running attempts whose service went silent for {@code hexforge.stage-stall-timeout} (services repeat their
 * progress every 10 s while they work) and has them re-dispatched, up to {@code hexforge.max-attempts} per stage.
 * An attempt still queued (dispatched, not started) is left alone: its request waits in Kafka for a service.
 */
@Component
class StallWatch {
    private final AttemptRepository attempts;
    private final JobService jobs;
    private final dev.hexforge.store.ArtifactStore store;
    private final Duration timeout;
    private final int maxAttempts;

    StallWatch(AttemptRepository attempts, JobService jobs, dev.hexforge.store.ArtifactStore store, @Value("${hexforge.stage-stall-timeout:2m}") Duration timeout,
               @Value("${hexforge.max-attempts:3}") int maxAttempts) {
        this.attempts = attempts;
        this.store = store;
        this.jobs = jobs;
        this.timeout = timeout;
        this.maxAttempts = maxAttempts;
    }

    @Scheduled(fixedDelayString = "${hexforge.stall-check-ms:1000}")
    void check() {
        for (AttemptEntity a : attempts.findByStateAndUpdatedAtBefore(AttemptEntity.State.RUNNING, Instant.now().minus(timeout))) {
            if (jobs.redispatchStalled(a.id, timeout, maxAttempts)) {
                // a service that takes the stalled attempt's request again (after a restart) drops it
                store.putBytes(dev.hexforge.store.ArtifactStore.cancelledKey(a.id.toString()), new byte[0], "application/octet-stream");
            }
        }
    }
}
