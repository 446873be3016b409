package dev.hexforge.pass;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.memory.MemoryPlan;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.onnx.qdq.Activations;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.quant.gptq.Gptq;

import java.nio.file.Path;
import java.util.Map;

/**
 * The quantize stage: quantizes a model's linears, measures the accuracy cost, applies the gate and, when it
 * passes, writes a quantized checkpoint ({@code OUT/checkpoint}) that {@link ExportPass} turns into ONNX graphs. The
 * report ({@code OUT/quantization_report.json}) is written either way. The CLI's {@code quantize} and the quantize
 * service both run this, then the export pass, so a model quantized by either has the same bytes.
 */
public final class QuantizePass {
    public static final String KIND = "quantized-checkpoint";

    private QuantizePass() {
    }

    /**
     * The weight format from what was asked; what was not follows the job spec's rule
     * ({@link JobSpec.Quantize#defaultGroup}, {@link JobSpec.Quantize#defaultSymmetric}).
     */
    public static QuantSpec spec(int bits, Integer group, Boolean symmetric) {
        int g = group != null ? group : JobSpec.Quantize.defaultGroup(bits);
        return new QuantSpec(bits, g, symmetric != null ? symmetric : JobSpec.Quantize.defaultSymmetric(bits, g));
    }

    /**
     * The token embedding's and LM head's spec from the job spec's {@code quantize.head}: int8 per channel
     * symmetric, int4 under the 4-bit rule, or null (keep: float).
     */
    public static QuantSpec head(String head) {
        return switch (head) {
            case "int8" -> QuantSpec.int8PerChannel();
            case "int4" -> spec(4, null, null);
            case "keep" -> null;
            default -> throw new IllegalArgumentException("quantize.head is int8, int4 or keep, not '" + head + "'");
        };
    }

    /** The gate's window: the fixtures' perplexity protocol. */
    public static final int EVAL_WINDOW = 128;

    /**
     * A job spec's quantize settings as the pass's options.
     *
     * @param cache where the float model's gate scores are kept between runs, or null
     */
    public static QuantizeOptions options(JobSpec spec, Path calibration, Path evalText, Path cache) {
        JobSpec.Quantize q = spec.quantize();
        return new QuantizeOptions(q.method(), spec(q.bits(), q.group(), q.symmetric()), q.keep(), head(q.headOrDefault()),
                new QuantizeOptions.Calibration(calibration, q.calibrationSamples(), q.calibrationLength(), 0),
                Gptq.Options.defaults(), evalText, EVAL_WINDOW, q.evalTokensOrDefault(), q.maxDeltaPpl(),
                q.auto().maxExtraBytesPercent(), cache, activations(q.activations(), q.kvBits(), spec.export().variant(), q.format())
                .withQuantizedIo(q.quantizeIo()));
    }

    /**
     * The static graph's activations from {@code quantize.activations} and {@code quantize.kvBits}: auto is 16 bits
     * for a static QDQ export and float for a dynamic one or for the CPU's MatMulNBits alone (nothing that runs it
     * reads activation encodings); a kvBits of 0 (specs stored before the field) is the default.
     */
    public static Activations activations(String activations, int kvBits, String variant, String format) {
        return Activations.parse(activations, kvBits == 0 ? null : kvBits,
                Variant.parse(variant).fixedShapes() && !format.equals("matmulnbits"));
    }

    /**
     * {@code options} for fully quantized graphs that will take these LoRA adapters (by name, PEFT folders; the same
     * the export is given): each is read against {@code model}'s config now, and activation calibration runs through
     * the base and each of them. No adapters: {@code options} as they are.
     */
    public static QuantizeOptions withAdapters(QuantizeOptions options, Path model, Map<String, Path> adapters) {
        if (adapters.isEmpty()) {
            return options;
        }
        ModelConfig c = ModelConfig.read(model);
        AdapterExport a = AdapterExport.read(adapters, c);
        return options.withLora(a.calibration(c));
    }

    /** Quantizes {@code model} into {@code out}: the report, and the checkpoint when the gate passed. */
    public static QuantizePipeline.Result run(Path model, NonFinite nonFinite, QuantizeOptions options, Path out,
                                              Progress progress) {
        try (Checkpoint ckpt = Checkpoint.open(model, nonFinite)) {
            QuantizeOptions.Calibration cal = options.calibration();
            MemoryPlan.require(MemoryPlan.quantize(ckpt.config(), options.method(), cal == null ? 0 : cal.samples(),
                    cal == null ? 0 : cal.length(), options.autoKeepPercent() > 0, Runtime.getRuntime().availableProcessors()));
            return QuantizePipeline.run(ckpt, options, out, progress);
        }
    }
}
