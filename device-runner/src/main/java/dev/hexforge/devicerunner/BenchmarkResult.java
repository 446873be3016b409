package dev.hexforge.devicerunner;

import java.util.Map;

/**
 * What one benchmark of an LLM bundle measured. A figure the backend or device cannot give is null and listed in
 * {@code notAvailable} with the reason — never reported as zero.
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

    BenchmarkResult withOpTimings(Map<String, Double> timings) {
        return new BenchmarkResult(backend, device, bundleRootDigest, promptLength, newTokens, loadSeconds, timeToFirstTokenMs,
                prefillTokensPerSecond, decodeTokensPerSecond, peakRssBytes, weightBytesPerToken, memoryBandwidthBytesPerSecond,
                bandwidthSource, efficiency, tokenAgreement, perplexity, referencePerplexity, opsOffNpu, timings, joulesPerToken,
                thermalState, notAvailable);
    }

    /** Decode tokens/s as a share of what the bandwidth allows for this many weight bytes a token, or null. */
    static Double efficiency(double decodeTokensPerSecond, long weightBytesPerToken, Double bandwidth) {
        return bandwidth == null || bandwidth <= 0 ? null : decodeTokensPerSecond * weightBytesPerToken / bandwidth;
    }
}
