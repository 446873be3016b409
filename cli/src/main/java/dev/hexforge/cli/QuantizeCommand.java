package dev.hexforge.cli;

import dev.hexforge.contracts.JobSpec;
import dev.hexforge.pass.ExportPass;
import dev.hexforge.pass.QuantizePass;
import dev.hexforge.quant.QuantizationReport;
import dev.hexforge.quant.QuantizePipeline;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

@Command(name = "quantize", mixinStandardHelpOptions = true,
        description = {"Quantize a Hugging Face folder's linears and export QDQ and/or MatMulNBits ONNX, gated on perplexity.",
                "Writes OUT/quantization_report.json, the quantized checkpoint OUT/checkpoint and the export (OUT/onnx-model, "
                        + "or OUT/qdq and OUT/matmulnbits for --format both): the quantize and export stages of the fleet, in one command."})
final class QuantizeCommand implements Callable<Integer> {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;
    @picocli.CommandLine.Mixin
    ExportFlags exportFlags;
    @Option(names = "--model", required = true, description = "Hugging Face model folder")
    Path model;
    @Option(names = "--method", descriptionKey = "quantize.method")
    String method;
    @Option(names = "--calib", description = "calibration JSONL ({\"text\": ...} or {\"messages\": [...]}) for gptq, awq and "
            + "--auto-keep (default: the bundled set, as the fleet uses)")
    Path calib;
    @Option(names = "--samples", descriptionKey = "quantize.calibrationSamples")
    int samples;
    @Option(names = "--calib-len", descriptionKey = "quantize.calibrationLength")
    int calibLen;
    @Option(names = "--seed", defaultValue = "0", description = "calibration sampling seed (default: ${DEFAULT-VALUE})")
    long seed;
    @Option(names = "--act-order", description = "GPTQ: quantize columns by decreasing Hessian diagonal (static groups)")
    boolean actOrder;
    @Option(names = "--auto-keep", descriptionKey = "quantize.auto.maxExtraBytesPercent")
    double autoKeep;
    @Option(names = "--bits", descriptionKey = "quantize.bits")
    int bits;
    @Option(names = "--group", descriptionKey = "quantize.group")
    Integer group;
    @Option(names = "--sym", description = "symmetric (default for 8 bits)")
    boolean sym;
    @Option(names = "--asym", description = "asymmetric with zero points (default below 8 bits)")
    boolean asym;
    @Option(names = "--keep", split = ",", descriptionKey = "quantize.keep")
    List<String> keep = List.of();
    @Option(names = "--head", descriptionKey = "quantize.head")
    String head;
    @Option(names = "--eval", description = "text scored for the accuracy gate (perplexity and top-1 agreement, float vs "
            + "quantized, through ONNX Runtime; default: the bundled text, as the fleet uses)")
    Path eval;
    @Option(names = "--window", defaultValue = "" + QuantizePass.EVAL_WINDOW, description = "tokens per scored window (default: ${DEFAULT-VALUE})")
    int window;
    @Option(names = "--eval-tokens", descriptionKey = "quantize.evalTokens")
    int evalTokens;
    @Option(names = "--max-delta-ppl", descriptionKey = "quantize.maxDeltaPpl")
    double maxDeltaPpl;
    @Option(names = "--activations", descriptionKey = "quantize.activations")
    String activations;
    @Option(names = "--kv-bits", descriptionKey = "quantize.kvBits")
    int kvBits;
    @Option(names = "--quantize-io", descriptionKey = "quantize.quantizeIo")
    boolean quantizeIo;
    @Option(names = "--adapter", paramLabel = "NAME=PEFT_DIR",
            description = "a PEFT LoRA adapter the quantized graphs take beside the base (repeatable; as export --adapter): "
                    + "fully quantized graphs get its inputs' and products' encodings, calibrated through the base and each adapter")
    Map<String, Path> adapters = new LinkedHashMap<>();
    @Option(names = "--out", required = true)
    Path out;
    @Option(names = "--json", description = "print the report as one JSON object")
    boolean json;
    @Option(names = "--allow-non-finite", descriptionKey = "allowNonFinite")
    boolean allowNonFinite;

    @Override
    public Integer call() throws IOException {
        if (sym && asym) {
            throw new IllegalArgumentException("--sym and --asym contradict each other");
        }
        // the flags as the job spec of a quantize + export job: the passes map it as they map a fleet job's
        JobSpec job = SpecOptions.spec(spec, List.of("quantize", "export"), sym || asym ? Map.of("quantize.symmetric", sym) : Map.of());
        ExportPass.Options export = exportFlags.options(job).withAdapters(adapters);
        QuantizeRun.Result done = new QuantizeRun(calib, eval, seed, actOrder, window).run(job, export, model, out);
        QuantizePipeline.Result r = done.quantized();
        ExportPass.Result exported = done.exported();
        List<Path> outputs = exported == null ? List.of() : exported.outputs().stream().map(ExportPass.Output::dir).toList();
        QuantizationReport rep = r.report();
        rep.warnings().forEach(w -> System.err.println("warning: " + w));
        if (exported != null) {
            exported.report().warnings().forEach(w -> System.err.println("warning: " + w));
        }
        if (json) {
            new Json().put("gate_passed", rep.gatePassed()).put("float_perplexity", rep.floatPerplexity())
                    .put("quantized_perplexity", rep.quantizedPerplexity()).put("delta_perplexity", rep.deltaPerplexity())
                    .put("greedy_agreement", rep.greedyAgreement()).put("outputs", outputs.stream().map(Path::toString).toList())
                    .put("checkpoint", r.checkpoint() == null ? null : r.checkpoint().toString())
                    .put("report", out.resolve(QuantizePipeline.REPORT).toString()).put("worst_layers", rep.worstLayers())
                    .put("precision", rep.activations() == null ? null : rep.activations().precision())
                    .put("full_perplexity", rep.activations() == null ? null : rep.activations().perplexity())
                    .put("full_delta_perplexity", rep.activations() == null ? null : rep.activations().deltaPerplexity()).print();
        } else {
            System.out.printf("%s %s (embedding and head %s): %d tensors quantized, greedy agreement %.0f%%%n", rep.method(),
                    rep.spec(), rep.head(), rep.layers().size(), rep.greedyAgreement() * 100);
            if (rep.quantizedPerplexity() != null) {
                System.out.printf("perplexity %.4f -> %.4f (delta %.4f, limit %.4f)%n", rep.floatPerplexity(),
                        rep.quantizedPerplexity(), rep.deltaPerplexity(), rep.maxDeltaPerplexity());
            }
            if (rep.activations() != null) {
                QuantizationReport.Activations a = rep.activations();
                System.out.printf("%s (the static graph with every activation quantized, KV cache %d-bit): perplexity %.4f -> %.4f "
                        + "(delta %.4f), greedy agreement %.0f%%%n", a.precision(), a.kvBits(), rep.floatPerplexity(), a.perplexity(),
                        a.deltaPerplexity(), a.greedyAgreement() * 100);
                System.out.println("noisiest activations: " + String.join(", ", a.noisiest()));
            }
            outputs.forEach(o -> System.out.println("wrote " + o));
            System.out.println("report " + out.resolve(QuantizePipeline.REPORT));
        }
        if (!rep.gatePassed()) {
            System.err.printf("hexforge: error: accuracy gate failed: %s. No model was written; see %s%n", r.gateMessage(),
                    out.resolve(QuantizePipeline.REPORT));
            return 1;
        }
        return 0;
    }
}
