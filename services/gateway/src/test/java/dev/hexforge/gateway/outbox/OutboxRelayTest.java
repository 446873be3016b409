package dev.hexforge.gateway.outbox;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** How the relay hands a batch of rows to the producer: in order, and never a row past one the producer refused. */
class OutboxRelayTest {
    static List<OutboxEntity> rows(int n) {
        List<OutboxEntity> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            OutboxEntity m = new OutboxEntity();
            m.id = (long) i;
            m.topic = "t";
            m.messageKey = "job";
            m.payload = "row-" + i;
            rows.add(m);
        }
        return rows;
    }

    @Test
    void aBatchTheBrokerTakesIsMarkedSentInOrder() {
        List<OutboxEntity> rows = rows(5);
        List<String> handed = new ArrayList<>();
        assertTrue(OutboxRelay.send(rows, m -> {
            handed.add(m.payload);
            return CompletableFuture.completedFuture(null);
        }));
        assertEquals(List.of("row-0", "row-1", "row-2", "row-3", "row-4"), handed);
        rows.forEach(m -> assertNotNull(m.sentAt, m.payload));
    }

    /**
     * The producer refuses row 1 at once (it could not get its topic's metadata in time) while it would take the rows
     * after it: those must not be handed over, or they would reach the topic before row 1 does.
     */
    @Test
    void noRowIsHandedOverPastOneRefusedAtOnce() {
        List<OutboxEntity> rows = rows(5);
        List<String> handed = new ArrayList<>();
        boolean all = OutboxRelay.send(rows, m -> {
            handed.add(m.payload);
            return m.payload.equals("row-1") ? CompletableFuture.failedFuture(new IllegalStateException("no metadata in time"))
                    : CompletableFuture.completedFuture(null);
        });
        assertFalse(all);
        assertEquals(List.of("row-0", "row-1"), handed, "nothing past the refused row reached the producer");
        assertNotNull(rows.get(0).sentAt);
        for (int i = 1; i < 5; i++) {
            assertNull(rows.get(i).sentAt, "row " + i + " is relayed again, in order");
        }
    }

    @Test
    void aRowRefusedLaterLeavesItAndTheRowsAfterItToBeSentAgain() {
        List<OutboxEntity> rows = rows(4);
        List<CompletableFuture<Object>> pending = new CopyOnWriteArrayList<>();
        Thread broker = new Thread(() -> {
            while (pending.size() < 4) {
                Thread.onSpinWait();
            }
            pending.get(0).complete(null);
            pending.get(1).completeExceptionally(new IllegalStateException("expired"));
            pending.get(2).complete(null);
            pending.get(3).complete(null);
        });
        broker.start();
        boolean all = OutboxRelay.send(rows, m -> {
            CompletableFuture<Object> f = new CompletableFuture<>();
            pending.add(f);
            return f;
        });
        assertFalse(all);
        assertNotNull(rows.get(0).sentAt);
        for (int i = 1; i < 4; i++) {
            assertNull(rows.get(i).sentAt, "row " + i);
        }
    }
}
