package dev.hexforge.quant;

import dev.hexforge.quant.awq.Awq;
import dev.hexforge.quant.calib.CoverageReport;

import java.util.List;

/**
 * What a quantization run did and what it cost in accuracy: written as {@code quantization_report.json}.
 *
 * @param head            the token embedding's and LM head's spec, or "float"
 * @param layers          per quantized tensor (linears, then the embedding and head): spec, scale statistics and
 *                        reconstruction errors
 * @param awqGroups       AWQ only: each scaled group's objective against RTN
 * @param sensitivity     automatic mixed precision only: the per-linear scan and what it kept in float
 * @param greedyAgreement fraction of the scored positions where the float and the quantized model's greedy (top-1)
 *                        next tokens agree, teacher-forced on the gate's windows
 * @param scoredTokens    positions the gate scored
 * @param gatePassed      ΔPPL within the limit (true when no text was given); with quantized activations, both the
 *                        weight-only and the fully quantized graph's
 * @param activations     the fully quantized static graph's calibration and accuracy; null when activations stay float
 */
public record QuantizationReport(String method, String spec, String head, List<String> kept, CoverageReport calibration,
                                 List<String> warnings, List<LayerReport> layers, List<Awq.GroupError> awqGroups,
                                 SensitivityScan.Result sensitivity, Double floatPerplexity,
                                 Double quantizedPerplexity, Double deltaPerplexity, double maxDeltaPerplexity,
                                 boolean gatePassed, double greedyAgreement, long scoredTokens, List<String> worstLayers,
                                 Activations activations, double seconds) {

    /**
     * The static graph as the HTP runs it: every activation quantized at its calibrated encoding, scored by ONNX
     * Runtime on this CPU (which runs Q / DQ as fake quantization) on the gate's windows.
     *
     * @param precision          as AI Hub names it: w8a16, w4a16, w8a8...
     * @param rangeMethod        how each kind of tensor's range was chosen
     * @param calibrationChunks  chunks of calibration text the ranges were measured on
     * @param deltaPerplexity    the rise over the float model (compare {@code deltaPerplexity}, the weight-only rise)
     * @param noisiest           the activations whose quantization is noisiest: lowest signal-to-quantization-noise
     *                           ratio on the calibration chunks
     */
    public record Activations(String precision, int activationBits, int kvBits, String rangeMethod, int calibrationChunks,
                              double calibrationSeconds, double perplexity, double deltaPerplexity, double greedyAgreement,
                              List<String> noisiest) {
    }

    /**
     * @param relativeError    ‖W − W'‖ / ‖W‖
     * @param outputError      calibration output error Σ δ H δᵀ (null without calibration)
     * @param rtnOutputError   the same for plain RTN at this spec, for comparison (null without calibration)
     */
    public record LayerReport(String name, int bits, int groupSize, boolean symmetric, float scaleMin, float scaleMax,
                              double scaleMean, double relativeError, Double outputError, Double rtnOutputError) {
    }
}
