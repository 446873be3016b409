package dev.hexforge.pass;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizationReport;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.quant.gptq.Gptq;

import java.nio.file.Path;

/**
 * The quantize stage: quantizes a model's linears, measures the accuracy cost, applies the gate and, when it
 * passes, writes a quantized checkpoint ({@code OUT/checkpoint}) that {@link ExportPass} turns into ONNX graphs. The
 * report ({@code OUT/quantization_report.json}) is written either way. The CLI's {@code quantize} and the quantize
 * service both run this, then the export pass, so a model quantized by either has the same bytes.
 */
public final class QuantizePass {
    public static final String KIND = "quantized-checkpoint";

    /** The gate's outcome and the quantized checkpoint (absent when the gate failed). */
    public record Result(QuantizationReport report, Path checkpoint) {
        public boolean passed() {
            return report.gatePassed();
        }

        /** What a user reads when the gate failed: the rise, the limit and the worst layers. */
        public String gateMessage() {
            return String.format("perplexity rose by %.4f (%.4f -> %.4f), more than the allowed %.4f; worst layers: %s",
                    report.deltaPerplexity(), report.floatPerplexity(), report.quantizedPerplexity(), report.maxDeltaPerplexity(),
                    report.worstLayers());
        }
    }

    private QuantizePass() {
    }

    /**
     * The weight format from what was asked, with the one rule for what was not: groups of 128 below 8 bits, one scale
     * per channel at 8; symmetric when asked, and always for 8 bits per channel (the NPU's INT8 weights are
     * symmetric per channel).
     */
    public static QuantSpec spec(int bits, Integer group, Boolean symmetric) {
        int g = group != null ? group : (bits == 8 ? 0 : 128);
        boolean sym = symmetric != null ? symmetric : bits == 8 && g == 0;
        return new QuantSpec(bits, g, sym);
    }

    /**
     * A job spec's quantize settings as the pass's options. {@code symmetric: false} in a spec means "not asked", so
     * 8 bits per channel stays symmetric.
     */
    public static QuantizeOptions options(JobSpec.Quantize q, Path calibration, Path evalText) {
        QuantSpec spec = spec(q.bits(), q.group(), q.symmetric() ? Boolean.TRUE : null);
        return new QuantizeOptions(q.method(), spec, q.keep(),
                new QuantizeOptions.Calibration(calibration, q.calibrationSamples(), q.calibrationLength(), 0),
                Gptq.Options.defaults(), evalText, 128, q.maxDeltaPpl(), q.auto().maxExtraBytesPercent());
    }

    /** Quantizes {@code model} into {@code out}: the report, and the checkpoint when the gate passed. */
    public static Result run(Path model, QuantizeOptions options, Path out, Progress progress) {
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            QuantizePipeline.Result r = QuantizePipeline.run(ckpt, options, out, progress);
            return new Result(r.report(), r.checkpoint());
        }
    }
}
