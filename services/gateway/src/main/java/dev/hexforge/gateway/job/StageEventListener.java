package dev.hexforge.gateway.job;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

import java.util.Map;

/** Feeds stage services' events into the job state machine. */
@Component
class StageEventListener {
    private final JobService jobs;
    private final JobEventHub hub;

    StageEventListener(JobService jobs, JobEventHub hub) {
        this.jobs = jobs;
        this.hub = hub;
    }

    @KafkaListener(topics = Topics.STAGE_EVENTS, groupId = "hexforge-gateway", concurrency = "${hexforge.event-consumers:4}")
    void onEvent(String payload) {
        // an unreadable event goes to the dead-letter topic through the error handler (GatewayConfig), not away
        StageEvents.Event e = ContractsJson.read(payload, StageEvents.Event.class);
        JobEntity job = Conflicts.retry(() -> jobs.apply(e)); // committed when it returns
        if (job != null) {
            String name = e instanceof StageEvents.Progress ? "progress" : e instanceof StageEvents.Completed ? "completed" : "failed";
            hub.publish(job.id, name, ContractsJson.write(e), false);
            hub.publish(job.id, "job", Map.of("id", e.jobId(), "state", job.state.name().toLowerCase()), job.state != JobEntity.State.RUNNING);
            if (!(e instanceof StageEvents.Progress)) { // a job list row (state, current stage) changes only when a stage ends
                hub.jobChanged(job); // as committed: no second read
            }
        }
    }
}
