package dev.hexforge.gateway.outbox;

import dev.hexforge.contracts.ContractsJson;
import org.springframework.stereotype.Component;

import java.time.Instant;

/**
 * Adds a message to the outbox in the caller's transaction (so it leaves exactly when the state change it announces
 * commits), and wakes the relay when that transaction commits.
 */
@Component
public class Outbox {
    private final OutboxRepository rows;
    private final OutboxRelay relay;

    Outbox(OutboxRepository rows, OutboxRelay relay) {
        this.rows = rows;
        this.relay = relay;
    }

    /** {@code message} as contract JSON to {@code topic} under {@code key} (a job's id: its messages stay in order). */
    public void add(String topic, String key, Object message) {
        OutboxEntity m = new OutboxEntity();
        m.topic = topic;
        m.messageKey = key;
        m.payload = ContractsJson.write(message);
        m.createdAt = Instant.now();
        rows.save(m);
        relay.afterCommit();
    }
}
