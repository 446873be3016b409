package dev.hexforge.gateway;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

import java.time.Instant;
import java.util.concurrent.TimeUnit;

/**
 * Sends outbox rows to Kafka in order and marks them sent. A crash between send and mark re-sends the row; stage
 * services treat a request for an attempt they already finished as a duplicate.
 */
@Component
class OutboxRelay {
    private static final Logger LOG = LoggerFactory.getLogger(OutboxRelay.class);
    private final OutboxRepository outbox;
    private final KafkaTemplate<String, String> kafka;

    OutboxRelay(OutboxRepository outbox, KafkaTemplate<String, String> kafka) {
        this.outbox = outbox;
        this.kafka = kafka;
    }

    @Scheduled(fixedDelayString = "${hexforge.outbox.poll-ms:100}")
    @Transactional
    public void relay() {
        for (OutboxEntity m : outbox.findTop100BySentAtIsNullOrderByIdAsc()) {
            try {
                kafka.send(m.topic, m.messageKey, m.payload).get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                LOG.warn("outbox message {} to {} not sent yet: {}", m.id, m.topic, e.getMessage());
                return;
            }
            m.sentAt = Instant.now();
        }
    }
}
