package dev.hexforge.devicerunner;

import dev.hexforge.kernels.MemoryBandwidth;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * This host's memory bandwidth, measured once per thread count on first use ({@link MemoryBandwidth#measure}: the C
 * triad where the host compiles it, else the JVM's): a second or two, and 192 MB of heap.
 */
final class HostBandwidth {
    private static final Map<Integer, MemoryBandwidth.Measured> MEASURED = new ConcurrentHashMap<>();

    private HostBandwidth() {
    }

    static MemoryBandwidth.Measured measured(int threads) {
        return MEASURED.computeIfAbsent(threads, MemoryBandwidth::measure);
    }
}
