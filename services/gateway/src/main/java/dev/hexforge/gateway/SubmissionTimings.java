package dev.hexforge.gateway;

import org.springframework.stereotype.Component;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * How long the gateway spends checking each accepted job before storing it (reading and validating the document, the
 * ids and paths it names, the limits and the memory estimate): the last {@value #KEPT} submissions, for
 * {@code hexforge bench-fleet}'s "submission checks" figure. Timed around the checks themselves, because the few tenths
 * of a millisecond they cost are far inside the spread of a whole request's p99 on a small machine.
 */
@Component
public class SubmissionTimings {
    static final int KEPT = 1 << 16;
    private final AtomicLongArray nanos = new AtomicLongArray(KEPT);
    private final AtomicLong count = new AtomicLong();

    void record(long elapsedNanos) {
        nanos.set((int) (count.getAndIncrement() & (KEPT - 1)), elapsedNanos);
    }

    /** How many accepted jobs have been timed since the gateway started. */
    public long recorded() {
        return count.get();
    }

    /** The durations of the jobs accepted after the first {@code since}, in milliseconds, sorted ({@value #KEPT} at most). */
    public double[] sortedMillisSince(long since) {
        long end = count.get();
        long from = Math.max(since, end - KEPT);
        long[] copy = new long[(int) Math.max(0, end - from)];
        for (int i = 0; i < copy.length; i++) {
            copy[i] = nanos.get((int) ((from + i) & (KEPT - 1)));
        }
        Arrays.sort(copy);
        return Arrays.stream(copy).mapToDouble(v -> v / 1e6).toArray();
    }
}
