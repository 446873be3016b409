package dev.hexforge.gateway.job;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import dev.hexforge.gateway.config.GatewayProperties;
import dev.hexforge.web.DatabaseAway;
import dev.hexforge.web.UnavailableFilter;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.ConsumerRecordRecoverer;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

/** How the gateway's listener of stage events treats an event it cannot apply. */
@Configuration
class StageEventErrorConfig {
    private static final Logger LOG = LoggerFactory.getLogger(StageEventErrorConfig.class);

    /**
     * What happens to a stage event the gateway cannot apply: while the database is away, tried again until it is
     * back; otherwise tried again {@code hexforge.event-retries} times {@code hexforge.event-retry-backoff} apart (an
     * unreadable or inconsistent event is not tried again, it would fail the same way), then kept on the dead-letter topic
     * with the failure in its headers, and its job failed with EVENT_UNPROCESSABLE — never dropped silently.
     */
    @Bean
    CommonErrorHandler stageEventErrors(
            KafkaTemplate<String, String> kafka, JobService jobs,
            GatewayProperties settings) {
        DeadLetterPublishingRecoverer dead = new DeadLetterPublishingRecoverer(
                kafka, (record, ex) -> new TopicPartition(Topics.STAGE_EVENTS_DEAD, -1));
        ConsumerRecordRecoverer recoverer = (record, ex) -> {
            dead.accept(record, ex);
            Throwable cause = ex;
            while (cause.getCause() != null && cause != cause.getCause()) {
                cause = cause.getCause();
            }
            String reason = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
            LOG.warn("stage event kept on {}: {}", Topics.STAGE_EVENTS_DEAD, reason, ex);
            try {
                StageEvents.Event e = ContractsJson.read(String.valueOf(record.value()),
                        StageEvents.Event.class);
                Conflicts.retry(() -> {
                    jobs.unprocessable(e, reason);
                    return null;
                });
            } catch (RuntimeException notAnEvent) {
                LOG.warn("the dead stage event names no job it could be reported on: {}", notAnEvent.getMessage());
            }
        };
        DefaultErrorHandler handler = new DefaultErrorHandler(
                recoverer, new FixedBackOff(settings.eventRetryBackoff().toMillis(), settings.eventRetries()));
        handler.addNotRetryableExceptions(IllegalArgumentException.class); // unreadable or inconsistent: the same every time
        // the database away is no fault of the event (and its job could not even be failed meanwhile): the event waits,
        // its offset uncommitted, until the database is back; later events of the partition wait behind it
        handler.setBackOffFunction((record, ex) -> UnavailableFilter.dependencyAway(ex).isPresent() ? DatabaseAway.untilBack() : null);
        return handler;
    }
}
