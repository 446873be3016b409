package dev.hexforge.gateway.outbox;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * Sends outbox rows to Kafka in order and marks them sent, on one thread. A transaction that wrote rows wakes it when
 * it commits (so a stage request leaves within milliseconds); a slow poll catches anything else. A crash between send
 * and mark re-sends the row; stage services treat a request for an attempt they already finished as a duplicate.
 */
@Component
public class OutboxRelay {
    private static final Logger LOG = LoggerFactory.getLogger(OutboxRelay.class);
    private final OutboxRepository outbox;
    private final KafkaTemplate<String, String> kafka;
    private final TransactionTemplate tx;
    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "hexforge-outbox");
        t.setDaemon(true);
        return t;
    });
    private final AtomicBoolean pending = new AtomicBoolean();

    OutboxRelay(OutboxRepository outbox, KafkaTemplate<String, String> kafka, TransactionTemplate tx) {
        this.outbox = outbox;
        this.kafka = kafka;
        this.tx = tx;
    }

    /** Called inside a transaction that adds rows: relays them as soon as it commits. */
    void afterCommit() {
        if (TransactionSynchronizationManager.isSynchronizationActive()) {
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCommit() {
                    wake();
                }
            });
        } else {
            wake();
        }
    }

    @Scheduled(fixedDelayString = "${hexforge.outbox.poll-ms:1000}")
    public void wake() {
        if (pending.compareAndSet(false, true)) {
            thread.execute(() -> {
                pending.set(false);
                try {
                    while (Boolean.TRUE.equals(tx.execute(s -> relayBatch()))) {
                        // a full batch: there may be more
                    }
                } catch (RuntimeException e) {
                    LOG.warn("outbox relay: {}", e.getMessage());
                }
            });
        }
    }

    /** Relays up to 100 unsent rows in one transaction; true when the batch was full and all were taken. */
    private boolean relayBatch() {
        var rows = outbox.findTop100BySentAtIsNullOrderByIdAsc();
        return send(rows, m -> kafka.send(m.topic, m.messageKey, m.payload)) && rows.size() == 100;
    }

    /**
     * Hands {@code rows} to the producer in order without waiting between them (the producer is idempotent and its
     * batches never expire, so a partition keeps their order), then marks sent the rows up to the first the broker did
     * not take; true when it took them all. A row refused at once (the producer could not even queue it: no metadata
     * for its topic in time) stops the hand-over there, so no later row can reach the broker before it; a row after a
     * refused one that was already handed over is sent again with it, which consumers tolerate. It waits for the
     * producer's verdict on every row it handed over before the rows can be read again, so a broker away for a while
     * gets each row once more, not once per poll.
     */
    static boolean send(List<OutboxEntity> rows, Function<OutboxEntity, CompletableFuture<?>> producer) {
        List<CompletableFuture<?>> sends = new ArrayList<>(rows.size());
        for (OutboxEntity m : rows) {
            CompletableFuture<?> f;
            try {
                f = producer.apply(m);
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            sends.add(f);
            if (f.isCompletedExceptionally()) {
                break;
            }
        }
        boolean refused = false;
        for (int i = 0; i < sends.size(); i++) {
            OutboxEntity m = rows.get(i);
            try {
                sends.get(i).get();
                if (!refused) {
                    m.sentAt = Instant.now();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            } catch (ExecutionException e) {
                if (!refused) {
                    LOG.warn("outbox message {} to {} not sent yet: {}", m.id, m.topic, e.getCause().getMessage());
                }
                refused = true;
            }
        }
        return !refused && sends.size() == rows.size();
    }
}
