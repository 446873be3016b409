package dev.hexforge.quant;

import java.util.List;

/**
 * What a quantization run did and what it cost in accuracy: written as {@code quantization_report.json}.
 *
 * @param layers           per quantized linear: spec, scale statistics and weight reconstruction error
 * @param floatPerplexity  of the unquantized model on the evaluation text (NaN when no text was given)
 * @param greedyAgreement  fraction of greedy tokens on fixed prompts equal between float and quantized models
 * @param gatePassed       ΔPPL within the limit (true when no text was given)
 */
public record QuantizationReport(String method, String spec, List<String> kept, List<LayerReport> layers,
                                 double floatPerplexity, double quantizedPerplexity, double deltaPerplexity,
                                 double maxDeltaPerplexity, boolean gatePassed, double greedyAgreement,
                                 List<String> worstLayers, double seconds) {

    /** @param relativeError ‖W − W'‖ / ‖W‖ */
    public record LayerReport(String name, int bits, int groupSize, boolean symmetric, float scaleMin, float scaleMax,
                              double scaleMean, double relativeError) {
    }
}
