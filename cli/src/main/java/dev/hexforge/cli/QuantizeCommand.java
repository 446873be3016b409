package dev.hexforge.cli;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizationReport;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.quant.gptq.Gptq;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

@Command(name = "quantize", mixinStandardHelpOptions = true,
        description = "Quantize a Hugging Face folder's linears and export QDQ and/or MatMulNBits ONNX, gated on perplexity.")
final class QuantizeCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "Hugging Face model folder")
    Path model;
    @Option(names = "--method", defaultValue = "rtn", description = "rtn, gptq or awq (default: ${DEFAULT-VALUE})")
    String method;
    @Option(names = "--calib", description = "calibration JSONL ({\"text\": ...} or {\"messages\": [...]}); needed by gptq and awq")
    Path calib;
    @Option(names = "--samples", defaultValue = "128", description = "calibration samples (default: ${DEFAULT-VALUE})")
    int samples;
    @Option(names = "--calib-len", defaultValue = "512", description = "tokens per calibration sample, capped at the model's context (default: ${DEFAULT-VALUE})")
    int calibLen;
    @Option(names = "--seed", defaultValue = "0", description = "calibration sampling seed (default: ${DEFAULT-VALUE})")
    long seed;
    @Option(names = "--act-order", description = "GPTQ: quantize columns by decreasing Hessian diagonal (static groups)")
    boolean actOrder;
    @Option(names = "--auto-keep", defaultValue = "0", description = "automatic mixed precision: keep the most sensitive "
            + "linears in FP16 within this percentage of extra bytes (needs --calib; default: off)")
    double autoKeep;
    @Option(names = "--bits", defaultValue = "8", description = "2-8 (default: ${DEFAULT-VALUE})")
    int bits;
    @Option(names = "--group", description = "input columns per scale; 0 = per channel (default: 0 for 8 bits, 128 otherwise)")
    Integer group;
    @Option(names = "--sym", description = "symmetric (default for 8 bits)")
    boolean sym;
    @Option(names = "--asym", description = "asymmetric with zero points (default below 8 bits)")
    boolean asym;
    @Option(names = "--keep", split = ",", description = "module patterns kept in float, e.g. q_proj,v_proj")
    List<String> keep = List.of();
    @Option(names = "--format", defaultValue = "qdq", description = "qdq, matmulnbits or both (default: ${DEFAULT-VALUE})")
    String format;
    @Option(names = "--accuracy-level", defaultValue = "4", description = "MatMulNBits compute: 4 int8 activations (fast), "
            + "0 float32 (identical to the fake-quantized reference) (default: ${DEFAULT-VALUE})")
    int accuracyLevel;
    @Option(names = "--variant", defaultValue = "dynamic", description = "dynamic or static (default: ${DEFAULT-VALUE})")
    String variant;
    @Option(names = "--seq", defaultValue = "128")
    int seq;
    @Option(names = "--ctx", defaultValue = "512")
    int ctx;
    @Option(names = "--eval", description = "text scored for the accuracy gate (perplexity, float vs quantized)")
    Path eval;
    @Option(names = "--window", defaultValue = "128")
    int window;
    @Option(names = "--max-delta-ppl", defaultValue = "0.5", description = "gate: largest allowed perplexity rise (default: ${DEFAULT-VALUE})")
    double maxDeltaPpl;
    @Option(names = "--out", required = true)
    Path out;
    @Option(names = "--json", description = "print the report as one JSON object")
    boolean json;

    @Override
    public Integer call() {
        if (sym && asym) {
            throw new IllegalArgumentException("--sym and --asym contradict each other");
        }
        boolean symmetric = sym || (!asym && bits == 8);
        int groupSize = group != null ? group : (bits == 8 ? 0 : 128);
        Variant v = variant.equalsIgnoreCase("static") ? Variant.STATIC : Variant.DYNAMIC;
        if (!variant.equalsIgnoreCase("static") && !variant.equalsIgnoreCase("dynamic")) {
            throw new IllegalArgumentException("--variant must be dynamic or static, got '" + variant + "'");
        }
        ExportOptions export = new ExportOptions(v, seq, ctx, ExportOptions.DEFAULT_OPSET);
        QuantizeOptions.Calibration cal = calib == null ? null : new QuantizeOptions.Calibration(calib, samples, calibLen, seed);
        QuantizeOptions opt = new QuantizeOptions(method.toLowerCase(), new QuantSpec(bits, groupSize, symmetric), keep,
                format.toLowerCase(), export, cal, new Gptq.Options(128, 0.01, actOrder), eval, window, maxDeltaPpl, autoKeep,
                accuracyLevel);
        QuantizePipeline.Result r;
        try (Checkpoint ckpt = Checkpoint.open(model); ProgressBar bar = new ProgressBar("quantize")) {
            r = QuantizePipeline.run(ckpt, opt, out, bar);
        }
        QuantizationReport rep = r.report();
        rep.warnings().forEach(w -> System.err.println("warning: " + w));
        if (json) {
            new Json().put("gate_passed", rep.gatePassed()).put("float_perplexity", rep.floatPerplexity())
                    .put("quantized_perplexity", rep.quantizedPerplexity()).put("delta_perplexity", rep.deltaPerplexity())
                    .put("greedy_agreement", rep.greedyAgreement()).put("outputs", r.outputs().stream().map(Path::toString).toList())
                    .put("report", out.resolve(QuantizePipeline.REPORT).toString()).put("worst_layers", rep.worstLayers()).print();
        } else {
            System.out.printf("%s %s: %d linears quantized, greedy agreement %.0f%%%n", rep.method(), rep.spec(),
                    rep.layers().size(), rep.greedyAgreement() * 100);
            if (rep.quantizedPerplexity() != null) {
                System.out.printf("perplexity %.4f -> %.4f (delta %.4f, limit %.4f)%n", rep.floatPerplexity(),
                        rep.quantizedPerplexity(), rep.deltaPerplexity(), rep.maxDeltaPerplexity());
            }
            r.outputs().forEach(o -> System.out.println("wrote " + o));
            System.out.println("report " + out.resolve(QuantizePipeline.REPORT));
        }
        if (!rep.gatePassed()) {
            System.err.printf("hexforge: error: accuracy gate failed: perplexity rose by %.4f, more than the allowed %.4f; "
                    + "worst layers: %s. No model was written; see %s%n", rep.deltaPerplexity(), rep.maxDeltaPerplexity(),
                    rep.worstLayers(), out.resolve(QuantizePipeline.REPORT));
            return 1;
        }
        return 0;
    }
}
