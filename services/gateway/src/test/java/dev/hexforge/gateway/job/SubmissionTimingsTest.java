package dev.hexforge.gateway.job;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SubmissionTimingsTest {
    @Test
    void givesTheDurationsRecordedAfterAPointSortedInMilliseconds() {
        SubmissionTimings t = new SubmissionTimings();
        t.record(9_000_000, 8_000_000);
        long since = t.recorded();
        t.record(3_000_000, 200_000);
        t.record(500_000, 400_000);
        assertArrayEquals(new double[]{0.5, 3.0}, t.sortedMillisSince(since));
        assertArrayEquals(new double[]{0.2, 0.4}, t.sortedCpuMillisSince(since));
        assertEquals(3, t.sortedMillisSince(0).length);
    }

    @Test
    void measuresTheCallingThreadsCpuTime() {
        long before = SubmissionTimings.threadCpuNanos();
        double x = 0;
        for (int i = 0; i < 20_000_000; i++) {
            x += Math.sqrt(i);
        }
        long spent = SubmissionTimings.threadCpuNanos() - before;
        assertTrue(spent > 0 && x > 0, "CPU time of a busy loop: " + spent + " ns");
    }

    @Test
    void keepsOnlyTheLatestWhenMoreWereRecordedThanItHolds() {
        SubmissionTimings t = new SubmissionTimings();
        for (int i = 0; i < SubmissionTimings.KEPT + 10; i++) {
            t.record(i, i);
        }
        double[] kept = t.sortedMillisSince(0);
        assertEquals(SubmissionTimings.KEPT, kept.length);
        assertEquals(10 / 1e6, kept[0]);
        assertEquals((SubmissionTimings.KEPT + 9) / 1e6, kept[kept.length - 1]);
        assertEquals(SubmissionTimings.KEPT, t.sortedCpuMillisSince(0).length);
    }
}
