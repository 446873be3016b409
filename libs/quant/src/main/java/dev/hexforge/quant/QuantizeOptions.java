package dev.hexforge.quant;

import dev.hexforge.onnx.lora.LoraCalibration;
import dev.hexforge.onnx.qdq.Activations;
import dev.hexforge.quant.gptq.Gptq;

import java.nio.file.Path;
import java.util.List;

/**
 * One quantization run.
 *
 * @param method       rtn, gptq or awq
 * @param keep         module-name patterns left in float (e.g. "q_proj")
 * @param head         the token embedding's and LM head's spec (RTN); null leaves them in float
 * @param calibration  where calibration samples come from; required by gptq and awq, unused by rtn
 * @param evalText     text scored for the accuracy gate; null: the bundled text
 * @param evalWindow   tokens per scored window (a fresh context each)
 * @param evalTokens   the gate scores the text's first whole windows up to this many tokens (at least one window)
 * @param maxDeltaPpl  the gate: largest allowed rise in perplexity over the float model
 * @param cache        where the float model's gate scores are kept between runs (keyed by the model's digest); null: none
 * @param autoKeepPercent automatic mixed precision: keep the most sensitive linears in float while the extra bytes
 *                     stay within this percentage of the quantized linears (0: off; needs calibration data)
 * @param activations  the static graph's activations: calibrated and gated when quantized (needs calibration data,
 *                     a quantized head, no linear kept in float); null or float: weights only
 * @param lora         LoRA adapters the fully quantized graphs will run with (their inputs and products calibrated
 *                     too, {@link LoraCalibration}); null: none
 */
public record QuantizeOptions(String method, QuantSpec spec, List<String> keep, QuantSpec head, Calibration calibration,
                              Gptq.Options gptq,
                              Path evalText, int evalWindow, int evalTokens, double maxDeltaPpl, double autoKeepPercent,
                              Path cache, Activations activations, LoraCalibration lora) {
    public static final double DEFAULT_MAX_DELTA_PPL = 0.5;

    public QuantizeOptions(String method, QuantSpec spec, List<String> keep, QuantSpec head, Calibration calibration,
                           Gptq.Options gptq, Path evalText, int evalWindow, int evalTokens, double maxDeltaPpl,
                           double autoKeepPercent, Path cache, Activations activations) {
        this(method, spec, keep, head, calibration, gptq, evalText, evalWindow, evalTokens, maxDeltaPpl, autoKeepPercent, cache,
                activations, null);
    }

    /** These options for graphs that will run {@code lora}'s adapters. */
    public QuantizeOptions withLora(LoraCalibration lora) {
        return new QuantizeOptions(method, spec, keep, head, calibration, gptq, evalText, evalWindow, evalTokens, maxDeltaPpl,
                autoKeepPercent, cache, activations, lora);
    }

    public QuantizeOptions withGptq(Gptq.Options options) {
        return new QuantizeOptions(method, spec, keep, head, calibration, options, evalText, evalWindow, evalTokens, maxDeltaPpl,
                autoKeepPercent, cache, activations, lora);
    }

    public QuantizeOptions withCalibrationSeed(long seed) {
        return new QuantizeOptions(method, spec, keep, head, calibration == null ? null
                : new Calibration(calibration.file(), calibration.samples(), calibration.length(), seed), gptq, evalText, evalWindow,
                evalTokens, maxDeltaPpl, autoKeepPercent, cache, activations, lora);
    }

    public QuantizeOptions withEvalWindow(int window) {
        return new QuantizeOptions(method, spec, keep, head, calibration, gptq, evalText, window, evalTokens, maxDeltaPpl,
                autoKeepPercent, cache, activations, lora);
    }

    /** N samples of at most L tokens from a JSONL file, chosen with a seed. */
    public record Calibration(Path file, int samples, int length, long seed) {
        public static final int DEFAULT_SAMPLES = 128;
        public static final int DEFAULT_LENGTH = 512;
    }

    public QuantizeOptions {
        keep = List.copyOf(keep);
        if (!List.of("rtn", "gptq", "awq").contains(method)) {
            throw new QuantizationException("method must be rtn, gptq or awq, got '" + method + "'");
        }
        if (!method.equals("rtn") && calibration == null) {
            throw new QuantizationException(method + " needs calibration data: give --calib FILE (JSONL of {\"text\": ...})");
        }
        if (autoKeepPercent < 0 || autoKeepPercent > 1000) {
            throw new QuantizationException("the automatic keep budget must be between 0 and 1000 percent, got " + autoKeepPercent);
        }
        if (autoKeepPercent > 0 && calibration == null) {
            throw new QuantizationException("automatic mixed precision needs calibration data: give --calib FILE");
        }
        if (!(maxDeltaPpl >= 0)) {
            throw new QuantizationException("max delta perplexity must be >= 0, got " + maxDeltaPpl);
        }
        if (evalWindow < 2 || evalTokens < 1) {
            throw new QuantizationException("the gate needs windows of at least 2 tokens and at least 1 token to score, got "
                    + evalWindow + " and " + evalTokens);
        }
        if (gptq == null) {
            gptq = Gptq.Options.defaults();
        }
        if (activations == null) {
            activations = Activations.FLOAT;
        }
        if (activations.quantized()) {
            String a = activations.precision(spec.bits());
            if (calibration == null) {
                throw new QuantizationException(a + " needs calibration data for the activation ranges: give --calib FILE");
            }
            if (head == null) {
                throw new QuantizationException(a + ": a float embedding and LM head cannot run beside quantized activations on "
                        + "the HTP; quantize them (head int8 or int4) or keep activations float");
            }
            if (!keep.isEmpty() || autoKeepPercent > 0) {
                throw new QuantizationException(a + ": linears kept in float (keep, auto-keep) cannot run beside quantized "
                        + "activations on the HTP; quantize every linear or keep activations float");
            }
        }
    }
}
