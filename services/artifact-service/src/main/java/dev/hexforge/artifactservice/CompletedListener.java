package dev.hexforge.artifactservice;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * Catalogues the outputs of the completed attempts the gateway accepted ({@link Topics#ACCEPTED_OUTPUTS}); an
 * attempt the gateway did not accept (superseded, fenced, redelivered) is never catalogued.
 */
@Component
class CompletedListener {
    private static final Logger LOG = LoggerFactory.getLogger(CompletedListener.class);
    private final Catalogue catalogue;

    CompletedListener(Catalogue catalogue) {
        this.catalogue = catalogue;
    }

    @KafkaListener(topics = Topics.ACCEPTED_OUTPUTS, groupId = "hexforge-artifact-service")
    void onEvent(String payload) {
        StageEvents.Event e;
        try {
            e = ContractsJson.read(payload, StageEvents.Event.class);
        } catch (IllegalArgumentException ex) {
            LOG.warn("unreadable stage event dropped: {}", ex.getMessage());
            return;
        }
        if (e instanceof StageEvents.Completed c) {
            catalogue.register(c);
        }
    }
}
