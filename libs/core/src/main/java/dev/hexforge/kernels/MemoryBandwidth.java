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
