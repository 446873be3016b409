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
 * @param gatePassed      ΔPPL within the limit (true when no text was given)
 */
public record QuantizationReport(String method, String spec, String head, List<String> kept, CoverageReport calibration,
                                 List<String> warnings, List<LayerReport> layers, List<Awq.GroupError> awqGroups,
                                 SensitivityScan.Result sensitivity, Double floatPerplexity,
                                 Double quantizedPerplexity, Double deltaPerplexity, double maxDeltaPerplexity,
                                 boolean gatePassed, double greedyAgreement, long scoredTokens, List<String> worstLayers,
                                 double seconds) {

    /**
     * @param relativeError    ‖W − W'‖ / ‖W‖
     * @param outputError      calibration output error Σ δ H δᵀ (null without calibration)
     * @param rtnOutputError   the same for plain RTN at this spec, for comparison (null without calibration)
     */
    public record LayerReport(String name, int bits, int groupSize, boolean symmetric, float scaleMin, float scaleMax,
                              double scaleMean, double relativeError, Double outputError, Double rtnOutputError) {
    }
}
