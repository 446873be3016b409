package dev.hexforge.gateway.job;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents.ServiceReport;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ServiceMemoryTest {
    private static void report(ServiceMemory m, Stage stage, String instance, long heap, Instant at) {
        m.onReport(ContractsJson.write(new ServiceReport(1, stage, instance, heap, at)));
    }

    @Test
    void givesTheSmallestHeapAmongAStagesLiveInstances() {
        ServiceMemory m = new ServiceMemory();
        assertFalse(m.heard());
        Instant now = Instant.now();
        report(m, Stage.EXPORT, "a", 4L << 30, now);
        report(m, Stage.EXPORT, "b", 2L << 30, now);
        report(m, Stage.QUANTIZE, "c", 1L << 30, now);
        assertTrue(m.heard());
        assertEquals(OptionalLong.of(2L << 30), m.heapOf(Stage.EXPORT));
        assertEquals(OptionalLong.of(1L << 30), m.heapOf(Stage.QUANTIZE));
        assertEquals(OptionalLong.empty(), m.heapOf(Stage.FINETUNE));
    }

    @Test
    void forgetsInstancesThatStoppedReporting() {
        ServiceMemory m = new ServiceMemory();
        Instant stale = Instant.now().minus(ServiceMemory.LIVE).minusSeconds(1);
        report(m, Stage.EXPORT, "gone", 1L << 30, stale);
        assertFalse(m.heard());
        assertEquals(OptionalLong.empty(), m.heapOf(Stage.EXPORT));
        report(m, Stage.EXPORT, "live", 3L << 30, Instant.now());
        assertTrue(m.heard());
        assertEquals(OptionalLong.of(3L << 30), m.heapOf(Stage.EXPORT)); // the stale, smaller one does not count
    }
}
