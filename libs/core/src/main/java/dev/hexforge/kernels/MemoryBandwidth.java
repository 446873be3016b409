package dev.hexforge.kernels;

import java.util.Arrays;
import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;

/**
 * This machine's memory bandwidth, measured as STREAM's triad ({@code a = b + 3c} over three 64 MB float arrays, far
 * beyond any cache), best of eight passes: the ceiling a bandwidth-bound decode is measured against.
 */
public final class MemoryBandwidth {
    private static final int FLOATS = 1 << 24;

    private MemoryBandwidth() {
    }

    /**
     * The bandwidth efficiency figures divide by: the C triad's where this machine compiles it ({@link CTriad}), else
     * the JVM's {@link #triad}; both are measured, so a report can show how far apart they are.
     *
     * @param cUnavailable why there is no C figure (then {@code bytesPerSecond} is the JVM's), or null
     */
    public record Measured(double bytesPerSecond, double jvmBytesPerSecond, String cUnavailable) {
        public boolean fromC() {
            return cUnavailable == null;
        }

        /** "triad in C, 2 threads" or "triad in the JVM, 1 thread (no C triad: ...)". */
        public String describe(int threads) {
            String count = threads + " thread" + (threads == 1 ? "" : "s");
            return fromC() ? "triad in C, " + count : "triad in the JVM, " + count + " (no C triad: " + cUnavailable + ")";
        }
    }

    public static Measured measure(int threads) {
        double jvm = triad(threads);
        try (CTriad c = CTriad.build()) {
            return new Measured(c.run(threads), jvm, null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the caller's to act on; the JVM's figure is still a measurement
            return new Measured(jvm, jvm, "interrupted");
        } catch (Exception e) {
            return new Measured(jvm, jvm, e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
        }
    }

    /** Bytes per second moved by {@code threads} threads (reads of b and c plus the write of a). */
    public static double triad(int threads) {
        float[] a = new float[FLOATS];
        float[] b = new float[FLOATS];
        float[] c = new float[FLOATS];
        Arrays.fill(b, 1f);
        Arrays.fill(c, 2f);
        double best = 0;
        ForkJoinPool pool = new ForkJoinPool(threads);
        try {
            for (int rep = 0; rep < 8; rep++) {
                long t0 = System.nanoTime();
                pool.submit(() -> IntStream.range(0, threads).parallel().forEach(t -> {
                    int from = (int) ((long) FLOATS * t / threads);
                    int to = (int) ((long) FLOATS * (t + 1) / threads);
                    for (int i = from; i < to; i++) {
                        a[i] = b[i] + 3f * c[i];
                    }
                })).join();
                double secs = (System.nanoTime() - t0) / 1e9;
                best = Math.max(best, 3.0 * FLOATS * Float.BYTES / secs);
            }
        } finally {
            pool.shutdown();
        }
        return best;
    }
}
