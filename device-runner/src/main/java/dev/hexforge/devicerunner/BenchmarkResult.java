package dev.hexforge.devicerunner;

import java.util.Map;

/**
 * What one benchmark of an LLM bundle measured. A figure the backend or device cannot give is null and listed in
 * {@code notAvailable} with the reason — never reported as zero.
 *
 * @param tokenAgreement share of greedy tokens equal to the reference continuation (null without a reference)
 * @param efficiency     decode tokens/s as a share of the memory-bandwidth limit (weight bytes per token / bandwidth)
 */
public record BenchmarkResult(String backend, String bundleRootDigest, int promptLength, int newTokens, double loadSeconds,
                              double timeToFirstTokenMs, double prefillTokensPerSecond, double decodeTokensPerSecond,
                              Long peakRssBytes, long weightBytesPerToken, Double memoryBandwidthBytesPerSecond,
                              Double efficiency, Double tokenAgreement, Map<String, String> notAvailable) {
}
