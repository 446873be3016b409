package dev.hexforge.gateway.job;

import org.springframework.stereotype.Component;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * How long the gateway spends checking each accepted job before storing it (reading and validating the document, the
 * ids and paths it names, the limits and the memory estimate): the last {@value #KEPT} submissions, for
 * {@code hexforge bench-fleet}'s "submission checks" figure. Timed around the checks themselves, because the few tenths
 * of a millisecond they cost are far inside the spread of a whole request's p99 on a small machine. Each is kept as
 * wall time and as the request thread's CPU time, so a tail can be told apart: work the checks do, or time the thread
 * spent waiting (for a core, the database, a lock).
 */
@Component
public class SubmissionTimings {
    static final int KEPT = 1 << 16;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final boolean CPU_TIME = THREADS.isCurrentThreadCpuTimeSupported();
    private final AtomicLongArray nanos = new AtomicLongArray(KEPT);
    private final AtomicLongArray cpuNanos = new AtomicLongArray(KEPT);
    private final AtomicLong count = new AtomicLong();

    /** The calling thread's CPU time in nanoseconds, 0 where the JVM cannot measure it. */
    static long threadCpuNanos() {
        long t = CPU_TIME ? THREADS.getCurrentThreadCpuTime() : -1;
        return Math.max(0, t);
    }

    void record(long elapsedNanos, long cpuElapsedNanos) {
        int slot = (int) (count.getAndIncrement() & (KEPT - 1));
        nanos.set(slot, elapsedNanos);
        cpuNanos.set(slot, cpuElapsedNanos);
    }

    /** How many accepted jobs have been timed since the gateway started. */
    public long recorded() {
        return count.get();
    }

    /** The wall durations of the jobs accepted after the first {@code since}, in milliseconds, sorted ({@value #KEPT} at most). */
    public double[] sortedMillisSince(long since) {
        return sorted(nanos, since);
    }

    /** As {@link #sortedMillisSince}, for the request thread's CPU time over the same checks. */
    public double[] sortedCpuMillisSince(long since) {
        return sorted(cpuNanos, since);
    }

    private double[] sorted(AtomicLongArray values, long since) {
        long end = count.get();
        long from = Math.max(since, end - KEPT);
        long[] copy = new long[(int) Math.max(0, end - from)];
        for (int i = 0; i < copy.length; i++) {
            copy[i] = values.get((int) ((from + i) & (KEPT - 1)));
        }
        Arrays.sort(copy);
        return Arrays.stream(copy).mapToDouble(v -> v / 1e6).toArray();
    }
}
