package dev.hexforge.gateway;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/** Feeds stage services' events into the job state machine. */
@Component
class StageEventListener {
    private static final Logger LOG = LoggerFactory.getLogger(StageEventListener.class);
    private final JobService jobs;

    StageEventListener(JobService jobs) {
        this.jobs = jobs;
    }

    @KafkaListener(topics = Topics.STAGE_EVENTS, groupId = "hexforge-gateway")
    void onEvent(String payload) {
        StageEvents.Event e;
        try {
            e = ContractsJson.read(payload, StageEvents.Event.class);
        } catch (IllegalArgumentException ex) {
            LOG.warn("unreadable stage event dropped: {}", ex.getMessage());
            return;
        }
        jobs.apply(e);
    }
}
