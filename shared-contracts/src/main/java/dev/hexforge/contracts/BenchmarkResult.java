package dev.hexforge.contracts;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What one benchmark of an LLM bundle measured, in the units its names say (seconds, milliseconds, tokens per second,
 * bytes, joules). A figure the backend or device cannot give is null and listed in {@code notAvailable} under its own
 * name with the reason — never reported as zero. A device sends it and the gateway stores it only after
 * {@link #check}: every number finite and in range, every text bounded plain text, the not-available names from the
 * record's own figures.
 *
 * @param device                 where it ran: "host" or the phone (model and serial)
 * @param tokenAgreement         share of greedy tokens equal to the host's reference continuation (teacher-forced)
 * @param perplexity             the device's perplexity on the reference text; {@code referencePerplexity} is the host's
 * @param bandwidthSource        how the memory bandwidth was obtained (measured triad, or the SoC table's spec-sheet peak)
 * @param efficiency             decode tokens/s as a share of the memory-bandwidth limit (bandwidth / weight bytes per token)
 * @param opsOffNpu              ops that ran outside the NPU (0 when the runtime refuses any fallback); null on a CPU backend
 * @param opTimingsMs            time per op type (or graph) in ms for one decode step, where the backend profiles
 * @param joulesPerToken         decode energy per token from the device's battery current × voltage
 * @param thermalState           the device's thermal status after the run
 */
public record BenchmarkResult(String backend, String device, String bundleRootDigest, int promptLength, int newTokens,
                              double loadSeconds, double timeToFirstTokenMs, double prefillTokensPerSecond,
                              double decodeTokensPerSecond, Long peakRssBytes, long weightBytesPerToken,
                              Double memoryBandwidthBytesPerSecond, String bandwidthSource, Double efficiency,
                              Double tokenAgreement, Double perplexity, Double referencePerplexity, Integer opsOffNpu,
                              Map<String, Double> opTimingsMs, Double joulesPerToken, String thermalState,
                              Map<String, String> notAvailable) {

    /** The figures that may be reported as not available: the record's own nullable figures. */
    public static final Set<String> FIGURES = Set.of("peakRssBytes", "memoryBandwidthBytesPerSecond", "efficiency",
            "tokenAgreement", "perplexity", "referencePerplexity", "opsOffNpu", "opTimingsMs", "joulesPerToken",
            "thermalState", "energyPerToken");

    /** Op timings a result may carry (op types or graphs of one decode step). */
    public static final int MAX_OP_TIMINGS = 256;

    /** Throws {@link IllegalArgumentException} naming the first field (under {@code at}) that is out of bounds. */
    public void check(String at) {
        if (backend == null || !DeviceMessages.BACKENDS.contains(backend)) {
            throw new IllegalArgumentException(at + "backend: must be one of " + new TreeSet<>(DeviceMessages.BACKENDS));
        }
        text(at + "device", device, 200, false);
        if (bundleRootDigest != null && !bundleRootDigest.matches("[0-9a-f]{64}")) {
            throw new IllegalArgumentException(at + "bundleRootDigest: must be 64 lowercase hex digits");
        }
        whole(at + "promptLength", promptLength, 1, 1 << 20);
        whole(at + "newTokens", newTokens, 1, 1 << 20);
        number(at + "loadSeconds", loadSeconds, 1e7, false);
        number(at + "timeToFirstTokenMs", timeToFirstTokenMs, 1e10, false);
        number(at + "prefillTokensPerSecond", prefillTokensPerSecond, 1e9, false);
        number(at + "decodeTokensPerSecond", decodeTokensPerSecond, 1e9, false);
        if (peakRssBytes != null && (peakRssBytes < 0 || peakRssBytes > (1L << 50))) {
            throw new IllegalArgumentException(at + "peakRssBytes: must be between 0 and 2^50 bytes");
        }
        if (weightBytesPerToken < 0 || weightBytesPerToken > (1L << 50)) {
            throw new IllegalArgumentException(at + "weightBytesPerToken: must be between 0 and 2^50 bytes");
        }
        number(at + "memoryBandwidthBytesPerSecond", memoryBandwidthBytesPerSecond, 1e15, true);
        text(at + "bandwidthSource", bandwidthSource, 500, true);
        number(at + "efficiency", efficiency, 1e3, true);
        number(at + "tokenAgreement", tokenAgreement, 1, true);
        number(at + "perplexity", perplexity, 1e12, true);
        number(at + "referencePerplexity", referencePerplexity, 1e12, true);
        if (opsOffNpu != null && (opsOffNpu < 0 || opsOffNpu > 1_000_000)) {
            throw new IllegalArgumentException(at + "opsOffNpu: must be between 0 and 1000000");
        }
        if (opTimingsMs != null) {
            if (opTimingsMs.size() > MAX_OP_TIMINGS) {
                throw new IllegalArgumentException(at + "opTimingsMs: at most " + MAX_OP_TIMINGS + " entries, got " + opTimingsMs.size());
            }
            opTimingsMs.forEach((op, ms) -> {
                text(at + "opTimingsMs key", op, 200, false);
                number(at + "opTimingsMs." + op, ms, 1e10, false);
            });
        }
        number(at + "joulesPerToken", joulesPerToken, 1e6, true);
        text(at + "thermalState", thermalState, 64, true);
        if (notAvailable != null) {
            for (Map.Entry<String, String> e : notAvailable.entrySet()) {
                if (!FIGURES.contains(e.getKey())) {
                    throw new IllegalArgumentException(at + "notAvailable: '" + clip(e.getKey()) + "' is not a figure of a result; one of "
                            + new TreeSet<>(FIGURES));
                }
                text(at + "notAvailable." + e.getKey(), e.getValue(), 500, false);
            }
        }
    }

    private static void whole(String field, int v, int min, int max) {
        if (v < min || v > max) {
            throw new IllegalArgumentException(field + ": must be between " + min + " and " + max + ", got " + v);
        }
    }

    private static void number(String field, Double v, double max, boolean nullable) {
        if (v == null) {
            if (!nullable) {
                throw new IllegalArgumentException(field + ": must be a number");
            }
            return;
        }
        if (!Double.isFinite(v) || v < 0 || v > max) {
            throw new IllegalArgumentException(field + ": must be a finite number between 0 and " + max);
        }
    }

    private static void text(String field, String v, int max, boolean nullable) {
        if (v == null) {
            if (!nullable) {
                throw new IllegalArgumentException(field + ": must be a string");
            }
            return;
        }
        PlainText.require(field, v, max);
    }

    private static String clip(String s) {
        return s.length() > 60 ? s.substring(0, 60) + "..." : s;
    }

    /** The same result with the op timings of a separate profiled run. */
    public BenchmarkResult withOpTimings(Map<String, Double> timings) {
        return new BenchmarkResult(backend, device, bundleRootDigest, promptLength, newTokens, loadSeconds, timeToFirstTokenMs,
                prefillTokensPerSecond, decodeTokensPerSecond, peakRssBytes, weightBytesPerToken, memoryBandwidthBytesPerSecond,
                bandwidthSource, efficiency, tokenAgreement, perplexity, referencePerplexity, opsOffNpu, timings, joulesPerToken,
                thermalState, notAvailable);
    }

    /** Decode tokens/s as a share of what the bandwidth allows for this many weight bytes a token, or null. */
    public static Double efficiency(double decodeTokensPerSecond, long weightBytesPerToken, Double bandwidth) {
        return bandwidth == null || bandwidth <= 0 ? null : decodeTokensPerSecond * weightBytesPerToken / bandwidth;
    }
}
