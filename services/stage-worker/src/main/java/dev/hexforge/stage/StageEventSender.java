package dev.hexforge.stage;

import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.Topics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.core.KafkaTemplate;

import java.util.concurrent.TimeUnit;

/** How a stage service's events reach the gateway: terminal ones until the broker has them, progress at most once. */
final class StageEventSender {
    private static final Logger LOG = LoggerFactory.getLogger(StageEventSender.class);
    private final KafkaTemplate<String, String> kafka;
    private final Stage stage;

    StageEventSender(KafkaTemplate<String, String> kafka, Stage stage) {
        this.kafka = kafka;
        this.stage = stage;
    }

    /**
     * A completed or failed event: sent again, 0.5 s to 10 s apart, until the broker has it, however long it is
     * away, because the request's offset is committed only after it. Only a stop (shutdown) ends the tries, and then
     * the offset stays uncommitted.
     */
    void deliver(String key, String payload) {
        long backoff = 500;
        for (int tries = 1; ; tries++) {
            if (Thread.currentThread().isInterrupted()) {
                throw new StageWorker.UndeliveredException(stage.id() + " event for job " + key + " not delivered: the worker is stopping");
            }
            try {
                kafka.send(Topics.STAGE_EVENTS, key, payload).get(30, TimeUnit.SECONDS);
                if (tries > 1) {
                    LOG.info("{} event for job {} delivered after {} tries", stage.id(), key, tries);
                }
                return;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                if (tries == 1 || tries % 10 == 0) {
                    LOG.warn("cannot report to {} (try {}): {}; trying again", Topics.STAGE_EVENTS, tries, e.getMessage());
                }
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException stop) {
                    Thread.currentThread().interrupt();
                }
                backoff = Math.min(backoff * 2, 10_000);
            }
        }
    }

    /** Progress and heartbeats: a lost one is made good by the next, so a broker away for a moment fails no pass. */
    void tell(String key, String payload) {
        try {
            kafka.send(Topics.STAGE_EVENTS, key, payload).get(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            LOG.warn("progress for job {} not reported: {}", key, e.getMessage());
        }
    }
}
