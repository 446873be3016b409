package dev.hexforge.quant;

import dev.hexforge.onnx.export.ExportOptions;

import java.nio.file.Path;
import java.util.List;

/**
 * One quantization run.
 *
 * @param method       rtn (awq and gptq are refused until they land)
 * @param keep         module-name patterns left in float (e.g. "q_proj")
 * @param format       qdq, matmulnbits or both
 * @param evalText     text scored for the accuracy gate; null skips perplexity and the gate
 * @param maxDeltaPpl  the gate: largest allowed rise in perplexity over the float model
 */
public record QuantizeOptions(String method, QuantSpec spec, List<String> keep, String format, ExportOptions export,
                              Path evalText, int evalWindow, double maxDeltaPpl) {
    public static final double DEFAULT_MAX_DELTA_PPL = 0.5;

    public QuantizeOptions {
        keep = List.copyOf(keep);
        if (!method.equals("rtn")) {
            throw new QuantizationException("method '" + method + "' is not available in this build (only rtn); "
                    + (method.equals("awq") || method.equals("gptq") ? "AWQ and GPTQ are not implemented yet" : "choose rtn"));
        }
        if (!List.of("qdq", "matmulnbits", "both").contains(format)) {
            throw new QuantizationException("format must be qdq, matmulnbits or both, got '" + format + "'");
        }
        if (!(maxDeltaPpl >= 0)) {
            throw new QuantizationException("max delta perplexity must be >= 0, got " + maxDeltaPpl);
        }
    }
}
