package dev.hexforge.gateway.job;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the running stage services can hold, as they report it ({@link Topics#SERVICES}): per stage, the smallest heap
 * among its instances heard from lately — any of them may take a request. Each gateway reads every report (a group
 * of its own).
 */
@Component
class ServiceMemory {
    private static final Logger LOG = LoggerFactory.getLogger(ServiceMemory.class);
    /** A report this old means its instance is gone (services report every 30 s by default). */
    static final Duration LIVE = Duration.ofMinutes(2);

    private final Map<String, StageEvents.ServiceReport> byInstance = new ConcurrentHashMap<>();

    @KafkaListener(topics = Topics.SERVICES, groupId = "hexforge-gateway-services-#{T(java.util.UUID).randomUUID()}")
    void onReport(String payload) {
        try {
            StageEvents.ServiceReport r = ContractsJson.read(payload, StageEvents.ServiceReport.class);
            if (r.stage() != null && r.instance() != null && r.at() != null && r.heapBytes() > 0) {
                byInstance.merge(r.instance() + "/" + r.stage().id(), r, (old, now) -> now.at().isAfter(old.at()) ? now : old);
            }
            forgetTheGone();
        } catch (RuntimeException e) { // a report the gateway cannot read is not worth a dead letter: the next one follows
            LOG.warn("unreadable service report on {}: {}", Topics.SERVICES, e.getMessage());
        }
    }

    /** Whether any stage service has reported within {@link #LIVE}. */
    boolean heard() {
        Instant since = liveSince();
        for (StageEvents.ServiceReport r : byInstance.values()) {
            if (r.at().isAfter(since)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The smallest heap among the instances of {@code stage} that reported within {@link #LIVE}; empty if none did.
     * Asked for every stage of every submission: a plain pass over the few reports, the stale ones skipped (they are
     * dropped when the next report comes).
     */
    OptionalLong heapOf(Stage stage) {
        Instant since = liveSince();
        long min = Long.MAX_VALUE;
        for (StageEvents.ServiceReport r : byInstance.values()) {
            if (r.stage() == stage && r.at().isAfter(since)) {
                min = Math.min(min, r.heapBytes());
            }
        }
        return min == Long.MAX_VALUE ? OptionalLong.empty() : OptionalLong.of(min);
    }

    /** Reports older than this are from instances taken as gone. */
    private static Instant liveSince() {
        return Instant.now().minus(LIVE);
    }

    /** A restarted service reports under a new instance id: the old one's entry goes once it is stale. */
    private void forgetTheGone() {
        Instant since = liveSince();
        byInstance.values().removeIf(r -> !r.at().isAfter(since));
    }
}
