package dev.hexforge.devicerunner;

import dev.hexforge.kernels.MemoryBandwidth;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** This host's memory bandwidth, measured (triad) once per thread count on first use: a second or two, and 192 MB of heap. */
final class HostBandwidth {
    private static final Map<Integer, Double> MEASURED = new ConcurrentHashMap<>();

    private HostBandwidth() {
    }

    static double measured(int threads) {
        return MEASURED.computeIfAbsent(threads, MemoryBandwidth::triad);
    }
}
