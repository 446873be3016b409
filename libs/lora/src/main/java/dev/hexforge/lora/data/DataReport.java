package dev.hexforge.lora.data;

/**
 * What encoding a dataset did: examples kept, examples cut to the maximum length, examples dropped because
 * nothing was left to learn after cutting, and token counts.
 */
public record DataReport(int records, int examples, int truncated, int dropped, long tokens, long targetTokens) {
}
